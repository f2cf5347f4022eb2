"""Reporters for verification results and statements: text for people, JSON for tools.

The JSON form of a verification run is described by
`catalog/schemas/evidence-verification.schema.json` (kind EvidenceVerification).
Output is deterministic: records in path order, sorted keys, times from the transparency log.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from generator.core.errors import printable
from generator.core.timeutil import rfc3339
from generator.evidence.model import (
    UPSTREAM_PREDICATE_TYPES,
    Evidence,
    RejectedEvidence,
    RunState,
    Statement,
    TrustRoot,
    VerifiedEvidence,
)
from generator.evidence.view import evidence_view

API_VERSION = "aicr.run/v1"
KIND = "EvidenceVerification"


def _time(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    return rfc3339(seconds)


def status(record: Evidence) -> str:
    """verified | stale | rejected."""
    return str(RunState.of(record))


def summary(records: Sequence[Evidence]) -> dict[str, int]:
    counts = {"verified": 0, "stale": 0, "rejected": 0, "sample": 0}
    for r in records:
        counts[status(r)] += 1
        if isinstance(r, VerifiedEvidence) and r.sample:
            counts["sample"] += 1
    return counts


def record_json(r: Evidence) -> dict[str, Any]:
    """One result (the schema's `$defs/result`): the evidence record as every JSON output shows
    it (`EvidenceView.to_json()`) and the current recipe digest the statement was compared with
    (null when it was not: the file did not verify, or no current recipe matched)."""
    current = r.current_digest if isinstance(r, VerifiedEvidence) else None
    return {**evidence_view(r, trust_root="").to_json(), "currentDigest": current}


def verification_json(records: Sequence[Evidence], roots: Sequence[TrustRoot]) -> str:
    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "trustRoots": [{"name": t.name, "sha256": t.sha256, "demo": t.demo} for t in roots],
        "summary": summary(records),
        "results": [record_json(r) for r in sorted(records, key=lambda r: r.path)],
    }
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n"


def record_text(r: Evidence) -> str:
    """One record for people, on one line (two when stale); every character printable."""
    if isinstance(r, RejectedEvidence):
        return printable(f"REJECTED {r.path}: {r.message} [{r.klass}]")
    st = r.statement
    what = f"recipe {st.recipe}"
    if st.scale_profile:
        what += f" @ {st.scale_profile}"
    if st.lane:
        what += f", lane {st.lane}"
    elif st.predicate_type in UPSTREAM_PREDICATE_TYPES:
        what += ", no lane (upstream recipe evidence has no node count)"
    if st.verdict:
        what += f", verdict {st.verdict}"
    who = f"{r.signer_label} ({r.signer_class}) {r.signer_identity} via {r.signer_issuer}"
    where = f"trust root {r.trust_root}, log index {r.log_index}"
    if r.integrated_time is not None:
        where += f" at {_time(r.integrated_time)}"
    flags = " [SAMPLE]" if r.sample else ""
    head = "STALE   " if r.stale else "VERIFIED"
    line = printable(f"{head} {r.path}: {what}; signed by {who}; {where}{flags}")
    if r.stale:
        line += f"\n         {printable(r.message)} [stale]"
    return line


def verification_text(records: Sequence[Evidence]) -> str:
    lines = [record_text(r) for r in sorted(records, key=lambda r: r.path)]
    c = summary(records)
    lines.append(
        f"{len(records)} file(s): {c['verified']} verified, {c['stale']} stale, "
        f"{c['rejected']} rejected ({c['sample']} sample)"
    )
    return "\n".join(lines) + "\n"


def statement_text(st: Statement) -> str:
    """A statement rendered for people: what was tested, where, and with which result."""
    out = [
        f"predicate type   {st.predicate_type}",
        f"recipe           {st.recipe}",
        f"recipe digest    {st.recipe_digest}",
    ]
    if st.scale_profile:
        version = f" {st.scale_profile_version}" if st.scale_profile_version else ""
        out.append(f"scale profile    {st.scale_profile}{version}")
    if st.lane:
        out.append(
            f"lane             {st.lane} ({st.lane_nodes} nodes, criteria {st.criteria_version})"
        )
    if st.observed_nodes is not None:
        out.append(f"observed         {st.observed_nodes} nodes, {st.observed_gpus} GPUs")
    if st.bundle_digest:
        out.append(f"bundle digest    {st.bundle_digest}")
    if st.attested_at:
        out.append(f"attested at      {st.attested_at}")
    if st.generator:
        out.append(f"generator        {st.generator}")
    if st.sample:
        out.append("sample           yes (sample/demo data: never released)")
    out.append(f"verdict          {st.verdict or '-'}")
    out.extend(f"  reason: {reason}" for reason in st.reasons)
    if st.component_versions:
        out.append("components")
        out.extend(f"  {name:<30} {v}" for name, v in st.component_versions.items())
    for phase, checks in st.phases.items():
        out.append(f"phase {phase}")
        for c in checks:
            targets = f" on {c.targets} target(s)" if c.targets is not None else ""
            message = f" — {c.message}" if c.message else ""
            out.append(f"  [{c.status}] {c.name}{targets}{message}")
    if st.kpis:
        out.append("KPIs")
        for k in st.kpis:
            state = k.status or "-"
            out.append(
                f"  [{state}] {k.id}: {k.value:g} {k.unit} (threshold {k.operator} {k.threshold:g})"
            )
    # one line each: statement text (names, reasons, messages, units) cannot add or rewrite lines
    return "\n".join(printable(line) for line in out) + "\n"
