"""Upstream AICR's signer allowlist, `recipes/evidence/allowlist.yaml`, as this catalog's policy.

    schemaVersion: 1.0.0
    firstParty:  [{label?, issuer, identityPattern}]   # a CI workflow identity, as a regex
    partner:     [{label?, issuer, source | identityPattern}]
    community:   [{label?, issuer, source}]            # by source slug only, never cleartext

`source` is the 32-hex slug of sha256(issuer + "\\n" + identity) (the `<source>` directory), so a
contributor's e-mail address is never committed. Upstream's rules are enforced when the file is
read, each a located diagnostic:

- unknown keys are refused; in particular a cleartext `identity:` (`allowlist.cleartext-identity`);
- a community entry must use `source` (`allowlist.community-pattern`);
- exactly one of `source` / `identityPattern` (`allowlist.schema`);
- a pattern is anchored `^...$`, contains the OIDC subject's unescaped `@`, and has no regular
  expression operator left of it (`allowlist.over-broad`): only the ref may vary; it must also
  pass this catalog's own pattern rules (`generator.evidence.policy.pattern_problem`);
- labels, slugs, and (issuer, literal part before `@`) are unique across all classes
  (`allowlist.overlap`): no signer can be classified two ways.

`AllowlistPolicy` is one `SignerPolicy` holding both files' entries: a signer is allowed when an
entry of signers.yaml or of allowlist.yaml names it, and the matched entry gives its label and
class. Slug entries match by recomputing the slug from the verified certificate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.core import linearmatch, safeio, text
from generator.core.errors import Diagnostic, LoadError, ValidationError
from generator.core.records import Document
from generator.core.yamlio import parse_yaml
from generator.evidence.model import SignerClass, SignerPolicy, SignerRule
from generator.evidence.policy import pattern_problem
from generator.evidence.store import SOURCE_LENGTH, source_id

ALLOWLIST_FILE = "allowlist.yaml"
_CLASSES: tuple[tuple[str, SignerClass], ...] = (
    ("firstParty", SignerClass.FIRST_PARTY),
    ("partner", SignerClass.PARTNER),
    ("community", SignerClass.COMMUNITY),
)
_ENTRY_KEYS = {"label", "issuer", "source", "identityPattern"}
_SLUG = re.compile(rf"^[0-9a-f]{{{SOURCE_LENGTH}}}$")
_META = set(".*+?()[]{}|^$")


@dataclass(frozen=True, slots=True)
class SlugRule:
    """An allowlist entry naming a signer by its source slug (identity never stored)."""

    label: str
    klass: SignerClass
    issuer: str
    source: str

    def matches(self, identity: str, issuer: str) -> bool:
        return issuer == self.issuer and source_id(issuer, identity) == self.source

    def describe(self) -> str:
        return f"{self.label} ({self.klass}): source {self.source} via {self.issuer}"


@dataclass(frozen=True, slots=True)
class AllowlistPolicy(SignerPolicy):
    """signers.yaml rules (`rules`) plus allowlist.yaml entries (`slugs`, `patterns`).

    Every entry naming the signer is found; when they disagree on the class, nobody is allowed
    (fail closed: no signer is classified two ways); otherwise signers.yaml's entry names the
    signer, else the allowlist's (slug entries before patterns, as upstream).
    """

    slugs: tuple[SlugRule, ...] = ()
    patterns: tuple[SignerRule, ...] = ()

    def candidates(
        self,
        identity: str,
        issuer: str,
        trust_root: str,
        trust_digest: str = "",
        demo: bool = False,
    ) -> list[SignerRule]:
        """Every entry naming the signer. Under a demo root only entries bound to a trust root
        apply (SignerRule.matches): upstream's slug entries never do."""
        found = [
            r for r in self.rules if r.matches(identity, issuer, trust_root, trust_digest, demo)
        ]
        found += [
            SignerRule(s.label, s.klass, s.issuer, identity, None)
            for s in self.slugs
            if not demo and s.matches(identity, issuer)
        ]
        found += [
            r for r in self.patterns if r.matches(identity, issuer, trust_root, trust_digest, demo)
        ]
        return found

    def match(
        self,
        identity: str,
        issuer: str,
        trust_root: str,
        trust_digest: str = "",
        demo: bool = False,
    ) -> SignerRule | None:
        found = self.candidates(identity, issuer, trust_root, trust_digest, demo)
        if not found or len({r.klass for r in found}) > 1:
            return None
        return found[0]

    def describe(self, trust_root: str | None = None, demo: bool = False) -> str:
        base = SignerPolicy(self.rules + self.patterns).describe(trust_root, demo)
        parts = [base] if not base.startswith("nobody") else []
        parts += [s.describe() for s in self.slugs]
        return "; ".join(parts) or "nobody (no signer in the policy applies)"


