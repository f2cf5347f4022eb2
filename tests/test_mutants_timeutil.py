"""The time policy (`generator/core/timeutil.py`), pinned for `make mutation` (issue 32).

What `parse_rfc3339` returns for a real time (offset sign and size, fractions of a second
truncated to microseconds), the exact edges of the offset range, the refusal of text that is no
time at all (as `TimeError`, never another exception), and `source_date_epoch` reading the
process environment when given none.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from generator.core.timeutil import TimeError, parse_epoch, parse_rfc3339, source_date_epoch


def test_the_offset_keeps_its_sign_and_size() -> None:
    east = parse_rfc3339("2026-12-02T11:00:00+05:30")
    west = parse_rfc3339("2026-12-02T11:00:00-05:30")
    assert east.utcoffset() == timedelta(hours=5, minutes=30)
    assert west.utcoffset() == -timedelta(hours=5, minutes=30)
    assert west - east == timedelta(hours=11)
    assert parse_rfc3339("2026-12-02T11:00:00Z").tzinfo is UTC
    assert parse_rfc3339("2026-12-02t11:00:00z") == datetime(2026, 12, 2, 11, tzinfo=UTC)


@pytest.mark.parametrize("offset", ["+23:59", "-23:59", "+23:00", "+00:59", "-00:00"])
def test_the_offset_range_ends_at_23_59(offset: str) -> None:
    sign = -1 if offset[0] == "-" else 1
    hours, minutes = int(offset[1:3]), int(offset[4:6])
    got = parse_rfc3339(f"2026-12-02T11:00:00{offset}")
    assert got.utcoffset() == sign * timedelta(hours=hours, minutes=minutes)


@pytest.mark.parametrize("offset", ["+24:00", "-24:00", "+00:60", "+24:60", "+23:60", "-99:00"])
def test_an_offset_past_23_59_is_refused(offset: str) -> None:
    with pytest.raises(TimeError, match="outside -23:59"):
        parse_rfc3339(f"2026-12-02T11:00:00{offset}")


@pytest.mark.parametrize(
    ("fraction", "micro"),
    [("", 0), (".5", 500_000), (".000001", 1), (".1234567", 123_456), (".999999999", 999_999)],
)
def test_fractions_are_truncated_to_microseconds(fraction: str, micro: int) -> None:
    got = parse_rfc3339(f"2026-12-02T11:00:05{fraction}Z")
    assert got == datetime(2026, 12, 2, 11, 0, 5, micro, tzinfo=UTC)


@pytest.mark.parametrize(
    "text", ["yesterday", "", "2026-12-02", "2026-12-02T11:00:00", "2026-12-02 11:00:00Z"]
)
def test_text_that_is_no_date_time_is_a_time_error(text: str) -> None:
    with pytest.raises(TimeError, match="is not an RFC 3339 date-time"):
        parse_rfc3339(text)


@pytest.mark.parametrize("value", [1767225600, None, b"2026-12-02T11:00:00Z"])
def test_a_value_that_is_not_text_is_a_time_error(value: object) -> None:
    with pytest.raises(TimeError, match="as text, got"):
        parse_rfc3339(value)  # type: ignore[arg-type]


def test_a_calendar_error_is_a_time_error() -> None:
    with pytest.raises(TimeError, match="is no real time"):
        parse_rfc3339("2026-02-29T00:00:00Z")
    assert parse_rfc3339("2028-02-29T00:00:00+01:00") == datetime(
        2028, 2, 29, tzinfo=timezone(timedelta(hours=1))
    )


def test_source_date_epoch_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    assert source_date_epoch() == 1767225600
    assert source_date_epoch({}) is None
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert source_date_epoch() is None
    assert source_date_epoch({"SOURCE_DATE_EPOCH": "7"}) == 7


def test_parse_epoch_keeps_the_digits() -> None:
    assert parse_epoch(" 42 ") == 42
    assert parse_epoch("0") == 0
