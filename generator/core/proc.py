"""The one way the tool runs another program: `run(argv, timeout=...)` and `git(repo, ...)`.

Every child process (git for history, dates, remotes and archives; kubectl for `snapshot`)
starts here, so each rule holds by construction rather than by each caller remembering it:

- an argv list, never a shell (no string is parsed by `sh`);
- stdin is `/dev/null` unless `input` is given: a child waiting for a terminal cannot hang;
- a timeout always: past it the child's whole process group is killed (it is started in a new
  session) and `ProcError` says so, naming the program;
- output bounded: stdout and stderr are read as they come, each capped at `limit` bytes; a
  child printing forever is killed at the cap (`ProcError`), it cannot exhaust memory;
- an environment built from an allow-list (`child_env`), never the build's own handed on
  wholesale: `PATH`, `HOME`, `LANG=C`, `LC_ALL=C`, `TZ=UTC`, `SOURCE_DATE_EPOCH` when set, and
  for git `GIT_CONFIG_NOSYSTEM=1`, `GIT_TERMINAL_PROMPT=0`, `GIT_PAGER=cat` (no `GIT_DIR`,
  `GIT_WORK_TREE`, `GIT_CONFIG_*` or `GIT_EXEC_PATH` of the caller reaches git, so a variable
  in the environment cannot point it at another repository or run a configured program). A
  token in the environment (CI secrets: `GITHUB_TOKEN`, ...) is not seen by any child. A caller
  that needs more names it (`inherit`): `snapshot` passes kubectl its `KUBECONFIG`, proxy and
  cloud-credential variables, which the cluster's own login needs.

A program that is not installed, cannot be started, runs past its timeout or prints past its
limit is a `ProcError` (a `CatalogError`: exit 1, one line naming the program); a non-zero exit
is not an error here but the caller's to judge (`Completed.returncode`): most callers fall back
(no history, no remote link) with a note.

`generator/bench/run.py` (the benchmark harness, a developer tool) starts the processes it
measures itself; `tests/test_boundaries_proc.py` fails on any other module that imports
`subprocess` or calls `os.system`, `os.popen`, `os.exec*`, `os.spawn*`, `os.posix_spawn*`,
`os.fork*` or `pty.spawn`/`pty.fork`.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from generator.core import envvars
from generator.core.errors import CatalogError, printable

# what went wrong, as the error's rule
NOT_FOUND = "proc.not-found"
CANNOT_START = "proc.cannot-start"
TIMED_OUT = "proc.timed-out"
TOO_MUCH_OUTPUT = "proc.output-too-large"

OUTPUT_BYTES = 64 * 1024 * 1024  # stdout (and stderr) of a child unless the caller says more
# a `git archive` of the catalog and evidence (the synthetic 1,000 x 20,000 catalog's: 0.3 GB)
ARCHIVE_BYTES = 1024 * 1024 * 1024
_CHUNK = 1 << 20  # bytes asked for per read (a pipe gives at most what it holds)

# the variables every child gets from the caller's environment, when set
_PASSED = ("PATH", "HOME", "SOURCE_DATE_EPOCH")
# fixed for every child: messages and formats that do not depend on the user's locale or zone
_FIXED = {"LANG": "C", "LC_ALL": "C", "TZ": "UTC"}
# fixed for git: no system config, no prompt for credentials, no pager
_GIT = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat"}


class ProcError(CatalogError):
    """A program could not be run to its end: not installed, not startable, past its timeout
    or past its output limit. `program` is its name as given, `rule` what happened."""

    def __init__(self, program: str, rule: str, message: str) -> None:
        super().__init__(f"{printable(program)}: {message}")
        self.program = program
        self.rule = rule
        self.what = message

    def __reduce__(self) -> tuple[type[ProcError], tuple[str, str, str]]:
        # whole across a forked worker's pickle (`fast/pool.py`), not only its message
        return ProcError, (self.program, self.rule, self.what)


@dataclass(frozen=True, slots=True)
class Completed:
    """A program that ran to its end: its argv, exit status and whole output."""

    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def text(self) -> str:
        """stdout as text (UTF-8; a byte that is not becomes U+FFFD)."""
        return self.stdout.decode("utf-8", errors="replace")

    def error_text(self) -> str:
        """stderr as text, stripped (what callers quote in their own error)."""
        return self.stderr.decode("utf-8", errors="replace").strip()


def child_env(
    program: str,
    *,
    inherit: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment a child gets: the allow-list of the module, plus each variable of
    `environ` (default: this process's) named in `inherit` (a name, or a prefix ending in `*`,
    e.g. `AWS_*`). Nothing else of `environ` is passed."""
    env = envvars.for_child(_PASSED, environ)
    env.setdefault("PATH", os.defpath)
    env.update(envvars.for_child(inherit, environ))
    env.update(_FIXED)
    if Path(program).name == "git":
        env = {k: v for k, v in env.items() if not k.startswith("GIT_")}
        env.update(_GIT)
    return env


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    input: bytes | None = None,
    limit: int = OUTPUT_BYTES,
    inherit: Iterable[str] = (),
) -> Completed:
    """Run `argv` (see the module) to its end; `ProcError` when it cannot be."""
    args = tuple(os.fspath(a) for a in argv)
    if not args:
        raise ValueError("run() needs a program")
    program = args[0]
    if timeout <= 0 or limit <= 0:
        raise ValueError("run() needs a positive timeout and limit")
    try:
        child = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=child_env(program, inherit=inherit),
            close_fds=True,
            start_new_session=True,  # its own process group: a kill reaches its children too
        )
    except FileNotFoundError:
        raise ProcError(program, NOT_FOUND, "not found (is it installed and on PATH?)") from None
    except OSError as e:
        raise ProcError(program, CANNOT_START, f"cannot be started: {e.strerror}") from None
    try:
        stdout, stderr = _communicate(child, program, input, timeout, limit)
    finally:
        if child.returncode is None:  # an error above, or an interrupt (Ctrl-C): end it
            _kill(child)
        _close(child)
    assert child.returncode is not None
    return Completed(args, child.returncode, stdout, stderr)


