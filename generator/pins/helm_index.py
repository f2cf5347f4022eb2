"""What an HTTP(S) Helm repository publishes: its `index.yaml`.

The index is read with the one bounded YAML loader (`core/yamlio.py`, with the larger bounds
of an index) keeping every scalar a string (`version: 1.10` is
the version `1.10`, not the float 1.1) and a large index parses quickly with libyaml.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.core.errors import LoadError
from generator.core.yamlio import INDEX, parse_yaml
from generator.pins.http import Fetcher, FetchError
from generator.pins.model import Problem, ProblemKind


def index_url(repository: str) -> str:
    return repository.rstrip("/") + "/index.yaml"


def fetch_index(fetcher: Fetcher, repository: str) -> Mapping[str, Any]:
    """The `entries` mapping of the repository's index (chart name -> list of chart versions)."""
    url = index_url(repository)
    body = fetcher.get(url).body
    return parse_index(body, url)


# the loader's bounds: their messages say which bound, in the tool's own words
_BOUND_RULES = frozenset({"yaml.too-deep", "yaml.too-large", "yaml.alias-bomb"})


def parse_index(body: bytes, url: str) -> Mapping[str, Any]:
    def malformed(why: str) -> FetchError:
        return FetchError(Problem(ProblemKind.MALFORMED, f"malformed index {url}: {why}"))

    try:  # bounded (size, nodes, alias expansion); every scalar a string, as the base loader
        data = parse_yaml(body, url, bounds=INDEX, strings=True).data
    except LoadError as e:
        d = e.diagnostics[0] if e.diagnostics else None
        where = f" (line {d.line})" if d is not None and d.line else ""
        # a bound's message is the tool's own text; a syntax error's may quote the index
        why = d.message if d is not None and d.rule in _BOUND_RULES else "not YAML"
        raise malformed(f"{why}{where}") from e
    if not isinstance(data, dict):
        raise malformed("not a mapping")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        raise malformed("no `entries` mapping")
    return entries


def chart_versions(entries: Mapping[str, Any], chart: str, url: str) -> tuple[str, ...]:
    """Every version of `chart` in the index, sorted; chart-not-found when it is absent."""
    if chart not in entries:
        raise FetchError(Problem(ProblemKind.CHART_NOT_FOUND, f"chart {chart} is not in {url}"))
    listed = entries[chart]
    if not isinstance(listed, list):
        message = f"malformed index {url}: entries.{chart} is not a list"
        raise FetchError(Problem(ProblemKind.MALFORMED, message))
    versions: set[str] = set()
    for i, item in enumerate(listed):
        version = item.get("version") if isinstance(item, dict) else None
        if not isinstance(version, str) or not version:
            message = f"malformed index {url}: entries.{chart}[{i}] has no version"
            raise FetchError(Problem(ProblemKind.MALFORMED, message))
        versions.add(version)
    return tuple(sorted(versions))
