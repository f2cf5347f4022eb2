"""Time, one policy: `SOURCE_DATE_EPOCH` and RFC 3339 text.

Every date the catalog writes is reproducible: it comes from the inputs (a statement's
attestedAt, a log's integrated time, a run's finishedAt) or from `SOURCE_DATE_EPOCH`
(reproducible-builds.org), never from the wall clock (the one exception, `snapshot`'s
`collected-at.txt`, records when a cluster was read).

- `source_date_epoch()`: the variable when set, as whole seconds; None when unset or blank (the
  caller says what its default is: 0 for an archive, the last commit for a build or a release,
  an error for a signature); anything but a non-negative integer is an error, never ignored.
- `rfc3339()`: `2026-12-02T11:00:00Z`, whole seconds in UTC with a `Z` (the only format the
  catalog writes; fractions of a second are dropped, not rounded).
- `parse_rfc3339(text)`: the one parser of a time read from an input (a statement's attestedAt,
  a pointer, a log): RFC 3339 `date-time` only, checked strictly: a real calendar date (no month
  13, no 30 February), hours 00-23, minutes and seconds 00-59 (a leap second `:60` is refused,
  as Python cannot represent it), an offset `Z` or `±HH:MM` within ±23:59, ASCII digits only.
  A text matching the schema's pattern but naming no real time raises `TimeError`; nothing
  downstream then meets a time it cannot order (which skipped the attested-after-logged rule
  and showed 2099 on the site). tests/test_timeutil.py holds the property tests and
  tests/test_architecture.py fails when code outside this module parses a time itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone

from generator.core import envvars
from generator.core.errors import CatalogError, UsageError

VARIABLE = "SOURCE_DATE_EPOCH"
RFC3339_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))",
    re.ASCII,
)


class TimeError(ValueError):
    """A time that is not a real RFC 3339 date-time; the message names what is wrong."""


def parse_rfc3339(text: str) -> datetime:
    """`text` (RFC 3339 `date-time`) as a time-zone-aware datetime; raises TimeError unless it
    is well formed and names a real instant (see the module's docstring)."""
    if not isinstance(text, str):
        raise TimeError(f"expected an RFC 3339 time as text, got {type(text).__name__}")
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise TimeError(f"{text[:40]!r} is not an RFC 3339 date-time (YYYY-MM-DDTHH:MM:SSZ)")
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    frac, zulu, sign, oh, om = m.group(7), m.group(8), m.group(9), m.group(10), m.group(11)
    if zulu:
        tz = UTC
    else:
        hours, minutes = int(oh), int(om)
        if hours > 23 or minutes > 59:
            raise TimeError(f"{text!r}: offset {sign}{oh}:{om} is outside -23:59..+23:59")
        delta = timedelta(hours=hours, minutes=minutes)
        tz = timezone(-delta if sign == "-" else delta)
    micro = int((frac[1:] + "000000")[:6]) if frac else 0
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
    except ValueError as e:
        raise TimeError(f"{text!r} is no real time: {e}") from e


def parse_epoch(raw: str, *, error: type[CatalogError] = UsageError) -> int:
    """`raw` (a SOURCE_DATE_EPOCH value) as seconds; raises `error` unless it is a non-negative
    integer in ASCII digits (`²` or `1e9` or `-5` are refused)."""
    text = raw.strip()
    if not (text.isascii() and text.isdigit()):
        raise error(f"{VARIABLE} must be a non-negative integer, got {raw!r}")
    return int(text)


def source_date_epoch(
    environ: Mapping[str, str] | None = None, *, error: type[CatalogError] = UsageError
) -> int | None:
    """SOURCE_DATE_EPOCH from `environ` (default: the process environment): None when unset or
    blank, else its seconds; a value that is not a non-negative integer raises `error` (the
    calling stage's error class, so the exit code is the stage's)."""
    raw = (envvars.get(VARIABLE) if environ is None else environ.get(VARIABLE)) or ""
    if not raw.strip():
        return None
    return parse_epoch(raw, error=error)


def rfc3339(when: int | float | datetime) -> str:
    """`when` (seconds since the epoch, or a time-zone-aware datetime) as RFC 3339 in UTC with
    whole seconds: `2026-12-02T11:00:00Z`."""
    if isinstance(when, datetime):
        if when.tzinfo is None:
            raise ValueError(f"rfc3339: {when!r} has no time zone")
        moment = when.astimezone(UTC)
    else:
        moment = datetime.fromtimestamp(when, UTC)
    return moment.strftime(RFC3339_FORMAT)


def midnight_rfc3339(date: str) -> str:
    """A `YYYY-MM-DD` date as the RFC 3339 time of its midnight UTC; a time (with a `T`) as
    it is (the Atom feed's <updated> needs a time; the changelog dates some entries by day)."""
    return date if "T" in date else f"{date}T00:00:00Z"


def now_rfc3339() -> str:
    """The wall clock, as `rfc3339` writes it: only for records of when something was observed."""
    return rfc3339(datetime.now(UTC))
