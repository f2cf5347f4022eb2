"""The audit trail of each run: the signed statement it was judged from, as a file of its own,
and the commit that added its evidence file to the catalog.

`signed_statement(raw)` is the DSSE payload of a Sigstore bundle: the exact bytes the signature
covers (the in-toto statement with the run's raw results: checks, KPIs, observed counts, CTRF
tests where the lab attached them). The site publishes it beside the bundle for verified runs
only, so a reader downloads what was judged without decoding the bundle.

`evidence_added(evidence_dir, head)`: the commit and date that added each evidence file, from one
`git log` of the evidence directory up to `head` (`head_commit`: the checked-out commit, a field
of the build's options and so of its key); empty outside a git checkout.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from pathlib import Path

from generator.core import proc, safeio


def signed_statement(raw: bytes) -> bytes | None:
    """The payload a bundle's DSSE envelope signs, or None when `raw` holds none."""
    try:
        doc = json.loads(raw)
        envelope = doc.get("dsseEnvelope") if isinstance(doc, dict) else None
        payload = envelope.get("payload") if isinstance(envelope, dict) else None
        if not isinstance(payload, str):
            return None
        data = base64.b64decode(payload, validate=True)
        json.loads(data)  # a statement is JSON; anything else is not published as one
    except (ValueError, binascii.Error, RecursionError):
        return None
    return data


def vouched_statement(raw: bytes) -> bytes | None:
    """`signed_statement(raw)` for bytes it accepted already: the DSSE payload, without parsing
    it again only to check it is JSON. A run's `RawFile.statement` vouches for the bytes it
    names (`stages.raw_file` set it from `signed_statement` of the bytes verified, and
    `stages.read_raw` gives only bytes of the same sha256), so the check's answer is known.

    Reference: `signed_statement` (tests/test_audit_statement.py holds the two to one payload
    for every bundle the reference accepts). Measured on the 4,000 bundles of 200 x 4,000
    (one process, `time.process_time`, three interleaved runs each, load ~4): 0.202-0.209 ->
    0.098-0.103 CPU-s (the payloads' parse saved; about 0.5 s at 1,000 x 20,000)."""
    try:
        doc = json.loads(raw)
        envelope = doc.get("dsseEnvelope") if isinstance(doc, dict) else None
        payload = envelope.get("payload") if isinstance(envelope, dict) else None
        if not isinstance(payload, str):
            return None
        return base64.b64decode(payload, validate=True)
    except (ValueError, binascii.Error, RecursionError):
        return None


def statement_file(raw_file: str) -> str:
    """Where the site publishes a run's signed statement, beside its bundle."""
    return raw_file.removesuffix(".sigstore.json") + ".statement.json"


def head_commit(directory: Path) -> str:
    """The commit checked out in the repository holding `directory` (what `evidence_added` and
    the changelog's recipe dates read history up to, and so a field of the build's options and
    of its key: `evidence_head`, `catalog_head`); "" outside one."""
    if not safeio.is_dir(directory):
        return ""
    try:
        out = proc.git(directory, "rev-parse", "--verify", "-q", "HEAD", timeout=60)
    except proc.ProcError:  # no git, or it did not answer: no history
        return ""
    return out.text().strip() if out.ok else ""


def evidence_added(evidence_dir: Path, head: str) -> Mapping[str, tuple[str, str]]:
    """`evidence/<…>` path → (commit, YYYY-MM-DD) of the newest commit up to `head` that added
    the file (`head` from `head_commit`: `evidence_head`, a field of the build's options: the history read is
    the one the key names); empty when `head` is ""."""
    if not head or not safeio.is_dir(evidence_dir):
        return {}
    try:
        # --no-renames: a re-signed file (a new name, nearly the same bytes) is a rename to
        # git's detection, never an addition, and its run page said "not in the history"
        out = proc.git(evidence_dir.parent, "log", "--no-renames", "--diff-filter=A",
                       "--format=@%H %cs", "--name-only", "--relative", head, "--",
                       evidence_dir.name, timeout=60)  # fmt: skip
    except proc.ProcError:  # no git, or it did not answer: no dates
        return {}
    if not out.ok:
        return {}
    added: dict[str, tuple[str, str]] = {}
    commit = date = ""
    for line in out.text().splitlines():
        if line.startswith("@"):
            commit, _, date = line[1:].partition(" ")
        elif line and line not in added:
            added[line] = (commit, date)
    return added
