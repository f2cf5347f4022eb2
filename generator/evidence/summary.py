"""Verify an upstream AICR summary bundle (`aicr validate --emit-attestation`), offline.

A summary bundle is a directory (pushed to a registry as one gzip-tar layer):

    attestation.intoto.jsonl   the Sigstore bundle (DSSE, in-toto statement, predicate
                               https://aicr.run/recipe-evidence/v3); pushed bundles carry it as
                               an OCI referrer instead, whose statement subject is the artifact
    statement.intoto.json      the same statement, unsigned
    manifest.json              {schemaVersion, files: [{path, size, sha256, mediaType}]}
    recipe.yaml  snapshot.yaml  bom.cdx.json  ctrf/{deployment,performance,conformance}.json

`verify_summary` checks, in order, and stops at the first failure (each one names the file):

1. the Sigstore bundle, offline, exactly as this catalog's own evidence (trust root, SCT,
   transparency log, DSSE, signer policy) — `generator.evidence.verify.check_signature`;
2. the statement's subject is the pulled artifact (OCI manifest digest) or the recipe;
3. `manifest.json`: its sha256 and file count are the predicate's `manifest`; every file it lists
   is present with that size and sha256 (pre-committed `logs/` entries may be absent: they
   travel in the separate logs bundle); no other file is present;
4. the predicate: `recipe.digest` is upstream's digest of `recipe.yaml`
   (`generator.evidence.recipedigest`), the recipe name is a safe name, `bom.digest` is
   `bom.cdx.json`'s; every phase's `ctrfDigest` is its `ctrf/<phase>.json` and its
   passed/failed/skipped counts are that CTRF report's summary;
5. the CTRF reports: every test has a name and a CTRF status; the counts add up.

The accepted statement comes back with its phases replaced by the CTRF tests (one check per
test, per phase: this catalog's status model), `bundle_digest` set to the artifact digest, and a
sentence saying which lane it may count for (none: upstream evidence carries no scale lane).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from generator.evidence.model import CheckResult as Check
from generator.evidence.model import (
    FailureClass,
    SignerPolicy,
    Statement,
    TrustRoot,
)
from generator.evidence.recipedigest import DigestError, recipe_digest
from generator.evidence.statement import PHASES
from generator.evidence.verify import SignatureCheck, check_signature

ATTESTATION = "attestation.intoto.jsonl"
STATEMENT = "statement.intoto.json"
MANIFEST = "manifest.json"
RECIPE = "recipe.yaml"
BOM = "bom.cdx.json"
UNLISTED = {MANIFEST, STATEMENT, ATTESTATION}  # derived from the manifest, so not in it
CTRF_STATUSES = ("passed", "failed", "skipped", "pending", "other")
NO_LANE = (
    "no lane: upstream recipe-evidence carries no scale lane (no node count or lane criteria); "
    "it counts for the recipe's per-phase and per-check consensus only"
)


def _hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _prefixed(digest: Any) -> str:
    text = str(digest)
    return text if text.startswith("sha256:") else f"sha256:{text}"


class SummaryProblem(Exception):
    def __init__(self, klass: FailureClass, message: str) -> None:
        super().__init__(message)
        self.klass = klass
        self.message = message


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """What the bundle said: the signature check, and the statement rebuilt from CTRF, or a problem."""

    signature: SignatureCheck
    statement: Statement | None
    problem: tuple[FailureClass, str] | None
    lane_note: str = NO_LANE
    phase_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


def _bad(message: str) -> SummaryProblem:
    return SummaryProblem(FailureClass.BUNDLE_INVALID, message)


def check_manifest(files: Mapping[str, bytes], predicate: Mapping[str, Any]) -> dict[str, Any]:
    """Step 3; returns the manifest document."""
    raw = files.get(MANIFEST)
    if raw is None:
        raise _bad(f"{MANIFEST} is missing")
    ref = predicate.get("manifest")
    if not isinstance(ref, Mapping) or "digest" not in ref:
        raise _bad("predicate.manifest.digest is missing: nothing binds the files to the signature")
    if _prefixed(ref["digest"]) != f"sha256:{_hex(raw)}":
        raise _bad(f"{MANIFEST} is sha256:{_hex(raw)}, the signed predicate says {ref['digest']}")
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise _bad(f"{MANIFEST} is not JSON: {e}") from e
    listed = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(listed, list):
        raise _bad(f"{MANIFEST} has no files list")
    version = str(doc.get("schemaVersion", ""))
    if not version.startswith("1.0"):
        raise _bad(f"{MANIFEST} schemaVersion {version!r} is not supported (1.0.x)")
    if "fileCount" in ref and ref["fileCount"] != len(listed):
        raise _bad(f"{MANIFEST} lists {len(listed)} files, the predicate says {ref['fileCount']}")
    seen: set[str] = set()
    for i, entry in enumerate(listed):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise _bad(f"{MANIFEST} files[{i}] has no path")
        path = entry["path"]
        if path in seen:
            raise _bad(f"{MANIFEST} lists {path} twice")
        seen.add(path)
        data = files.get(path)
        if data is None:
            if path.startswith("logs/"):
                continue  # pre-committed log: travels in the logs bundle
            raise _bad(f"{path} is listed in {MANIFEST} but missing from the bundle")
        if entry.get("size") != len(data):
            raise _bad(f"{path} is {len(data)} bytes, {MANIFEST} says {entry.get('size')}")
        if _prefixed(entry.get("sha256", "")) != f"sha256:{_hex(data)}":
            raise _bad(f"{path} is sha256:{_hex(data)}, {MANIFEST} says {entry.get('sha256')}")
    extra = sorted(set(files) - seen - UNLISTED)
    if extra:
        raise _bad(f"{', '.join(extra)} not listed in {MANIFEST}: unbound content")
    return dict(doc)


def _ctrf_checks(phase: str, raw: bytes) -> tuple[tuple[Check, ...], dict[str, int]]:
    where = f"ctrf/{phase}.json"
    try:
        doc = json.loads(raw)
        results = doc["results"]
        tests = results["tests"]
        summary = results["summary"]
    except (ValueError, KeyError, TypeError) as e:
        raise _bad(f"{where} is not a CTRF report (results.tests, results.summary): {e}") from e
    if not isinstance(tests, list) or not isinstance(summary, dict):
        raise _bad(f"{where} is not a CTRF report")
    counts = dict.fromkeys(CTRF_STATUSES, 0)
    checks: list[Check] = []
    for i, t in enumerate(tests):
        if (
            not isinstance(t, dict)
            or not isinstance(t.get("name"), str)
            or t.get("status") not in CTRF_STATUSES
        ):
            raise _bad(
                f"{where} results.tests[{i}] needs a name and a CTRF status ({', '.join(CTRF_STATUSES)})"
            )
        counts[t["status"]] += 1
        message = str(t["message"]) if isinstance(t.get("message"), str) else ""
        checks.append(Check(name=t["name"], status=t["status"], message=message))
    for status in CTRF_STATUSES:
        if status in summary and summary[status] != counts[status]:
            raise _bad(
                f"{where} summary says {summary[status]} {status}, its tests say {counts[status]}"
            )
    if "tests" in summary and summary["tests"] != len(tests):
        raise _bad(f"{where} summary says {summary['tests']} tests, it lists {len(tests)}")
    return tuple(checks), counts


def check_predicate(
    files: Mapping[str, bytes], predicate_type: str, predicate: Mapping[str, Any]
) -> tuple[dict[str, tuple[Check, ...]], dict[str, dict[str, int]]]:
    """Step 4 and 5; returns the per-phase checks and counts."""
    recipe = files.get(RECIPE)
    if recipe is None:
        raise _bad(f"{RECIPE} is missing")
    try:
        digest = recipe_digest(recipe, predicate_type)
    except DigestError as e:
        raise _bad(f"{RECIPE}: {e}") from e
    signed = str(predicate["recipe"]["digest"]).removeprefix("sha256:")
    if digest != signed:
        raise _bad(
            f"{RECIPE} digests to {digest} (upstream's canonical form), the predicate says {signed}"
        )
    bom = predicate.get("bom")
    if isinstance(bom, Mapping) and bom.get("digest"):
        data = files.get(BOM)
        if data is None:
            raise _bad(f"{BOM} is missing but the predicate names one")
        if _prefixed(bom["digest"]) != f"sha256:{_hex(data)}":
            raise _bad(f"{BOM} is sha256:{_hex(data)}, the predicate says {bom['digest']}")
    phases: dict[str, tuple[Check, ...]] = {}
    counts: dict[str, dict[str, int]] = {}
    raw_phases = predicate.get("phases") or {}
    for name in sorted(raw_phases):
        if name not in PHASES:
            raise _bad(f"predicate phase {name!r} is not one of {', '.join(PHASES)}")
    for name in PHASES:
        if name not in raw_phases:
            continue
        entry = raw_phases[name]
        path = f"ctrf/{name}.json"
        data = files.get(path)
        if data is None:
            raise _bad(f"{path} is missing but the predicate records phase {name}")
        if _prefixed(entry.get("ctrfDigest", "")) != f"sha256:{_hex(data)}":
            raise _bad(
                f"{path} is sha256:{_hex(data)}, the predicate says {entry.get('ctrfDigest')}"
            )
        checks, c = _ctrf_checks(name, data)
        for status in ("passed", "failed", "skipped"):
            if int(entry.get(status, 0)) != c[status]:
                raise _bad(
                    f"predicate phase {name} says {entry.get(status, 0)} {status}, {path} says {c[status]}"
                )
        phases[name] = checks
        counts[name] = c
    stray = sorted(
        p
        for p in files
        if p.startswith("ctrf/") and p.removeprefix("ctrf/").removesuffix(".json") not in phases
    )
    if stray:
        raise _bad(f"{', '.join(stray)} not recorded in the predicate's phases")
    return phases, counts


def _verdict(phases: Mapping[str, tuple[Check, ...]]) -> tuple[str, tuple[str, ...]]:
    failed = [f"{p}: {c.name}" for p, cs in phases.items() for c in cs if c.status == "failed"]
    passed = any(c.status == "passed" for cs in phases.values() for c in cs)
    if failed:
        return "fail", tuple(f"failed {f}" for f in failed)
    if not passed:
        return "fail", ("no check passed",)
    return "pass", ()


def verify_summary(
    files: Mapping[str, bytes],
    signatures: Sequence[bytes],
    *,
    trust_roots: Sequence[TrustRoot],
    policy: SignerPolicy,
    artifact_digest: str | None = None,
) -> SummaryResult:
    """Steps 1-5 (module docstring). `signatures`: Sigstore bundles from the registry's referrers;
    when empty, the bundle's own attestation.intoto.jsonl is used."""
    candidates = list(signatures) or ([files[ATTESTATION]] if ATTESTATION in files else [])
    if not candidates:
        empty = SignatureCheck(
            FailureClass.MALFORMED_BUNDLE,
            "no Sigstore bundle: neither a referrer nor attestation.intoto.jsonl",
        )
        return SummaryResult(empty, None, (FailureClass.MALFORMED_BUNDLE, empty.message))
    sig = check_signature(candidates[0], trust_roots, policy)
    for other in candidates[1:]:
        if sig.klass is None:
            break
        sig = check_signature(other, trust_roots, policy)
    if sig.klass is not None:
        return SummaryResult(sig, None, (sig.klass, sig.message))
    if sig.statement is None:
        assert sig.statement_error is not None
        return SummaryResult(sig, None, sig.statement_error)
    st = sig.statement
    try:
        if not st.predicate_type.startswith("https://aicr.run/recipe-evidence/"):
            raise _bad(f"predicateType {st.predicate_type} is not upstream recipe evidence")
        subjects_ok = any(
            (
                artifact_digest is not None
                and d.get("sha256") == artifact_digest.removeprefix("sha256:")
            )
            or (
                name == f"recipe:{st.recipe}"
                and d.get("sha256") == st.recipe_digest.removeprefix("sha256:")
            )
            for name, d in st.subjects
        )
        if not subjects_ok:
            raise _bad(
                "the signed statement's subject is neither this artifact "
                f"({artifact_digest or 'not pulled'}) nor recipe:{st.recipe}"
            )
        check_manifest(files, st.predicate)
        phases, counts = check_predicate(files, st.predicate_type, st.predicate)
    except SummaryProblem as e:
        return SummaryResult(sig, st, (e.klass, e.message))
    verdict, reasons = _verdict(phases)
    statement = replace(
        st, phases=phases, verdict=verdict, reasons=reasons, bundle_digest=artifact_digest
    )
    return SummaryResult(sig, statement, None, NO_LANE, counts)
