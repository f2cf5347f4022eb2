"""Issue #16: each numbered attack, crafted with the committed demo keys as anyone could.

Every scenario signs its statements with the demo authority (`catalog/trust/demo`), places them
where they belong in a copy of the repository's catalog, and reads the outcome three ways that
must agree: `status` (`generator.commands.status.gather` + `status_document`), the site's data
(`generator.site.stages.verify_evidence` + `aggregate`, what `build` and `release` publish), and
the rule `release` applies to the site's evidence records (no counted sample evidence).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from generator import pipeline
from generator.aggregate import RunStatus
from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.cli import main
from generator.commands.status import gather, status_document
from generator.evidence.sign import DEMO_IDENTITY, DEMO_ISSUER, demo_authority
from generator.evidence.statement import build_statement
from generator.evidence.store import evidence_path
from generator.evidence.trustroot import load_trust_root
from generator.scale.qualify import lanes_of
from generator.site import stages
from tests import evidence_fixtures as fx
from tests.conftest import CATALOG

RECIPE, PROFILE, LANE = "gb300-eks-ubuntu-training-slurm", "nvl72-2304", "lane-36"
GH = "https://token.actions.githubusercontent.com"
FIRST_PARTY_CI = (
    "https://github.com/NVIDIA/aicr-catalog/.github/workflows/qualify.yml@refs/heads/main"
)
DEMO_ROOT_PATH = "catalog/trust/demo/trusted_root.json"
LOGGED = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
VERIFICATION_SCHEMA = json.loads(
    (CATALOG / "schemas" / "evidence-verification.schema.json").read_text()
)


@dataclass(frozen=True)
class Signed:
    payload: bytes
    identity: str = DEMO_IDENTITY
    issuer: str = DEMO_ISSUER
    signed_at: datetime = LOGGED


@pytest.fixture(scope="module")
def honest() -> dict[str, Any]:
    """What an honest signer signs for a lane-36 pass of RECIPE × PROFILE (qualify's own)."""
    catalog, _ = load_catalog(CATALOG)
    recipe = resolve(catalog, RECIPE, profile=PROFILE)
    return fx.passing_predicate(recipe, lanes_of(catalog.documents), LANE)


def _predicate(honest: dict[str, Any], **changes: Any) -> dict[str, Any]:
    pred = json.loads(json.dumps(honest))
    pred.update(changes)
    return pred


@dataclass
class Outcome:
    status: dict[str, Any]  # the status document's row for RECIPE × PROFILE (detail)
    runs: dict[str, Any]  # status runs table rows by path
    site: dict[str, Any]  # site EvidenceView by path
    site_lane: str  # the site's verdict for LANE
    sample: bool  # the status document says sample


def _repo(tmp_path: Path, signers: str | None = None) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(CATALOG, repo / "catalog", ignore=shutil.ignore_patterns("baselines"))
    if signers is not None:
        (repo / "catalog" / "signers.yaml").write_text(signers)
    (repo / "evidence").mkdir()
    return repo


def _place(repo: Path, items: list[Signed]) -> list[str]:
    authority = demo_authority(CATALOG)
    paths = []
    for item in items:
        recipe = json.loads(item.payload)["predicate"]["recipe"]["name"]
        rel = evidence_path(recipe, item.issuer, item.identity, item.payload)
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(
            fx.sign(
                authority,
                item.payload,
                identity=item.identity,
                issuer=item.issuer,
                signed_at=item.signed_at,
            )
        )
        paths.append(rel)
    return paths


def _row(run: RunStatus) -> dict[str, Any]:
    """A run record in the words of the runs table ("class"; exclusion "" when counted)."""
    row = dataclasses.asdict(run)
    row["class"] = row.pop("failure_class")
    row["exclusion"] = str(run.exclusion or "")
    return row


def _outcome(repo: Path, trust: str, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    monkeypatch.chdir(repo)
    status, evidence, lanes, root = gather(
        Path("catalog"), Path("evidence"), RECIPE, PROFILE, (trust,)
    )
    doc = status_document(status, evidence, lanes, root, detail=True)
    (row,) = [r for r in doc["recipes"] if r["profile"] == PROFILE]
    runs = {r.path: _row(r) for r in status.runs}
    # what `build` publishes: the pipeline over every recipe, as the site projects it
    ran = pipeline.run(pipeline.Inputs(Path("catalog"), Path("evidence"), (trust,), jobs=1))
    judged, _ = stages.judged(ran, Path("evidence"))
    site = {e.path: e for e in judged.runs}
    lanes_site = {ln.lane: ln.verdict for ln in judged.statuses[(RECIPE, PROFILE)].lanes}
    outcome = Outcome(row, runs, site, lanes_site.get(LANE, ""), bool(doc["sample"]))
    _agree(outcome)
    return outcome


def _agree(o: Outcome) -> None:
    """status, the site and release say the same thing about every file and the lane."""
    assert sorted(o.runs) == sorted(o.site)
    for path, run in o.runs.items():
        site = o.site[path]
        assert bool(run["counted"]) == site.counted, (path, run["exclusion"], site.state)
        if run["exclusion"] in ("verdict-mismatch", "attested-after-logged"):
            assert site.reason == run["downgraded"] and run["downgraded"].startswith(
                run["exclusion"]
            )
        # release refuses a site whose counted evidence is sample: the same records
        assert site.sample == bool(run["sample"]) or not site.counted
    (lane,) = [ln for ln in o.status["lanes"] if ln["lane"] == LANE]
    assert lane["qualified"] == (o.site_lane == "pass"), (lane, o.site_lane)


def _verify_cli(trust: str) -> tuple[int, dict[str, Any]]:
    """`evidence verify --format json` in the current directory (the scenario's repository)."""
    args = ["evidence", "verify", "evidence", "--trust-root", trust, "--catalog", "catalog"]
    result = CliRunner().invoke(main, [*args, "--format", "json"])
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, VERIFICATION_SCHEMA)
    return result.exit_code, {r["repositoryPath"]: r for r in doc["results"]}


def _lane(o: Outcome) -> dict[str, Any]:
    (lane,) = [ln for ln in o.status["lanes"] if ln["lane"] == LANE]
    return dict(lane)


# ---------------------------------------------------------------- 1: the demo root by path


def _demo_root(tmp_path: Path, repo: Path, spelling: str) -> str:
    """The demo root spelled as a path, a link or a copy (never `demo`)."""
    if spelling == "link":
        (tmp_path / "root-link.json").symlink_to(repo / DEMO_ROOT_PATH)
        return str(tmp_path / "root-link.json")
    if spelling == "copy":
        shutil.copy(repo / DEMO_ROOT_PATH, tmp_path / "root-copy.json")
        return str(tmp_path / "root-copy.json")
    return DEMO_ROOT_PATH


@pytest.mark.parametrize("spelling", ["path", "link", "copy"])
def test_1_the_demo_keys_cannot_sign_as_a_real_signer_however_the_root_is_given(
    honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    """Evidence signed with the public demo keys as the first-party CI identity, verified with
    the demo root spelled as a path, a link or a copy: the root is the demo root, under which
    only signers bound to it apply, so the forgery is not allowed anywhere."""
    repo = _repo(tmp_path)
    payload = build_statement(_predicate(honest, sample=False))
    (path,) = _place(repo, [Signed(payload, identity=FIRST_PARTY_CI, issuer=GH)])
    trust = _demo_root(tmp_path, repo, spelling)
    o = _outcome(repo, trust, monkeypatch)
    run = o.runs[path]
    assert (run["exclusion"], run["class"]) == ("unallowlisted", "signer-not-allowed")
    assert (_lane(o)["state"], o.site[path].counted) == ("UNTESTED", False)
    code, results = _verify_cli(trust)
    assert code == 1 and results[path]["class"] == "signer-not-allowed"
    assert "AICR catalog scale qualification CI" not in results[path]["reason"]


@pytest.mark.parametrize("spelling", ["path", "link", "copy"])
def test_1_evidence_the_demo_root_verifies_is_sample_however_the_root_is_given(
    honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    """A demo signer's run, claiming not to be sample, under the demo root given by path: it is
    SAMPLE in status, the site and `evidence verify`, and release refuses to count it."""
    repo = _repo(tmp_path)
    payload = build_statement(_predicate(honest, sample=False))
    (path,) = _place(repo, [Signed(payload)])
    trust = _demo_root(tmp_path, repo, spelling)
    o = _outcome(repo, trust, monkeypatch)
    assert o.sample is True and o.status["sample"] is True
    assert (o.runs[path]["counted"], o.runs[path]["sample"]) == (True, True)
    site = o.site[path]
    # counted and sample: release's manifest step refuses exactly this record
    assert (site.trust_root, site.sample, site.counted) == ("demo", True, True)
    code, results = _verify_cli(trust)
    assert (code, results[path]["sample"], results[path]["trustRoot"]) == (0, True, "demo")
    assert load_trust_root(trust).demo is True


# ---------------------------------------------------------------- 2: one entry, two identities

ONE_ENTRY = f"""\
apiVersion: aicr.run/v1
kind: SignerPolicy
signers:
  - label: Demo lab, any workflow (sample)
    class: first-party
    issuer: {DEMO_ISSUER}
    identityPattern: ^https://github\\.com/aicr-demo/qualification-lab/\\.github/workflows/[a-z]+\\.yml@refs/(heads/main|tags/v1)$
    trustRoot: demo
"""


def test_2_one_allowlist_entry_is_one_signer(
    honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path, ONE_ENTRY)
    base = "https://github.com/aicr-demo/qualification-lab/.github/workflows/"
    payload = build_statement(honest)
    _place(
        repo,
        [
            Signed(payload, identity=base + "alpha.yml@refs/heads/main"),
            Signed(payload, identity=base + "beta.yml@refs/heads/main"),
            Signed(payload, identity=base + "alpha.yml@refs/tags/v1"),
        ],
    )
    o = _outcome(repo, "demo", monkeypatch)
    assert all(r["counted"] for r in o.runs.values()) and len(o.runs) == 3
    assert (o.status["signers"], _lane(o)["state"], _lane(o)["passed"]) == (1, "SINGLE", 1)
    assert {r["signer_label"] for r in o.runs.values()} == {"Demo lab, any workflow (sample)"}
    assert {e.signer_label for e in o.site.values()} == {"Demo lab, any workflow (sample)"}


# ---------------------------------------------------------------- 3: alternation widens a pattern

WIDENED = f"""\
apiVersion: aicr.run/v1
kind: SignerPolicy
signers:
  - label: AICR catalog scale qualification CI
    class: first-party
    issuer: {GH}
    identityPattern: '^https://github\\.com/NVIDIA/aicr-catalog/\\.github/workflows/qualify\\.yml@refs/heads/main$|^https://github\\.com/[b-z].*$'
"""


def test_3_an_alternation_that_widens_a_pattern_is_refused(
    honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path, WIDENED)
    payload = build_statement(honest)
    _place(repo, [Signed(payload, identity=FOREIGN_OWNER, issuer=GH)])
    monkeypatch.chdir(repo)
    runner = CliRunner()
    for args in (
        ["validate", "--catalog", "catalog"],
        ["evidence", "verify", "evidence", "--catalog", "catalog", "--trust-root", "demo"],
        ["status", RECIPE, "--catalog", "catalog", "--trust-root", "demo"],
    ):
        result = runner.invoke(main, args)
        text = result.stdout + result.stderr
        assert result.exit_code == 1, (args, text)
        assert "signers.yaml:7:5: $.signers[0].identityPattern:" in text
        assert "top-level alternation" in text and "[signers.over-broad]" in text


FOREIGN_OWNER = "https://github.com/evil/repo/.github/workflows/qualify.yml@refs/heads/main"


# ---------------------------------------------------------------- 4: signed verdicts believed


def test_4_a_kpi_far_outside_its_threshold_signed_as_passed_is_invalid(
    honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kpis = [dict(k) for k in honest["kpis"]]
    (install,) = [k for k in kpis if k["id"] == "install-to-gpu-ready"]
    install["value"] = 99999  # the lane's threshold is <= 1800; still signed "passed"
    repo = _repo(tmp_path)
    (path,) = _place(repo, [Signed(build_statement(_predicate(honest, kpis=kpis)))])
    o = _outcome(repo, "demo", monkeypatch)
    run = o.runs[path]
    assert (run["exclusion"], run["counted"]) == ("verdict-mismatch", False)
    assert "KPI install-to-gpu-ready: 99999 s is not <= 1800" in run["downgraded"]
    assert "KPI install-to-gpu-ready: signed passed, recomputed failed" in run["downgraded"]
    assert (_lane(o)["state"], _lane(o)["qualified"]) == ("UNTESTED", False)
    assert o.site[path].state == "rejected"
    assert o.site[path].failure_class == "verdict-mismatch"
    # `evidence verify` judges the claims against the catalog too
    code, results = _verify_cli("demo")
    assert code == 1
    assert (results[path]["state"], results[path]["class"]) == ("rejected", "verdict-mismatch")
    assert results[path]["reason"] == run["downgraded"]


def test_4_a_pass_with_a_failed_required_check_is_invalid(
    honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    phases = json.loads(json.dumps(honest["phases"]))
    phases["conformance"]["checks"][0]["status"] = "failed"
    name = phases["conformance"]["checks"][0]["name"]
    repo = _repo(tmp_path)
    (path,) = _place(repo, [Signed(build_statement(_predicate(honest, phases=phases)))])
    o = _outcome(repo, "demo", monkeypatch)
    assert o.runs[path]["exclusion"] == "verdict-mismatch"
    assert o.runs[path]["downgraded"].startswith(
        f"verdict-mismatch: signed verdict pass, recomputed fail: conformance/{name}: failed"
    )
    assert _lane(o)["qualified"] is False


def test_4_a_lowered_threshold_is_invalid_even_when_the_value_meets_the_lane(
    honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kpis = [dict(k) for k in honest["kpis"]]
    kpis[0] = {**kpis[0], "threshold": {"operator": "<=", "value": 10**6}}
    repo = _repo(tmp_path)
    (path,) = _place(repo, [Signed(build_statement(_predicate(honest, kpis=kpis)))])
    o = _outcome(repo, "demo", monkeypatch)
    assert o.runs[path]["exclusion"] == "verdict-mismatch"
    assert "signed threshold <= 1000000 is not the lane's" in o.runs[path]["downgraded"]


def test_the_honest_pass_counts(
    honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: the statement the attacks above alter is counted as it is."""
    repo = _repo(tmp_path)
    (path,) = _place(repo, [Signed(build_statement(honest))])
    o = _outcome(repo, "demo", monkeypatch)
    assert (o.runs[path]["exclusion"], o.runs[path]["effective"]) == ("", "pass")
    assert (_lane(o)["state"], _lane(o)["qualified"]) == ("SINGLE", True)


# ---------------------------------------------------------------- 5: a pass dated 2099


def _failing(honest: dict[str, Any], attested: str) -> dict[str, Any]:
    phases = json.loads(json.dumps(honest["phases"]))
    check = phases["conformance"]["checks"][0]
    check["status"] = "failed"
    reason = f"conformance/{check['name']}: failed"
    return _predicate(honest, phases=phases, verdict="fail", reasons=[reason], attestedAt=attested)


def test_5_a_pass_dated_2099_cannot_hide_a_later_failure(
    honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    future = build_statement(_predicate(honest, attestedAt="2099-01-01T00:00:00Z"))
    later = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    failure = build_statement(_failing(honest, "2026-12-01T10:00:00Z"))
    dated, failed = _place(
        repo, [Signed(future, signed_at=LOGGED), Signed(failure, signed_at=later)]
    )
    o = _outcome(repo, "demo", monkeypatch)
    assert o.runs[dated]["exclusion"] == "attested-after-logged"
    assert o.runs[dated]["downgraded"].startswith("attested-after-logged: attestedAt 2099-01-01")
    assert (o.runs[failed]["counted"], o.runs[failed]["latest"]) == (True, True)
    assert (_lane(o)["state"], _lane(o)["qualified"]) == ("FAILING", False)
    code, results = _verify_cli("demo")
    assert code == 1
    assert results[dated]["class"] == "attested-after-logged"
    assert results[dated]["reason"] == o.runs[dated]["downgraded"]
    assert (results[failed]["state"], results[failed]["class"]) == ("verified", None)


def test_5_the_latest_run_is_the_one_logged_last_not_the_one_dated_last(
    honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure backdated (attestedAt before the pass's) but logged after it is the latest."""
    repo = _repo(tmp_path)
    passed = build_statement(_predicate(honest, attestedAt="2026-11-30T10:00:00Z"))
    backdated = build_statement(_failing(honest, "2026-11-01T00:00:00Z"))
    later = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    first, second = _place(
        repo, [Signed(passed, signed_at=LOGGED), Signed(backdated, signed_at=later)]
    )
    o = _outcome(repo, "demo", monkeypatch)
    assert (o.runs[first]["latest"], o.runs[second]["latest"]) == (False, True)
    assert _lane(o)["state"] == "FAILING"


# ---------------------------------------------------------------- 6: numbers outside JSON


@pytest.mark.parametrize(
    ("field", "literal"),
    [
        ("kpi", "NaN"),
        ("kpi", "Infinity"),
        ("kpi", "-Infinity"),
        ("kpi", "1e999"),
        ("nodes", "1e308"),
    ],
)
def test_6_numbers_outside_json_are_rejected_and_never_published(
    honest: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    field: str,
    literal: str,
) -> None:
    pred = _predicate(honest)
    if field == "kpi":
        pred["kpis"] = [{**pred["kpis"][0], "value": 4242.125}, *pred["kpis"][1:]]
    else:
        pred["observed"] = {**pred["observed"], "nodes": 4242.125}
    raw = build_statement(pred)
    assert raw.count(b"4242.125") == 1
    payload = raw.replace(b"4242.125", literal.encode())
    repo = _repo(tmp_path)
    (path,) = _place(repo, [Signed(payload)])
    o = _outcome(repo, "demo", monkeypatch)
    run = o.runs[path]
    assert (run["exclusion"], run["class"]) == ("invalid", "predicate-schema")
    assert "number outside JSON's domain" in run["message"]
    site = o.site[path]
    assert (site.state, site.failure_class) == ("rejected", "predicate-schema")
    assert site.kpis == () and site.observed_nodes is None  # nothing of it reaches a page
