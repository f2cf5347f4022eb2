"""Untrusted text through the real CLI (issue 27, items 6 and 7): a signed attestedAt that
matches the schema's pattern but names no real time is refused (located, the run invalid), and
an identity pattern is matched in linear time."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.cli import main
from generator.core import linearmatch, text
from generator.evidence.sign import DEMO_ISSUER
from generator.evidence.statement import build_statement
from tests.test_cases import MEMORY_LIMIT, run_isolated
from tests.test_evidence_attacks import (
    LOGGED,
    Signed,
    _outcome,
    _place,
    _predicate,
    _repo,
    _verify_cli,
    honest,
)

__all__ = ["honest"]  # the fixture, used by the tests below


@pytest.mark.parametrize(
    "attested",
    ["2099-01-01T00:00:00+99:00", "2099-13-01T00:00:00Z", "2026-02-30T10:00:00Z",
     "2026-12-01T25:00:00Z", "2026-12-01T10:00:00-23:60"],
)  # fmt: skip
def test_an_unreal_attested_at_makes_the_run_invalid(
    attested: str, honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    payload = build_statement(_predicate(honest, attestedAt=attested))
    (path,) = _place(repo, [Signed(payload, signed_at=LOGGED)])
    o = _outcome(repo, "demo", monkeypatch)
    assert not o.runs[path]["counted"]
    assert o.runs[path]["exclusion"] == "invalid", o.runs[path]
    code, results = _verify_cli("demo")
    assert code == 1
    assert results[path]["class"] == "predicate-schema"
    assert "$.predicate.attestedAt: " in results[path]["reason"]
    assert "2099" not in o.site[path].attested_at if o.site[path].attested_at else True


# --- item 7: identity patterns matched in linear time ------------------------------------------


def _policy(pattern: str) -> str:
    return f"""\
apiVersion: aicr.run/v1
kind: SignerPolicy
signers:
  - label: Demo lab, one pattern (sample)
    class: first-party
    issuer: {DEMO_ISSUER}
    identityPattern: '{pattern}'
    trustRoot: demo
"""


LAB = (
    r"^https://github\.com/aicr-demo/qualification-lab/\.github/workflows/qualify\.yml@refs/heads/"
)
NESTED = _policy(LAB + "(a+)+$")
HOSTILE_BRANCH = (
    "https://github.com/aicr-demo/qualification-lab/.github/workflows/qualify.yml@refs/heads/"
    + "a" * 40
    + "!"
)


def test_a_nested_quantifier_pattern_cannot_hang_evidence_verify(
    honest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's `re` takes ~2^40 steps on this identity; the linear-time matcher a few
    microseconds. `evidence verify` runs in a child under the memory and time limits of the
    hostile I/O tests; its CPU time is bounded (not wall-clock)."""
    repo = _repo(tmp_path, NESTED)
    payload = build_statement(honest)
    (path,) = _place(repo, [Signed(payload, identity=HOSTILE_BRANCH)])
    monkeypatch.chdir(repo)

    def verify() -> dict[str, Any]:
        code, results = _verify_cli("demo")
        return {"code": code, "class": results[path]["class"]}

    # in a forked child under the suite's memory and time limits: a hang fails, never blocks
    out = run_isolated(verify, seconds=30, memory=MEMORY_LIMIT)
    assert out.died is None and out.error is None, (out.died, out.error)
    assert out.elapsed < 30  # CPU seconds: 2^40 backtracking steps would be days
    code, results = out.payload["code"], {path: {"class": out.payload["class"]}}
    assert code == 1
    assert results[path]["class"] == "signer-not-allowed"


@pytest.mark.parametrize(
    "pattern",
    [
        LAB + r"(a)\1$",
        LAB + r"(?=main)main$",
        LAB + r"(?<!x)main$",
    ],
)
def test_validate_refuses_patterns_that_need_backtracking(pattern: str, tmp_path: Path) -> None:
    repo = _repo(tmp_path, _policy(pattern))
    out = CliRunner().invoke(main, ["validate", str(repo / "catalog")])
    assert out.exit_code == 1, out.output
    assert (
        "signers.yaml:7:5: $.signers[0].identityPattern: " in out.output
        and "[signers.over-broad]" in out.output
    )
    assert "linear-time matcher" in out.output


