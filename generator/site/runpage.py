"""`run_markdown`: a run's page (`pages/run.md.j2`) written by Python string building.

The reference is the template itself, rendered by the site's one Jinja environment
(`generator.site.jinja.render("pages/run.md.j2", ...)`, kept as `pages.run_page_reference`).
Every run of the catalog has its own page, so the template ran 20,000 times at 1,000 recipes:
most of that time went to Jinja's per-value machinery (the environment's `finalize`, the
autoescape wrapper around it, a `Markup` made per value), not to the page. Here each value
goes through the very escaper `finalize` is (`core.text.html_text`), and the chips, outcomes and
signers through the same functions the template calls (`site.jinja.outcome`, `sample_chip`,
`signer`): only the template's text and control flow are written out again, its whitespace as
`trim_blocks` and `lstrip_blocks` leave it.

It cannot drift silently: tests/test_fast_runpage.py renders the template and this function for
every run of a synthetic catalog and for hand-made runs through every branch (sample, no
checks or KPIs, stale or current digest, downloads, statements, commits, hostile text) and
requires equal strings. A printed plain string that needs no escaping is not made a `Markup`
(`_h`), and an outcome's chip is made once per distinct outcome (`_outcome`).

Measured (CPU, one process): the 400 runs of `synth --recipes 20 --evidence 400 --seed 1`,
1.0-1.3 ms a page through the template, 0.24 ms here (4-5x); in a cold build of 200 × 4,000
(load average 6-8), the 4,000 run pages took 3.95 CPU-s through the template, 1.22 here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from generator.core.text import html_chars, html_text
from generator.evidence.view import Outcome
from generator.site.jinja import (
    EM_DASH,
    front_matter_title,
    outcome,
    sample_chip,
    signer,
    url_part,
)

_SAMPLE_BANNER = (
    '<div class="admonition danger aicr-sample-banner" role="note"><p class="admonition-title">'
    "Sample evidence &mdash; not a real qualification</p><p>Evidence shown on this page is "
    "<strong>SAMPLE</strong> data signed by the project's demo trust root. It demonstrates the "
    "pipeline; it qualifies nothing and a release refuses it.</p></div>\n"
)
_CHECKS_HEAD = (
    '<thead><tr><th scope="col">Phase</th><th scope="col">Check</th>'
    '<th scope="col">Targets</th><th scope="col">Judged outcome</th>'
    '<th scope="col">Signed</th><th scope="col">Message</th></tr></thead>\n'
)
_KPIS_HEAD = (
    '<thead><tr><th scope="col">KPI</th><th scope="col">Value</th>'
    '<th scope="col">Threshold</th><th scope="col">Judged outcome</th>'
    '<th scope="col">Signed</th></tr></thead>\n'
)


_ESCAPED = re.compile("[&<>\"']")  # what `html_text` escapes (markupsafe's five characters)


def _h(value: object) -> str:
    """A printed value, as the environment's `finalize` prints it (`_h_reference`). A plain
    string is looked up among those printed before (a run's page prints the same phases, check
    names, statuses and units as every other run's): its printing is a function of its text
    alone. A plain number is its `str`: digits, a sign, a point, an exponent, "inf" or "nan",
    none of which `html_text` changes. Measured on the 4,000 run pages of the 200 x 4,000
    synthetic catalog's site data (one process, CPU, load 9, three interleaved pairs, the same
    pages): 1.59/1.42/1.22 s through `_h_reference`, 0.86/0.80/0.64 s here."""
    if type(value) is str:
        printed = _PRINTED.get(value)
        if printed is None:
            if len(_PRINTED) >= _PRINTED_MAX:
                _PRINTED.clear()
            printed = _PRINTED[value] = _h_reference(value)
        return printed
    if type(value) is int or type(value) is float:
        return str(value)
    return _h_reference(value)


_PRINTED: dict[str, str] = {}  # plain strings as `_h_reference` prints them
_PRINTED_MAX = 1 << 16


def _h_reference(value: object) -> str:
    """A printed value, as the environment's `finalize` prints it. A plain string that
    `html_text` would leave as it is (no character to escape, none `html_chars` replaces: it
    returns the very object it was given) is returned without making a `Markup` of it."""
    if type(value) is str and html_chars(value) is value and not _ESCAPED.search(value):
        return value
    return str(html_text(value))


def _outcome(o: Any, base: str) -> str:
    """`outcome(o, base)` as printed. It is a function of the outcome's text and `base` alone,
    and most rows of a run share a few outcomes: a frozen `Outcome` of plain strings is looked
    up (a `Markup` would be equal to the same plain text, and printed differently)."""
    if isinstance(o, Outcome) and type(o.status) is str and type(o.detail) is str:
        return _outcome_of(o, base)
    return _h(outcome(o, base))


@functools.lru_cache(maxsize=4096)
def _outcome_of(o: Outcome, base: str) -> str:
    return _h(outcome(o, base))


def _dash(value: object) -> str:
    """`{{ value | dash }}`."""
    return EM_DASH if value is None or value == "" else _h(value)


def _sort_key(item: tuple[Any, Any]) -> Any:
    """Jinja's `dictsort` (by key, case-insensitive)."""
    key = item[0]
    return key.lower() if isinstance(key, str) else key


