"""The one way the tool runs another program: `run(argv, timeout=...)`, `git(repo, ...)`, and
`spawn(argv, timeout=...)` for a caller that watches the child while it runs (its `pid`).

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

`spawn` is `run` in two steps, under the same rules: the benchmark harness (`generator/bench/
run.py`) starts a build, samples the memory of its process tree from /proc/<pid> while
`Running.wait()` reads its output, and gets its CPU seconds from `wait4` (`Finished.cpu_s`).
A caller may set variables by value for its child (`extra_env`: `SOURCE_DATE_EPOCH=0`), never
over the fixed ones, and may let a long child print to the terminal (`echo`: nothing captured).
`tests/test_boundaries_proc.py` fails on any other module that imports `subprocess` or calls
`os.system`, `os.popen`, `os.exec*`, `os.spawn*`, `os.posix_spawn*`, `os.fork*` or
`pty.spawn`/`pty.fork`.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn

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
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment a child gets: the allow-list of the module, plus each variable of
    `environ` (default: this process's) named in `inherit` (a name, or a prefix ending in `*`,
    e.g. `AWS_*`), plus the values the caller sets itself (`extra`, see `spawn`). Nothing else
    of `environ` is passed; `extra` cannot change the fixed variables (nor git's)."""
    env = envvars.for_child(_PASSED, environ)
    env.setdefault("PATH", os.defpath)
    env.update(envvars.for_child(inherit, environ))
    env.update(extra or {})
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
    extra_env: Mapping[str, str] | None = None,
    echo: bool = False,
) -> Completed:
    """Run `argv` (see the module) to its end; `ProcError` when it cannot be."""
    with spawn(
        argv,
        timeout=timeout,
        cwd=cwd,
        input=input,
        limit=limit,
        inherit=inherit,
        extra_env=extra_env,
        echo=echo,
    ) as child:
        return child.wait().completed


@dataclass(frozen=True, slots=True)
class Finished:
    """A program `spawn` started, ended: what `run` gives, and the CPU seconds (user + system)
    it and the descendants it waited for used (`wait4`'s resource usage), `system_s` of them
    in the kernel."""

    completed: Completed
    cpu_s: float
    system_s: float = 0.0


class Running:
    """A program `spawn` started and no one has waited for yet: its `pid`, to watch it while it
    runs (a caller samples its memory under /proc/<pid>), and `wait()`."""

    __slots__ = ("_args", "_child", "_deadline", "_input", "_limit", "_timeout")

    def __init__(
        self,
        child: subprocess.Popen[bytes],
        args: tuple[str, ...],
        input: bytes | None,
        timeout: float,
        limit: int,
    ) -> None:
        self._child, self._args, self._input = child, args, input
        self._timeout, self._limit = timeout, limit
        self._deadline = time.monotonic() + timeout

    @property
    def pid(self) -> int:
        return self._child.pid

    def wait(self) -> Finished:
        """Its output read as it comes (and `input` written) until it exits: `ProcError` past
        the timeout (counted from its start) or the output limit, as for `run`."""
        child, program, deadline = self._child, self._args[0], self._deadline
        out = _communicate(child, program, self._input, deadline, self._timeout, self._limit)
        cpu, system = _reap(child, program, deadline, self._timeout)
        assert child.returncode is not None
        return Finished(Completed(self._args, child.returncode, *out), cpu, system)


@contextmanager
def spawn(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    input: bytes | None = None,
    limit: int = OUTPUT_BYTES,
    inherit: Iterable[str] = (),
    extra_env: Mapping[str, str] | None = None,
    echo: bool = False,
) -> Iterator[Running]:
    """`run` in two steps: `argv` is started when the block begins, under the same rules (argv,
    stdin, timeout, output limit, environment; see the module), and the block gets a `Running`
    whose `pid` can be watched while `Running.wait()` runs it to its end. A child still running
    when the block ends (an error, an interrupt, no `wait`) is killed with its process group.

    `extra_env`: variables the caller sets for this child by value (a value it chose, such as
    `SOURCE_DATE_EPOCH=0`; never one read from the environment: the door alone reads that),
    above the allow-list and below the fixed `LANG`, `LC_ALL`, `TZ` (and git's) which it cannot
    change. `echo`: the child writes to this process's own stdout and stderr as it goes, nothing
    is captured (`Completed.stdout`/`stderr` are empty), so no limit applies: for a long child
    whose progress the user watches (the benchmark's run of a snapshot)."""
    args = tuple(os.fspath(a) for a in argv)
    if not args:
        raise ValueError("run() needs a program")
    program = args[0]
    if timeout <= 0 or limit <= 0:
        raise ValueError("run() needs a positive timeout and limit")
    env = child_env(program, inherit=inherit, extra=extra_env)
    try:
        child = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=None if echo else subprocess.PIPE,
            stderr=None if echo else subprocess.PIPE,
            cwd=cwd,
            env=env,
            close_fds=True,
            start_new_session=True,  # its own process group: a kill reaches its children too
        )
    except FileNotFoundError:
        raise ProcError(program, NOT_FOUND, "not found (is it installed and on PATH?)") from None
    except OSError as e:
        raise ProcError(program, CANNOT_START, f"cannot be started: {e.strerror}") from None
    try:
        yield Running(child, args, input, timeout, limit)
    finally:
        if child.returncode is None:  # an error, an interrupt (Ctrl-C), no wait: end it
            _kill(child)
        _close(child)


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
    deadline: float,
    timeout: float,
    limit: int,
) -> tuple[bytes, bytes]:
    """Both outputs read as they come (and `input` written) until the child closes them;
    `ProcError` past `deadline` (`timeout` seconds after its start) or past `limit` bytes on
    either. An output the child was not given a pipe for (`echo`) reads as empty."""
    streams = [s for s in (child.stdout, child.stderr) if s is not None]
    chunks: dict[int, list[bytes]] = {s.fileno(): [] for s in streams}
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

    def got(stream: IO[bytes] | None) -> bytes:
        return b"".join(chunks[stream.fileno()]) if stream is not None else b""

    return got(child.stdout), got(child.stderr)


def _reap(
    child: subprocess.Popen[bytes], program: str, deadline: float, timeout: float
) -> tuple[float, float]:
    """Wait for the child to exit (`ProcError` past `deadline`), set its `returncode` and
    return the CPU seconds it and its waited-for descendants used, and the system seconds of
    them: `wait4`, which alone gives a child's resource usage, once a pidfd says the child has
    ended (no polling delay); where there is no pidfd, `wait4` polled as `Popen.wait(timeout)`
    polls (1 ms, doubling to 50)."""
    try:
        pidfd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is not None:
        with selectors.DefaultSelector() as sel:
            sel.register(pidfd, selectors.EVENT_READ)
            ended = sel.select(max(deadline - time.monotonic(), 0))
        os.close(pidfd)
        if not ended:
            _timed_out(child, program, timeout)
    delay = 0.0005
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            return usage.ru_utime + usage.ru_stime, usage.ru_stime
        left = deadline - time.monotonic()
        if left <= 0:
            _timed_out(child, program, timeout)
        delay = min(delay * 2, left, 0.05)
        time.sleep(delay)


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
    "Finished",
    "ProcError",
    "Running",
    "child_env",
    "git",
    "run",
    "spawn",
    "which",
]
