"""Formatters for a `PinsReport`: text (terminal), json (schema `pins-report`) and markdown (the
job summary of the scheduled workflow). Each is a pure function of the report."""

from __future__ import annotations

import json
from collections.abc import Callable

from generator.pins.model import (
    UNKNOWN_QUALIFICATION,
    ExitCode,
    PinResult,
    PinsReport,
    PinStatus,
)

API_VERSION = "aicr.run/v1"
KIND = "PinsReport"
NONE = "-"
EXIT_MEANING = {
    ExitCode.OK: "every pin exists upstream",
    ExitCode.MISSING: "a pin is missing upstream",
    ExitCode.USAGE: "usage error",
    ExitCode.INCOMPLETE: "the check could not complete",
}


def rule_of(result: PinResult) -> str:
    return f"pins.{result.problem.kind}" if result.problem else ""


def chart_ref(result: PinResult) -> str:
    pin = result.pin
    return f"{pin.repository}/{pin.chart}" if pin.chart else pin.repository


def problem_lines(report: PinsReport) -> list[str]:
    """One located line per problem: `path:line:col: $.json.path: message [pins.kind]`, sorted."""
    lines: list[str] = []
    for r in report.results:
        if r.problem is None:
            continue
        pin = r.pin
        for loc in pin.locations:
            lines.append(
                f"{loc.format()}: {pin.component} {pin.version}: {r.problem.message} [{rule_of(r)}]"
            )
    return sorted(lines)


def summary(report: PinsReport) -> str:
    total = len(report.results)
    newer = sum(1 for r in report.results if r.newer.any())
    return (
        f"{total} pin{'s' if total != 1 else ''}: "
        f"{report.count(PinStatus.PRESENT)} present, {report.count(PinStatus.MISSING)} missing, "
        f"{report.count(PinStatus.UNKNOWN)} unknown; {newer} with newer versions"
    )


def _row(r: PinResult) -> list[str]:
    return [
        r.pin.component,
        r.pin.version,
        str(r.status),
        r.newer.patch or NONE,
        r.newer.minor or NONE,
        r.newer.major or NONE,
        r.qualified,
        str(len(r.pin.recipes)),
        chart_ref(r),
    ]


HEADER = ["COMPONENT", "VERSION", "STATUS", "PATCH", "MINOR", "MAJOR", "QUALIFIED", "RECIPES"]


def format_text(report: PinsReport) -> str:
    rows = [[*HEADER, "CHART"], *(_row(r) for r in report.results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    out = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1]
        for row in rows
    ]
    problems = problem_lines(report)
    if problems:
        out += ["", *problems]
    out += ["", summary(report)]
    return "\n".join(line.rstrip() for line in out) + "\n"


def to_json(report: PinsReport) -> dict[str, object]:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "summary": {
            "pins": len(report.results),
            "present": report.count(PinStatus.PRESENT),
            "missing": report.count(PinStatus.MISSING),
            "unknown": report.count(PinStatus.UNKNOWN),
            "withNewer": sum(1 for r in report.results if r.newer.any()),
            "exitCode": int(report.exit_code),
        },
        "pins": [
            {
                "component": r.pin.component,
                "repository": r.pin.repository,
                "chart": r.pin.chart,
                "version": r.pin.version,
                "sourceKind": str(r.pin.kind),
                "definedAt": [loc.to_json() for loc in r.pin.locations],
                "status": str(r.status),
                "problem": r.problem.to_json() if r.problem else None,
                "newer": r.newer.to_json(),
                "recipes": list(r.pin.recipes),
                "qualifiedAtScale": r.qualified,
            }
            for r in report.results
        ],
    }


def format_json(report: PinsReport) -> str:
    return (
        json.dumps(to_json(report), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
        + "\n"
    )


_STATUS_MD = {
    PinStatus.PRESENT: "✅ present",
    PinStatus.MISSING: "❌ missing",
    PinStatus.UNKNOWN: "⚠️ unknown",
}


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def format_markdown(report: PinsReport) -> str:
    out = ["## Component pins", "", summary(report), ""]
    if report.results:
        out += [
            "| Component | Version | Status | Newest patch | Newest minor | Newest major "
            "| Qualified at scale | Recipes | Chart |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in report.results:
            cells = _row(r)
            cells[2] = _STATUS_MD[r.status]
            cells[7] = ", ".join(r.pin.recipes) or NONE
            out.append("| " + " | ".join(_md(c) for c in cells) + " |")
        out.append("")
    problems = problem_lines(report)
    if problems:
        out += ["### Problems", "", *(f"- {_md(p)}" for p in problems), ""]
    if all(r.qualified == UNKNOWN_QUALIFICATION for r in report.results):
        out += [
            "Qualified at scale is `unknown`: no status document was given "
            "(`aicr-catalog status --format json` > FILE, then `pins --status FILE`).",
            "",
        ]
    out.append(f"Exit code {int(report.exit_code)}: {EXIT_MEANING[report.exit_code]}.")
    return "\n".join(out) + "\n"


FORMATTERS: dict[str, Callable[[PinsReport], str]] = {
    "text": format_text,
    "json": format_json,
    "markdown": format_markdown,
}