def run_markdown(
    *,
    r: Mapping[str, Any],
    e: Any,
    base: str,
    current: Mapping[str, str],
    downloads: Mapping[str, Any],
    trust_root: str,
    sample: bool,
    statements: Mapping[str, str],
    added: Mapping[str, tuple[str, str]],
    commit_url: str,
) -> str:
    """The page `pages/run.md.j2` renders from the same context."""
    title = _h(front_matter_title("Run " + str(e.short) + " of " + str(r["name"])))
    out = [
        f"---\ntitle: {title}\nsearch:\n  exclude: true\nhide:\n  - navigation\n---\n\n",
        "<!--aicr:island-->\n",
    ]
    if sample:
        out.append(_SAMPLE_BANNER)
    attested = f"Attested {_h(e.attested_at)}." if e.attested_at else "No attestation date."
    out.append(f'<p class="aicr-updated">{attested}</p>\n')
    slug = _h(url_part(r["slug"]))
    name = _h(r["name"])
    if r["known"]:
        leaf = f' Recipe: <a href="../../recipes/{slug}.html">{name}</a>.'
    else:
        leaf = (
            f" <strong>{name} is not a leaf recipe of the current catalog</strong>: this run is "
            "shown and never counted."
        )
    out.append(
        f'<p>All runs of this recipe: <a href="../{slug}.html#run-{_h(e.id)}">evidence for '
        f"{name}</a>.{leaf} Trust root of this build: <code>{_h(trust_root)}</code>. Only "
        "<em>verified</em> runs whose recipe digest matches the current recipe are counted.</p>\n"
    )
    _detail(out, e, base, current, downloads, statements, added, commit_url)
    out.append("<!--/aicr:island-->\n")
    return "".join(out)