# quantified pieces that backtrack exponentially in Python's `re` when nested or overlapping
_PIECES = st.sampled_from(["a", "a?", "a*", "a+", "(a|a)", "(a|aa)", "[a-z]", "\\w", "."])


@st.composite
def _evil_patterns(draw: st.DrawFn) -> str:
    inner = "".join(draw(st.lists(_PIECES, min_size=1, max_size=3)))
    outer = draw(st.sampled_from(["+", "*", "{2,}"]))
    tail = draw(st.sampled_from(["", "b", "$x"]))
    return rf"^https://github\.com/o/r/x@refs/heads/({inner}){outer}{tail.rstrip('$x')}$"


@settings(max_examples=60, deadline=None)
@given(_evil_patterns(), st.integers(10, 20000))
def test_matching_is_linear_in_the_identity(pattern: str, n: int) -> None:
    """Bounded by CPU, not wall-clock: 20 matches of an identity up to 20,000 characters that
    almost matches take well under a second of CPU (Python's `re` needs about 2^n steps)."""
    if linearmatch.problem(pattern) is not None:
        return
    text = "https://github.com/o/r/x@refs/heads/" + "a" * n + "!"
    linearmatch.fullmatch(pattern, "")  # compile outside the measurement
    start = time.process_time()
    for _ in range(20):
        linearmatch.fullmatch(pattern, text)
    assert time.process_time() - start < 2.0
    short = text[: text.index("heads/") + 6] + "a" * 8 + "!"
    # the same answer as Python's engine, where that one still finishes (2^8 steps)
    assert linearmatch.fullmatch(pattern, short) == bool(re.fullmatch(pattern, short))


def test_no_identity_pattern_is_matched_outside_linearmatch() -> None:
    """An identity pattern reaches a regular-expression engine only through core/linearmatch."""
    root = Path(__file__).resolve().parents[1] / "generator"
    stray = [
        f"{p.relative_to(root)}:{i}"
        for p in sorted(root.rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(
            r"\bre\.(fullmatch|match|search|compile)\([^)]*(identity_pattern|pattern)\b", line
        )
        and "linearmatch" not in line
        and p.name not in ("linearmatch.py",)
    ]
    allowed = {"evidence/policy.py"}  # compiles (never matches) to read the pattern's structure
    assert [s for s in stray if s.split(":")[0] not in allowed] == []


# --- item 6: labels unique by confusable skeleton, no control characters, XML 1.0 feeds -------


def _two_signers(first: str, second: str) -> str:
    return f"""\
apiVersion: aicr.run/v1
kind: SignerPolicy
signers:
  - label: {text.yaml_scalar(first)}
    class: first-party
    issuer: {DEMO_ISSUER}
    identity: https://github.com/aicr-demo/qualification-lab/.github/workflows/a.yml@refs/heads/main
    trustRoot: demo
  - label: {text.yaml_scalar(second)}
    class: partner
    issuer: {DEMO_ISSUER}
    identity: https://github.com/aicr-demo/partner-lab/.github/workflows/b.yml@refs/heads/main
    trustRoot: demo
"""


@pytest.mark.parametrize(
    ("second", "rule"),
    [
        ("NVIDІA lab", "[signers.duplicate-label]"),  # U+0406 CYRILLIC CAPITAL LETTER I
        ("NVIDIА lab", "[signers.duplicate-label]"),  # U+0410 CYRILLIC CAPITAL LETTER A
        ("nvidia  LAB", "[signers.duplicate-label]"),
        ("ＮＶＩＤＩＡ lab", "[signers.duplicate-label]"),  # fullwidth
        ("NVIDIA\vlab", "[signers.label]"),
        ("NVIDIA lab\u202e", "[signers.label]"),  # right-to-left override
        ("NVIDIA\u200blab", "[signers.label]"),  # zero-width space
    ],
)
def test_validate_refuses_a_label_that_reads_as_another_or_hides_characters(
    second: str, rule: str, tmp_path: Path
) -> None:
    repo = _repo(tmp_path, _two_signers("NVIDIA lab", second))
    out = CliRunner().invoke(main, ["validate", str(repo / "catalog")])
    assert out.exit_code == 1, out.output
    assert "signers.yaml:9:5: $.signers[1].label: " in out.output and rule in out.output


_CLASSES = [
    (a, b)
    for a, b in (("a", "а"), ("e", "е"), ("o", "о"), ("p", "р"), ("c", "с"), ("x", "х"),
                 ("i", "і"), ("l", "1"), ("O", "0"), ("A", "Α"), ("B", "Β"), ("H", "Н"))
]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="abceiloxpABHO -", min_size=1, max_size=20),
    st.sampled_from(_CLASSES),
    st.data(),
)
def test_one_look_alike_letter_gives_the_same_skeleton(
    label: str, swap: tuple[str, str], data: st.DataObject
) -> None:
    latin, other = swap
    if latin not in label:
        label += latin
    at = data.draw(st.sampled_from([i for i, c in enumerate(label) if c == latin]))
    spoof = label[:at] + other + label[at + 1 :]
    assert set(text.skeletons(spoof)) & set(text.skeletons(label))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=10), st.sampled_from([chr(c) for c in (*range(0x20), 0x7F, 0x85, 0x9B)]))
