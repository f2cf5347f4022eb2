"""The `aicr-catalog` command line: a thin click group; one module per command in `commands/`.

Exit codes (every command): 0 ok, 1 bad data or a failed check, 2 usage. `preflight` adds 3
(infrastructure prerequisites unmet) and 4 (insufficient data); `pins` adds 4 (the check could
not complete).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

import click

from generator import __version__

# name -> "module:attribute" of the click command. Commands are imported when used, so
# `validate` does not pay for sigstore and plotly (the site, status and evidence stages).
COMMANDS: dict[str, str] = {
    "validate": "generator.commands.validate:command",
    "query": "generator.commands.query:command",
    "resolve": "generator.commands.query:resolve_command",
    "list": "generator.commands.list_cmd:command",
    "diff": "generator.commands.diff:command",
    "compat": "generator.commands.compat:command",
    "release": "generator.commands.release:command",
    "bundle": "generator.commands.bundle:command",
    "pins": "generator.commands.pins:command",
    "evidence": "generator.commands.evidence:command",
    "preflight": "generator.commands.preflight:command",
    "snapshot": "generator.commands.snapshot:command",
    "build": "generator.commands.build:command",
    "serve": "generator.commands.serve:command",
    "qualify": "generator.commands.qualify:command",
    "status": "generator.commands.status:command",
    "samples": "generator.commands.samples:command",
    "synth": "generator.commands.synth:command",
}


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's command table, importing each command module on first use."""

    def __init__(self, spec: dict[str, str]) -> None:
        self._spec = dict(spec)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            if name not in self._spec:
                raise KeyError(name)
            module, attr = self._spec[name].split(":")
            command = getattr(importlib.import_module(module), attr)
            assert isinstance(command, click.Command), self._spec[name]
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self._spec.pop(name, None)
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*self._spec, *self._loaded}))

    def __len__(self) -> int:
        return len({*self._spec, *self._loaded})


# errors: every command's callback goes through commands.common.handles_errors (a test checks
# each registered command), which prints them and exits with CatalogError.exit_code
@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="aicr-catalog")
def main() -> None:
    """AICR Recipe Catalog: validate, resolve, bundle, verify and publish GPU-cluster recipes.

    Every command that reads a catalog takes --catalog PATH (default: ./catalog).
    Exit codes: 0 ok, 1 bad data or failed check (also: the disk is full), 2 usage (also: a
    read-only output directory, a port in use); preflight adds 3 (infrastructure) and 4
    (insufficient data), pins adds 4.
    """


main.commands = LazyCommands(COMMANDS)


if __name__ == "__main__":  # python -m generator.cli
    main()
