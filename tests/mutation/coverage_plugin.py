"""Which tests run which lines of one module: a pytest plugin for `make mutation`'s baseline run.

Loaded with `-p tests.mutation.coverage_plugin` when the environment names the module
(`MUTATION_TARGET`, its absolute path) and an output file (`MUTATION_COVERAGE`): while each
test runs (setup, call and teardown), a trace function records the lines of that module it
executes, in this process and its threads. At the end, {line: [test node ids]} is written as
JSON. A mutant is then first run against the tests that execute its lines only; lines run only
in a subprocess (the CLI) are not seen here, which is why a mutant those tests do not kill is
run against all of the module's tests before it counts as survived.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

TARGET = os.environ.get("MUTATION_TARGET", "")
OUT = os.environ.get("MUTATION_COVERAGE", "")
_lines: dict[int, set[str]] = {}
_current = [""]


def _local(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "line":
        _lines.setdefault(frame.f_lineno, set()).add(_current[0])
    return _local


def _global(frame: FrameType, event: str, arg: Any) -> Any:
    if frame.f_code.co_filename == TARGET:
        _lines.setdefault(frame.f_lineno, set()).add(_current[0])
        return _local
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not TARGET:
        yield
        return
    _current[0] = item.nodeid
    threading.settrace(_global)
    sys.settrace(_global)
    try:
        yield
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]


def pytest_sessionfinish(session: pytest.Session) -> None:
    if OUT:
        with open(OUT, "w", encoding="utf-8") as fh:
            json.dump({str(k): sorted(v) for k, v in sorted(_lines.items())}, fh)
