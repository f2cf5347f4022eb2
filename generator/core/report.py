"""Reporters for findings: one per `--format`, chosen from a registry."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from generator.core import markdown, safeio
from generator.core.errors import Diagnostic, Severity, printable


def _counts(diags: Sequence[Diagnostic]) -> tuple[int, int]:
    errors = sum(1 for d in diags if d.severity is Severity.ERROR)
    return errors, len(diags) - errors


def text(diags: Sequence[Diagnostic], subject: str) -> str:
    errors, warnings = _counts(diags)
    lines = [d.format() for d in diags]
    files = len({d.path for d in diags})
    if errors:
        lines.append(f"{subject}: {errors} error(s), {warnings} warning(s) in {files} file(s)")
    else:
        lines.append(f"{subject}: ok" + (f" ({warnings} warning(s))" if warnings else ""))
    return "\n".join(lines) + "\n"


def as_json(diags: Sequence[Diagnostic], subject: str) -> str:
    errors, warnings = _counts(diags)
    doc = {
        "subject": subject,
        "ok": errors == 0,
        "errors": errors,
        "warnings": warnings,
        "diagnostics": [d.to_json() for d in diags],
    }
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n"


def _escape_data(s: str) -> str:
    """GitHub's workflow-command escaping, then any other non-printable character escaped."""
    return printable(s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_prop(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def repository_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` holding `.git` (a directory or a worktree file)."""
    here = safeio.resolve(start)
    for candidate in (here, *here.parents):
        if safeio.exists(candidate / ".git"):
            return candidate
    return None


def repository_path(rel: str, base: Path | None) -> str:
    """`rel` (relative to `base`, default the current directory; or absolute) as GitHub resolves
    an annotation's `file=`: from the root of the repository holding the file (else from the
    current directory, GitHub's workspace)."""
    full = Path(rel) if Path(rel).is_absolute() else safeio.resolve(base or safeio.cwd()) / rel
    full = Path(os.path.normpath(full))
    root = repository_root(full.parent) or safeio.resolve(safeio.cwd())
    try:
        return full.relative_to(root).as_posix()
    except ValueError:
        return Path(safeio.relpath(full, root)).as_posix()


def annotation(
    level: str,
    message: str,
    *,
    title: str,
    path: str | None = None,
    base: Path | None = None,
    line: int = 0,
    col: int = 0,
) -> str:
    """One GitHub workflow command; `path` (relative to `base`) is made repository-relative."""
    props = []
    if path:
        props.append(f"file={_escape_prop(repository_path(path, base))}")
        if line:
            props += [f"line={line}", f"col={col}"]
    props.append(f"title={_escape_prop(title)}")
    return f"::{level} {','.join(props)}::{_escape_data(message)}"


def github(diags: Sequence[Diagnostic], subject: str, base: Path | None = None) -> str:
    """GitHub workflow commands (`::error file=…,line=…,col=…,title=<rule>::message`).

    Diagnostic paths are relative to `base` (the catalog directory the command was given);
    `file=` names them from the repository root, where GitHub looks for them."""
    lines = []
    for d in diags:
        level = "error" if d.severity is Severity.ERROR else "warning"
        lines.append(
            annotation(
                level,
                f"{d.json_path}: {d.message}",
                title=d.rule,
                path=d.path,
                base=base,
                line=d.line,
                col=d.col,
            )
        )
    errors, warnings = _counts(diags)
    lines.append(f"{subject}: {errors} error(s), {warnings} warning(s)")
    return "\n".join(lines) + "\n"


def markdown_summary(diags: Sequence[Diagnostic], subject: str) -> str:
    """A Markdown job summary (for $GITHUB_STEP_SUMMARY)."""
    errors, warnings = _counts(diags)
    status = "passed" if errors == 0 else "failed"
    out = [
        f"## {markdown.text(subject)}: {status}",
        "",
        f"{errors} error(s), {warnings} warning(s).",
        "",
    ]
    if diags:
        out += ["| file | line | rule | message |", "| --- | --- | --- | --- |"]
        for d in diags:
            msg = markdown.text(f"{d.json_path}: {d.message}")
            out.append(
                f"| {markdown.code(d.path)} | {d.line or ''} | {markdown.code(d.rule)} | {msg} |"
            )
    return "\n".join(out) + "\n"


def _github(diags: Sequence[Diagnostic], subject: str, base: Path | None = None) -> str:
    return github(diags, subject, base)


def _text(diags: Sequence[Diagnostic], subject: str, base: Path | None = None) -> str:
    return text(diags, subject)


def _json(diags: Sequence[Diagnostic], subject: str, base: Path | None = None) -> str:
    return as_json(diags, subject)


# Every reporter takes (diagnostics, subject, base): `base` is the directory the diagnostics'
# paths are relative to (only `github` needs it, to name files from the repository root).
REPORTERS: dict[str, Callable[[Sequence[Diagnostic], str, Path | None], str]] = {
    "text": _text,
    "json": _json,
    "github": _github,
}
