"""Component pins against their upstream repositories (`aicr-catalog pins`).

The stages, in the order data flows:

- `collect`: the catalog's pins (registry defaults and overlay/mixin refs) and the leaf
  recipes that use each one;
- `http`: the only network access (timeouts, bounded retries with backoff, ETag cache);
- `helm_index` / `oci`: what one upstream repository publishes for a chart;
- `versions`: which versions are newer (patch, minor, major);
- `check`: one `PinResult` per pin, gathered into a `PinsReport`;
- `qualification`: the qualified-at-scale column, from the status model's document;
- `report`: text, JSON and Markdown formatters;
- `write`: bump one pin in place and measure the impact.

Besides `evidence sign`, this is the only part of the project that uses the network.
"""
