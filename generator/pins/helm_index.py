"""What an HTTP(S) Helm repository publishes: its `index.yaml`.

The index is read with YAML's base loader, so every scalar stays a string (`version: 1.10` is
the version `1.10`, not the float 1.1) and a large index parses quickly with libyaml.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from generator.core.errors import LoadError
from generator.core.yamlio import MAX_DEPTH, check_nesting
from generator.pins.http import Fetcher, FetchError
from generator.pins.model import Problem, ProblemKind

_Loader: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


def index_url(repository: str) -> str:
    return repository.rstrip("/") + "/index.yaml"


def fetch_index(fetcher: Fetcher, repository: str) -> Mapping[str, Any]:
    """The `entries` mapping of the repository's index (chart name -> list of chart versions)."""
    url = index_url(repository)
    body = fetcher.get(url).body
    return parse_index(body, url)


def parse_index(body: bytes, url: str) -> Mapping[str, Any]:
    def malformed(why: str) -> FetchError:
        return FetchError(Problem(ProblemKind.MALFORMED, f"malformed index {url}: {why}"))

    try:
        # libyaml's composer recurses per nesting level: a hostile index `[[[[...` would crash
        # the process, so the nesting is counted on the iterative event parser first
        text = body.decode("utf-8")
        check_nesting(text, url)
        data = yaml.load(text, Loader=_Loader)  # the base loader builds no objects
    except UnicodeDecodeError as e:
        raise malformed("not UTF-8") from e
    except LoadError as e:
        raise malformed(f"nested deeper than {MAX_DEPTH} levels") from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise malformed(f"not YAML{where}") from e
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
