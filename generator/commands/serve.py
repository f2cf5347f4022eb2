"""`aicr-catalog serve`: serve a built site on 127.0.0.1 for a look (no rebuilding)."""

from __future__ import annotations

import functools
import http.server
from pathlib import Path
from typing import Any

import click

from generator.commands.common import EXIT_USAGE, fail, handles_errors
from generator.core import safeio

NOT_FOUND_PAGE = "404.html"


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """The standard static handler, except that a missing page is answered with the site's own
    `404.html` (status 404), as GitHub Pages does, not with Python's bare error page."""

    not_found: bytes | None = None  # the site's 404.html, read once when serving starts

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        body = self.not_found
        if code != 404 or body is None or self.command not in ("GET", "HEAD"):
            super().send_error(code, message, explain)
            return
        self.log_error("code %d, message %s", code, message)
        self.send_response(code, message)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)


def handler_for(site_dir: Path) -> Any:
    """The request handler serving `site_dir`, with its 404.html when the site has one."""
    page = site_dir / NOT_FOUND_PAGE
    not_found = (
        safeio.read(page, root=site_dir, where="the built site", limit=safeio.TEXT_BYTES)
        if page.is_file()
        else None
    )
    handler = type("Handler", (SiteHandler,), {"not_found": not_found})
    return functools.partial(handler, directory=str(site_dir.resolve()))


@click.command("serve")
@click.option(
    "-d",
    "--dir",
    "site_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("site"),
    show_default=True,
    help="The built site (run `aicr-catalog build` first).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@handles_errors
def command(site_dir: Path, port: int) -> None:
    """Serve the built site on http://127.0.0.1:PORT/ until interrupted (Ctrl-C).

    Only the loopback address is bound. A missing page is answered with the site's 404.html
    (status 404), as the published site does. Exit codes: 0 stopped, 2 usage (no built site, the port is in use).
    """
    if not (site_dir / "index.html").is_file():
        fail(f"no built site in {site_dir}/; run `aicr-catalog build` first", EXIT_USAGE)
    handler = handler_for(site_dir)
    if not (site_dir / NOT_FOUND_PAGE).is_file():
        click.echo(
            f"warning: {site_dir}/{NOT_FOUND_PAGE} is missing: a missing page is answered "
            "with a bare error page",
            err=True,
        )
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as e:
        fail(
            f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}; "
            "stop what uses the port or choose another --port",
            EXIT_USAGE,
        )
    with server as httpd:
        bound = httpd.server_address[1]
        click.echo(f"serving {site_dir}/ on http://127.0.0.1:{bound}/ (Ctrl-C to stop)", err=True)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            click.echo("stopped", err=True)
