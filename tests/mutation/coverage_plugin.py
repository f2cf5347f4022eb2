"""Which tests run which lines of one module: a pytest plugin for `make mutation`'s baseline run.

Loaded with `-p tests.mutation.coverage_plugin` when the environment names the module
(`MUTATION_TARGET`, its absolute path) and an output file (`MUTATION_COVERAGE`): while each
test runs (setup, call and teardown), a trace function records the lines of that module it
executes, in this process and its threads, and how long the test took (wall-clock seconds, with
the tracing). At the end, {"lines": {line: [test node ids]}, "seconds": {test node id: seconds}}
is written as JSON. A mutant is then first run against the tests that execute its lines only; lines run only
in a subprocess (the CLI) are not seen here, which is why a mutant those tests do not kill is
run against all of the module's tests before it counts as survived.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

TARGET = os.environ.get("MUTATION_TARGET", "")
OUT = os.environ.get("MUTATION_COVERAGE", "")
_lines: dict[int, set[str]] = {}
_seconds: dict[str, float] = {}
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
    start = time.monotonic()
    threading.settrace(_global)
    sys.settrace(_global)
    try:
        yield
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        _seconds[item.nodeid] = time.monotonic() - start


def pytest_sessionfinish(session: pytest.Session) -> None:
    if OUT:
        with open(OUT, "w", encoding="utf-8") as fh:
            lines = {str(k): sorted(v) for k, v in sorted(_lines.items())}
            json.dump({"lines": lines, "seconds": _seconds}, fh)
