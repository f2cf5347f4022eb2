"""One evidence record, one JSON form: `EvidenceView.to_json()` in the API, `evidence verify`
and `status`, and the schemas that describe it agree."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from generator import pipeline
from generator.commands.status import gather, status_document
from generator.site import stages
from generator.site.api import run_json

REPO = Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "catalog" / "schemas"
RECIPE, PROFILE = "gb300-eks-ubuntu-training-slurm", "nvl72-2304"


def _schema(rel: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((SCHEMAS / rel).read_text())
    return doc


def _without(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in keys}


def test_status_shows_each_run_as_the_api_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run and excluded file of `status --format json` (detail) is the API's record of
    that run, less the site's `url` and `raw`, plus how it counted; the repository's SAMPLE
    evidence for this recipe has counted runs, a stale run and an unallowlisted signer."""
    monkeypatch.chdir(REPO)
    status, evidence, lanes, root = gather(
        Path("catalog"), Path("evidence"), RECIPE, PROFILE, ("demo",)
    )
    doc = status_document(status, evidence, lanes, root, detail=True)
    (row,) = [r for r in doc["recipes"] if r["profile"] == PROFILE]
    counted = [run for lane in row["lanes"] for run in lane["runs"]]
    excluded = row["excludedEvidence"]
    assert len(counted) == 14 and {x["exclusion"] for x in excluded} == {"stale", "unallowlisted"}

    ran = pipeline.run(pipeline.Inputs(Path("catalog"), Path("evidence"), ("demo",), jobs=1))
    judged, _ = stages.judged(ran, Path("evidence"))
    api = {v.path: _without(run_json(v), "url", "raw") for v in judged.runs}
    for run in counted:
        assert _without(run, "effectiveVerdict", "downgraded") == api[run["repositoryPath"]]
        assert run["effectiveVerdict"] == run["verdict"] and run["downgraded"] is None
    for x in excluded:
        assert _without(x, "exclusion") == api[x["repositoryPath"]]
        assert not x["counted"] and x["reason"]


def _run_definition() -> dict[str, Any]:
    """The API's run, less what only the site knows (`url`, `raw`)."""
    run = copy.deepcopy(_schema("api/evidence.schema.json")["$defs"]["run"])
    for key in ("url", "raw"):
        del run["properties"][key]
        run["required"].remove(key)
    return run


# what another output may say more precisely than the API, and why
NARROWER = {
    "class": "evidence verify: only verification failure classes (status and the API may also "
    "carry an exclusion)",
    "repositoryPath": "outside the site, the path as found under the evidence directory given",
}


@pytest.mark.parametrize(
    ("schema", "definition", "extra"),
    [
        ("evidence-verification.schema.json", "result", {"currentDigest"}),
        ("status.schema.json", "run", {"effectiveVerdict", "downgraded"}),
        ("status.schema.json", "excluded", {"exclusion"}),
    ],
)
def test_every_schema_embeds_the_api_run(schema: str, definition: str, extra: set[str]) -> None:
    """Adding a field to the record means adding it to the API's `$defs/run` and to these;
    this fails until all agree."""
    api = _run_definition()
    other = _schema(schema)["$defs"][definition]
    assert other["additionalProperties"] is False
    assert set(other["required"]) == set(api["required"]) | extra
    assert set(other["properties"]) == set(api["properties"]) | extra
    for name, spec in api["properties"].items():
        if name not in NARROWER:
            assert other["properties"][name] == spec, f"{schema} $defs/{definition}: {name}"
