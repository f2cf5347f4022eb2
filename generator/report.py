"""Reporters for findings: one per `--format`, chosen from a registry."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from generator.errors import Diagnostic, Severity, printable


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


def github(diags: Sequence[Diagnostic], subject: str) -> str:
    """GitHub workflow commands (`::error file=…,line=…,col=…,title=<rule>::message`)."""
    lines = []
    for d in diags:
        level = "error" if d.severity is Severity.ERROR else "warning"
        props = [f"file={_escape_prop(d.path)}"]
        if d.line:
            props += [f"line={d.line}", f"col={d.col}"]
        props.append(f"title={_escape_prop(d.rule)}")
        lines.append(f"::{level} {','.join(props)}::{_escape_data(f'{d.json_path}: {d.message}')}")
    errors, warnings = _counts(diags)
    lines.append(f"{subject}: {errors} error(s), {warnings} warning(s)")
    return "\n".join(lines) + "\n"


def markdown_summary(diags: Sequence[Diagnostic], subject: str) -> str:
    """A Markdown job summary (for $GITHUB_STEP_SUMMARY)."""
    errors, warnings = _counts(diags)
    status = "passed" if errors == 0 else "failed"
    out = [f"## {subject}: {status}", "", f"{errors} error(s), {warnings} warning(s).", ""]
    if diags:
        out += ["| file | line | rule | message |", "| --- | --- | --- | --- |"]
        for d in diags:
            msg = printable(f"{d.json_path}: {d.message}").replace("|", "\\|")
            out.append(f"| `{printable(d.path)}` | {d.line or ''} | `{d.rule}` | {msg} |")
    return "\n".join(out) + "\n"


REPORTERS: dict[str, Callable[[Sequence[Diagnostic], str], str]] = {
    "text": text,
    "json": as_json,
    "github": github,
}