def _detail(
    out: list[str],
    e: Any,
    base: str,
    current: Mapping[str, str],
    downloads: Mapping[str, Any],
    statements: Mapping[str, str],
    added: Mapping[str, tuple[str, str]],
    commit_url: str,
) -> None:
    """`pages/_run_detail.html.j2`."""
    rid, short, b = _h(e.id), _h(e.short), _h(base)
    chip = f" {_h(sample_chip(base))}" if e.sample else ""
    out.append(
        f'<section class="aicr-run" id="run-{rid}" aria-labelledby="heading-{rid}">\n'
        f'<h2 id="heading-{rid}">Run {short}: {_dash(e.lane)}, {_dash(e.profile)}{chip}</h2>\n'
    )
    if e.sample:
        out.append(
            '<p class="aicr-sample-line"><strong>SAMPLE evidence</strong>, signed by the demo '
            "trust root: it demonstrates the format and qualifies nothing.</p>\n"
        )
    lane = _dash(e.lane) + (f" ({_h(e.lane_nodes)} nodes)" if e.lane_nodes else "")
    profile = e.profile or "standard"
    now = current.get(profile, "")
    out.append(
        '<dl class="aicr-facts-list">\n'
        f"<div><dt>Judged outcome</dt><dd>{_judged(e, base)}</dd></div>\n"
        f"<div><dt>Signed verdict</dt><dd>{_verdict(e)}</dd></div>\n"
        f"<div><dt>Scale profile</dt><dd>{_dash(e.profile)} {_h(e.profile_version)}</dd></div>\n"
        f"<div><dt>Lane</dt><dd>{lane}</dd></div>\n"
        f"<div><dt>Observed</dt><dd>{_dash(e.observed_nodes)} nodes, "
        f"{_dash(e.observed_gpus)} GPUs</dd></div>\n"
        f"<div><dt>Recipe digest tested</dt><dd>{_tested(e, profile, now)}</dd></div>\n"
    )
    if now and e.recipe_digest != now:
        out.append(
            f'<div><dt>Current recipe digest</dt><dd><code class="aicr-digest">{_h(now)}</code>'
            f" ({_h(profile)}, today)</dd></div>\n"
        )
    _facts(out, e, b, downloads, statements, added, commit_url)
    _tables(out, e, base, short)
    out.append("</section>\n")


def _judged(e: Any, base: str) -> str:
    o = e.outcome
    judged = _outcome(o, base)
    if o.detail:
        judged += f" &mdash; {_h(o.detail)}"
    if e.failure_class:
        judged += f" (<code>{_h(e.failure_class)}</code>)"
    return judged


def _verdict(e: Any) -> str:
    verdict = _h(e.verdict or "none") + ", as the signer concluded"
    if e.outcome.status in ("pass", "fail") and e.verdict == e.outcome.status:
        return verdict + (
            ": agrees with the judged outcome, which is recomputed from the raw results, never "
            "taken from this"
        )
    if e.reasons:  # Jinja's `join` of plain strings, printed
        return verdict + ": " + _h("; ".join(str(reason) for reason in e.reasons))
    return verdict


def _tested(e: Any, profile: str, now: str) -> str:
    tested = f'<code class="aicr-digest">{_dash(e.recipe_digest)}</code>'
    if not e.recipe_digest:
        return tested
    if now and e.recipe_digest == now:
        return tested + f" &mdash; the current digest of {_h(profile)}"
    if now:
        return tested + (
            " &mdash; <strong>not the current digest</strong>: the recipe has changed since this run"
        )
    return tested + " &mdash; no current recipe of this name and profile to compare with"


def _facts(
    out: list[str],
    e: Any,
    b: str,
    downloads: Mapping[str, Any],
    statements: Mapping[str, str],
    added: Mapping[str, tuple[str, str]],
    commit_url: str,
) -> None:
    """The facts from the components tested to the commit that added the run."""
    if e.component_versions:
        items = sorted(e.component_versions.items(), key=_sort_key)
        components = ", ".join(f"<code>{_h(n)}</code> {_h(v)}" for n, v in items)
    else:
        components = EM_DASH
    trust = _dash(e.trust_root) + (
        " &mdash; <strong>demo root (sample)</strong>" if e.sample else ""
    )
    if e.raw:
        raw = f'<a href="{b}{_h(e.raw_file)}" download>{_h(e.path.rsplit("/", 1)[-1])}</a>'
    else:
        raw = f"not published: <code>{_h(e.path)}</code> is a link leaving the evidence directory"
    out.append(
        f"<div><dt>Components tested</dt><dd>{components}</dd></div>\n"
        f"<div><dt>Bundle digest tested</dt><dd>{_bundle(e, b, downloads)}</dd></div>\n"
        f'<div><dt>Signer</dt><dd>{_h(signer(e))}<br><span class="aicr-identity">identity '
        f"<code>{_dash(e.signer_identity)}</code> via <code>{_dash(e.signer_issuer)}</code>"
        "</span></dd></div>\n"
        f"<div><dt>Trust root</dt><dd>{trust}</dd></div>\n"
        f"<div><dt>Transparency log</dt><dd>index {_dash(e.tlog_index)}, integrated "
        f"{_dash(e.integrated_time)}</dd></div>\n"
        f"<div><dt>Attested</dt><dd>{_dash(e.attested_at)}</dd></div>\n"
        f"<div><dt>Predicate type</dt><dd><code>{_dash(e.predicate_type)}</code></dd></div>\n"
        f"<div><dt>Raw bundle</dt><dd>{raw}</dd></div>\n"
        f"<div><dt>Signed raw results</dt><dd>{_signed(e, b, statements)}</dd></div>\n"
        f"<div><dt>Added by commit</dt><dd>{_commit(e, added, commit_url)}</dd></div>\n"
        "</dl>\n"
    )


