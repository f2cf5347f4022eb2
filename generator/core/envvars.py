"""The one reader of the process environment: the variables the tool reads, each named with why.

A variable of the environment is an input like a file: CI puts secrets there (`GITHUB_TOKEN`),
and a value read somewhere in the code changes what the tool does without any command-line
option saying so. So every read goes through `get(name)`, and `name` must be one of `READ`
below, each with the reason the tool reads it: a new variable is a line here, reviewed, not
an `os.environ.get` somewhere in a stage. Asking for a name not listed is a bug (`KeyError`),
not a silent `None`.

- `home()` and `cache_home()`: `~` and `$XDG_CACHE_HOME` (else `~/.cache`), where the tool's
  own caches and its cache key live;
- `for_child(names)`: the values of the variables a child process is handed (names, or
  prefixes ending in `*`): only `core/proc.py` calls it, to build a child's environment from
  its allow-list; the values go to the child, never into this program's decisions;
- `setting(name, value)`: a variable set for the length of a block and restored after, for a
  library that reads it in this process (mkdocs reads `SOURCE_DATE_EPOCH`); only the names of
  `SET` may be set.

`tests/test_boundaries_env.py` fails on any other module that reads or changes the environment
(`os.environ`, `os.getenv`, `os.putenv`, `Path.home`, `expanduser`, click's `envvar=`), and on
any module but `core/proc.py` that calls `for_child`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

# name -> why the tool reads it
READ: Mapping[str, str] = {
    "SOURCE_DATE_EPOCH": "the date of a reproducible build (reproducible-builds.org); "
    "also handed to every child",
    "HOME": "the user's home: the default place of the caches (`~/.cache`); handed to children",
    "PATH": "where a child program is found (`proc.which`); handed to every child",
    "XDG_CACHE_HOME": "where the OCI cache and the cache key live (default `~/.cache`)",
    "AICR_CATALOG_CACHE_KEY": "the file holding the HMAC key of the build cache's entries",
    "AICR_CATALOG_OCI_CACHE": "the OCI cache directory of `status` and `build` "
    "(`evidence verify` takes it as --cache)",
    "AICR_CATALOG_UPSTREAM_RECIPES": "the upstream recipes directory of `status` and `build` "
    "(`evidence verify` takes it as --recipes)",
    "AICR_CATALOG_NET_DEADLINE": "the deadline in seconds of all the network requests of one "
    "command",
    "GITHUB_STEP_SUMMARY": "the file GitHub Actions shows as a job's summary: `validate "
    "--format github` appends its Markdown summary there",
    "AICR_BENCH_HOME": "the benchmark harness (`make bench`): the checkout its results go to, "
    "set by the harness for the snapshot it runs",
    "AICR_BENCH_SIZES": "the benchmark harness: the catalog sizes to measure",
    "AICR_BENCH_REV": "the benchmark harness: the commit to measure",
    "AICR_BENCH_COLD_RUNS": "the benchmark harness: how many cold builds it measures (the "
    "median is judged)",
}

# name -> why the tool sets it (in this process, for a block)
SET: Mapping[str, str] = {
    "SOURCE_DATE_EPOCH": "mkdocs, run in this process, dates the site's pages and sitemap by it",
}


def get(name: str) -> str | None:
    """The value of the variable `name` (one of `READ`), None when it is not set."""
    if name not in READ:
        raise KeyError(f"{name} is not a variable the tool reads; add it to envvars.READ")
    return os.environ.get(name)


def home() -> Path:
    """The user's home directory (`Path.home()`: `$HOME`, else the password database)."""
    return Path.home()


def cache_home() -> Path:
    """`$XDG_CACHE_HOME`, else `~/.cache`: where the tool's own caches go."""
    return Path(get("XDG_CACHE_HOME") or str(home() / ".cache"))


def for_child(names: Iterable[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of `environ` (default: this process's) named in `names` (a name, or a
    prefix ending in `*`, e.g. `AWS_*`), in `environ`'s order: what `core/proc.py` hands a
    child. Nothing here is read by this program itself."""
    source = os.environ if environ is None else environ
    wanted = tuple(names)
    exact = {n for n in wanted if not n.endswith("*")}
    prefixes = tuple(n[:-1] for n in wanted if n.endswith("*"))
    return {
        name: value
        for name, value in source.items()
        if name in exact or (prefixes and name.startswith(prefixes))
    }


@contextmanager
def setting(name: str, value: str) -> Iterator[None]:
    """`name` (one of `SET`) set to `value` for the block, restored (or unset) after."""
    if name not in SET:
        raise KeyError(f"{name} is not a variable the tool sets; add it to envvars.SET")
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


__all__ = ["READ", "SET", "cache_home", "for_child", "get", "home", "setting"]
