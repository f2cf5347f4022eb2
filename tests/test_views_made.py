"""Each run's view made at once (`RunStatus.judged_view`, `view.made_view`, rows and outcomes
shared through `RowShare`, the raw file's statement flag vouched for by the record's digest:
`stages.holds_statement`) against its reference: `evidence_view`, judged by the run
(`RunStatus.judged`: `with_outcome` or `as_signed`), then `stages.shared`
(`stages.views_reference`). The same views field by field and in their published form (a
KPI's zeros by sign, a check's targets by type), and rows shared as the reference shares
them, over a synthetic tree (passing, failing, undersized, stale and unlisted runs), the
repository's sample evidence (upstream recipe-evidence, demo root) and a tree with a stale
and an unreadable file."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from generator.aggregate import aggregate
from generator.bench.synth import SynthOptions, synthesize
from generator.core.cache import Cache
from generator.core.memo import Memo
from generator.core.records import RecipeResult
from generator.evidence.model import Evidence
from generator.evidence.view import CheckRow, EvidenceView, KpiRow, RowShare, evidence_view
from generator.pipeline import Inputs, Outcome, run
from generator.site import stages
from generator.site.audit import signed_statement
from tests.conftest import CATALOG, REPO
from tests.test_aggregate import LADDERS, LANES
from tests.test_aggregate_differential import catalogs


def _published(row: CheckRow | KpiRow) -> str:
    return json.dumps(row.to_json())  # -0.0 and 0.0, 5 and 5.0 written apart


def assert_made_as_reference(outcome: Outcome, evidence: Path) -> None:
    """The views `stages.judged` makes (no cache) are the reference's, view for view."""
    judged, _ = stages.judged(outcome, evidence)
    made = judged.runs
    want = stages._sorted_runs(
        stages.views_reference(outcome, evidence, range(len(outcome.records)))
    )
    assert len(made) == len(want)
    for a, b in zip(made, want, strict=True):
        _same(a, b)


def _same(a: EvidenceView, b: EvidenceView) -> None:
    for f in dataclasses.fields(a):
        assert getattr(a, f.name) == getattr(b, f.name), f.name
        assert type(getattr(a, f.name)) is type(getattr(b, f.name)), f.name
    assert json.dumps(a.to_json()) == json.dumps(b.to_json()) and repr(a) == repr(b)
    for x, y in zip((*a.checks, *a.kpis), (*b.checks, *b.kpis), strict=True):
        assert _published(x) == _published(y)
        assert stages._exact(x) == stages._exact(y)


def _distinct(views: Sequence[EvidenceView]) -> tuple[int, int]:
    """How many row objects and outcome objects the views hold (sharing, not values)."""
    rows = {id(r) for v in views for r in (*v.checks, *v.kpis)}
    outcomes = {id(v.outcome) for v in views} | {
        id(r.outcome) for v in views for r in (*v.checks, *v.kpis)
    }
    return len(rows), len(outcomes)


def _each_recipe_as_reference(outcome: Outcome, evidence: Path, tmp_path: Path) -> None:
    """With a cache, each recipe's views (made with one `RowShare` each) equal the reference's
    for that recipe, and hold as many row and outcome objects as its `shared` holds."""
    cache = Cache(tmp_path / "cache")
    judged, _ = stages.judged(outcome, evidence, cache)
    assert judged.made == len(outcome.records)
    made = {v.path: v for v in judged.runs}
    for share in outcome.shares:
        want = stages.views_reference(outcome, evidence, share.positions)
        got = tuple(made[outcome.records.path(i)] for i in share.positions)
        for a, b in zip(got, want, strict=True):
            _same(a, b)
        assert _distinct(got) == _distinct(want)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Outcome, Path]:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(6, 90, seed=11, jobs=1), out)
    inputs = Inputs(out / "catalog", out / "evidence", (str(out / "trust/synth-root.json"),))
    return run(inputs, Memo(Cache(out / "pipeline-cache"))), out / "evidence"


def test_synthetic_views_are_the_reference(synthetic: tuple[Outcome, Path], tmp_path: Path) -> None:
    outcome, evidence = synthetic
    states = {r.state for r in stages.judged(outcome, evidence)[0].runs}
    assert {"verified", "stale"} <= states  # the kinds the tree holds
    assert_made_as_reference(outcome, evidence)
    _each_recipe_as_reference(outcome, evidence, tmp_path)


def test_the_sample_evidence_views_are_the_reference(tmp_path: Path) -> None:
    inputs = Inputs(CATALOG, REPO / "evidence", ("demo",), jobs=1)
    outcome = run(inputs, Memo(Cache(tmp_path / "pipeline-cache")))
    assert outcome.records
    assert_made_as_reference(outcome, REPO / "evidence")
    _each_recipe_as_reference(outcome, REPO / "evidence", tmp_path)