def _bundle(e: Any, b: str, downloads: Mapping[str, Any]) -> str:
    dl = downloads.get(e.bundle_digest) if e.bundle_digest else None
    bundle = f'<code class="aicr-digest">{_dash(e.bundle_digest)}</code>'
    if dl:
        return bundle + (
            f' &mdash; the <a href="{b}{_h(dl.file)}" download>{_h(dl.file.rsplit("/", 1)[-1])}</a>'
            " download of this site"
        )
    if e.bundle_digest:
        return bundle + (
            " &mdash; not any download of this site: the bundle the lab rendered itself (compare "
            "with <code>aicr-catalog bundle</code> at the recipe digest above)"
        )
    return bundle


def _signed(e: Any, b: str, statements: Mapping[str, str]) -> str:
    if e.id not in statements:
        return "not published: the file's signature was not verified"
    file = statements[e.id]
    counts = (f", {_h(len(e.checks))} checks" if e.checks else "") + (
        f", {_h(len(e.kpis))} KPIs" if e.kpis else ""
    )
    return (
        f'<a href="{b}{_h(file)}" download>{_h(file.rsplit("/", 1)[-1])}</a>: the statement '
        f"the signature covers, as signed (checks, KPIs, observed counts{counts}), which the "
        "outcome above was judged from"
    )


def _commit(e: Any, added: Mapping[str, tuple[str, str]], commit_url: str) -> str:
    if e.id not in added:
        return (
            "not in the catalog's git history (uncommitted, or the build is not in a git checkout)"
        )
    c = added[e.id]
    code = f"<code>{_h(c[0][:12])}</code>"
    link = f'<a href="{_h(commit_url)}{_h(c[0])}">{code}</a>' if commit_url else code
    return link + f" on {_h(c[1])}"


def _judged_cell(o: Any, base: str) -> str:
    cell = _outcome(o, base)
    if o.status == "failed":
        cell += f'<br><span class="aicr-detail">{_h(o.detail)}</span>'
    return cell


def _tables(out: list[str], e: Any, base: str, short: str) -> None:
    """The checks and KPIs tables."""
    if e.checks:
        out.append(
            '<div class="aicr-table-wrap" data-search-exclude tabindex="0" role="region" '
            f'aria-label="Checks of run {short}"><table class="aicr-t">\n'
            f"<caption>Checks of run {short}</caption>\n{_CHECKS_HEAD}<tbody>\n"
        )
        out.extend(_check_row(c, base) for c in e.checks)
        out.append("</tbody></table></div>\n")
    if e.kpis:
        out.append(
            '<div class="aicr-table-wrap" data-search-exclude tabindex="0" role="region" '
            f'aria-label="KPIs of run {short} with their thresholds"><table class="aicr-t">\n'
            f"<caption>KPIs of run {short} with their thresholds</caption>\n"
            f"{_KPIS_HEAD}<tbody>\n"
        )
        out.extend(
            f"<tr><td>{_h(k.id)}</td><td>{_h(k.value)} {_h(k.unit)}</td>{_kpi_cells(k, base)}"
            for k in e.kpis
        )
        out.append("</tbody></table></div>\n")


