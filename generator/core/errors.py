"""Errors as data: every user-facing problem is a located `Diagnostic`.

One error root (`CatalogError`), a subclass per stage. Each carries the diagnostics that explain
it and says what the user should do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum


def printable(text: str) -> str:
    """`text` with every non-printable character (controls, newlines, bidi and zero-width marks)
    written as its Python escape, so a file name or value cannot forge or reorder output lines."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True, order=True)
class Diagnostic:
    """One problem, located: `path:line:col: $.json.path: message [rule]`.

    `path` is relative to the catalog root (or as the user gave it); `line`/`col` are 1-based,
    0 when the problem has no position in a file.
    """

    path: str
    line: int
    col: int
    json_path: str
    message: str
    rule: str
    severity: Severity = Severity.ERROR

    def format(self) -> str:
        where = printable(self.path)
        if self.line:
            where = f"{where}:{self.line}:{self.col}"
        prefix = "" if self.severity is Severity.ERROR else "warning: "
        return (
            f"{where}: {printable(self.json_path)}: {prefix}{printable(self.message)} [{self.rule}]"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "jsonPath": self.json_path,
            "message": self.message,
            "rule": self.rule,
            "severity": str(self.severity),
        }


def sort_diagnostics(diags: Iterable[Diagnostic]) -> tuple[Diagnostic, ...]:
    """Sorted by file, line, column, rule, message; duplicates removed."""
    return tuple(sorted(set(diags)))


class CatalogError(Exception):
    """Root of every error the pipeline raises on purpose.

    The command line prints it one way (`report_lines`) and exits with `exit_code`: 1 bad data
    or a failed check, 2 usage. `hint`, when there is one, says what to do next and is printed on
    its own `hint:` line; a subclass may set one for all its errors, a raise site for its own."""

    hint: str | None = None
    exit_code = 1  # the CLI's exit status for this error: 1 bad data, 2 usage

    def __init__(
        self,
        message: str,
        diagnostics: Iterable[Diagnostic] = (),
        *,
        hint: str | None = None,
        exit_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.diagnostics = sort_diagnostics(diagnostics)
        if hint is not None:
            self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def diagnostics_text(self) -> str:
        lines = [d.format() for d in self.diagnostics] or [self.message]
        return "\n".join(lines)

    def report_lines(self) -> list[str]:
        """What the CLI prints on stderr: each diagnostic, `error: message`, then `hint: ...`."""
        lines = [d.format() for d in self.diagnostics]
        lines.append(f"error: {self.message}")
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return lines

    def with_exit_code(self, code: int) -> CatalogError:
        """This error (message, diagnostics, hint) with the exit status a command's contract
        gives it: e.g. `pins` exits 2 for any catalog it cannot read, `qualify` 1 for any
        recipe it cannot resolve."""
        return CatalogError(self.message, self.diagnostics, hint=self.hint, exit_code=code)

    def as_usage(self) -> CatalogError:
        """This error as a usage error (exit 2), e.g. an unknown recipe given to `status`."""
        return self.with_exit_code(2)


class LoadError(CatalogError):
    """A catalog or evidence file could not be read or parsed."""


class ValidationError(CatalogError):
    """The catalog has invalid data."""


class ResolveError(CatalogError):
    """A query or recipe name does not resolve to a recipe."""


class DependencyCycleError(ResolveError, ValueError):
    """Components whose `dependencyRefs` form a cycle. `cycle` names it closed, smallest name
    first (`a → b → a`). Also a ValueError, as the ordering raised before it was typed."""

    def __init__(
        self,
        cycle: Sequence[str],
        message: str | None = None,
        diagnostics: Iterable[Diagnostic] = (),
    ) -> None:
        self.cycle = tuple(cycle)
        super().__init__(message or f"dependency cycle: {self.cycle_text()}", diagnostics)

    def cycle_text(self) -> str:
        return " → ".join(self.cycle)


class ScaleError(CatalogError):
    """A scale-profile selection or override breaks the scale contract."""


class RenderError(CatalogError):
    """A bundle could not be rendered."""


class SiteError(CatalogError):
    """The site could not be built."""


class ReleaseError(CatalogError):
    """A release was refused."""


class UsageError(CatalogError):
    """The command was called wrongly (exit 2)."""

    exit_code = 2