def test_stale_and_rejected_views_are_the_reference(
    synthetic: tuple[Outcome, Path], tmp_path: Path
) -> None:
    """A copy of the sample evidence with an unreadable file and a file moved under another
    recipe (rejected: its path does not name its statement's recipe)."""
    evidence = tmp_path / "evidence"
    shutil.copytree(REPO / "evidence", evidence)
    bundles = sorted(evidence.rglob("*.sigstore.json"))
    assert len(bundles) >= 2
    (bundles[0].parent / "junk.sigstore.json").write_text("[]")
    elsewhere = sorted(p for p in evidence.iterdir() if p.is_dir() and p != bundles[0].parents[1])
    if elsewhere:
        target = elsewhere[0] / bundles[1].relative_to(bundles[1].parents[1])
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(bundles[1], target)
    outcome = run(Inputs(CATALOG, evidence, ("demo",), jobs=1))
    states = {r.state for r in stages.judged(outcome, evidence)[0].runs}
    assert "rejected" in states
    assert_made_as_reference(outcome, evidence)


# --- random runs, as the aggregate differential test draws them ---------------------------------


@st.composite
def _alike_apart(draw: st.DrawFn, e: Evidence) -> Evidence:
    """`e` with some KPI values and thresholds zeros of either sign and some check targets of
    another type (equal values that the published form writes apart)."""
    stmt = e.statement
    if stmt is None or not draw(st.booleans()):
        return e
    zero = st.sampled_from([0.0, -0.0, 1.0])
    kpis = tuple(dataclasses.replace(k, value=draw(zero), threshold=draw(zero)) for k in stmt.kpis)
    phases = {
        name: tuple(
            dataclasses.replace(
                c, targets=draw(st.sampled_from([c.targets, 1, 1.0, True, 0, 0.0, -0.0]))
            )
            for c in checks
        )
        for name, checks in stmt.phases.items()
    }
    return dataclasses.replace(e, statement=dataclasses.replace(stmt, kpis=kpis, phases=phases))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs(), st.data())
def test_random_runs_are_made_as_the_reference(
    catalog: tuple[list[RecipeResult], list[Evidence], dict[str, Any]], data: st.DataObject
) -> None:
    rs, evidence, options = catalog
    evidence = [data.draw(_alike_apart(e)) for e in evidence]
    status = aggregate(rs, evidence, LANES, LADDERS, **options)
    share = RowShare()
    got = tuple(r.judged_view(evidence[r.index], "t", None, share) for r in status.runs)
    want = stages.shared(
        tuple(r.judged(evidence_view(evidence[r.index], trust_root="t")) for r in status.runs)
    )
    for a, b in zip(got, want, strict=True):
        _same(a, b)
    assert _distinct(got) == _distinct(want)


# --- whether a raw file holds a signed statement, vouched for by the record's digest ------------

_PAYLOADS = st.sampled_from(
    [b'{"_type": "x", "n": 1}', b"[1, 2]", b"not json", b"", b'{"a": NaN}', b"\xff\xfe", b"{}"]
)


@st.composite
def _bundles(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A raw file (bytes) and the payload it was made around, its envelope drawn well and
    badly formed: standard, URL-safe, unpadded or broken base64, a payload that is not a
    string, no envelope, not an object, not JSON."""
    payload = draw(_PAYLOADS)
    text = base64.b64encode(payload).decode()
    form = draw(st.sampled_from(["plain", "urlsafe", "unpadded", "spaced", "number", "none"]))
    value: object = {
        "plain": text,
        "urlsafe": base64.urlsafe_b64encode(payload + b"\xfb\xff").decode(),
        "unpadded": text.rstrip("="),
        "spaced": text[:2] + " " + text[2:],
        "number": 7,
        "none": None,
    }[form]
    doc: object = {"mediaType": "m", "dsseEnvelope": {"payload": value, "payloadType": "t"}}
    shape = draw(st.sampled_from(["bundle", "bundle", "list", "no envelope", "not json"]))
    if shape == "list":
        doc = [doc]
    elif shape == "no envelope":
        doc = {"dsseEnvelope": [value]}
    raw = b"{not json" if shape == "not json" else json.dumps(doc).encode()
    return raw, payload


@settings(max_examples=300, deadline=None)
@given(_bundles(), st.sampled_from(["right", "wrong", "none"]))
def test_a_vouched_payload_holds_a_statement_as_signed_statement_says(
    bundle: tuple[bytes, bytes], vouch: str
) -> None:
    raw, payload = bundle
    try:
        json.loads(payload)
    except ValueError:
        assume(vouch != "right")  # a record's digest vouches only for a payload read as JSON
    digest = "sha256:" + hashlib.sha256(payload).hexdigest()
    vouched = {"right": digest, "wrong": "sha256:" + "0" * 64, "none": ""}[vouch]
    want = signed_statement(raw) is not None
    assert stages.holds_statement(raw, vouched) == want
