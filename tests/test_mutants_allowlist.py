"""Upstream's allowlist rules that no other test pins down (issue 32, `make mutation`).

Each test fails on a mutant of `generator/evidence/allowlist.py` that the rest of the suite let
through: upstream's "nothing but literals left of `@`" rule on a pattern only that rule refuses,
a pattern without `@`, list-valued fields (a schema error, never a TypeError), the escape
scanning (adjacent escapes, an escaped `@`, a trailing backslash), the header, and the overlap
check between signers.yaml and allowlist.yaml on a ref the probes do not try.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.core.errors import LoadError, ValidationError
from generator.core.yamlio import parse_yaml
from generator.evidence.allowlist import (
    AllowlistPolicy,
    SlugRule,
    _first_meta,
    _unescape,
    _unescaped,
    allowlist_from,
    combine,
    pattern_key,
    read_allowlist,
    upstream_pattern_problem,
)
from generator.evidence.model import SignerClass, SignerPolicy, SignerRule
from generator.evidence.policy import pattern_problem
from generator.evidence.store import source_id

GH = "https://token.actions.githubusercontent.com"
WF = "https://github.com/o/r/.github/workflows/x.yml"
WF_RE = r"https://github\.com/o/r/\.github/workflows/x\.yml"
SLUG = "0123456789abcdef0123456789abcdef"


def _load(body: str) -> tuple[list[SignerRule], list[SlugRule], list[tuple[str, str, str]]]:
    rules, slugs, diags = allowlist_from(parse_yaml(body, "allowlist.yaml", allow_empty=True))
    return rules, slugs, [(d.json_path, d.rule, d.message) for d in diags]


def _entry(klass: str, fields: str) -> str:
    return f"schemaVersion: 1.0.0\n{klass}:\n  - issuer: {GH}\n{fields}"


# ---------------------------------------------------------------- upstream's pattern rule


def test_a_wildcard_left_of_at_is_refused_by_upstreams_rule_alone() -> None:
    pattern = r"^https://github\.com/o/r/\.github/workflows/.*\.yml@refs/heads/main$"
    assert pattern_problem(pattern, GH) is None  # the catalog's own rule lets it through
    problem = upstream_pattern_problem(pattern)
    assert problem is not None and "a wildcard left of '@'" in problem
    rules, _, diags = _load(_entry("partner", f"    identityPattern: '{pattern}'\n"))
    assert rules == []
    assert diags == [("$.partner[0].identityPattern", "allowlist.over-broad", problem)]


@pytest.mark.parametrize("wild", [".", "*", "+", "?", "(", "[", "{", "|", "$"])
def test_each_operator_left_of_at_is_refused(wild: str) -> None:
    pattern = rf"^https://github\.com/o/r/x{wild}y@refs/heads/main$"
    problem = upstream_pattern_problem(pattern)
    assert problem is not None and "left of '@'" in problem


def test_a_pattern_with_only_literals_left_of_at_is_accepted() -> None:
    for pattern in (
        rf"^{WF_RE}@refs/heads/main$",
        rf"^{WF_RE}@refs/(heads|tags)/.+$",
        r"^https://github\.com/o/r/a\\b\.yml@.+$",  # an escaped backslash, then a literal
    ):
        assert upstream_pattern_problem(pattern) is None, pattern


def test_a_pattern_without_at_is_refused() -> None:
    for pattern in (rf"^{WF_RE}$", rf"^{WF_RE}\@refs/heads/main$"):  # an escaped @ is no @
        problem = upstream_pattern_problem(pattern)
        assert (
            problem == "identityPattern must contain an OIDC subject of the form <workflow>@<ref>"
        )
    rules, _, diags = _load(_entry("partner", f"    identityPattern: '^{WF_RE}$'\n"))
    assert rules == [] and [d[1] for d in diags] == ["allowlist.over-broad"]


@pytest.mark.parametrize(
    "pattern", [rf"{WF_RE}@refs/heads/main$", rf"^{WF_RE}@refs/heads/main", "", "^", "$"]
)
def test_an_unanchored_pattern_is_refused(pattern: str) -> None:
    assert upstream_pattern_problem(pattern) == "identityPattern must be anchored with ^ and $"


# ---------------------------------------------------------------- escape scanning


@pytest.mark.parametrize(
    ("body", "at"),
    [
        ("a@b", 1),
        (r"a\@b", -1),  # an escaped @
        (r"a\\@b", 3),  # an escaped backslash, then the @
        (r"a\\\@b", -1),  # an escaped backslash, then an escaped @
        (r"\\\\@", 4),  # adjacent escapes
        ("ab\\", -1),  # a trailing backslash
        ("@", 0),
        ("", -1),
    ],
)
def test_unescaped_at(body: str, at: int) -> None:
    assert _unescaped(body, "@") == at


@pytest.mark.parametrize(
    ("text", "at"),
    [
        ("abc", -1),
        (r"a\.b", -1),
        (r"a\\.b", 3),
        (r"\\\\", -1),
        ("ab\\", -1),
        (".", 0),
        (r"a\*b*", 4),
        ("a$", 1),
    ],
)
def test_first_operator(text: str, at: int) -> None:
    assert _first_meta(text) == at


def test_the_overlap_key_is_the_literal_workflow() -> None:
    assert pattern_key(GH, rf"^{WF_RE}@refs/heads/main$") == (GH, WF)
    assert pattern_key(GH, r"^a\\\@b@c$") == (GH, r"a\@b")
    assert pattern_key(GH, "^nothing$") == (GH, "nothing")
    assert _unescape(r"a\.b\\c") == r"a.b\c"


# ---------------------------------------------------------------- shapes and the header


@pytest.mark.parametrize(
    ("fields", "path", "message"),
    [
        (
            f"    label: [a, b]\n    source: {SLUG}\n",
            "$.partner[0].label",
            "label must be a string",
        ),
        ("    source: [a]\n", "$.partner[0].source", "source must be 32 lower-case hex characters"),
        (f"    source: {SLUG}x\n", "$.partner[0].source", "source must be 32"),
        (f"    source: {SLUG.upper()}\n", "$.partner[0].source", "source must be 32"),
        (
            f"    identityPattern: [^{WF_RE}@.+$]\n",
            "$.partner[0].identityPattern",
            "identityPattern must be a string",
        ),
        (
            "    label: x\n",
            "$.partner[0]",
            "an entry sets exactly one of source or identityPattern",
        ),
        (
            f"    source: {SLUG}\n    identityPattern: '^{WF_RE}@.+$'\n",
            "$.partner[0]",
            "an entry sets exactly one of source or identityPattern",
        ),
        (f"    source: {SLUG}\n    note: x\n", "$.partner[0].note", "unknown key 'note'"),
    ],
)
def test_a_malformed_entry_is_a_located_schema_error(fields: str, path: str, message: str) -> None:
    rules, slugs, diags = _load(_entry("partner", fields))
    assert rules == [] and slugs == []
    assert [(p, r) for p, r, _ in diags] == [(path, "allowlist.schema")]
    assert message in diags[0][2]


def test_an_entry_needs_an_issuer() -> None:
    for issuer in ("''", "[a]", None):
        line = f"  - issuer: {issuer}\n" if issuer is not None else "  - label: x\n"
        body = f"schemaVersion: 1.0.0\npartner:\n{line}    source: {SLUG}\n"
        rules, slugs, diags = _load(body)
        assert (rules, slugs) == ([], [])
        assert ("$.partner[0].issuer", "allowlist.schema", "issuer is required") in diags


def test_a_cleartext_identity_and_a_community_pattern_are_refused() -> None:
    _, slugs, diags = _load(_entry("community", "    identity: a@b.example\n"))
    assert slugs == [] and [d[1] for d in diags] == [
        "allowlist.cleartext-identity",
        "allowlist.schema",  # and no source
    ]
    rules, _, diags = _load(_entry("community", f"    identityPattern: '^{WF_RE}@.+$'\n"))
    assert rules == [] and [d[1] for d in diags] == ["allowlist.community-pattern"]


@pytest.mark.parametrize("version", ["1.0", "1.0.0", "1.0.7"])
def test_supported_schema_versions(version: str) -> None:
    _, slugs, diags = _load(
        f"schemaVersion: '{version}'\ncommunity:\n  - issuer: {GH}\n    source: {SLUG}\n"
    )
    assert diags == [] and [s.source for s in slugs] == [SLUG]


@pytest.mark.parametrize("version", ["1.1.0", "2.0.0", "1.00", "", "0.1.0"])
def test_unsupported_schema_versions(version: str) -> None:
    _, _, diags = _load(f"schemaVersion: '{version}'\n")
    assert [(p, r) for p, r, _ in diags] == [("$.schemaVersion", "allowlist.schema")]


def test_the_header_and_the_document_shape() -> None:
    assert _load("")[2] == [  # an empty file is no allowlist of a supported version
        ("$.schemaVersion", "allowlist.schema", "schemaVersion '' is not supported (1.0.x)")
    ]
    assert _load("- a\n")[2] == [("$", "allowlist.schema", "the allowlist is a mapping")]
    _, _, diags = _load("schemaVersion: 1.0.0\nextra: 1\npartner: {a: 1}\ncommunity: [x]\n")
    assert diags == [
        ("$.extra", "allowlist.schema", "unknown key 'extra'"),
        ("$.partner", "allowlist.schema", "partner must be a list of entries"),
        ("$.community[0]", "allowlist.schema", "an entry is a mapping"),
    ]


def test_entries_of_every_class_are_read_in_order_with_their_names() -> None:
    other = "fedcba9876543210fedcba9876543210"
    body = (
        "schemaVersion: 1.0.0\n"
        f"firstParty:\n  - issuer: {GH}\n    identityPattern: '^{WF_RE}@refs/heads/main$'\n"
        f"partner:\n  - label: P\n    issuer: {GH}\n    source: {SLUG}\n"
        f"community:\n  - issuer: {GH}\n    source: {other}\n"
    )
    rules, slugs, diags = _load(body)
    assert diags == []
    assert [(r.label, r.klass, r.identity_pattern) for r in rules] == [
        (
            f"firstParty pattern ^{WF_RE}@refs/heads/main$",
            SignerClass.FIRST_PARTY,
            f"^{WF_RE}@refs/heads/main$",
        )
    ]
    assert [(s.label, s.klass, s.source) for s in slugs] == [
        ("P", SignerClass.PARTNER, SLUG),
        (f"source {other}", SignerClass.COMMUNITY, other),
    ]


def test_labels_slugs_and_workflows_are_unique_across_classes() -> None:
    body = (
        "schemaVersion: 1.0.0\n"
        f"firstParty:\n  - label: A\n    issuer: {GH}\n    identityPattern: '^{WF_RE}@refs/heads/main$'\n"
        f"partner:\n  - label: A\n    issuer: {GH}\n    source: {SLUG}\n"
        f"  - issuer: {GH}\n    identityPattern: '^{WF_RE}@refs/tags/.+$'\n"
        f"community:\n  - issuer: {GH}\n    source: {SLUG}\n  - issuer: {GH}\n    source: {SLUG}\n"
    )
    rules, slugs, diags = _load(body)
    assert [d[:2] for d in diags] == [
        ("$.partner[0].label", "allowlist.overlap"),
        ("$.partner[1].identityPattern", "allowlist.overlap"),
        ("$.community[1].source", "allowlist.overlap"),
    ]
    assert [r.label for r in rules] == ["A"] and [s.label for s in slugs] == [f"source {SLUG}"]


def test_an_entry_with_a_refused_label_is_not_kept_and_claims_nothing() -> None:
    """A label with an invisible or control character refuses its entry, as a schema error
    does: the entry is not a rule, and its pattern and source stay free, so a later entry
    using them draws no overlap (one diagnostic, where the problem is)."""
    pattern = f"^{WF_RE}@refs/heads/main$"
    body = (
        "schemaVersion: 1.0.0\n"
        f'partner:\n  - label: "NVIDIA\\x1bCI"\n    issuer: {GH}\n'
        f"    identityPattern: '{pattern}'\n"
        f'  - label: "NVIDIA CI\\u2066"\n    issuer: {GH}\n    source: {SLUG}\n'
        f"  - issuer: {GH}\n    identityPattern: '{pattern}'\n"
        f"community:\n  - issuer: {GH}\n    source: {SLUG}\n"
    )
    rules, slugs, diags = _load(body)
    assert [d[:2] for d in diags] == [
        ("$.partner[0].label", "allowlist.label"),
        ("$.partner[1].label", "allowlist.label"),
    ]
    assert [(r.klass, r.identity_pattern) for r in rules] == [(SignerClass.PARTNER, pattern)]
    assert [(s.klass, s.source) for s in slugs] == [(SignerClass.COMMUNITY, SLUG)]


def test_read_allowlist(tmp_path: Path) -> None:
    with pytest.raises(LoadError) as missing:
        read_allowlist(tmp_path / "allowlist.yaml", "allowlist.yaml")
    (d,) = missing.value.diagnostics
    assert (d.path, d.line, d.col, d.json_path, d.rule) == (
        "allowlist.yaml",
        0,
        0,
        "$",
        "allowlist.missing",
    )
    path = tmp_path / "allowlist.yaml"
    path.write_text(_entry("partner", f"    source: {SLUG}\n"))
    rules, slugs = read_allowlist(path, "allowlist.yaml")
    assert rules == () and [s.source for s in slugs] == [SLUG]
    path.write_text(_entry("partner", "    source: nope\n"))
    with pytest.raises(ValidationError):
        read_allowlist(path, "allowlist.yaml")


# ---------------------------------------------------------------- one policy of both files


def _rule(
    label: str,
    klass: SignerClass,
    identity: str | None = None,
    pattern: str | None = None,
    issuer: str = GH,
) -> SignerRule:
    return SignerRule(label, klass, issuer, identity, pattern)


def test_an_overlap_on_a_ref_the_probes_do_not_try_is_found() -> None:
    dev = f"{WF}@refs/heads/dev"  # not main, not a v1.0.0 tag, not release-1.0
    ours = SignerPolicy((_rule("ours", SignerClass.PARTNER, identity=dev),))
    theirs = (_rule("theirs", SignerClass.FIRST_PARTY, pattern=rf"^{WF_RE}@refs/heads/d.v$"),)
    with pytest.raises(ValidationError) as info:
        combine(ours, theirs, (), "allowlist.yaml")
    (d,) = info.value.diagnostics
    assert d.rule == "allowlist.overlap" and dev in d.message
    assert (d.path, d.line, d.col, d.json_path) == ("allowlist.yaml", 0, 0, "$")
    assert "theirs (first-party) and signers.yaml's ours (partner)" in d.message


def test_an_overlap_with_a_pattern_of_signers_yaml_is_found() -> None:
    ours = SignerPolicy((_rule("ours", SignerClass.PARTNER, pattern=rf"^{WF_RE}@refs/tags/.+$"),))
    theirs = (_rule("theirs", SignerClass.FIRST_PARTY, pattern=rf"^{WF_RE}@refs/tags/v1\.0\.0$"),)
    with pytest.raises(ValidationError) as info:
        combine(ours, theirs, (), "allowlist.yaml")
    assert f"{WF}@refs/tags/v1.0.0" in info.value.diagnostics[0].message


def test_no_overlap_for_the_same_class_another_issuer_or_another_workflow() -> None:
    dev = f"{WF}@refs/heads/dev"
    theirs = (_rule("theirs", SignerClass.FIRST_PARTY, pattern=rf"^{WF_RE}@refs/heads/.+$"),)
    for ours in (
        _rule("ours", SignerClass.FIRST_PARTY, identity=dev),  # the same class: the same signer
        _rule("ours", SignerClass.PARTNER, identity=dev, issuer="https://gitlab.com"),
        _rule("ours", SignerClass.PARTNER, identity=dev.replace("x.yml", "y.yml")),
        _rule("ours", SignerClass.PARTNER, pattern=rf"^{WF_RE}@refs/tags/.+$"),
    ):
        policy = combine(SignerPolicy((ours,)), theirs, (), "allowlist.yaml")
        assert isinstance(policy, AllowlistPolicy) and policy.patterns == theirs
    # the allowlist pattern must itself admit the probe: signers.yaml's identity on another ref
    narrow = (_rule("theirs", SignerClass.FIRST_PARTY, pattern=rf"^{WF_RE}@refs/heads/main$"),)
    combine(SignerPolicy((_rule("ours", SignerClass.PARTNER, identity=dev),)), narrow, (), "a")


def test_a_slug_entry_that_names_a_signer_of_signers_yaml_with_another_class() -> None:
    identity = f"{WF}@refs/heads/main"
    slug = source_id(GH, identity)
    ours = SignerPolicy((_rule("ours", SignerClass.PARTNER, identity=identity),))
    with pytest.raises(ValidationError) as info:
        combine(ours, (), (SlugRule("s", SignerClass.COMMUNITY, GH, slug),), "allowlist.yaml")
    assert identity in info.value.diagnostics[0].message
    same = combine(ours, (), (SlugRule("s", SignerClass.PARTNER, GH, slug),), "allowlist.yaml")
    assert same.slugs[0].source == slug
    combine(ours, (), (SlugRule("s", SignerClass.COMMUNITY, "https://gitlab.com", slug),), "a")


def test_the_combined_policy_matches_and_refuses_signers_classified_two_ways() -> None:
    identity = f"{WF}@refs/heads/main"
    slug = SlugRule("s", SignerClass.PARTNER, GH, source_id(GH, identity))
    pattern = _rule("p", SignerClass.PARTNER, pattern=rf"^{WF_RE}@refs/heads/.+$")
    policy = AllowlistPolicy(rules=(), slugs=(slug,), patterns=(pattern,))
    found = policy.match(identity, GH, "public-good")
    assert found is not None and found.label == "s" and found.identity == identity
    assert policy.match(identity, GH, "demo", demo=True) is None  # demo: no unbound entry
    other = AllowlistPolicy(
        rules=(),
        slugs=(SlugRule("s", SignerClass.COMMUNITY, GH, slug.source),),
        patterns=(pattern,),
    )
    assert other.match(identity, GH, "public-good") is None  # two classes: nobody
    assert policy.match(identity, "https://gitlab.com", "public-good") is None
    assert AllowlistPolicy(rules=()).describe() == "nobody (no signer in the policy applies)"
    assert policy.describe().endswith(slug.describe())


def test_a_slug_entry_needs_its_issuer_not_only_its_slug() -> None:
    identity = f"{WF}@refs/heads/main"
    gitlab = "https://gitlab.com"
    rule = SlugRule("s", SignerClass.PARTNER, GH, source_id(gitlab, identity))
    assert not rule.matches(identity, gitlab)  # the slug of (gitlab, identity), but not GH
    assert not rule.matches(identity, GH)
    assert SlugRule("s", SignerClass.PARTNER, GH, source_id(GH, identity)).matches(identity, GH)


def test_the_combined_policy_describes_every_entry() -> None:
    identity = f"{WF}@refs/heads/main"
    slug = SlugRule("s", SignerClass.PARTNER, GH, source_id(GH, identity))
    pattern = _rule("p", SignerClass.PARTNER, pattern=rf"^{WF_RE}@refs/heads/.+$")
    both = AllowlistPolicy(rules=(), slugs=(slug,), patterns=(pattern,))
    assert both.describe() == f"{pattern.describe()}; {slug.describe()}"
    assert AllowlistPolicy(rules=(), slugs=(slug,)).describe() == slug.describe()
    assert slug.describe() == f"s (partner): source {slug.source} via {GH}"


def test_upstreams_rule_reads_everything_between_the_anchors() -> None:
    # a wildcard right after ^ is left of @; an @ right before $ is the subject's @
    problem = upstream_pattern_problem(rf"^.{WF_RE}@refs/heads/main$")
    assert problem is not None and "left of '@'" in problem
    assert upstream_pattern_problem(rf"^{WF_RE}@$") is None
    assert upstream_pattern_problem(r"^@$") is None


def test_an_at_first_in_the_body_has_an_empty_workflow() -> None:
    assert pattern_key(GH, "^@refs/heads/main$") == (GH, "")


def test_a_cleartext_identity_beside_a_valid_source_is_still_refused() -> None:
    rules, slugs, diags = _load(
        _entry("partner", f"    identity: a@b.example\n    source: {SLUG}\n")
    )
    assert (rules, slugs) == ([], [])
    assert [d[1] for d in diags] == ["allowlist.cleartext-identity"]


def test_an_empty_allowlist_file_is_read_and_refused_for_its_version(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text("")
    with pytest.raises(ValidationError) as info:
        read_allowlist(path, "allowlist.yaml")
    assert [(d.json_path, d.rule) for d in info.value.diagnostics] == [
        ("$.schemaVersion", "allowlist.schema")
    ]
