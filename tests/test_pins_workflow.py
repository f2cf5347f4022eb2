"""The scheduled pins workflow: weekly and manual, least privilege, actions pinned by commit SHA,
and a command line the CLI accepts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from generator.commands.pins import command

WORKFLOW = Path(__file__).resolve().parent.parent / ".github" / "workflows" / "pins.yml"
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")


def load() -> dict[Any, Any]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(doc, dict)
    return doc


def test_weekly_and_manual() -> None:
    triggers = load()[True]  # YAML 1.1 reads the key `on` as true
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    (cron,) = [s["cron"] for s in triggers["schedule"]]
    _minute, _hour, dom, month, dow = cron.split()
    assert (dom, month) == ("*", "*") and dow.isdigit()  # once a week


def test_least_privilege() -> None:
    doc = load()
    assert doc["permissions"] == {}
    for job in doc["jobs"].values():
        assert job["permissions"] == {"contents": "read"}


def test_actions_pinned_by_full_commit_sha() -> None:
    uses = [
        step["uses"] for job in load()["jobs"].values() for step in job["steps"] if "uses" in step
    ]
    assert uses, "the workflow uses no action?"
    for ref in uses:
        assert SHA_PIN.match(ref), f"{ref} is not pinned by a full commit SHA"


def test_report_goes_to_the_job_summary_and_the_command_line_is_valid() -> None:
    runs = [
        step["run"] for job in load()["jobs"].values() for step in job["steps"] if "run" in step
    ]
    (pins,) = [r for r in runs if "aicr-catalog pins" in r]
    argv = shlex.split(pins.replace("\\\n", " "))
    assert "$GITHUB_STEP_SUMMARY" in argv[argv.index("--summary") + 1]
    args = argv[argv.index("pins") + 1 : argv.index(">")]
    # The options parse and mean what the workflow wants (a typo would be a usage error).
    ctx = command.make_context(
        "pins", [a.replace("$GITHUB_STEP_SUMMARY", "summary.md") for a in args]
    )
    assert (ctx.params["fmt"], str(ctx.params["summary_path"])) == ("json", "summary.md")
    assert ctx.params["write_spec"] is None
    # The qualified-at-scale column is fed by a status document an earlier step writes.
    status_file = str(ctx.params["status_path"])
    assert any(r.strip().endswith(f"> {status_file}") and "aicr-catalog status" in r for r in runs)
