"""A pytest runner that pays for the third-party imports once: `make mutation`'s workhorse.

Most of a small pytest run is importing pandas, sigstore, cryptography and hypothesis. The
server (`python -m tests.mutation.forkserver`, started with its working directory in a scratch
copy of the tree) imports them once, never `generator` or `tests`; for each request it forks a
child that changes into the copy, puts it first on `sys.path` and runs `pytest.main` there, so
the child imports the (mutated) package fresh. The child runs in its own session under a CPU
limit and a memory limit (MEMORY_BYTES of data: a mutant that grows a list without end, such as
a walk that no longer refuses a recursive alias, fails with MemoryError in seconds instead of
filling the shared machine's memory), and the whole session is killed past the wall-clock limit.

Protocol: one JSON request per line on stdin, {"args": [...], "cpu": seconds or null,
"wall": seconds or null, "env": {extra environment}}; one JSON reply per line on stdout, {"status": "passed" | "failed" |
"timeout", "seconds": float}.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import signal
import sys
import time

# not hypothesis: it is a pytest plugin, which pytest must import itself (to rewrite its asserts)
PREIMPORT = (
    "pytest",
    "numpy",
    "pandas",
    "cryptography.x509",
    "sigstore.models",
    "sigstore.verify",
    "jsonschema",
    "referencing",
    "yaml",
    "ruamel.yaml",
    "click",
    "click.testing",
    "jinja2",
    "rfc8785",
    "requests",
    "packaging.version",
)
# the data segment a test run may grow to: a run of the unmutated tests stays far below it
MEMORY_BYTES = 4 * 1024**3


def _child(args: list[str], cpu: int | None, env: dict[str, str], out: int) -> None:
    os.setsid()
    os.environ.update(env)
    if cpu:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_BYTES, MEMORY_BYTES))
    os.dup2(out, 1)
    os.dup2(out, 2)
    here = os.getcwd()
    sys.path.insert(0, here)
    import pytest

    try:
        rc = int(pytest.main(args))
    except BaseException:
        import traceback

        traceback.print_exc()
        rc = 99
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


def _wait(pid: int, wall: float | None) -> int | None:
    """The child's wait status, or None when it ran past `wall` seconds (then killed)."""
    deadline = time.monotonic() + wall if wall else None
    delay = 0.005
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if deadline is not None and time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return None
        time.sleep(delay)
        delay = min(0.1, delay * 2)


def serve() -> None:
    for name in PREIMPORT:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    assert "generator" not in sys.modules and "tests" not in sys.modules
    # MUTATION_DEBUG=1: the children's output on this process's standard error
    devnull = os.dup(2) if os.environ.get("MUTATION_DEBUG") else os.open(os.devnull, os.O_WRONLY)
    reply = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        start = time.monotonic()
        reply.flush()
        pid = os.fork()
        if pid == 0:
            _child(req["args"], req.get("cpu"), req.get("env") or {}, devnull)
        status = _wait(pid, req.get("wall"))
        seconds = time.monotonic() - start
        if status is None:
            result = "timeout"
        elif os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
            result = "timeout"
        elif os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            result = "passed"
        else:
            # 1 tests failed, 2 interrupted (a collection error: the mutant broke an import),
            # 3 an internal error, a crash: each is the mutant detected
            result = "failed"
        reply.write(json.dumps({"status": result, "seconds": seconds}) + "\n")
        reply.flush()


if __name__ == "__main__":
    serve()
