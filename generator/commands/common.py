"""Options and helpers every command shares: the catalog path, loading, error reporting, exit codes."""

from __future__ import annotations

import errno
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

import click

from generator.catalog.criteria import normalise_criteria
from generator.catalog.rules import RULES
from generator.core import safeio
from generator.core.errors import CatalogError, Diagnostic, Severity, printable
from generator.core.records import Catalog, Criteria
from generator.evidence.model import RootUse

EXIT_OK, EXIT_DATA, EXIT_USAGE = 0, 1, 2
F = TypeVar("F", bound=Callable[..., Any])


RULES_META = "aicr_catalog.upstream_rules"


def _remember_rules(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.meta[RULES_META] = value


def catalog_option(f: F) -> F:
    """--catalog PATH, and --upstream-rules (read by `open_catalog`, so every command that reads
    a catalog takes it)."""
    f = click.option(
        "--upstream-rules",
        type=click.Choice(sorted(RULES)),
        default=None,
        expose_value=False,
        is_eager=True,
        callback=_remember_rules,
        help="The upstream AICR rules to read the tree under (docs/upstream-compatibility.md). "
        "Default: what its overlays' apiVersions say (aicr.run/v1alpha2|v1alpha3: 2026-08; "
        "otherwise v0.11.1).",
    )(f)
    return click.option(
        "--catalog",
        "catalog_path",
        type=click.Path(path_type=Path, file_okay=False),
        default=Path("catalog"),
        show_default=True,
        help="Recipe tree to read (this repository's catalog/, or any AICR recipes directory).",
    )(f)


def stated_rules() -> str | None:
    """The --upstream-rules of the running command, if given."""
    ctx = click.get_current_context(silent=True)
    found = ctx.meta.get(RULES_META) if ctx is not None else None
    return str(found) if found is not None else None


class TrustRootOption(click.Option):
    """`--trust-root`, declared the one way (`trust_root_option`): the option states what its
    command verifies (`use`; RootUse.RELEASE refuses the demo root however given), and the
    command reads the root with `generator.evidence.trustroot.load_trust_root(spec, use=...)`,
    which judges it by content. tests/test_trust_roots.py fails when a command declares a
    --trust-root another way, or a release command loads a root for another use."""

    def __init__(self, *args: Any, use: RootUse, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.use = use


def trust_root_option(
    *,
    use: RootUse,
    name: str = "trust_root",
    multiple: bool = False,
    help: str,
    **kwargs: Any,
) -> Callable[[F], F]:
    """The `--trust-root` option of a command (see TrustRootOption)."""
    if not multiple:
        kwargs.setdefault("default", "public-good")
        kwargs.setdefault("show_default", True)
    kwargs.setdefault(
        "metavar", "public-good|FILE" if use is RootUse.RELEASE else "public-good|demo|FILE"
    )
    return click.option(
        "--trust-root", name, cls=TrustRootOption, use=use, multiple=multiple, help=help, **kwargs
    )


def criteria_options(f: F) -> F:
    """--service, --accelerator (alias --gpu, as upstream), --os, --intent, --platform."""
    for dim in reversed(("service", "accelerator", "os", "intent", "platform")):
        names = (f"--{dim}", "--gpu") if dim == "accelerator" else (f"--{dim}",)
        extra = " --gpu is an alias, as upstream." if dim == "accelerator" else ""
        f = click.option(
            *names,
            dim,
            default=None,
            metavar="VALUE",
            help=(
                f"Criteria: {dim} ('any' or omitted = wildcard; case-insensitive, upstream's "
                f"aliases accepted).{extra}"
            ),
        )(f)
    return f


def criteria_from(**kw: str | None) -> Criteria:
    """Query criteria normalised as upstream parses them (trim, case folding, aliases such as
    `self-managed` = any service and `al2023` = amazonlinux). Whether each value is known is
    checked by `resolve`, against the catalog's sets (invalid -> exit 2)."""
    return normalise_criteria(kw)


def fail(message: str, code: int = EXIT_DATA) -> NoReturn:
    """Stop the command: `handles_errors` prints `error: message` and exits with `code`."""
    raise CatalogError(message, exit_code=code)


def report_error(e: CatalogError) -> NoReturn:
    """Stop the command with a pipeline error (printed and exited by `handles_errors`)."""
    raise e


# what the environment refuses, as exit codes: an argument that cannot work (a read-only or
# unwritable output directory, a path that is not a directory) is a usage error; the rest
# (a full disk, a quota, an I/O error) fails the command like bad data
_USAGE_ERRNOS = frozenset(
    {
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EADDRINUSE,
        errno.EBUSY,
    }
)


def os_error_text(e: OSError) -> str:
    """One line for an OSError: what failed, on which path, and why (no traceback)."""
    reason = e.strerror or str(e) or type(e).__name__
    name = errno.errorcode.get(e.errno or 0, "")
    where = f" {printable(os.fsdecode(e.filename))}:" if e.filename is not None else ""
    hint = {
        errno.ENOSPC: "; free disk space (or point TMPDIR and -o elsewhere) and run it again",
        errno.EDQUOT: "; free space within the quota and run it again",
        errno.EROFS: "; choose a writable output directory",
        errno.EACCES: "; check the permissions or choose another path",
    }.get(e.errno or 0, "")
    return f"cannot complete:{where} {reason}" + (f" [{name}]" if name else "") + hint


def handles_errors(f: F) -> F:
    """The one error handler of every command (a test checks each registered command has it).

    A `CatalogError` is printed as its diagnostics, `error: message` and `hint: ...` (when it
    has one) and exits with its `exit_code`; an OSError escaping a command (ENOSPC in a build or
    render worker, a read-only output directory, ...) ends with one clear line, exit 2 when the
    argument cannot work (read-only, not a directory, port in use), else 1; a closed pipe
    (`aicr-catalog list | head`) exits 1 quietly. Never a traceback for any of these."""

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except CatalogError as e:
            for line in e.report_lines():
                click.echo(line, err=True)
            sys.exit(e.exit_code)
        except BrokenPipeError:  # the reader left
            sys.stderr.close()
            sys.exit(EXIT_DATA)
        except OSError as e:
            click.echo(f"error: {os_error_text(e)}", err=True)
            sys.exit(EXIT_USAGE if e.errno in _USAGE_ERRNOS else EXIT_DATA)

    run.handles_errors = True  # type: ignore[attr-defined]
    return cast(F, run)


def announce_defaults(catalog: Catalog) -> None:
    """Say once, on stderr, which of the project's own files the tree lacks (an upstream tree)."""
    if catalog.defaulted:
        click.echo(
            f"note: {catalog.root} has no {', '.join(catalog.defaulted)} (this project's own "
            "files; an upstream AICR tree has none): using built-in defaults (the scale profile "
            "'standard' only, no qualification lanes)",
            err=True,
        )


def load_catalog(root: Path, rules: str | None = None) -> tuple[Catalog, tuple[Diagnostic, ...]]:
    """`generator.catalog.load.load_catalog`, its module (jsonschema) imported when a command
    reads a catalog: `build` finds a no-change rebuild without it."""
    from generator.catalog.load import load_catalog as load

    return load(root, rules)


def open_catalog(path: Path) -> Catalog:
    """Load a catalog for a command that needs a usable one: any load error stops with exit 1."""
    if not safeio.is_dir(path):
        fail(
            f"catalog directory '{path}' not found; run from the repository root or pass --catalog PATH",
            EXIT_USAGE,
        )
    catalog, diags = load_catalog(path, stated_rules())  # a CatalogError: handles_errors
    errors = [d for d in diags if d.severity is Severity.ERROR]
    if errors:
        for d in errors:
            click.echo(d.format(), err=True)
        fail(
            f"the catalog at '{path}' has {len(errors)} load error(s); run `aicr-catalog validate` for all"
        )
    announce_defaults(catalog)
    return catalog
