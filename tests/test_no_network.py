"""No network during a build: the build resolves no host name and opens no connection.

Only commands asked to (`--online`, or `evidence pull/push`, `pins`, keyless `evidence sign`) use
the network, through `generator/core/net.py` (tests/test_boundaries_net.py, tests/test_net_bounds.py).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from generator.cli import main
from generator.site.build import BuildOptions, build_site
from tests.conftest import REPO


def test_build_makes_no_network_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def deny_connect(self: socket.socket, address: object) -> None:
        calls.append(f"connect {address!r}")
        raise OSError("network access during a build")

    def deny_lookup(host: object, *args: object, **kwargs: object) -> list[object]:
        calls.append(f"getaddrinfo {host!r}")
        raise OSError("name resolution during a build")

    monkeypatch.setattr(socket.socket, "connect", deny_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", deny_connect)
    monkeypatch.setattr(socket, "getaddrinfo", deny_lookup)
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: deny_connect(None, a))  # type: ignore[arg-type]
    report = build_site(
        BuildOptions(
            catalog=REPO / "catalog",
            evidence=REPO / "evidence",
            out=tmp_path / "site",
            bundles=False,
            source_date_epoch=1780000000,
        )
    )
    assert report.recipes >= 30
    assert calls == []


def test_the_online_commands_say_so_in_their_help() -> None:
    import click

    assert "network" in (main.commands["pins"].help or "")
    evidence = main.commands["evidence"]
    assert isinstance(evidence, click.Group)
    assert "network" in (evidence.commands["sign"].help or "")
