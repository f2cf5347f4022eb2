"""Hostile text on pages: catalog and evidence text is never markup, script, template or shell.

One site build (`aicr-catalog build --no-bundles`) of the case `hostile/page-script-injection`
(written by `tests/hostile_evidence.py`): every text field of a recipe and of a verified evidence
statement that reaches a page carries `XSS-<field> ` followed by every string of INJECTIONS. The
tests assert that

- no HTML, JavaScript or SVG file of the site holds any of them as live markup;
- wherever a field appears (HTML text and attributes, JSON in `<template>`/`<script>`, the JSON
  API), it appears whole: nothing was evaluated (`{{ 7*7 }}` is not 49, `$(id)` not a uid),
  cut or re-interpreted;
- the fields that are shown on pages do reach them (so the first two assertions are not vacuous).

A second build checks that an evidence file that is a link leaving the repository is not
published (a recorded bug, see the case evidence-symlink-leaving-repository).
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.site.apifiles import published_runs
from tests import hostile_evidence as he
from tests.test_cases import build_case

CASE = he.HOSTILE / he.PAGE_CASE
ROOT = f"catalog/{he.ROOT_FILE}"
# Markup that would run if it reached a page as it is.
LIVE = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "onerror=alert(1)>")
MARKUP_SUFFIXES = (".html", ".js", ".svg", ".xml", ".css")
# Fields shown on HTML pages (the page and where): each must be found there, escaped.
# A run's checks, KPIs and verdict are on its own page (evidence/runs/<id>.html): a glob.
ON_PAGES = {
    "check-name": "evidence/runs/*.html",
    "check-message": "evidence/runs/*.html",
    "kpi-id": "evidence/runs/*.html",
    "kpi-unit": "evidence/runs/*.html",
    "verdict-reason": "evidence/runs/*.html",
    "signer-label": "evidence/h100-eks-ubuntu-training.html",
    "signer-identity": "evidence/h100-eks-ubuntu-training.html",
    "leaf-constraint-remediation": "recipes/h100-eks-ubuntu-training.html",
    "rejected-identity": "evidence/h100-eks-ubuntu-training.html",
}
# Fields published in the JSON API only (as JSON strings).
IN_API = {
    "phase-constraint-value": "api/v1/recipes/h100-eks-ubuntu-training.json",
    "phase-constraint-description": "api/v1/recipes/h100-eks-ubuntu-training.json",
    "phase-constraint-remediation": "api/v1/recipes/h100-eks-ubuntu-training.json",
    "values-string": "api/v1/recipes/h100-eks-ubuntu-training.json",
}
_MARKER = re.compile(r"XSS-[a-z-]+")
_JS_ESCAPES = {"\\u003c": "<", "\\u003e": ">", "\\u0026": "&", '\\"': '"', "\\/": "/"}


def _run(cwd: Path, *args: str) -> Any:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=True)
    finally:
        os.chdir(old)


def _build(work: Path, evidence: str) -> Path:
    result = _run(
        work,
        "build",
        "--catalog",
        "catalog",
        "--evidence",
        evidence,
        "--trust-root",
        ROOT,
        "--no-bundles",
        "--no-cache",
        "--jobs",
        "1",
        "-o",
        "site",
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 0, result.output
    return work / "site"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("page-injection")
    build_case(CASE, work)
    return _build(work, "catalog/evidence")


def _files(site: Path, suffixes: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    for path in sorted(site.rglob("*")):
        if path.is_file() and path.suffix in suffixes:
            yield path.relative_to(site).as_posix(), path.read_text(encoding="utf-8")


def _decoded(text: str) -> str:
    """Page text as a reader (or a script reading JSON data) would get it back."""
    text = html.unescape(text)
    for escaped, char in _JS_ESCAPES.items():
        text = text.replace(escaped, char)
    # chart figures hold their strings entity-escaped once more for plotly's HTML subset
    # (issue 16 item 7); plotly draws `&lt;` as `<`. The injections hold no `&` themselves.
    return html.unescape(text)


def _forms(field: str) -> tuple[str, ...]:
    """The field's text as placed: with spaces, or percent-encoded in a URI (the identity)."""
    text = he.injected(field)
    return (text, text.replace(" ", "%20"))


