"""`aicr-catalog serve` with a real server on 127.0.0.1: a missing page is the site's 404.html."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from generator.core import net

REPO = Path(__file__).resolve().parent.parent
NOT_FOUND = "<!doctype html><title>Page not found</title><h1>404: no such page here</h1>\n"


@contextmanager
def serving(site: Path) -> Iterator[tuple[str, str]]:
    """The base URL of `aicr-catalog serve --dir site` and what it said when it started."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "generator.cli", "serve", "--dir", str(site), "--port", "0"],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        said = ""
        while not (match := re.search(r"http://127\.0\.0\.1:(\d+)/", said)):
            line = proc.stderr.readline()
            assert line, said
            said += line
        yield f"http://127.0.0.1:{match.group(1)}/", said
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


def _site(tmp_path: Path, with_404: bool) -> Path:
    site = tmp_path / "site"
    (site / "recipes").mkdir(parents=True)
    (site / "index.html").write_text("<!doctype html><title>home</title>\n")
    if with_404:
        (site / "404.html").write_text(NOT_FOUND)
    return site


def _get(url: str, method: str = "GET") -> tuple[int, bytes, str]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request) as resp:
            return resp.status, resp.read(), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers.get("Content-Type", "")


def test_a_missing_page_is_the_sites_404_page_with_status_404(tmp_path: Path) -> None:
    site = _site(tmp_path, with_404=True)
    with serving(site) as (base, said):
        assert "warning" not in said
        assert _get(base + "index.html")[:2] == (200, (site / "index.html").read_bytes())
        for missing in ("nope.html", "recipes/none.html", "deep/er/path/"):
            status, body, ctype = _get(base + missing)
            assert (status, body) == (404, NOT_FOUND.encode()), missing
            assert ctype == "text/html; charset=utf-8"
        status, body, _ = _get(base + "nope.html", "HEAD")
        assert (status, body) == (404, b"")


def test_a_site_without_404_page_is_said_at_start_and_answers_the_bare_error(
    tmp_path: Path,
) -> None:
    site = _site(tmp_path, with_404=False)
    with serving(site) as (base, said):
        assert "404.html is missing" in said
        status, body, _ = _get(base + "nope.html")
        assert status == 404 and b"Error response" in body


def test_the_network_door_serves_on_loopback_only(tmp_path: Path) -> None:
    """`net.serve_site` has no address to choose and listens on 127.0.0.1; it serves the site's
    files and answers a missing page with the 404 page it was given."""
    assert "host" not in inspect.signature(net.serve_site).parameters
    site = _site(tmp_path, with_404=True)
    with net.serve_site(site, 0, not_found=NOT_FOUND.encode()) as server:
        assert server.host == "127.0.0.1"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        base = f"http://127.0.0.1:{server.port}/"
        assert _get(base + "index.html")[:2] == (200, (site / "index.html").read_bytes())
        assert _get(base + "nope.html")[:2] == (404, NOT_FOUND.encode())
        server.shutdown()
        thread.join(10)


def test_the_server_follows_no_link_in_the_served_tree(tmp_path: Path) -> None:
    """A link planted in the site (to a file or a directory outside it, or to a page inside it)
    is answered as missing, never followed: the secret's bytes are not served."""
    site = _site(tmp_path, with_404=True)
    secret = tmp_path / "outside" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY\n")
    (site / "key.html").symlink_to(secret)
    (site / "outside").symlink_to(secret.parent, target_is_directory=True)
    (site / "home.html").symlink_to(site / "index.html")
    (site / "recipes" / "up").symlink_to(site, target_is_directory=True)
    with net.serve_site(site, 0, not_found=NOT_FOUND.encode()) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        base = f"http://127.0.0.1:{server.port}/"
        for planted in ("key.html", "outside/id_rsa", "outside/", "home.html", "recipes/up/"):
            status, body, _ = _get(base + planted)
            assert (status, body) == (404, NOT_FOUND.encode()), planted
            assert b"PRIVATE" not in body
        assert _get(base + "index.html")[:2] == (200, (site / "index.html").read_bytes())
        assert _get(base + "recipes/")[0] == 200  # a plain directory is still listed
        server.shutdown()
        thread.join(10)
