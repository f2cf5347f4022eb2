"""catalog/signers.yaml: schema, over-broad patterns, matching, located diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.errors import ValidationError
from generator.evidence.model import SignerClass
from generator.evidence.policy import literal_prefix, pattern_problem, policy_from, read_policy
from generator.yamlio import parse_yaml
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
        (r"^https://github\.com/NVIDIA/aicr/x$|^.*$", "it matches ''"),
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
    assert literal_prefix(r"^https://a\.b/c/d/.*$") == "https://a.b/c/d/"
    assert literal_prefix(r"^https://a\.b/cd?/") == "https://a.b/c"


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
        "signers.yaml:12:5: $.signers[2].label: label 'ok' is already used by $.signers[0] "
        "[signers.duplicate-label]",
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
