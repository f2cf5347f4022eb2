"""The child-process door (`generator/core/proc.py`): what a child sees and how it ends.

Each rule is tested on a real child: the build's secrets are not in its environment, a
`GIT_DIR` in the caller's environment does not point git elsewhere, a child that never exits is
killed at its timeout (its own children too), a child printing without end is stopped at the
limit, a missing program is an error naming it; and the callers keep their fallbacks when git is
missing. No test depends on timing beyond "a 60 s child is stopped by a 1 s timeout".
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
from pathlib import Path

import pytest

from generator.core import proc
from generator.core.errors import CatalogError, UsageError

PRINT_ENV = [sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"]


def _child_env(**kw: object) -> dict[str, str]:
    out = proc.run(PRINT_ENV, timeout=60, **kw)  # type: ignore[arg-type]
    assert out.ok, out.stderr
    env = json.loads(out.stdout)
    assert isinstance(env, dict)
    return env


def _git(repo: Path, *args: str) -> str:
    done = proc.git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", *args, timeout=60)
    assert done.ok, done.error_text()
    return done.text().strip()


def _repo(path: Path, message: str) -> str:
    path.mkdir()
    _git(path, "init", "-q")
    _git(path, "commit", "-q", "--allow-empty", "-m", message)
    return _git(path, "rev-parse", "HEAD")


# --- the environment -----------------------------------------------------------------------------


def test_a_secret_in_the_build_environment_is_not_seen_by_a_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AICR_TEST_SECRET", "x")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764800000")
    env = _child_env()
    assert "ghp_secret" not in json.dumps(env) and "secret" not in env.values()
    assert not {"AICR_TEST_SECRET", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"} & set(env)
    assert env["PATH"] == os.environ["PATH"]
    assert env["SOURCE_DATE_EPOCH"] == "1764800000"
    assert (env["LANG"], env["LC_ALL"], env["TZ"]) == ("C", "C", "UTC")
    assert set(env) <= {"PATH", "HOME", "SOURCE_DATE_EPOCH", "LANG", "LC_ALL", "TZ"} | {
        "LC_CTYPE",  # set by the Python the test runs as the child, in a C locale
    }


def test_a_caller_names_what_its_program_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", "/k/config")
    monkeypatch.setenv("AWS_PROFILE", "lab")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    env = _child_env(inherit=("KUBECONFIG", "AWS_*"))
    assert (env["KUBECONFIG"], env["AWS_PROFILE"]) == ("/k/config", "lab")
    assert "GITHUB_TOKEN" not in env


def test_the_kubectl_list_passes_no_token() -> None:
    from generator.commands.snapshot import KUBECTL_ENV

    environ = {"PATH": "/bin", "KUBECONFIG": "k", "GITHUB_TOKEN": "t", "ACTIONS_RUNTIME_TOKEN": "t"}
    env = proc.child_env("kubectl", inherit=KUBECTL_ENV, environ=environ)
    assert env["KUBECONFIG"] == "k" and "GITHUB_TOKEN" not in env
    assert "ACTIONS_RUNTIME_TOKEN" not in env


def test_git_dir_in_the_callers_environment_does_not_redirect_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = _repo(tmp_path / "mine", "mine")
    other = _repo(tmp_path / "other", "other")
    assert mine != other
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "other" / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path / "other"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.pager'='touch /tmp/pwned'")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "alias.head")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "!touch /tmp/pwned")
    assert _git(tmp_path / "mine", "rev-parse", "HEAD") == mine
    assert proc.git(tmp_path / "mine", "config", "alias.head", timeout=60).returncode == 1
    env = proc.child_env("git", environ=dict(os.environ))
    assert not {"GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"} & set(env)
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0"


# --- how a child runs and ends -------------------------------------------------------------------


def test_argv_is_not_parsed_by_a_shell(tmp_path: Path) -> None:
    out = proc.run(["echo", "$HOME; touch pwned"], timeout=60, cwd=tmp_path)
    assert out.text() == "$HOME; touch pwned\n"
    assert not (tmp_path / "pwned").exists()


def test_stdin_is_empty_unless_input_is_given() -> None:
    read = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())"]
    assert proc.run(read, timeout=60).stdout == b""
    data = os.urandom(3 * 1024 * 1024)  # more than a pipe holds: written while output is read
    assert proc.run(read, timeout=60, input=data).stdout == data


def test_a_failing_program_is_a_result_not_an_error() -> None:
    out = proc.run([sys.executable, "-c", "import sys; sys.stderr.write('no'); sys.exit(3)"],
                   timeout=60)  # fmt: skip
    assert (out.returncode, out.ok, out.error_text()) == (3, False, "no")
    assert out.argv[0] == sys.executable


def test_a_child_that_never_exits_is_killed_at_the_timeout(tmp_path: Path) -> None:
    """A 60 s child is stopped by a 1 s timeout, and the 600 s grandchild it started with it
    (its process group): nothing of it is left running."""
    pidfile = tmp_path / "pid"
    script = f"sleep 600 & echo $! > {pidfile}; sleep 60"
    with pytest.raises(proc.ProcError) as caught:
        proc.run(["sh", "-c", script], timeout=1)
    assert caught.value.rule == proc.TIMED_OUT
    assert caught.value.program == "sh"
    assert caught.value.message.startswith("sh: did not finish in 1 s")
    assert _ends(int(pidfile.read_text()))


def _ends(pid: int) -> bool:
    """Whether process `pid` is gone or a zombie (killed, waiting for its reaper), waiting for
    the kill to land at most 10 s (it takes milliseconds; the grandchild sleeps 600 s)."""
    stat = Path(f"/proc/{pid}/stat")
    for _ in range(100):
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_child_printing_without_end_is_stopped_at_the_limit(stream: str) -> None:
    forever = [sys.executable, "-c", f"import sys\nwhile True: sys.{stream}.write('y' * 4096)"]
    with pytest.raises(proc.ProcError) as caught:
        proc.run(forever, timeout=600, limit=1024 * 1024)
    assert caught.value.rule == proc.TOO_MUCH_OUTPUT
    assert "printed more than 1048576 bytes" in caught.value.message
    assert caught.value.program == sys.executable


def test_output_up_to_the_limit_is_kept() -> None:
    out = proc.run([sys.executable, "-c", "print('y' * 999)"], timeout=60, limit=1000)
    assert out.stdout == b"y" * 999 + b"\n"


def test_a_missing_program_is_an_error_naming_it() -> None:
    with pytest.raises(proc.ProcError) as caught:
        proc.run(["aicr-no-such-program"], timeout=60)
    assert caught.value.rule == proc.NOT_FOUND
    assert caught.value.message.startswith("aicr-no-such-program: not found")
    assert isinstance(caught.value, CatalogError) and caught.value.exit_code == 1


def test_the_error_crosses_a_worker_whole() -> None:
    """A ProcError raised in a forked worker (`fast/pool.py` pickles it back) keeps its parts."""
    err = proc.ProcError("git", proc.TIMED_OUT, "did not finish in 1 s; stopped")
    back = pickle.loads(pickle.dumps(err))
    assert (back.program, back.rule, back.message) == (err.program, err.rule, err.message)


def test_a_program_that_cannot_be_started_is_an_error(tmp_path: Path) -> None:
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\n")  # not executable
    with pytest.raises(proc.ProcError) as caught:
        proc.run([str(script)], timeout=60)
    assert caught.value.rule == proc.CANNOT_START


# --- spawn: a child watched while it runs -------------------------------------------------------


def test_spawn_gives_the_pid_while_the_child_runs_and_its_cpu_when_it_ends() -> None:
    """What the benchmark needs: the pid of the running child (its /proc entry is there while
    `wait` reads it) and, at its end, its output and the CPU seconds wait4 counted."""
    busy = [sys.executable, "-c", "import time\nt = time.process_time()\n"
            "while time.process_time() - t < 0.3: pass\nprint('done')"]  # fmt: skip
    with proc.spawn(busy, timeout=60) as child:
        assert Path(f"/proc/{child.pid}/stat").is_file()
        done = child.wait()
    assert done.completed.ok and done.completed.text() == "done\n"
    assert done.completed.argv == tuple(busy)
    assert 0.25 <= done.cpu_s < 30
    assert _ends(child.pid)


def test_spawn_keeps_the_rules_of_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The environment's allow-list, the caller's values (never over the fixed ones), the
    timeout with the process group killed, the output limit."""
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    with proc.spawn(PRINT_ENV, timeout=60, extra_env={"AICR_X": "1", "LANG": "de"}) as child:
        env = json.loads(child.wait().completed.stdout)
    assert env["AICR_X"] == "1" and env["LANG"] == "C" and "GITHUB_TOKEN" not in env
    pidfile = tmp_path / "pid"
    with pytest.raises(proc.ProcError) as caught:
        with proc.spawn(["sh", "-c", f"sleep 600 & echo $! > {pidfile}; sleep 60"],
                        timeout=1) as child:  # fmt: skip
            child.wait()
    assert caught.value.rule == proc.TIMED_OUT
    assert _ends(int(pidfile.read_text()))
    forever = [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('y' * 4096)"]
    with pytest.raises(proc.ProcError) as caught:
        with proc.spawn(forever, timeout=600, limit=1024 * 1024) as child:
            child.wait()
    assert caught.value.rule == proc.TOO_MUCH_OUTPUT


def test_a_spawned_child_not_waited_for_is_killed_with_its_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    with proc.spawn(["sh", "-c", f"sleep 600 & echo $! > {pidfile}; sleep 60"],
                    timeout=600) as child:  # fmt: skip
        for _ in range(100):
            if pidfile.is_file() and pidfile.read_text().strip():
                break
            time.sleep(0.1)
    assert _ends(child.pid) and _ends(int(pidfile.read_text()))


def test_an_echoed_child_writes_to_our_own_output(capfd: pytest.CaptureFixture[str]) -> None:
    """`echo`: the child's output goes where this process's goes, nothing is kept."""
    out = proc.run([sys.executable, "-c", "import sys; print('to out'); sys.stderr.write('to err')"],
                   timeout=60, echo=True)  # fmt: skip
    assert (out.ok, out.stdout, out.stderr) == (True, b"", b"")
    said = capfd.readouterr()
    assert (said.out, said.err) == ("to out\n", "to err")


def test_the_record_is_frozen() -> None:
    out = proc.run(["true"], timeout=60)
    with pytest.raises(AttributeError):
        out.returncode = 1  # type: ignore[misc]


# --- the callers keep their fallbacks ------------------------------------------------------------


@pytest.fixture
def no_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with no git on it (and a repository-looking directory to ask)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    repo = tmp_path / "repo"
    (repo / "evidence").mkdir(parents=True)
    return repo


def test_without_git_each_caller_falls_back(no_git: Path) -> None:
    from generator.core.gitremote import remote_web_url
    from generator.publish.diff import repo_root
    from generator.site.audit import evidence_added, head_commit
    from generator.site.options import source_date_epoch
    from generator.site.stages import recipes_added
    from generator.site.timeline import git_head

    assert remote_web_url(no_git) == ""
    assert head_commit(no_git / "evidence") == ""
    assert evidence_added(no_git / "evidence", "") == {}
    assert source_date_epoch(None, no_git) == 0
    assert recipes_added(no_git, {"r": "overlays/r.yaml"}, "") == ()
    assert recipes_added(no_git, {"r": "overlays/r.yaml"}, "HEAD") == ()
    assert git_head(no_git) == ""
    with pytest.raises(UsageError, match="git is not installed"):
        repo_root(no_git)


def test_without_git_a_release_is_refused_with_a_reason(no_git: Path) -> None:
    from generator.core.errors import ReleaseError
    from generator.publish.release import _git

    with pytest.raises(ReleaseError, match="git status: git: not found"):
        _git(no_git, "status")


def test_the_site_history_is_of_the_catalog_not_of_git_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from generator.site.options import source_date_epoch

    _repo(tmp_path / "catalog", "the catalog")
    _repo(tmp_path / "other", "elsewhere")
    expected = int(_git(tmp_path / "catalog", "log", "-1", "--format=%ct"))
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))
    assert source_date_epoch(None, tmp_path / "catalog") == expected


def test_which_looks_where_the_child_would(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`proc.which` searches the PATH a child gets: a program on it is found, one off it not."""
    tool = tmp_path / "aicr-test-tool"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert proc.which("aicr-test-tool") == str(tool)
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    assert proc.which("aicr-test-tool") is None