def _check_row(c: Any, base: str) -> str:
    """A row of the checks table (`_check_row_reference`). A row of plain values is looked up
    among those written before, by its values as a tuple (runs repeat the same checks: the
    1,000 x 20,000 synthetic catalog's 247,733 check rows are 403 distinct): a row is a
    function of them and `base` alone. Only exact `str` (and `int` or None targets) make a
    key: a `Markup` equals its plain text, `True` equals 1, each printed differently.
    Measured with `_kpi_cells` (one process, CPU, the 20,000 run pages of the 1,000 x 20,000
    synthetic SiteData, pairs interleaved with the code before, load 5-6): 1.67/1.69/1.65 ->
    1.30/1.38/1.47 s; six more pairs 1.92/1.64/2.60/1.61/1.62/1.76 ->
    1.49/1.52/2.59/1.50/1.45/1.80 s."""
    o = c.outcome
    phase, name, targets, status, message = c.phase, c.name, c.targets, c.status, c.message
    if (
        type(phase) is str
        and type(name) is str
        and type(status) is str
        and type(message) is str
        and (targets is None or type(targets) is int)
        and type(o) is Outcome
        and type(o.status) is str
        and type(o.detail) is str
        and type(o.causes) is tuple
        and all(type(cause) is str for cause in o.causes)
        and type(base) is str
    ):
        key = (phase, name, targets, status, message, o.status, o.causes, o.detail, base)
        row = _ROWS.get(key)
        if row is None:
            if len(_ROWS) >= _ROWS_MAX:
                _ROWS.clear()
            row = _ROWS[key] = _check_row_reference(c, base)
        return row
    return _check_row_reference(c, base)


_ROWS: dict[tuple[Any, ...], str] = {}  # check rows, by their values (`_check_row`)
_CELLS: dict[tuple[Any, ...], str] = {}  # KPI rows' last cells, by theirs (`_kpi_cells`)
_ROWS_MAX = 1 << 14


def _check_row_reference(c: Any, base: str) -> str:
    """A row of the checks table, as `pages/_run_detail.html.j2` writes it."""
    return (
        f"<tr><td>{_h(c.phase)}</td><td>{_h(c.name)}</td><td>{_dash(c.targets)}</td>"
        f"<td>{_judged_cell(c.outcome, base)}</td><td>{_dash(c.status)}</td>"
        f"<td>{_dash(c.message)}</td></tr>\n"
    )


def _kpi_cells(k: Any, base: str) -> str:
    """A KPI row's threshold, judged outcome and signed status cells (`_kpi_cells_reference`),
    looked up as `_check_row` looks its rows up (runs repeat a KPI's threshold, unit and
    outcome; its value differs). The threshold is keyed by its printed text: 1800 and 1800.0,
    0.0 and -0.0 are equal numbers printed differently."""
    o = k.outcome
    operator, threshold, unit, status = k.operator, k.threshold, k.unit, k.status
    if (
        type(operator) is str
        and (type(threshold) is float or type(threshold) is int)
        and type(unit) is str
        and type(status) is str
        and type(o) is Outcome
        and type(o.status) is str
        and type(o.detail) is str
        and type(o.causes) is tuple
        and all(type(cause) is str for cause in o.causes)
        and type(base) is str
    ):
        key = (operator, str(threshold), unit, status, o.status, o.causes, o.detail, base)
        cells = _CELLS.get(key)
        if cells is None:
            if len(_CELLS) >= _ROWS_MAX:
                _CELLS.clear()
            cells = _CELLS[key] = _kpi_cells_reference(k, base)
        return cells
    return _kpi_cells_reference(k, base)


def _kpi_cells_reference(k: Any, base: str) -> str:
    """A KPI row's last three cells, as `pages/_run_detail.html.j2` writes them."""
    return (
        f"<td>{_h(k.operator)} {_h(k.threshold)} {_h(k.unit)}</td>"
        f"<td>{_judged_cell(k.outcome, base)}</td><td>{_dash(k.status)}</td></tr>\n"
    )