def _intact(text: str) -> list[str]:
    """Each field occurrence in decoded `text` that is not followed by the whole injection."""
    bad = []
    for m in _MARKER.finditer(text):
        field = m.group()[4:]
        if not any(text.startswith(form, m.start()) for form in _forms(field)):
            bad.append(text[m.start() : m.start() + len(he.injected(field)) + 20])
    return bad


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def test_the_case_validates_and_its_evidence_verifies(tmp_path: Path) -> None:
    """The injections are text validate accepts; one run verifies (so pages show its statement)
    and the intruder's copy is rejected (so pages show its rejection message)."""
    build_case(CASE, tmp_path)
    assert (_run(tmp_path, "validate", "catalog", "--strict").exit_code, "ok") == (0, "ok")
    verify = _run(
        tmp_path, "evidence", "verify", "catalog/evidence", "--catalog", "catalog",
        "--trust-root", ROOT,
    )  # fmt: skip
    lines = verify.stdout.splitlines()
    assert verify.exit_code == 1, verify.output
    assert [line.split(" ")[0] for line in lines[:2]] == ["REJECTED", "VERIFIED"]
    assert lines[0].endswith("[signer-not-allowed]")
    assert lines[2] == "2 file(s): 1 verified, 0 stale, 1 rejected (0 sample)"


def test_no_live_markup_anywhere(site: Path) -> None:
    found = [
        (rel, live) for rel, text in _files(site, MARKUP_SUFFIXES) for live in LIVE if live in text
    ]
    assert found == []


def test_script_blocks_cannot_be_closed_by_data(site: Path) -> None:
    """Inside <script> and <template> JSON, no `<` of the data is left raw."""
    block = re.compile(r"<(script|template)\b[^>]*>(.*?)</\1>", re.S)
    leaks = [
        (rel, m.group(2)[:80])
        for rel, text in _files(site, (".html",))
        for m in block.finditer(text)
        if "XSS-" in m.group(2) and "<" in m.group(2)
    ]
    assert leaks == []


def test_every_occurrence_is_whole_and_unevaluated(site: Path) -> None:
    broken = {
        rel: bad for rel, text in _files(site, MARKUP_SUFFIXES) if (bad := _intact(_decoded(text)))
    }
    assert broken == {}
    ran = [  # what `$(id)` prints if a shell ever evaluated it
        rel
        for rel, text in _files(site, (*MARKUP_SUFFIXES, ".json"))
        if re.search(r"uid=\d+\(", text)
    ]
    assert ran == []


def test_json_files_hold_the_strings_as_json_strings(site: Path) -> None:
    broken: dict[str, list[str]] = {}
    for rel, text in _files(site, (".json",)):
        doc = json.loads(text)  # every JSON file still parses
        bad = [b for s in _strings(doc) for b in _intact(s)]
        if bad:
            broken[rel] = bad
    assert broken == {}


@pytest.mark.parametrize("field", sorted(ON_PAGES))
def test_field_reaches_its_page_escaped(site: Path, field: str) -> None:
    found = sorted(site.glob(ON_PAGES[field]))
    assert found, ON_PAGES[field]
    raw = "".join(p.read_text(encoding="utf-8") for p in found)
    shown = [form for form in _forms(field) if form in _decoded(raw)]
    assert shown, f"{field} is not shown on {ON_PAGES[field]}"
    assert shown[0] not in raw  # present only in an escaped form


@pytest.mark.parametrize("field", sorted(IN_API))
def test_field_reaches_the_api_as_a_json_string(site: Path, field: str) -> None:
    doc = json.loads((site / IN_API[field]).read_text(encoding="utf-8"))
    assert he.injected(field) in set(_strings(doc))


def test_evidence_link_leaving_the_repository_is_not_published(tmp_path: Path) -> None:
    secret = tmp_path / "secret" / "token.txt"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET-TOKEN of the build machine\n", encoding="utf-8")
    repo = tmp_path / "repo"
    build_case(he.HOSTILE / "evidence-control-verified", repo)
    link = repo / "evidence" / "h100-eks-ubuntu-training" / "x" / "leak.sigstore.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(secret)
    # the verified control evidence too, so the build has a counted run besides the link
    (repo / "catalog" / "evidence").rename(repo / "evidence" / "control")
    result = _run(
        repo, "build", "--catalog", "catalog", "--evidence", "evidence", "--trust-root", ROOT,
        "--no-bundles", "--no-cache", "--jobs", "1", "-o", "site",
    )  # fmt: skip
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    published = [
        p.relative_to(repo / "site").as_posix()
        for p in (repo / "site").rglob("*")
        if p.is_file() and b"TOP-SECRET-TOKEN" in p.read_bytes()
    ]
    assert published == []


