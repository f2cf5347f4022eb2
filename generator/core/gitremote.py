"""The web address of a git repository's remote: the site's default repository link.

`remote_web_url(repo)` asks git for the `origin` remote (else the first remote) of the repository
holding `repo` and turns it into an https address people can open: `git@host:owner/name.git`,
`ssh://git@host/owner/name.git` and `https://host/owner/name.git` all become
`https://host/owner/name`. Credentials in a remote (`https://user:token@host/…`) are never kept;
a remote that is a local path, or any other form, gives "" (no link, which the caller reports).
"""

from __future__ import annotations

import re
from pathlib import Path

from generator.core import proc
from generator.core.urls import urlsplit

_SCP = re.compile(r"^(?:[A-Za-z0-9._-]+@)?(?P<host>[A-Za-z0-9.-]+\.[A-Za-z]{2,}):(?P<path>[^/].*)$")
_PATH = re.compile(r"^/?(?P<path>[A-Za-z0-9._~-]+(?:/[A-Za-z0-9._~-]+)+)/?$")


def web_url(remote: str) -> str:
    """The https address of a git remote URL, "" when it has none (see the module)."""
    remote = remote.strip()
    host, path = "", ""
    scp = _SCP.fullmatch(remote)
    if scp and "://" not in remote:
        host, path = scp["host"], scp["path"]
    else:
        parts = urlsplit(remote)
        if parts.scheme in ("https", "http", "ssh", "git") and parts.hostname:
            host, path = parts.hostname, parts.path
            if parts.port and parts.scheme in ("https", "http"):
                host = f"{host}:{parts.port}"
    m = _PATH.fullmatch(path)
    if not host or m is None:
        return ""
    return f"https://{host.lower()}/{m['path'].removesuffix('.git')}"


def _git(repo: Path, *args: str) -> str:
    try:
        out = proc.git(repo, *args, timeout=10)
    except proc.ProcError:  # no git, or it did not answer: no link
        return ""
    return out.text().strip() if out.ok else ""


def remote_web_url(repo: Path) -> str:
    """The web address of the `origin` remote (else the first) of the repository holding
    `repo`; "" when there is no git, no remote or none with a web address."""
    names = _git(repo, "remote").split()
    if not names:
        return ""
    name = "origin" if "origin" in names else names[0]
    return web_url(_git(repo, "remote", "get-url", name))
