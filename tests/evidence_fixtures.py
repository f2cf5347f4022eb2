"""Builders for evidence tests: predicates, statements, a private trust root, signed files.

The trust root comes from `generator/evidence/testroot.py` (a local CA, CT log and transparency
log), so every bundle here is checked by the unmodified sigstore verifier.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from generator.evidence import testroot
from generator.evidence.model import (
    EvidenceFile,
    SignerClass,
    SignerPolicy,
    SignerRule,
)
from generator.evidence.statement import build_statement
from generator.evidence.store import evidence_path

ISSUER = "https://token.actions.githubusercontent.com"
IDENTITY = "https://github.com/example-lab/aicr-runs/.github/workflows/qualify.yml@refs/heads/main"
OTHER_IDENTITY = "https://github.com/intruder/fork/.github/workflows/qualify.yml@refs/heads/main"
RECIPE = "gb200-eks-ubuntu-training"
DIGEST = "sha256:" + "1" * 64
SIGNED_AT = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)

POLICY = SignerPolicy(
    rules=(
        SignerRule(
            label="Example lab",
            klass=SignerClass.PARTNER,
            issuer=ISSUER,
            identity=IDENTITY,
            identity_pattern=None,
        ),
    )
)

_PREDICATE: dict[str, Any] = {
    "recipe": {"name": RECIPE, "digest": DIGEST},
    "scaleProfile": {"name": "nvl72-2304", "version": "1.2.0"},
    "lane": {"name": "l144", "nodes": 144, "criteriaVersion": "1.0.0"},
    "observed": {"nodes": 144, "gpus": 576},
    "bundleDigest": "sha256:" + "b" * 64,
    "componentVersions": {"gpu-operator": "v25.3.0", "network-operator": "v25.4.0"},
    "phases": {
        "deployment": {"checks": [{"name": "operators-ready", "status": "passed", "targets": 144}]},
        "conformance": {"checks": [{"name": "dra-allocation", "status": "passed", "targets": 144}]},
        "performance": {
            "checks": [
                {"name": "nccl-all-reduce", "status": "failed", "targets": 144, "message": "low"}
            ]
        },
    },
    "kpis": [
        {
            "id": "nccl-busbw",
            "value": 350.5,
            "unit": "GB/s",
            "threshold": {"operator": ">=", "value": 380},
            "status": "failed",
        }
    ],
    "verdict": "fail",
    "reasons": ["kpi nccl-busbw 350.5 GB/s is not >= 380"],
    "attestedAt": "2026-11-30T10:00:00Z",
    "sample": False,
    "generator": {"name": "aicr-catalog", "version": "0.1.0"},
}


def predicate(**changes: Any) -> dict[str, Any]:
    """A valid scale-qualification predicate; keyword arguments replace top-level fields."""
    p = copy.deepcopy(_PREDICATE)
    p.update(changes)
    return p


def statement(pred: dict[str, Any] | None = None, **top: Any) -> bytes:
    """Canonical statement bytes; `top` overrides statement-level fields (e.g. predicateType)."""
    raw = build_statement(pred or predicate())
    if not top:
        return raw
    doc = json.loads(raw)
    doc.update(top)
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def make_authority(name: str = "test") -> testroot.Authority:
    return testroot.make_authority(name, f"tests {name}".encode())


def write_root(
    authority: testroot.Authority, directory: Path, name: str = "test-root.json"
) -> Path:
    path = directory / name
    path.write_bytes(testroot.trusted_root_json(authority))
    return path


def sign(
    authority: testroot.Authority,
    payload: bytes,
    *,
    identity: str = IDENTITY,
    issuer: str = ISSUER,
    **kw: Any,
) -> bytes:
    kw.setdefault("signed_at", SIGNED_AT)
    return testroot.sign_dsse(authority, payload, identity=identity, issuer=issuer, **kw)


def placed(
    bundle: bytes, payload: bytes, *, identity: str = IDENTITY, issuer: str = ISSUER
) -> EvidenceFile:
    """The bundle as a file at its proper evidence/ path."""
    recipe = json.loads(payload).get("predicate", {}).get("recipe", {}).get("name", RECIPE)
    return EvidenceFile(path=evidence_path(recipe, issuer, identity, payload), data=bundle)


def passing_predicate(
    recipe: Any, lanes: Any, lane_name: str, *, attested_at: str = "2026-11-30T10:00:00Z"
) -> dict[str, Any]:
    """The predicate `qualify` writes for a run that meets every criterion of the lane.

    `recipe` is a resolved `RecipeResult`, `lanes` the catalog's `Lanes`: the raw results are
    made to pass (every required scenario on the lane's nodes, every KPI at its threshold on
    enough targets, the observed counts of the lane, the recipe's pins running), then judged by
    `generator.scale.qualify.qualify` itself, so the statement is what an honest signer would sign.
    """
    from generator.scale.qualify import (
        BundleBinding,
        PreflightBinding,
        RawCheck,
        RawKpi,
        RunResults,
        qualify,
    )

    lane = lanes.lane(lane_name)
    assert lane is not None, lane_name
    phases: dict[str, list[Any]] = {phase: [] for phase in lane.phases}
    for s in lanes.required_scenarios(lane, recipe.criteria):
        phases[s.phase].append(RawCheck(s.id, "passed", lane.nodes))
    kpis = []
    for spec, threshold in lanes.required_kpis(lane, recipe.criteria):
        targets = lane.required_targets(spec.min_targets)
        if spec.measure == "ratio":
            kpis.append(RawKpi(spec.id, None, threshold.value, 1.0, spec.unit, targets))
        else:
            kpis.append(RawKpi(spec.id, threshold.value, None, None, spec.unit, targets))
    run = RunResults(
        phases={p: tuple(cs) for p, cs in phases.items()},
        kpis=tuple(kpis),
        measurements={
            lanes.observe_nodes: lane.nodes,
            lanes.observe_gpus_per_node: lanes.gpus_per_node,
        },
        bundle_digest="sha256:" + "b" * 64,
        component_versions={c.name: c.version for c in recipe.components if c.version},
        # an honest run is bound to a passing preflight of the same recipe on its own snapshot
        snapshot_digest="sha256:" + "5" * 64,
        preflight=PreflightBinding(
            digest="sha256:" + "f" * 64,
            recipe=recipe.name,
            recipe_digest=recipe.digest,
            profile=recipe.scale_profile,
            profile_version=recipe.scale_profile_version,
            exit_code=0,
            snapshot_digest="sha256:" + "5" * 64,
        ),
    )
    bundle = BundleBinding("sha256:" + "b" * 64, recipe.digest)
    result = qualify(
        lanes, lane_name, recipe, (lane_name,), run, bundle=bundle, attested_at=attested_at
    )
    assert result.verdict == "pass", result.reasons
    return dict(result.predicate)