def test_upstream_recipe_name_is_not_live_markup(tmp_path: Path) -> None:
    build_case(he.HOSTILE / he.UPSTREAM_NAME_CASE, tmp_path)
    site = _build(tmp_path, "catalog/evidence")
    assert any("XSS-upstream-recipe-name" in text for _, text in _files(site, (".html",)))
    found = [
        (rel, live) for rel, text in _files(site, MARKUP_SUFFIXES) for live in LIVE if live in text
    ]
    assert found == []


def test_evidence_ids_and_anchors_are_unique(site: Path) -> None:
    entries = list(published_runs(site))
    assert len(entries) == 2
    assert len({e["id"] for e in entries}) == 2
    assert len({e["url"] for e in entries}) == 2
    page = (site / "evidence/h100-eks-ubuntu-training.html").read_text(encoding="utf-8")
    anchors = re.findall(r'id="(run-[^"]+)"', page)
    assert len(anchors) == len(set(anchors)) == 2


def _bundle_cases() -> list[he.Case]:
    """Evidence cases that are plain files (no link, pipe or generated file), which verify or
    are rejected without a recorded bug, and are not about other commands."""
    return [
        c
        for c in he.cases()
        if c.name.startswith("evidence-")
        and not (c.symlinks or c.fifos or c.generate)
        and c.command == he.VERIFY
        and not (he.HOSTILE / c.name / "bug.txt").exists()
    ]


def test_site_builds_with_every_hostile_bundle(tmp_path: Path) -> None:
    """All hostile bundles in one evidence tree: the build succeeds and publishes one record per
    file with the same status and class as `evidence verify` gives it."""
    build_case(he.HOSTILE / "evidence-control-verified", tmp_path)
    evidence = tmp_path / "catalog" / "evidence"
    for case in _bundle_cases():
        for rel, data in case.files.items():
            # at the case's own evidence/ path (the path check is exact below the root); a name
            # another case already uses with other bytes goes under the case's name instead
            target = evidence / rel.removeprefix("evidence/")
            if target.exists() and target.read_bytes() != data:
                target = evidence / case.name / rel.removeprefix("evidence/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    files = sorted(p for p in evidence.rglob("*.sigstore.json"))
    assert len(files) >= 15
    verify = _run(
        tmp_path, "evidence", "verify", "catalog/evidence", "--catalog", "catalog",
        "--trust-root", ROOT, "--format", "json",
    )  # fmt: skip
    assert verify.exit_code == 1, verify.output
    expected = {
        r["repositoryPath"].removeprefix("catalog/"): (r["state"], r["class"])
        for r in json.loads(verify.stdout)["results"]
    }
    site = _build(tmp_path, "catalog/evidence")
    published = list(published_runs(site))
    shown = {
        e["repositoryPath"]: ("rejected" if e["state"] == "rejected" else e["state"], e["class"])
        for e in published
    }
    assert shown == expected
    assert len(expected) == len(files)


def test_chart_strings_are_entity_escaped_for_plotly(site: Path) -> None:
    """A KPI id or unit from evidence reaches a chart's figure JSON with `<` as `&lt;`: plotly
    reads a subset of HTML (links among it) in every label, so the raw `<` must never reach it."""
    page = (site / "recipes" / "h100-eks-ubuntu-training.html").read_text(encoding="utf-8")
    figures = re.findall(r'<div class="aicr-chart"[^>]*data-chart><template>(.*?)</template>', page)
    strings = [s for f in figures for s in _strings(json.loads(f))]
    # the site's own markup in a chart title (a line break, a subtitle) is the only markup left
    own = re.compile(r"<br>|</?sub>")
    marked = [own.sub("", s) for s in strings if "XSS-kpi-" in s]
    assert marked, "the hostile KPI is not charted: this test would check nothing"
    assert all("<" not in s and "&lt;script&gt;" in s for s in marked), marked
