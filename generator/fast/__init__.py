"""Speed-ups: code that exists only to make the build faster, each beside its reference.

This package sits in the bottom layer with `core/` (it imports only `core` and itself), so any
stage may use it and none of it knows a stage. A stage calls one function here and reads as if
it called the plain version.

The rule, for every speed-up in this package:

- one function is its interface (the callers know nothing else of it);
- its reference implementation, the plain and obviously right version, is in the same module
  (or is a library call named there), and gives the same result;
- a differential test (tests/test_fast_<module>.py, with hypothesis where inputs can be drawn)
  holds the two to the same bytes, answers or errors;
- its module docstring quotes the measured gain (whole-process timings, median of paired runs
  of the fast and the reference version, and their ratio). A speed-up that does not earn its
  complexity is removed, not kept "in case".

The speed-ups (gains measured on a 2-core machine; the synthetic catalog is
`aicr-catalog synth --recipes 100 --evidence 2000`):

- `pool.parallel_map` (reference: the serial map; `jobs=1` runs it): one process pool for the
  bundle archives, evidence verification, pages and the synthetic catalog's signing; workers
  are forked and read the function and items from the fork. Its gain needs a free core: none
  measurable on the loaded machine it was moved on (see pool.py).
- `collector.collector_paused` (reference: the cyclic collector left on) around the building of
  verified records, status and pages: none measurable at 2,000 statements, about half of
  `aggregate` at 20,000 (see collector.py).
- `schemacheck.known_valid` (reference: jsonschema's `is_valid`): statement schemas compiled
  to plain predicates; `evidence verify` of 2,000 statements with --jobs 1, median 6.8 s vs
  11.9 s CPU (0.57). Each schema is now one generated function (`generated_check`,
  reference: the closures `compiled_check`): a statement's predicate check 41-43 -> 23-24 us,
  `parse_statement` ~150 -> ~127 us (200 x 4,000).
- `yamlwrite.dump_yaml` (reference: `dump_yaml_reference`, a plain `yaml.dump`): the one YAML
  writer for files people read (bundle and catalog styles); the bundle style memoizes dumps
  and builds plain nodes directly. Rendering the 800 bundles of the synthetic catalog, median
  2.9 s vs 8.7 s CPU (0.34; 3.6x on the render step itself). Since issue 29 a plain document
  is written line by line, libyaml asked once per distinct scalar: the site's render stage
  6.8 -> 4.8 ms CPU an archive (1,600 synthetic archives, one process).
- `jcs.canonical_json` (reference: `rfc8785.dumps`): RFC 8785 bytes through the C `json`
  encoder for plain data; the 200 recipe digests of the synthetic catalog, 0.039 s vs 0.457 s
  a pass (11.7x), digested twice by resolve: about 0.8 s a 100-recipe build.
- `core/archive.tar_gz` (reference: `tar_gz_reference`, `tarfile` + `gzip`): hand-built tar
  headers and gzip frame; the repository's 180 bundle archives three times, median 0.91 s vs
  1.66 s CPU (0.56; 1.9x on the archive step, the rest is deflate). In `core/`, not here: it
  imports `tarfile`, `gzip` and `zlib`, which only `core/` may (tests/test_boundaries.py).
- `core/blobwrite.insert_parts` (reference: `insert_parts_reference`, the parts joined and
  bound): a cache entry of 8 MB or more (the engine's output: 45 MB at 1,000 recipes) stored
  through SQLite's incremental BLOB interface, never joined or copied; storing that entry raised
  the process's high-water mark by 174 MB, now by 45 MB (its pickle). In `core/` beside the
  cache it writes for, the one importer of `sqlite3`.
- `packed.packed_mapping`, `packed.packed_tuple` (references: the plain `dict` and `tuple`): a
  verified statement's predicate, component versions, checks and KPIs pickled as one bytes
  object each, unpickled when first read. Loading the 200 `verify-dirs` entries of a
  200 x 4,000 cache, 0.269 s vs 0.045 s (6x); the verify stage of a rebuild there, warm and
  nothing changed, median 0.67-0.73 vs 0.34-0.44 CPU-s (see packed.py).

Removed, as not earning their complexity:

- the custom deep copy of resolved values (1.9x of a negligible cost: 0.03 s in resolving the
  100-recipe catalog): `copy.deepcopy`;
- a second walk that told whether an object had a canonical JSON form without encoding it:
  `core.canonical.check_canonical` now encodes (the same cost, 0.036 s vs 0.039 s a pass).

Not here (noted for the stages that own them): the criteria index in `catalog/resolve.py` and
the per-process signature-check memo in `evidence/verify.py`, both tested against their plain
paths where they live.
"""
