"""timeutil: one SOURCE_DATE_EPOCH policy and one RFC 3339 format for every stage."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from generator.core.errors import RenderError, UsageError
from generator.core.timeutil import (
    midnight_rfc3339,
    now_rfc3339,
    parse_epoch,
    rfc3339,
    source_date_epoch,
)

GENERATOR = Path(__file__).resolve().parent.parent / "generator"


def test_rfc3339_is_whole_seconds_utc_with_z() -> None:
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    assert rfc3339(1767225600) == "2026-01-01T00:00:00Z"
    assert rfc3339(1767225600.999) == "2026-01-01T00:00:00Z"  # dropped, not rounded
    assert rfc3339(datetime(2026, 12, 2, 11, 0, 5, 999_999, tzinfo=UTC)) == "2026-12-02T11:00:05Z"
    plus_two = timezone(timedelta(hours=2))
    assert rfc3339(datetime(2026, 12, 2, 13, 0, tzinfo=plus_two)) == "2026-12-02T11:00:00Z"
    assert now_rfc3339().endswith("Z") and len(now_rfc3339()) == 20


def test_rfc3339_refuses_a_naive_datetime() -> None:
    with pytest.raises(ValueError, match="no time zone"):
        rfc3339(datetime(2026, 1, 1))


def test_source_date_epoch_unset_blank_and_set() -> None:
    assert source_date_epoch({}) is None
    assert source_date_epoch({"SOURCE_DATE_EPOCH": "  "}) is None
    assert source_date_epoch({"SOURCE_DATE_EPOCH": "0"}) == 0
    assert source_date_epoch({"SOURCE_DATE_EPOCH": " 1767225600\n"}) == 1767225600


@pytest.mark.parametrize("raw", ["yesterday", "-5", "1e9", "1.5", "²", "١٢", "0x10"])
def test_source_date_epoch_refuses_anything_but_ascii_digits(raw: str) -> None:
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH must be a non-negative integer"):
        source_date_epoch({"SOURCE_DATE_EPOCH": raw})
    with pytest.raises(RenderError):  # the stage chooses its error class (and so its exit code)
        parse_epoch(raw, error=RenderError)


def test_no_other_module_formats_rfc3339_or_reads_source_date_epoch() -> None:
    """The one policy: no strftime of the RFC 3339 pattern and no read of the variable outside
    timeutil (string constants and docstrings may name it)."""
    offenders = []
    for path in sorted(GENERATOR.rglob("*.py")):
        if path.name == "timeutil.py":
            continue
        text = path.read_text("utf-8")
        if "%Y-%m-%dT" in text:
            offenders.append(f"{path.name}: RFC 3339 format")
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == "SOURCE_DATE_EPOCH"
            ):
                offenders.append(f"{path.name}:{node.lineno}: reads SOURCE_DATE_EPOCH")
    assert offenders == []


def test_midnight_rfc3339_of_a_date_and_a_time() -> None:
    assert midnight_rfc3339("2026-12-02") == "2026-12-02T00:00:00Z"
    assert midnight_rfc3339("2026-12-02T11:00:00Z") == "2026-12-02T11:00:00Z"
