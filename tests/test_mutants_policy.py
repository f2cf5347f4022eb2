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
from generator.evidence.policy import (
    _scoped_flags,
    _sre,
    literal_prefixes,
    pattern_problem,
    policy_from,
    read_policy,
    top_level_alternation,
)

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
    assert literal_prefixes("^" + REPO + "(a)" * 50 + "$") == (
        "https://github.com/o/r/" + "a" * 50,
    )


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
    assert (d.path, d.line, d.col, d.rule) == ("signers.yaml", 0, 0, "file.symlink-escape")
    assert str(info.value) == "cannot read the signer policy signers.yaml"
    with pytest.raises(ValidationError) as missing:
        read_policy(catalog / "absent.yaml")
    assert [(d.path, d.rule) for d in missing.value.diagnostics] == [
        ("absent.yaml", "signers.missing")
    ]


def test_at_most_64_leading_alternatives_are_read() -> None:
    def alternatives(n: int) -> str:
        return "^(?:" + "|".join(rf"{REPO}w{i}" for i in range(n)) + ")$"

    assert len(literal_prefixes(alternatives(64))) == 64
    assert pattern_problem(alternatives(64), GH) is None
    assert pattern_problem(alternatives(65), GH) == (
        "identityPattern has more than 64 leading alternatives"
    )
    with pytest.raises(ValueError, match="more than 64 leading alternatives"):
        literal_prefixes(alternatives(65))


@pytest.mark.parametrize(
    "inner",
    [
        "(?:(?i:x))*",  # inside a repeat
        "(?:(?i:x))*?",  # a lazy one
        "(?:a|(?i:b))",  # an alternative
        "(?:a(?:b(?-i:c)))",  # nested groups
    ],
)
def test_flags_are_refused_wherever_they_are_nested(inner: str) -> None:
    problem = pattern_problem(f"^{REPO}{inner}$", GH)
    assert problem == "identityPattern may not set flags such as (?i) or (?x)"


LINEAR = "identityPattern needs a backtracking feature the linear-time matcher refuses "
LINEAR += "(backreferences, lookaround): "


@pytest.mark.parametrize(
    ("inner", "detail"),
    [
        ("(?:(?i:x))*+", "bad repetition operator: *+"),  # a possessive repeat
        ("(x)*+", "bad repetition operator: *+"),
        ("(?=(?i:x))x", "invalid perl operator: (?="),  # a lookahead
        ("(?=x)x", "invalid perl operator: (?="),
        ("(?!(?i:y))x", "invalid perl operator: (?!"),  # a negative lookahead
        ("(?>(?i:x))", "invalid perl operator: (?>"),  # an atomic group
        ("(?>x)", "invalid perl operator: (?>"),
    ],
)
def test_backtracking_groups_are_refused_by_the_linear_matcher_first(
    inner: str, detail: str
) -> None:
    """Possessive repeats, lookaround and atomic groups are refused (with or without flags
    inside) before the flag check: identity patterns are matched by RE2 (core/linearmatch)."""
    assert pattern_problem(f"^{REPO}{inner}$", GH) == LINEAR + detail
    # the flag check still looks inside them, should the matcher ever accept one
    assert _scoped_flags(_sre.parse(f"^{REPO}{inner}$")) is ("(?i" in inner)


def test_groups_without_flags_anywhere_are_accepted() -> None:
    for inner in ("(?:x)*", "(?:x)*?", "(?:a|(?:b))", "(x)+?", "(?:a(?:b(?:c)))"):
        assert pattern_problem(f"^{REPO}{inner}$", GH) is None, inner


def test_a_group_with_flags_ends_the_literal_prefix() -> None:
    assert literal_prefixes(r"^abc(?i:d)e$") == ("abc",)
    assert literal_prefixes(r"^abc(?:d)e$") == ("abcde",)
    assert literal_prefixes(r"abc") == ("abc",)  # no anchor: the same prefix


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        (r"^[a-z]+\.example\.com$", "a non-URI pattern must end with a literal @domain"),
        (r"^[a-z]+@[a-z]+\.com$", "a non-URI pattern must end with a literal @domain"),
        (r"^[a-z]+@localhost$", "a non-URI pattern must end with a literal @domain"),
        (r"^https://github\.com/o/r/x\$", "must be anchored with ^ and $"),
        (r"^[a-z]+://github\.com/o/r/x$", "its literal prefix '' must name"),
    ],
)
def test_patterns_refused_for_what_they_end_or_begin_with(pattern: str, problem: str) -> None:
    found = pattern_problem(pattern)
    assert found is not None and problem in found, found


def test_an_email_pattern_with_a_literal_domain_is_accepted() -> None:
    assert pattern_problem(r"^[a-z.]+@lab\.example\.com$") is None
    assert pattern_problem(r"^ci(?:-bot)?@lab\.example\.com$") is None


def test_a_group_closing_inside_a_group_keeps_its_depth() -> None:
    assert top_level_alternation("((a)|b)") is False
    assert top_level_alternation("(a))|b") is True  # a stray `)` never makes depth negative
    assert top_level_alternation(r"a\\|b") is True  # an escaped backslash, then `|`
    assert top_level_alternation("[a]|b") is True
    assert top_level_alternation("[ab|]") is False  # a class of several characters
    assert top_level_alternation("x[a-c|d]y") is False


def test_a_group_with_a_wildcard_ends_the_prefix_inside_it() -> None:
    assert literal_prefixes(r"^(?:https://a\.b/c/d/.*)x$") == ("https://a.b/c/d/",)
    assert literal_prefixes(r"^(?:https://a\.b/c/d/x|https://a\.b/e/f/.+)y$") == (
        "https://a.b/c/d/xy",
        "https://a.b/e/f/",
    )


def test_a_wildcard_in_a_nested_group_ends_the_prefix_at_every_level() -> None:
    assert literal_prefixes(r"^(?:(?:https://a\.b/c/d/.*)x)y$") == ("https://a.b/c/d/",)
    # capturing groups stay groups in the parsed pattern (non-capturing ones may be inlined)
    assert literal_prefixes(r"^((https://a\.b/c/d/.*)x)y$") == ("https://a.b/c/d/",)
    assert literal_prefixes(r"^((https://a\.b/c/d/.*|https://a\.b/e/f/g)x)y$") == (
        "https://a.b/c/d/",
        "https://a.b/e/f/gxy",
    )
    assert literal_prefixes(r"^(?:(?:https://a\.b/c/d/e)x)y$") == ("https://a.b/c/d/exy",)


def test_the_whole_literal_domain_is_read_up_to_the_anchor() -> None:
    assert pattern_problem(r"^[a-z]+@lab\.io$") is None  # a two-letter top-level domain
    found = pattern_problem(r"^[a-z]+@lab\.i$")
    assert found is not None and "must end with a literal @domain" in found


def test_one_uri_alternative_makes_every_alternative_a_uri() -> None:
    # the pattern's text has no "://" (escaped), one alternative is a URI, the other is not
    found = pattern_problem(r"^(?:https\:\/\/a\.b/c/d/x|y@z\.com)$")
    assert found is not None and "its literal prefix 'y@z.com' must name" in found


@pytest.mark.parametrize(
    "pattern",
    [r"^https://github\.com/attacker/evil/.*$", r"^[a-z]+@evil\.example$"],
)
def test_a_pattern_that_admits_a_foreign_probe_is_refused(pattern: str) -> None:
    found = pattern_problem(pattern)
    assert found is not None and found.startswith("identityPattern is over-broad: it matches ")
