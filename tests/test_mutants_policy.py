"""Signer-policy decisions that no other test pins down (issue 32, `make mutation`).

Each test fails on a mutant of `generator/evidence/policy.py` that the rest of the suite let
through: the "nested too deeply" refusal (a pattern Python compiles, but whose leading
alternatives cannot be read without exhausting the recursion limit) and its neighbours.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.core.errors import ValidationError
from generator.core.yamlio import parse_yaml
from generator.evidence.policy import literal_prefixes, pattern_problem, policy_from, read_policy

GH = "https://token.actions.githubusercontent.com"
REPO = r"https://github\.com/o/r/"


def test_a_pattern_nested_too_deeply_is_refused_not_a_crash() -> None:
    deep = "^" + REPO + "(a)" * 1000 + "$"
    assert pattern_problem(deep, GH) == "identityPattern is nested too deeply"
    assert pattern_problem("^" + "(a)" * 1000 + "$") == "identityPattern is nested too deeply"
    with pytest.raises(RecursionError):
        literal_prefixes(deep)
    # fewer groups are read, and are one literal prefix
    assert pattern_problem("^" + REPO + "(a)" * 50 + "$", GH) is None
    assert literal_prefixes("^" + REPO + "(a)" * 50 + "$") == ("https://github.com/o/r/" + "a" * 50,)


def test_the_nested_refusal_is_a_located_diagnostic() -> None:
    text = (
        "apiVersion: aicr.run/v1\nkind: SignerPolicy\nsigners:\n"
        f"  - label: deep\n    class: partner\n    issuer: {GH}\n"
        f"    identityPattern: '^{REPO}{'(a)' * 1000}$'\n"
    )
    policy, diags = policy_from(parse_yaml(text, "signers.yaml"))
    assert policy.rules == ()
    assert [(d.line, d.json_path, d.message, d.rule) for d in diags] == [
        (
            7,
            "$.signers[0].identityPattern",
            "identityPattern is nested too deeply",
            "signers.over-broad",
        )
    ]


def test_a_policy_behind_a_link_out_of_its_directory_keeps_the_readers_rule(
    tmp_path: Path,
) -> None:
    (tmp_path / "outside.yaml").write_text("apiVersion: aicr.run/v1\n")
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    (catalog / "signers.yaml").symlink_to(tmp_path / "outside.yaml")
    with pytest.raises(ValidationError) as info:
        read_policy(catalog / "signers.yaml", "signers.yaml")
    (d,) = info.value.diagnostics
    assert (d.path, d.rule) == ("signers.yaml", "file.symlink-escape")
    assert str(info.value) == "cannot read the signer policy signers.yaml"
    with pytest.raises(ValidationError) as missing:
        read_policy(catalog / "absent.yaml")
    assert [(d.path, d.rule) for d in missing.value.diagnostics] == [
        ("absent.yaml", "signers.missing")
    ]
