"""The network has one door: `generator/core/net.py` (issue 27, item 4).

Read with the standard library's `ast`: every `import` and `from ... import` of every module under
generator/ (at module level or inside a function) is checked against the network libraries below.
A module other than the client that imports one fails the suite, unless it is listed in
`EXCEPTIONS` with the reason it may. So a new `requests.get` (or socket, or urllib.request)
added anywhere else is caught on its first run, and the exceptions stay short and reasoned.

The test is shown to detect a synthetic violation of each kind (`test_the_checker_detects_*`).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

GENERATOR = Path(__file__).resolve().parent.parent / "generator"
CLIENT = "core/net.py"

# Module prefixes that open connections or speak a network protocol. `urllib.parse` and
# `http.HTTPStatus` are text and numbers, not network, and pass here; tests/test_boundaries.py
# keeps every `urllib` and `http` import in core/ all the same (core/urls.py, net.status_phrase).
NETWORK_MODULES = (
    "requests",
    "urllib3",
    "httpx",
    "aiohttp",
    "websocket",
    "websockets",
    "pycurl",
    "socket",
    "socketserver",
    "ssl",
    "asyncio",
    "http.client",
    "http.server",
    "http.cookiejar",
    "urllib.request",
    "urllib.error",
    "urllib.robotparser",
    "ftplib",
    "smtplib",
    "poplib",
    "imaplib",
    "telnetlib",
    "xmlrpc",
    "webbrowser",
    # sigstore's own network clients (Fulcio, Rekor, OIDC, TUF); its offline verifier is fine
    "sigstore.sign",
    "sigstore.oidc",
    "sigstore._internal.fulcio",
    "sigstore._internal.rekor",
    "sigstore._internal.tuf",
    "sigstore._internal.timestamp",
)
# Attribute calls that fetch over the network inside a library (sigstore's TUF-backed roots).
NETWORK_CALLS = frozenset({"production", "staging"})

# path under generator/ -> (modules or calls it may use, why)
EXCEPTIONS: dict[str, tuple[frozenset[str], str]] = {
    CLIENT: (
        frozenset({"http.client", "socket", "ssl", "http.server"}),
        "the one client: every request of the tool goes through Client.request; and the one "
        "server: `serve_site` binds 127.0.0.1 only, for `aicr-catalog serve`",
    ),
    "cli.py": (
        frozenset({"importlib.import_module"}),
        "the CLI loads each command lazily by a module name from its own fixed table of "
        "generator.commands modules, every one of which this test checks",
    ),
    "evidence/sign.py": (
        frozenset({"sigstore.sign", "sigstore.oidc", "production"}),
        "`evidence sign` without --trust-root demo is Sigstore keyless signing: Fulcio, Rekor "
        "and the CI's OIDC token are spoken to by sigstore-python's own client; only that "
        "explicit command reaches it, and its --help says it needs the network",
    ),
}


def _modules() -> list[Path]:
    return sorted(p for p in GENERATOR.rglob("*.py") if "__pycache__" not in p.parts)


def _is_network(name: str) -> str | None:
    for banned in NETWORK_MODULES:
        if name == banned or name.startswith(banned + "."):
            return banned
    return None


@functools.cache
def network_uses(source: str) -> frozenset[str]:
    """The network modules (and network-fetching calls) `source` imports or makes."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from http import client` and `from urllib import request` name the module too
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in NETWORK_CALLS
        ):
            found.add(node.func.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "__import__" and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    names = [arg.value]
        found |= {hit for n in names if (hit := _is_network(n))}
        if isinstance(node, ast.Call) and _dynamic_import(node):
            found.add("importlib.import_module")
    return frozenset(found)


def _dynamic_import(node: ast.Call) -> bool:
    """`importlib.import_module("socket")` and the like: a network module by another name."""
    f = node.func
    is_import = (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
        isinstance(f, ast.Name) and f.id == "import_module"
    )
    if not is_import or not node.args:
        return False
    arg = node.args[0]
    return not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)) or bool(
        _is_network(str(arg.value))
    )


def violations(files: dict[str, str]) -> list[str]:
    """`path: module` for each network use outside the client and the listed exceptions."""
    out: list[str] = []
    for rel, source in sorted(files.items()):
        allowed = EXCEPTIONS.get(rel, (frozenset(), ""))[0]
        out += [f"{rel}: {m}" for m in sorted(network_uses(source) - allowed)]
    return out


@functools.cache
def _sources() -> tuple[tuple[str, str], ...]:
    return tuple((str(p.relative_to(GENERATOR)), p.read_text("utf-8")) for p in _modules())


def _tree() -> dict[str, str]:
    return dict(_sources())


def test_only_the_client_reaches_the_network() -> None:
    assert violations(_tree()) == []


def test_every_exception_is_reasoned_and_still_needed() -> None:
    """An exception names a file that exists and uses what it is allowed (else it goes), and
    says why in a sentence."""
    tree = _tree()
    for rel, (allowed, why) in EXCEPTIONS.items():
        assert rel in tree, f"{rel} is listed but gone: remove it from EXCEPTIONS"
        assert len(why.split()) >= 8, rel
        used = network_uses(tree[rel])
        assert allowed <= used, f"{rel} no longer uses {sorted(allowed - used)}: narrow it"


@pytest.mark.parametrize(
    "source",
    [
        "import requests\nrequests.get('https://x')\n",
        "from urllib.request import urlopen\n",
        "from urllib import request\n",
        "import urllib.request\n",
        "import http.client as hc\n",
        "from http import client\n",
        "def f():\n    import socket\n    return socket.create_connection(('x', 1))\n",
        "import urllib3\n",
        "import httpx\n",
        "s = __import__('socket')\n",
        "import importlib\nm = importlib.import_module('socket')\n",
        "import importlib\nm = importlib.import_module(name)\n",
        "from sigstore.models import ClientTrustConfig\nClientTrustConfig.production()\n",
        "import asyncio\n",
        "import ssl\n",
    ],
    ids=lambda s: s.splitlines()[0][:40],
)
def test_the_checker_detects_a_synthetic_violation(source: str) -> None:
    """A module that would reach the network another way is named, wherever it sits."""
    tree = {**_tree(), "evidence/newcode.py": source}
    assert [v for v in violations(tree) if v.startswith("evidence/newcode.py")] != []


@pytest.mark.parametrize(
    "source",
    [
        "from urllib.parse import urlsplit\n",
        "from http import HTTPStatus\n",
        "import http\n",
        "from generator.core.net import Client\n",
    ],
)
def test_the_checker_allows_text_only_modules(source: str) -> None:
    assert network_uses(source) == frozenset()


def test_an_exception_covers_only_its_own_file_and_modules() -> None:
    """`serve` binds its server through the door, not itself; the door's exception is no one
    else's, not even another module of core/."""
    tree = _tree()
    tree["commands/serve.py"] += "\nimport http.server\n"
    tree["core/other.py"] = "import socket\n"
    assert violations(tree) == ["commands/serve.py: http.server", "core/other.py: socket"]
