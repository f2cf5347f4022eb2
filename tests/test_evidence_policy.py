"""catalog/signers.yaml: schema, over-broad patterns, matching, located diagnostics."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.core.errors import ValidationError
from generator.core.yamlio import parse_yaml
from generator.evidence.model import SignerClass
from generator.evidence.policy import (
    literal_prefixes,
    pattern_problem,
    policy_from,
    read_policy,
    top_level_alternation,
)
from tests.conftest import CATALOG

GH = "https://token.actions.githubusercontent.com"


def _doc(signers: str):  # type: ignore[no-untyped-def]
    text = f"apiVersion: aicr.run/v1\nkind: SignerPolicy\nsigners:\n{signers}"
    return parse_yaml(text, "signers.yaml")


def test_the_committed_policy_loads_and_binds_demo_signers_to_the_demo_root() -> None:
    policy = read_policy(CATALOG / "signers.yaml", "signers.yaml")
    labels = [r.label for r in policy.rules]
    assert "NVIDIA AICR release CI" in labels
    demo = [r for r in policy.rules if "(sample)" in r.label]
    assert demo and all(r.trust_root == "demo" for r in demo)
    assert {r.klass for r in demo} == set(SignerClass)
    release = policy.rules[labels.index("NVIDIA AICR release CI")]
    ok = "https://github.com/NVIDIA/aicr/.github/workflows/validate.yaml@refs/heads/main"
    assert policy.match(ok, GH, "public-good") is release
    assert policy.match(ok.replace("NVIDIA/aicr", "NVIDIA/aicr-fork"), GH, "public-good") is None
    assert policy.match(ok.replace("heads/main", "heads/feature"), GH, "public-good") is None
    assert policy.match(ok, "https://accounts.google.com", "public-good") is None


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        (r"^.*$", "a non-URI pattern must end with a literal @domain"),
        (
            r"^https://github\.com/.*$",
            "its literal prefix 'https://github.com/' must name scheme://host/<owner>/<repo>/",
        ),
        (
            r"^https://github\.com/NVIDIA/.*$",
            "its literal prefix 'https://github.com/NVIDIA/' must name",
        ),
        (r"^https://github\.com/NVIDIA/aicr/.*", "must be anchored with ^ and $"),
        (r"https://github\.com/NVIDIA/aicr/.*$", "must be anchored with ^ and $"),
        (r"^https://github\.com/NVIDIA/aicr/x$|^.*$", "may not use top-level alternation"),
        (r"^https://github\.com/NVIDIA/aicr/(x$", "is not a regular expression"),
        (r"^https?://github\.com/NVIDIA/aicr/.*$", "its literal prefix 'http' must name"),
    ],
)
def test_over_broad_patterns_are_rejected(pattern: str, problem: str) -> None:
    found = pattern_problem(pattern)
    assert found is not None and problem in found


@pytest.mark.parametrize(
    "pattern",
    [
        r"^https://github\.com/NVIDIA/aicr/\.github/workflows/[a-z-]+\.ya?ml@refs/heads/main$",
        r"^https://gitlab\.com/group/project//\.gitlab-ci\.yml@refs/tags/v[0-9.]+$",
        r"^[a-z.]+@nvidia\.com$",
    ],
)
def test_specific_patterns_are_accepted(pattern: str) -> None:
    assert pattern_problem(pattern) is None


def test_literal_prefix_stops_at_the_first_operator() -> None:
    assert literal_prefixes(r"^https://a\.b/c/d/.*$") == ("https://a.b/c/d/",)
    assert literal_prefixes(r"^https://a\.b/cd?/") == ("https://a.b/c",)
    assert literal_prefixes(r"^(?:https://a\.b/c/d/x|https://a\.b/e/f/y)$") == (
        "https://a.b/c/d/x",
        "https://a.b/e/f/y",
    )


def test_problems_are_located_and_bad_entries_left_out() -> None:
    doc = _doc(
        "  - label: ok\n    class: partner\n    issuer: https://token.actions.githubusercontent.com\n"
        "    identity: https://github.com/a/b/.github/workflows/x.yml@refs/heads/main\n"
        "  - label: broad\n    class: community\n    issuer: https://token.actions.githubusercontent.com\n"
        "    identityPattern: ^https://github\\.com/.*$\n"
        "  - label: ok\n    class: partner\n    issuer: https://accounts.google.com\n"
        "    identity: someone@example.com\n"
    )
    policy, diags = policy_from(doc)
    assert [r.label for r in policy.rules] == ["ok"]
    assert [d.format() for d in diags] == [
        "signers.yaml:11:5: $.signers[1].identityPattern: identityPattern is over-broad: its literal "
        "prefix 'https://github.com/' must name scheme://host/<owner>/<repo>/ before any wildcard "
        "[signers.over-broad]",
        "signers.yaml:12:5: $.signers[2].label: label 'ok' reads as the label of $.signers[0] "
        "(same confusable skeleton): one signer, one label [signers.duplicate-label]",
    ]


def test_schema_problems_stop_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "signers.yaml"
    path.write_text(
        "apiVersion: aicr.run/v1\nkind: SignerPolicy\nsigners:\n"
        "  - label: both\n    class: vendor\n    issuer: https://x.example\n"
    )
    with pytest.raises(ValidationError) as info:
        read_policy(path, "signers.yaml")
    text = info.value.diagnostics_text()
    assert "signers.yaml:5:5: $.signers[0].class:" in text
    assert "'vendor' is not one of ['first-party', 'partner', 'community']" in text


def test_a_missing_policy_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as info:
        read_policy(tmp_path / "signers.yaml", "signers.yaml")
    assert info.value.diagnostics[0].rule == "signers.missing"


def test_identity_and_pattern_are_exclusive() -> None:
    doc = _doc(
        "  - label: both\n    class: partner\n    issuer: https://x.example\n"
        "    identity: a@b.example\n    identityPattern: ^a@b\\.example$\n"
    )
    policy, diags = policy_from(doc)
    assert policy.rules == () and diags and diags[0].json_path == "$.signers[0]"


# ---------------------------------------------------------------- patterns that cannot widen
#
# Issue #16, attack 3: `^<narrow>$|^https://github\.com/[b-z].*$` passed the old check (its
# literal prefix was read from the text up to the first operator); evidence from another owner
# then verified as the first-party signer. The check now reads the parsed pattern.

NARROW = r"https://github\.com/NVIDIA/aicr/\.github/workflows/ci\.yml@refs/heads/main"
FOREIGN = "https://github.com/bad/repo/.github/workflows/ci.yml@refs/heads/main"


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        (rf"^{NARROW}$|^https://github\.com/[b-z].*$", "top-level alternation"),
        (rf"^{NARROW}$|https://github\.com/[b-z].*$", "top-level alternation"),
        (rf"^(?:{NARROW}|https://github\.com/[b-z].*)$", "literal prefix 'https://github.com/'"),
        (rf"^(?:{NARROW}|(?:https://github\.com/bad/repo/.*))$", None),  # both prefixes literal
        (r"^https://github\.com/NVIDIA/aicr(?i:/).*$", "may not set flags"),
        (r"^https://github\.com/NVIDIA/aicr/(?i:x).*$", "may not set flags"),
        (r"(?i)^https://github\.com/NVIDIA/aicr/.*$", "anchored"),
        (
            r"^https://github\.com/NVIDIA/aicr/?.*$",
            "literal prefix 'https://github.com/NVIDIA/aicr'",
        ),
        (
            r"^https://github\.com/NVIDIA/aicr{0}/.*$",
            "literal prefix 'https://github.com/NVIDIA/aic'",
        ),
        (r"^https://github\.com/\.\./aicr/.*$", "must name scheme://host/<owner>/<repo>/"),
        (r"^https://gitlab\.com/NVIDIA/aicr/.*$", "identities of issuer"),
        (r"^[a-z]+@nvidia\.com$", "must name scheme://host/<owner>/<repo>/"),
    ],
)
def test_crafted_patterns_for_the_github_issuer(pattern: str, problem: str | None) -> None:
    found = pattern_problem(pattern, GH)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found, found


def test_the_alternation_attack_is_refused_when_the_policy_is_loaded() -> None:
    doc = _doc(
        "  - label: NVIDIA AICR release CI\n    class: first-party\n"
        f"    issuer: {GH}\n"
        f"    identityPattern: '^{NARROW}$|^https://github\\.com/[b-z].*$'\n"
    )
    policy, diags = policy_from(doc)
    assert policy.rules == ()
    assert [d.rule for d in diags] == ["signers.over-broad"]
    assert policy.match(FOREIGN, GH, "public-good") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a|b", True),
        ("(a|b)", False),
        ("[|]", False),
        (r"\|", False),
        ("[]|]", False),
        ("[^]|]", False),
        ("(a)|(b)", True),
        (r"[\]|]", False),
    ],
)
def test_top_level_alternation_reads_groups_classes_and_escapes(text: str, expected: bool) -> None:
    assert top_level_alternation(text) is expected


# Generated patterns: a literal owner/repo prefix followed by arbitrary regular-expression
# pieces (wildcards, classes, groups, alternation, quantifiers, flags, escapes). Whatever the
# combination, a pattern the policy accepts never matches an identity of another repository.

_WELL_FORMED = [
    ".*",
    ".+",
    "[a-z]+",
    "[b-z]",
    "x",
    r"\.",
    "/",
    "x?",
    "(a|b)",
    "(?:x|.*)",
    r"\|",
    "@refs/heads/main",
    "[^/]*",
    r"\d+",
    r"\w+",
    "(?:evil/repo/)?",
    "[|]",
    "(.*|https://github\\.com/)",
    "x{0,2}",
    "-",
]
# lookaround needs backtracking: the linear-time matcher (core/linearmatch) refuses it
_MALFORMED = [
    "|",
    "(",
    ")",
    "(?i)",
    "(?i:",
    "[",
    "]",
    "^",
    "$",
    "*",
    "?",
    "{0}",
    "(?s)",
    "(?=.*)",
    "(?!x)",
]
_PIECES = st.one_of(st.sampled_from(_WELL_FORMED), st.sampled_from(_MALFORMED))
_OWNERS = st.sampled_from(["NVIDIA", "nvidia-lab", "a", "A.b", "x_y"])


@st.composite
def _patterns(draw: st.DrawFn) -> tuple[str, str]:
    owner, repo = draw(_OWNERS), draw(_OWNERS)
    lead = draw(st.sampled_from(["^", "^", "^", "^(?:", "", "^(?i)", "^.*"]))
    prefix = draw(
        st.sampled_from(
            [
                rf"https://github\.com/{re.escape(owner)}/{re.escape(repo)}/",
                rf"https://github\.com/{re.escape(owner)}/",
                r"https://github\.com/",
                rf"https://github\.com/{re.escape(owner)}/{re.escape(repo)}",
                "",
            ]
        )
    )
    tail = "".join(draw(st.lists(_PIECES, max_size=8)))
    end = draw(st.sampled_from(["$", "$", "$", ")$", "", "|^.*$", r"\$"]))
    return lead + prefix + tail + end, f"https://github.com/{owner}/{repo}/"


@st.composite
def _foreign_identities(draw: st.DrawFn) -> str:
    owner = draw(st.sampled_from(["evil", "bad", "zz", "NVIDIA-evil", "a.b", "Nvidia"]))
    repo = draw(st.sampled_from(["repo", "aicr", "x", "NVIDIA"]))
    rest = draw(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789./@-_", max_size=30))
    return f"https://github.com/{owner}/{repo}/{rest}"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_patterns(), st.lists(_foreign_identities(), min_size=1, max_size=5))
def test_accepted_patterns_never_reach_another_repository(
    generated: tuple[str, str], identities: list[str]
) -> None:
    pattern, allowed = generated
    if pattern_problem(pattern, GH) is not None:
        return
    compiled = re.compile(pattern)
    for prefix in literal_prefixes(pattern):
        assert prefix.startswith("https://github.com/") and prefix.count("/") >= 5
    for identity in [*identities, FOREIGN, allowed.replace("github.com/", "github.com/evil-")]:
        if compiled.fullmatch(identity):
            # a match is only possible inside one of the pattern's own repositories
            assert any(identity.startswith(p) for p in literal_prefixes(pattern)), identity
            owner_repo = "/".join(identity.split("/")[3:5])
            assert any(f"github.com/{owner_repo}/" in p for p in literal_prefixes(pattern))


@settings(max_examples=200, deadline=None)
@given(
    _OWNERS,
    _OWNERS,
    st.lists(st.sampled_from(_WELL_FORMED), max_size=6),
    st.lists(_foreign_identities(), min_size=1, max_size=5),
)
def test_well_formed_patterns_behind_a_repository_prefix_are_accepted_and_stay_inside(
    owner: str, repo: str, tail: list[str], identities: list[str]
) -> None:
    prefix = rf"https://github\.com/{re.escape(owner)}/{re.escape(repo)}/"
    pattern = f"^{prefix}{''.join(tail)}$"
    assert pattern_problem(pattern, GH) is None, pattern
    compiled = re.compile(pattern)
    inside = f"https://github.com/{owner}/{repo}/"
    for identity in identities:
        assert not compiled.fullmatch(identity) or identity.startswith(inside)


def test_a_broad_alternative_cannot_hide_past_the_alternatives_examined() -> None:
    narrow = "|".join(rf"https://github\.com/NVIDIA/r{i}/x" for i in range(70))
    found = pattern_problem(rf"^(?:{narrow}|https://github\.com/.*)$", GH)
    assert found == "identityPattern has more than 64 leading alternatives"
    few = "|".join(rf"https://github\.com/NVIDIA/r{i}/x" for i in range(5))
    assert pattern_problem(rf"^(?:{few})$", GH) is None
    assert pattern_problem(rf"^(?:{few}|https://github\.com/.*)$", GH) is not None
