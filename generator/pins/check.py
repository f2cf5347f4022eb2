"""Ask each pin's repository what it publishes and classify the pin.

Each Helm repository's index is fetched once per run and each OCI repository's tag list once,
however many pins point at it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from generator.pins import helm_index, oci
from generator.pins.http import Fetcher, FetchError
from generator.pins.model import (
    UNKNOWN_QUALIFICATION,
    Newer,
    Pin,
    PinResult,
    PinsReport,
    PinStatus,
    Problem,
    ProblemKind,
    Qualification,
    SourceKind,
)
from generator.pins.versions import is_published, newer_versions, parse_version


class _Sources:
    """Memoized upstream answers: one request (chain) per repository, failures included."""

    def __init__(self, fetcher: Fetcher) -> None:
        self.fetcher = fetcher
        self._indexes: dict[str, Mapping[str, Any] | FetchError] = {}
        self._tags: dict[tuple[str, str], tuple[str, ...] | FetchError] = {}

    def versions(self, pin: Pin) -> tuple[str, ...]:
        if pin.kind is SourceKind.OCI:
            key = (pin.repository, pin.chart)
            if key not in self._tags:
                try:
                    self._tags[key] = oci.list_tags(self.fetcher, *key)
                except FetchError as e:
                    self._tags[key] = e
            tags = self._tags[key]
            if isinstance(tags, FetchError):
                raise tags
            return tags
        if pin.repository not in self._indexes:
            try:
                self._indexes[pin.repository] = helm_index.fetch_index(self.fetcher, pin.repository)
            except FetchError as e:
                self._indexes[pin.repository] = e
        entries = self._indexes[pin.repository]
        if isinstance(entries, FetchError):
            raise entries
        url = helm_index.index_url(pin.repository)
        return helm_index.chart_versions(entries, pin.chart, url)


def check_pin(sources: _Sources, pin: Pin, qualified: str) -> PinResult:
    try:
        available = sources.versions(pin)
    except FetchError as e:
        return PinResult(pin, e.problem.kind.status, e.problem, Newer(), qualified)
    newer = newer_versions(pin.version, available)
    if is_published(pin.version, available):
        return PinResult(pin, PinStatus.PRESENT, None, newer, qualified)
    where = f"chart {pin.chart} in {pin.repository}" if pin.chart else pin.repository
    listed = ", ".join(_newest(available, 3)) or "none"
    message = f"version {pin.version} is not published for {where} (newest: {listed})"
    problem = Problem(ProblemKind.VERSION_NOT_FOUND, message)
    return PinResult(pin, PinStatus.MISSING, problem, newer, qualified)


def _newest(available: Iterable[str], n: int) -> list[str]:
    parsed = [(v, a) for a in available if (v := parse_version(a)) is not None]
    return [a for _, a in sorted(parsed, reverse=True)[:n]]


def check_pins(
    pins: Iterable[Pin], fetcher: Fetcher, qualification: Qualification | None = None
) -> PinsReport:
    """One result per pin, in the pins' (sorted) order.

    `qualification` maps (component, version) to the largest lane qualified at scale. The status
    model does not exist yet: without it every pin's qualification is `unknown`.
    """
    sources = _Sources(fetcher)
    lanes = qualification or {}
    results = tuple(
        check_pin(sources, pin, lanes.get((pin.component, pin.version), UNKNOWN_QUALIFICATION))
        for pin in sorted(pins, key=lambda p: p.key)
    )
    return PinsReport(results)
