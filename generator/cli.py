"""The `aicr-catalog` command line: a thin click group; one module per command in `commands/`.

Exit codes (every command): 0 ok, 1 bad data or a failed check, 2 usage. `preflight` adds 3
(only infrastructure prerequisites unmet); `pins` adds 4 (the check could not complete).
"""

from __future__ import annotations

import click

from generator import __version__
from generator.commands import build, compat, diff, list_cmd, query, release, serve, validate
from generator.commands.bundle import command as bundle_command
from generator.commands.evidence import command as evidence_command
from generator.commands.pins import command as pins_command
from generator.commands.preflight import command as preflight_command
from generator.commands.qualify import command as qualify_command
from generator.commands.samples import command as samples_command
from generator.commands.status import command as status_command
from generator.commands.synth import command as synth_command


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="aicr-catalog")
def main() -> None:
    """AICR Recipe Catalog: validate, resolve, bundle, verify and publish GPU-cluster recipes.

    Every command that reads a catalog takes --catalog PATH (default: ./catalog).
    Exit codes: 0 ok, 1 bad data or failed check, 2 usage (preflight adds 3, pins adds 4).
    """


main.add_command(validate.command)
main.add_command(query.command)
main.add_command(query.resolve_command)
main.add_command(list_cmd.command)
main.add_command(diff.command)
main.add_command(compat.command)
main.add_command(release.command)
main.add_command(bundle_command)
main.add_command(pins_command)
main.add_command(evidence_command)
main.add_command(preflight_command)
main.add_command(build.command)
main.add_command(serve.command)
main.add_command(qualify_command)
main.add_command(status_command)
main.add_command(samples_command)
main.add_command(synth_command)


if __name__ == "__main__":  # python -m generator.cli
    main()
