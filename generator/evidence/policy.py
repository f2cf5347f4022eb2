"""The signer allowlist, `catalog/signers.yaml` (schema `catalog/schemas/signers.schema.json`).

A signer is one entry of the list: an exact OIDC issuer plus an exact certificate identity or a
regular expression over it, matched with `re.fullmatch`. Consensus counts entries, never
identity strings: one entry whose pattern matches two workflows is one signer, shown by its
label. Patterns that could match identities their author does not control are rejected when
the policy is loaded (`pattern_problem`), judged on the pattern as Python's own regular
expression parser reads it, not on its text:

- anchored with `^` and `$`, no inline flags (`(?i)`, `(?x)`, ...), no top-level alternation;
- every way a match can start (each alternative of a leading group, or the whole pattern)
  begins with a literal prefix: for a URI identity `scheme://host/<owner>/<repo>/`, and for
  the GitHub Actions issuer that host is `github.com`; an e-mail pattern must end with a
  literal `@domain.tld`;
- no pattern may match the probe identities in `FOREIGN_PROBES`.
"""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path
from typing import Any

from generator.catalog import schemas
from generator.core import linearmatch, safeio, text
from generator.core.errors import Diagnostic, ValidationError
from generator.core.records import Document
from generator.core.yamlio import parse_yaml
from generator.evidence.model import SignerClass, SignerPolicy, SignerRule

API_VERSION = "aicr.run/v1"
KIND = "SignerPolicy"
SCHEMA = "signers"

# Python's regular expression parser: the structure the engine matches, not the pattern's text.
_sre: Any = importlib.import_module("re._parser")
_SEGMENT = r"[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*"  # not empty, not only dots
_URI_PREFIX = re.compile(rf"[a-z][a-z0-9+.-]*://[^/@\s]+/{_SEGMENT}/{_SEGMENT}/.*", re.DOTALL)
_EMAIL_SUFFIX = re.compile(r"@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}")
# The identity host an issuer implies: its URI identities must be on this host.
ISSUER_HOSTS: dict[str, str] = {
    "https://token.actions.githubusercontent.com": "https://github.com/",
    "https://gitlab.com": "https://gitlab.com/",
}
MAX_PREFIXES = 64
# Identities no pattern in the policy may match: someone else's repository, workflow or mailbox.
FOREIGN_PROBES: tuple[str, ...] = (
    "",
    "https://github.com/attacker/evil/.github/workflows/release.yml@refs/heads/main",
    "https://gitlab.com/attacker/evil//.gitlab-ci.yml@refs/heads/main",
    "attacker@evil.example",
)


def top_level_alternation(pattern: str) -> bool:
    """Whether `|` occurs outside every group and character class of the pattern's text."""
    depth, i, in_class = 0, 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            # a `]` right after `[` or `[^` is a member, not the end
            j = i + 1 + (pattern[i + 1 : i + 2] == "^")
            if pattern[j : j + 1] == "]":
                i = j
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "|" and depth == 0:
            return True
        i += 1
    return False


class _TooManyAlternatives(Exception):
    pass


def _lead(items: list[Any], acc: str, budget: list[int]) -> list[tuple[str, bool]]:
    """(literal prefix, whole sequence was literal) for every way `items` can start a match;
    raises _TooManyAlternatives past MAX_PREFIXES ways (never a partial answer)."""
    for n, (op, av) in enumerate(items):
        if op is _sre.LITERAL:
            acc += chr(av)
            continue
        if op is _sre.SUBPATTERN and not av[1] and not av[2]:
            alternatives = [list(av[3])]
        elif op is _sre.BRANCH:
            alternatives = [list(alt) for alt in av[1]]
        else:
            return [(acc, False)]
        out: list[tuple[str, bool]] = []
        for alt in alternatives:
            for prefix, complete in _lead(alt, acc, budget):
                out.extend(_lead(items[n + 1 :], prefix, budget) if complete else [(prefix, False)])
                budget[0] -= 1
                if budget[0] < 0:
                    raise _TooManyAlternatives
        return out
    return [(acc, True)]


def literal_prefixes(pattern: str) -> tuple[str, ...]:
    """The literal text every match must start with, one per leading alternative (after `^`).

    Raises re.error when the pattern does not compile, ValueError past MAX_PREFIXES ways.
    """
    parsed = _sre.parse(pattern)
    items = list(parsed)
    if items and items[0] == (_sre.AT, _sre.AT_BEGINNING):
        items = items[1:]
    try:
        found = _lead(items, "", [MAX_PREFIXES])
    except _TooManyAlternatives:
        raise ValueError(f"more than {MAX_PREFIXES} leading alternatives") from None
    return tuple(dict.fromkeys(p for p, _ in found))


def _literal_suffix(pattern: str) -> str:
    """The literal text every match must end with (before `$`), from the parsed pattern."""
    items = list(_sre.parse(pattern))
    if items and items[-1] == (_sre.AT, _sre.AT_END):
        items = items[:-1]
    out: list[str] = []
    for op, av in reversed(items):
        if op is not _sre.LITERAL:
            break
        out.append(chr(av))
    return "".join(reversed(out))


