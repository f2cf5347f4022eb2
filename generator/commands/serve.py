"""`aicr-catalog serve`: serve a built site on 127.0.0.1 for a look (no rebuilding)."""

from __future__ import annotations

from pathlib import Path

import click

from generator.commands.common import EXIT_USAGE, fail, handles_errors
from generator.core import net, safeio

NOT_FOUND_PAGE = "404.html"


def not_found_page(site_dir: Path) -> bytes | None:
    """The site's 404.html, read through the door, or None when the site has none."""
    page = site_dir / NOT_FOUND_PAGE
    if not safeio.is_file(page):
        return None
    return safeio.read(page, root=site_dir, where="the built site", limit=safeio.TEXT_BYTES)


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
    if not safeio.is_file(site_dir / "index.html"):
        fail(f"no built site in {site_dir}/; run `aicr-catalog build` first", EXIT_USAGE)
    not_found = not_found_page(site_dir)
    if not_found is None:
        click.echo(
            f"warning: {site_dir}/{NOT_FOUND_PAGE} is missing: a missing page is answered "
            "with a bare error page",
            err=True,
        )
    try:
        server = net.serve_site(site_dir, port, not_found=not_found)
    except OSError as e:
        fail(
            f"cannot listen on {net.LOOPBACK}:{port}: {e.strerror or e}; "
            "stop what uses the port or choose another --port",
            EXIT_USAGE,
        )
    with server:
        click.echo(
            f"serving {site_dir}/ on http://{net.LOOPBACK}:{server.port}/ (Ctrl-C to stop)",
            err=True,
        )
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            click.echo("stopped", err=True)