def test_every_control_character_is_refused_in_a_label(label: str, control: str) -> None:
    assert text.label_problem(label + control + "x") is not None


@pytest.mark.parametrize("bad", ["\v", "\x00", "\x1b[31m", "\x0c", "\ufffe", "\ud800", "<&]]>"])
def test_a_control_character_in_a_label_or_identity_keeps_the_feed_xml(bad: str) -> None:
    """A label or certificate identity (shown when no entry names the signer) holding C0
    characters: changelog.xml still parses with an XML 1.0 parser, the text kept otherwise."""
    from dataclasses import replace

    from generator.site import changelog
    from tests.test_site_pages import site

    s = site()
    runs = tuple(
        replace(e, signer_label=f"Lab{bad}a" if i == 0 else "", signer_identity=f"id{bad}@x")
        for i, e in enumerate(s.evidence)
    )
    s = replace(s, evidence=runs)
    feed = changelog.atom(s, "https://example.invalid/")
    root = ET.fromstring(feed)
    ns = {"a": "http://www.w3.org/2005/Atom"}
    titles = [t.text or "" for t in root.findall("a:entry/a:title", ns)]
    assert any("Lab" in t and t.endswith("(counted)") for t in titles), titles
    assert any("id" in t and "@x" in t for t in titles), titles
    for t in titles:
        assert not any(ord(c) < 0x20 and c not in "\t\n\r" for c in t)


@pytest.mark.parametrize(
    ("second", "rule"),
    [("NVIDІA CI", "allowlist.overlap"), ("nvidia  ci", "allowlist.overlap"),
     ("NVIDIA\x1bCI", "allowlist.label"), ("NVIDIA CI\u2066", "allowlist.label")],
)  # fmt: skip
def test_the_upstream_allowlist_refuses_look_alike_and_hidden_labels(
    second: str, rule: str
) -> None:
    from generator.core.yamlio import parse_yaml
    from generator.evidence.allowlist import allowlist_from

    wf = r"^https://github\.com/NVIDIA/aicr/\.github/workflows/{}\.yml@refs/heads/main$"
    raw = f"""\
schemaVersion: 1.0.0
firstParty:
  - label: NVIDIA CI
    issuer: https://token.actions.githubusercontent.com
    identityPattern: '{wf.format("a")}'
  - label: {text.yaml_scalar(second)}
    issuer: https://token.actions.githubusercontent.com
    identityPattern: '{wf.format("b")}'
"""
    _, _, diags = allowlist_from(parse_yaml(raw.encode(), "allowlist.yaml"))
    assert [(d.json_path, d.rule, d.line) for d in diags] == [("$.firstParty[1].label", rule, 6)]
