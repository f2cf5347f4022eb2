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
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime

from generator.core.errors import CatalogError, UsageError

VARIABLE = "SOURCE_DATE_EPOCH"
RFC3339_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


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
    env = os.environ if environ is None else environ
    raw = env.get(VARIABLE, "")
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
