"""Untrusted text never reaches a page raw (issue 30 item 7): a control character in an
evidence message, a signer label, a check name or a commit subject is escaped by the one HTML
escaper (`core.text.html_text`, the site's Jinja `finalize`), so pages, the feed and the JSON
inside pages carry U+FFFD or a `\\u` escape instead."""

from __future__ import annotations

import re
from dataclasses import replace

from generator.cli import main
from generator.commands.build import cli_reference
from generator.evidence.view import Outcome
from generator.site import changelog, pages
from generator.site.jinja import environment
from generator.site.model import SiteData
from generator.site.timeline import Change, ProfileState, Run
from tests.conftest import REPO
from tests.test_site_pages import site

# every character a page must not carry raw, one of each kind: C0 (NUL, BEL, BS, VT, FF, ESC),
# DEL, C1 (NEL, CSI), a non-character
HOSTILE = "\x00\x07\x08\x0b\x0c\x1b\x7f\x85\x9b\ufdd0\uffff"
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff]")


def hostile_site() -> SiteData:
    s = site()
    runs = tuple(
        replace(
            e,
            signer_label=f"Lab{HOSTILE}label",
            signer_identity=f"https://id.example/{HOSTILE}",
            reason=f"message{HOSTILE}end",
            reasons=(f"install{HOSTILE}slow",),
            outcome=Outcome(e.outcome.status, (f"cause{HOSTILE}",), f"detail{HOSTILE}"),
            checks=tuple(replace(c, name=f"check{HOSTILE}") for c in e.checks),
        )
        for e in s.evidence
    )
    recipe = replace(s.recipes[0], evidence=runs)
    state = ProfileState(
        "sha256:" + "ab" * 32,
        "FAILING",
        "lane-36",
        36,
        {},
        (Run("r1", "r1", f"Lab{HOSTILE}", "lane-36", "fail", f"cause{HOSTILE}"),),
    )
    change = Change(
        id="demo-recipe@big@0123456789ab",
        recipe="demo-recipe",
        profile="big",
        commit="0123456789ab" * 3 + "0123",
        date="2026-11-02T00:00:00Z",
        subject=f"evidence{HOSTILE}: a commit subject",
        direction="gain",
        summary=f"ceiling rose{HOSTILE}",
        causes=(f"new failing run r1 by Lab{HOSTILE}",),
        before=None,
        after=state,
    )
    return replace(s, recipes=(recipe,), evidence=runs, timeline=(change,))


def test_no_control_character_from_data_reaches_a_page_or_the_feed_raw() -> None:
    s = hostile_site()
    generated = pages.all_pages(s, "# Contract\n", cli_reference(main)[:1])
    outputs = {**generated, changelog.FEED: changelog.atom(s, "https://x.example/").decode()}
    shown = 0
    for rel, text in outputs.items():
        raw = RAW.search(text)
        assert raw is None, f"{rel}: U+{ord(raw.group()):04X} raw at {raw.start()}"
        shown += text.count("\ufffd")
    assert shown >= 10  # the hostile values are on the pages, each control as U+FFFD
    recipe = generated["recipes/demo-recipe.md"]
    assert (
        "Lab" + "\ufffd" * len(HOSTILE) + "label" in recipe
    )  # the signer label, in the runs table
    assert "evidence\ufffd" in recipe  # the commit subject, in the history
    evidence = generated["evidence/demo-recipe.md"]
    assert "cause\ufffd" in evidence  # the judged cause, in the summary row
    stamp = "evidence/runs/index.md"  # the page every run page is stamped from
    runs = [t for rel, t in generated.items() if rel.startswith("evidence/runs/") and rel != stamp]
    assert runs and all("cause\ufffd" in t and "check\ufffd" in t for t in runs)  # a run's page


def test_json_in_a_page_writes_controls_as_escapes() -> None:
    from generator.site.jinja import script_json

    text = str(script_json({"label": HOSTILE}))
    assert RAW.search(text) is None
    assert "\\u0000" in text and "\\u007f" in text and "\\u0085" in text and "\\ufdd0" in text


def test_one_html_escaper() -> None:
    """Templates print through `html_text` (the environment's finalize); no module of the
    generator escapes HTML any other way (markupsafe's `escape` is imported by core/text.py
    only), so a new page or helper cannot go around it."""
    from generator.core.text import html_text

    assert environment().finalize is html_text
    other = re.compile(r"from markupsafe import[^\n]*\bescape\b|markupsafe\.escape|html\.escape")
    offenders = [
        p.relative_to(REPO).as_posix()
        for p in sorted((REPO / "generator").rglob("*.py"))
        if p.relative_to(REPO).as_posix() != "generator/core/text.py"
        and other.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
