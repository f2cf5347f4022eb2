"""The entry of `aicr-catalog build`: a build of the very same inputs into an untouched output
does nothing, and finds that out before it imports the pipeline.

`build_site` takes the lock, derives the build's key (`generator.site.incremental`: the options
record, the catalog, docs and templates by content, the evidence tree by one walk) and compares
it with the record of the last build of the output. Only when something changed does it import
`generator.site.build` (the pipeline, sigstore, jinja, mkdocs, plotly) and build.

What it bought (CPU-s of `aicr-catalog build`, nothing changed): at 200 recipes × 4,000 runs
2.5-2.7 → 0.65 (1.75 s of imports → 0.49 for `generator.commands.build`); at 1,000 × 20,000
6.1 (4.4 user + 1.7 sys, quiet machine) → 2.3 (1.6 + 0.7, under a load of 7), together with
the one walk of the evidence tree (`safeio.walk`), the CLI reference keyed by what it is made
of (`commands/build.py` `CliReference`) and the build's stamp (`incremental.unchanged_build`).
tests/test_nochange.py holds the imports: a no-change rebuild loads no stage.
"""

from __future__ import annotations

import dataclasses

from generator.core import safeio
from generator.core.atomic import make_dirs
from generator.core.outputs import OutputKind, check_output_dir
from generator.site.incremental import build_key, inputs_key, record_build, unchanged_build
from generator.site.options import (
    REPO,
    TEMPLATES,
    BuildOptions,
    BuildReport,
    StageNote,
    memo_for,
    source_date_epoch,
    static_docs,
)
from generator.site.outdir import build_lock, remove_leftovers


def build_site(options: BuildOptions) -> BuildReport:
    """Build the whole site into `options.out`. Raises CatalogError; then `out` is unchanged.

    With the build cache (`options.cache_dir`), a build of the very same inputs into an
    untouched output does nothing, and every stage reuses what it made before for the same
    input record; the entries no longer used are swept once the build succeeded."""
    check_output_dir(
        options.out,
        OutputKind.SITE,
        (options.catalog, options.evidence, options.docs, options.config),
    )
    out = safeio.resolve(options.out)
    make_dirs(out.parent)
    epoch = source_date_epoch(options.source_date_epoch, REPO)
    with build_lock(out):
        remove_leftovers(out)
        memo = memo_for(options)
        if memo.cache is None:
            from generator.site.build import build_all

            return build_all(options, out, epoch, memo, "")[0]
        cache = memo.cache
        base = inputs_key(options, epoch, TEMPLATES, memo, static_docs(options))
        key = build_key(options, memo, base)
        done = unchanged_build(cache, out, key)
        if done is not None:  # same inputs, same generator, site untouched: nothing to do
            notes = tuple(StageNote(**n) for n in done.pop("notes"))
            return BuildReport(**done, notes=notes)
        from generator.site.build import build_all

        report, written = build_all(options, out, epoch, memo, base)
        report_doc = dataclasses.asdict(report)
        record_build(cache, out, key, report_doc, written.sums, written.sources, written.table)
        cache.finish()  # entries of earlier inputs are never read again
    return report


__all__ = ["build_site"]