def pattern_problem(pattern: str, issuer: str | None = None) -> str | None:
    """Why `pattern` is not an acceptable identity pattern (for `issuer`), or None."""
    try:
        with warnings.catch_warnings():
            # e.g. "Possible nested set": a pattern whose meaning may change is refused
            warnings.simplefilter("error")
            re.compile(pattern)  # the structure checks below read Python's parse of it
            parsed = _sre.parse(pattern)
    except (re.error, RecursionError, OverflowError, Warning) as e:
        return f"identityPattern is not a regular expression: {e}"
    if not pattern.startswith("^") or not pattern.endswith("$") or pattern.endswith("\\$"):
        return "identityPattern must be anchored with ^ and $"
    linear = linearmatch.problem(pattern)
    if linear is not None:
        return linear
    if parsed.state.flags & ~_sre.SRE_FLAG_UNICODE or _scoped_flags(parsed):
        return "identityPattern may not set flags such as (?i) or (?x)"
    if top_level_alternation(pattern):
        return (
            "identityPattern may not use top-level alternation (a|b): each alternative would "
            "need its own anchors and prefix; write one entry per identity, or group the "
            "alternatives after a literal prefix"
        )
    try:
        prefixes = literal_prefixes(pattern)
    except RecursionError:
        return "identityPattern is nested too deeply"
    except ValueError as e:
        return f"identityPattern has {e}"
    host = ISSUER_HOSTS.get(issuer or "")
    uri = any("://" in p for p in prefixes) or "://" in pattern or host is not None
    for prefix in prefixes:
        if uri:
            if not _URI_PREFIX.fullmatch(prefix):
                return (
                    f"identityPattern is over-broad: its literal prefix {prefix!r} must name "
                    "scheme://host/<owner>/<repo>/ before any wildcard"
                )
            if host is not None and not prefix.startswith(host):
                return (
                    f"identityPattern is over-broad: identities of issuer {issuer} start with "
                    f"{host}<owner>/<repo>/, not {prefix!r}"
                )
    if not uri:
        suffix = _literal_suffix(pattern)
        at = suffix.rfind("@")
        if at < 0 or not _EMAIL_SUFFIX.fullmatch(suffix[at:]):
            return (
                "identityPattern is over-broad: a non-URI pattern must end with a literal "
                "@domain (e.g. @example\\.com$)"
            )
    for probe in FOREIGN_PROBES:
        if linearmatch.fullmatch(pattern, probe):
            return f"identityPattern is over-broad: it matches {probe!r}"
    return None


def _scoped_flags(parsed: Any) -> bool:
    """Whether any group of the parsed pattern sets or clears flags (`(?i:...)`)."""
    stack = [list(parsed)]
    while stack:
        for op, av in stack.pop():
            if op is _sre.SUBPATTERN:
                if av[1] or av[2]:
                    return True
                stack.append(list(av[3]))
            elif op is _sre.BRANCH:
                stack.extend(list(alt) for alt in av[1])
            elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
                stack.append(list(av[2]))
            elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
                stack.append(list(av[1]))
            elif op is _sre.ATOMIC_GROUP:
                stack.append(list(av))
    return False


def policy_from(doc: Document) -> tuple[SignerPolicy, tuple[Diagnostic, ...]]:
    """The policy in a parsed signers.yaml, and every problem found (schema, patterns, labels).

    Entries with problems are left out of the returned policy (fail closed).
    """
    diags = list(schemas.check(doc, SCHEMA))
    if diags:
        return SignerPolicy(rules=()), tuple(diags)
    rules: list[SignerRule] = []
    labels: dict[str, int] = {}
    for i, entry in enumerate(doc.data["signers"]):
        path = f"$.signers[{i}]"
        pattern = entry.get("identityPattern")
        if pattern is not None:
            problem = pattern_problem(pattern, entry["issuer"])
            if problem is not None:
                line, col = doc.locate(f"{path}.identityPattern")
                diags.append(
                    Diagnostic(
                        doc.rel,
                        line,
                        col,
                        f"{path}.identityPattern",
                        problem,
                        "signers.over-broad",
                    )
                )
                continue
        label = entry["label"]
        # one skeleton, one signer: a label differing by a look-alike letter is the same name
        shapes = text.skeletons(label)
        problem = text.label_problem(label)
        seen = next((labels[k] for k in shapes if k in labels), None)
        if problem is not None or seen is not None:
            line, col = doc.locate(f"{path}.label")
            message = problem or (
                f"label {label!r} reads as the label of $.signers[{seen}] (same confusable "
                "skeleton): one signer, one label"
            )
            rule = "signers.label" if problem else "signers.duplicate-label"
            diags.append(Diagnostic(doc.rel, line, col, f"{path}.label", message, rule))
            continue
        labels.update(dict.fromkeys(shapes, i))
        rules.append(
            SignerRule(
                label=label,
                klass=SignerClass(entry["class"]),
                issuer=entry["issuer"],
                identity=entry.get("identity"),
                identity_pattern=pattern,
                trust_root=entry.get("trustRoot"),
            )
        )
    return SignerPolicy(rules=tuple(rules)), tuple(diags)


def read_policy(path: Path, rel: str | None = None) -> SignerPolicy:
    """Load a signers.yaml file; any problem is a ValidationError (located diagnostics)."""
    shown = rel or path.name
    try:
        # inside the directory holding it (the catalog): a link out of it is refused unread,
        # so no error can print a line of its target; a FIFO cannot block
        raw = safeio.read(path, root=path.parent, where="the catalog", limit=safeio.YAML_BYTES)
    except safeio.Refusal as r:
        rule = "signers.missing" if r.rule == safeio.UNREADABLE else r.rule
        raise ValidationError(
            f"cannot read the signer policy {shown}",
            [Diagnostic(shown, 0, 0, "$", r.message, rule)],
        ) from None
    doc = parse_yaml(raw, shown)
    policy, diags = policy_from(doc)
    if diags:
        raise ValidationError(f"the signer policy {shown} is invalid", diags)
    return policy
