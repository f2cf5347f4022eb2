"""timeutil: one SOURCE_DATE_EPOCH policy and one RFC 3339 format for every stage."""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core.errors import RenderError, UsageError
from generator.core.timeutil import (
    TimeError,
    midnight_rfc3339,
    now_rfc3339,
    parse_epoch,
    parse_rfc3339,
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


# --- strict parsing: one parser, real calendar, offset range (issue 27, item 6) -------------


_PATTERN = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$"
)


@pytest.mark.parametrize(
    "text",
    ["2099-01-01T00:00:00+99:00", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
     "2026-12-02T24:00:00Z", "2026-12-02T11:60:00Z", "2026-12-02T11:00:60Z",
     "2026-12-02T11:00:00-24:00", "2026-12-02T11:00:00+05:60", "0000-01-01T00:00:00Z"],
)  # fmt: skip
def test_schema_shaped_times_that_name_no_real_time_are_refused(text: str) -> None:
    assert _PATTERN.match(text)
    with pytest.raises(TimeError):
        parse_rfc3339(text)


@settings(max_examples=400, deadline=None)
@given(
    st.integers(0, 9999), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99),
    st.integers(0, 99), st.integers(0, 99), st.sampled_from(["Z", "+", "-"]),
    st.integers(0, 99), st.integers(0, 99),
)  # fmt: skip
def test_parse_accepts_exactly_the_real_times(
    y: int, mo: int, d: int, h: int, mi: int, s: int, z: str, oh: int, om: int
) -> None:
    text = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}" + (
        "Z" if z == "Z" else f"{z}{oh:02d}:{om:02d}"
    )
    try:
        real = datetime(y, mo, d, h, mi, s)
    except ValueError:
        real = None
    ok = real is not None and (z == "Z" or (oh <= 23 and om <= 59))
    if ok:
        assert parse_rfc3339(text).replace(tzinfo=None) == real
    else:
        with pytest.raises(TimeError):
            parse_rfc3339(text)


def test_no_time_is_parsed_outside_timeutil() -> None:
    """Every time read from an input goes through `parse_rfc3339`: a new `fromisoformat`,
    `strptime` or `pd.to_datetime` elsewhere fails here. The one exception is listed."""
    root = Path(__file__).resolve().parents[1] / "generator"
    allowed = {
        # vectorised over attestedAt values every statement parse already checked with
        # parse_rfc3339 (evidence/statement.py), so `errors="coerce"` meets no bad time
        "aggregate_tables.py": 1,
    }
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == "core/timeutil.py":
            continue
        src = path.read_text(encoding="utf-8")
        n = len(re.findall(r"\b(fromisoformat|strptime|to_datetime)\(", src))
        if n:
            found[rel] = n
    assert found == allowed


def test_the_attested_after_logged_rule_fails_closed_on_an_unreal_time() -> None:
    from generator.evidence.judge import attested_after_logged

    assert attested_after_logged("2026-12-01T00:00:00Z", 1_900_000_000) is None
    assert attested_after_logged("2099-01-01T00:00:00Z", 1_800_000_000) is not None
    for bad in ("2099-01-01T00:00:00+99:00", "2026-13-01T00:00:00Z", "yesterday"):
        reason = attested_after_logged(bad, 1_800_000_000)
        assert reason is not None and reason.startswith("attested-after-logged: "), bad