def _unescaped(body: str, ch: str) -> int:
    i = 0
    while i < len(body):
        if body[i] == "\\":
            i += 2
            continue
        if body[i] == ch:
            return i
        i += 1
    return -1


def _first_meta(text: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] in _META:
            return i
        i += 1
    return -1


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def upstream_pattern_problem(pattern: str) -> str | None:
    """Upstream's over-broad rule: anchored, an unescaped `@`, nothing but literals left of it."""
    if not pattern.startswith("^") or not pattern.endswith("$"):
        return "identityPattern must be anchored with ^ and $"
    body = pattern[1:-1]
    at = _unescaped(body, "@")
    if at < 0:
        return "identityPattern must contain an OIDC subject of the form <workflow>@<ref>"
    if _first_meta(body[:at]) >= 0:
        return (
            "identityPattern is over-broad: a wildcard left of '@' (issuer/org/repo/workflow); "
            "only the ref may vary"
        )
    return None


def pattern_key(issuer: str, pattern: str) -> tuple[str, str]:
    """(issuer, literal part before '@'): two entries with the same key overlap."""
    body = pattern.removeprefix("^").removesuffix("$")
    at = _unescaped(body, "@")
    return issuer, _unescape(body[:at] if at >= 0 else body)


class _Builder:
    """The rules of one allowlist document, collected entry by entry with every problem."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.diags: list[Diagnostic] = []
        self.rules: list[SignerRule] = []
        self.slugs: list[SlugRule] = []
        self.labels: dict[str, str] = {}
        self.seen_slugs: dict[str, str] = {}
        self.seen_patterns: dict[tuple[str, str], str] = {}

    def diag(self, path: str, message: str, rule: str) -> None:
        line, col = self.doc.locate(path)
        self.diags.append(Diagnostic(self.doc.rel, line, col, path, message, rule))

    def header(self, data: dict[str, Any]) -> None:
        for key in sorted(map(str, data)):
            if key not in {"schemaVersion", *(c for c, _ in _CLASSES)}:
                self.diag(f"$.{key}", f"unknown key {key!r}", "allowlist.schema")
        version = str(data.get("schemaVersion", ""))
        if not (version == "1.0" or version.startswith("1.0.")):
            self.diag(
                "$.schemaVersion",
                f"schemaVersion {version!r} is not supported (1.0.x)",
                "allowlist.schema",
            )

    def _keys_bad(self, entry: dict[str, Any], at: str) -> bool:
        bad = False
        for k in sorted(map(str, entry)):
            if k == "identity":
                self.diag(
                    f"{at}.identity",
                    "a cleartext identity is not allowed in the allowlist: name the signer by "
                    'its source slug (first 32 hex of sha256(issuer + "\\n" + identity))',
                    "allowlist.cleartext-identity",
                )
                bad = True
            elif k not in _ENTRY_KEYS:
                self.diag(f"{at}.{k}", f"unknown key {k!r}", "allowlist.schema")
                bad = True
        return bad

    def _who_bad(self, entry: dict[str, Any], at: str, klass: SignerClass) -> bool:
        """Problems with issuer, source and identityPattern."""
        issuer, source, pattern = (
            entry.get("issuer"),
            entry.get("source"),
            entry.get("identityPattern"),
        )
        bad = False
        if not isinstance(issuer, str) or not issuer:
            self.diag(f"{at}.issuer", "issuer is required", "allowlist.schema")
            bad = True
        if (source is None) == (pattern is None):
            self.diag(
                at, "an entry sets exactly one of source or identityPattern", "allowlist.schema"
            )
            bad = True
        elif klass is SignerClass.COMMUNITY and pattern is not None:
            self.diag(
                f"{at}.identityPattern",
                "community entries name their signer by source slug only",
                "allowlist.community-pattern",
            )
            bad = True
        if source is not None and (not isinstance(source, str) or not _SLUG.match(source)):
            self.diag(
                f"{at}.source",
                f"source must be {SOURCE_LENGTH} lower-case hex characters",
                "allowlist.schema",
            )
            bad = True
        return self._pattern_bad(pattern, at) or bad

    def _pattern_bad(self, pattern: Any, at: str) -> bool:
        if pattern is None:
            return False
        if not isinstance(pattern, str):  # a list or a mapping: the entry's shape is wrong
            self.diag(
                f"{at}.identityPattern", "identityPattern must be a string", "allowlist.schema"
            )
            return True
        problem = upstream_pattern_problem(pattern) or pattern_problem(pattern)
        if problem is not None:
            self.diag(f"{at}.identityPattern", problem, "allowlist.over-broad")
        return problem is not None

    def entry(self, entry: dict[str, Any], at: str, key: str, klass: SignerClass) -> None:
        bad = self._keys_bad(entry, at)
        bad = self._who_bad(entry, at, klass) or bad
        label = entry.get("label")
        if label is not None and not isinstance(label, str):
            self.diag(f"{at}.label", "label must be a string", "allowlist.schema")
            bad = True
        elif label is not None and (problem := text.label_problem(label)) is not None:
            self.diag(f"{at}.label", problem, "allowlist.label")
            bad = True
        if not bad:
            self._add(entry, at, key, klass)

    def _add(self, entry: dict[str, Any], at: str, key: str, klass: SignerClass) -> None:
        """A well-formed entry, unless its label, source or pattern is listed already."""
        issuer, source, pattern = entry["issuer"], entry.get("source"), entry.get("identityPattern")
        label = entry.get("label")
        name = label or (f"source {source}" if source else f"{key} pattern {pattern}")
        if label:
            # one skeleton, one signer: a label differing by a look-alike letter is the same name
            shapes = text.skeletons(label)
            seen = next((self.labels[k] for k in shapes if k in self.labels), None)
            if seen is not None:
                self.diag(
                    f"{at}.label",
                    f"label {label!r} reads as the label of {seen} (same confusable skeleton): "
                    "one signer, one label",
                    "allowlist.overlap",
                )
                return
            self.labels.update(dict.fromkeys(shapes, at))
        if source is not None:
            if source in self.seen_slugs:
                self.diag(
                    f"{at}.source",
                    f"source {source} is already listed at {self.seen_slugs[source]}",
                    "allowlist.overlap",
                )
                return
            self.seen_slugs[source] = at
            self.slugs.append(SlugRule(name, klass, issuer, source))
            return
        assert isinstance(pattern, str)
        k2 = pattern_key(issuer, pattern)
        if k2 in self.seen_patterns:
            self.diag(
                f"{at}.identityPattern",
                f"overlaps {self.seen_patterns[k2]}: same issuer and workflow {k2[1]!r}",
                "allowlist.overlap",
            )
            return
        self.seen_patterns[k2] = at
        self.rules.append(SignerRule(name, klass, issuer, None, pattern))


def allowlist_from(doc: Document) -> tuple[list[SignerRule], list[SlugRule], list[Diagnostic]]:
    b = _Builder(doc)
    data = doc.data if doc.data is not None else {}
    if not isinstance(data, dict):
        b.diag("$", "the allowlist is a mapping", "allowlist.schema")
        return [], [], b.diags
    b.header(data)
    for key, klass in _CLASSES:
        entries = data.get(key) or []
        if not isinstance(entries, list):
            b.diag(f"$.{key}", f"{key} must be a list of entries", "allowlist.schema")
            continue
        for i, entry in enumerate(entries):
            at = f"$.{key}[{i}]"
            if not isinstance(entry, dict):
                b.diag(at, "an entry is a mapping", "allowlist.schema")
                continue
            b.entry(entry, at, key, klass)
    return b.rules, b.slugs, b.diags


def read_allowlist(path: Path, shown: str) -> tuple[tuple[SignerRule, ...], tuple[SlugRule, ...]]:
    """The entries of an allowlist.yaml; any problem is a ValidationError (located)."""
    try:
        raw = safeio.read(path, root=path.parent, where="the catalog")
    except safeio.Refusal as e:
        rule = "allowlist.missing" if e.rule == safeio.UNREADABLE else e.rule
        raise LoadError(
            f"cannot read the allowlist {shown}",
            [Diagnostic(shown, 0, 0, "$", e.message, rule)],
        ) from None
    doc = parse_yaml(raw, shown, allow_empty=True)
    rules, slugs, diags = allowlist_from(doc)
    if diags:
        raise ValidationError(f"the allowlist {shown} is invalid", diags)
    return tuple(rules), tuple(slugs)


def _probes(pattern: str, issuer: str) -> list[str]:
    """Identities an allowlist pattern admits: its workflow with a branch and a tag ref."""
    workflow = pattern_key(issuer, pattern)[1]
    refs = ("refs/heads/main", "refs/tags/v1.0.0", "refs/heads/release-1.0")
    return [p for p in (f"{workflow}@{ref}" for ref in refs) if linearmatch.fullmatch(pattern, p)]


def combine(
    policy: SignerPolicy, rules: tuple[SignerRule, ...], slugs: tuple[SlugRule, ...], shown: str
) -> AllowlistPolicy:
    """One policy from signers.yaml's and allowlist.yaml's entries.

    An entry of both files naming the same signer with different classes is refused
    (`allowlist.overlap`); with the same class it is the same signer, named by signers.yaml.
    Probed: the identities an allowlist pattern admits, and signers.yaml's exact identities.
    """
    diags: list[Diagnostic] = []
    by_source = {source_id(r.issuer, r.identity): r for r in policy.rules if r.identity}
    for a in rules:
        assert a.identity_pattern is not None
        probes = _probes(a.identity_pattern, a.issuer)
        probes += [r.identity for r in policy.rules if r.identity and r.issuer == a.issuer]
        for probe in probes:
            if not a.matches(probe, a.issuer, ""):
                continue
            for r in policy.rules:
                if (
                    r.issuer == a.issuer
                    and r.klass != a.klass
                    and (
                        r.identity == probe
                        or (r.identity_pattern and linearmatch.fullmatch(r.identity_pattern, probe))
                    )
                ):
                    diags.append(_overlap(shown, a.label, a.klass, r, probe))
    for s in slugs:
        same = by_source.get(s.source)
        if same is not None and same.issuer == s.issuer and same.klass != s.klass:
            diags.append(_overlap(shown, s.label, s.klass, same, same.identity or ""))
    if diags:
        raise ValidationError(
            f"the allowlist {shown} classifies a signer of signers.yaml differently", diags
        )
    return AllowlistPolicy(rules=policy.rules, slugs=slugs, patterns=rules)


def _overlap(shown: str, label: str, klass: SignerClass, r: SignerRule, probe: str) -> Diagnostic:
    return Diagnostic(
        shown,
        0,
        0,
        "$",
        f"{label} ({klass}) and signers.yaml's {r.label} ({r.klass}) both name {probe}: "
        "a signer has one class",
        "allowlist.overlap",
    )