def which(program: str) -> str | None:
    """Where `program` would be found by `run` (the PATH its child gets), or None: what a
    caller asks before it offers a feature that needs the program (`shutil.which` on that
    PATH; nothing is started)."""
    return shutil.which(program, path=child_env(program)["PATH"])


def git(repo: Path, *args: str, timeout: float, limit: int = OUTPUT_BYTES) -> Completed:
    """`git -C repo args...` through `run` (git's environment: see the module)."""
    return run(["git", "-C", os.fspath(repo), *args], timeout=timeout, limit=limit)


def _communicate(
    child: subprocess.Popen[bytes],
    program: str,
    input: bytes | None,
    timeout: float,
    limit: int,
) -> tuple[bytes, bytes]:
    """Both outputs read as they come (and `input` written) until the child closes them and
    exits; `ProcError` past `timeout` seconds or past `limit` bytes on either."""
    deadline = time.monotonic() + timeout
    assert child.stdout is not None and child.stderr is not None
    chunks: dict[int, list[bytes]] = {child.stdout.fileno(): [], child.stderr.fileno(): []}
    sizes = dict.fromkeys(chunks, 0)
    pending = memoryview(input or b"")
    with selectors.DefaultSelector() as sel:
        for fd in chunks:
            sel.register(fd, selectors.EVENT_READ)
        if child.stdin is not None:
            if pending:
                os.set_blocking(child.stdin.fileno(), False)
                sel.register(child.stdin.fileno(), selectors.EVENT_WRITE)
            else:
                child.stdin.close()
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                _timed_out(child, program, timeout)
            for key, _ in sel.select(left):
                fd = key.fd
                if fd in chunks:
                    data = os.read(fd, _CHUNK)
                    if not data:
                        sel.unregister(fd)
                        continue
                    sizes[fd] += len(data)
                    if sizes[fd] > limit:
                        _kill(child)
                        raise ProcError(
                            program, TOO_MUCH_OUTPUT, f"printed more than {limit} bytes; stopped"
                        )
                    chunks[fd].append(data)
                else:
                    assert child.stdin is not None
                    try:
                        pending = pending[os.write(fd, pending[:_CHUNK]) :]
                    except BrokenPipeError:  # it stopped reading: what it wrote still counts
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(fd)
                        child.stdin.close()
    try:
        child.wait(max(deadline - time.monotonic(), 0))
    except subprocess.TimeoutExpired:
        _timed_out(child, program, timeout)
    return b"".join(chunks[child.stdout.fileno()]), b"".join(chunks[child.stderr.fileno()])


def _timed_out(child: subprocess.Popen[bytes], program: str, timeout: float) -> NoReturn:
    _kill(child)
    raise ProcError(program, TIMED_OUT, f"did not finish in {timeout:g} s; stopped")


def _kill(child: subprocess.Popen[bytes]) -> None:
    """Kill the child's process group and reap the child."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def _close(child: subprocess.Popen[bytes]) -> None:
    for stream in (child.stdin, child.stdout, child.stderr):
        if stream is not None:
            stream.close()


__all__ = [
    "ARCHIVE_BYTES",
    "CANNOT_START",
    "NOT_FOUND",
    "OUTPUT_BYTES",
    "TIMED_OUT",
    "TOO_MUCH_OUTPUT",
    "Completed",
    "ProcError",
    "child_env",
    "git",
    "run",
]
