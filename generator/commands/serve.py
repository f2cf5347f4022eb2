"""`aicr-catalog serve`: serve a built site on 127.0.0.1 for a look (no rebuilding)."""

from __future__ import annotations

import functools
import http.server
from pathlib import Path

import click

from generator.commands.common import EXIT_USAGE, fail, handles_errors


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

    Only the loopback address is bound. Exit codes: 0 stopped, 2 usage (no built site, the port is in use).
    """
    if not (site_dir / "index.html").is_file():
        fail(f"no built site in {site_dir}/; run `aicr-catalog build` first", EXIT_USAGE)
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(site_dir.resolve())
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
