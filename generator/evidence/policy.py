"""The signer allowlist, `catalog/signers.yaml` (schema `catalog/schemas/signers.schema.json`).

A signer is an exact OIDC issuer plus an exact certificate identity or an anchored regular
expression over it. Patterns that could match identities their author does not control are
rejected when the policy is loaded:

- a URI pattern must spell out `scheme://host/<owner>/<repo>/` literally before its first
  regular-expression operator (so it cannot reach another owner's or repository's workflows);
- any other pattern (an e-mail address) must end with a literal `@domain.tld$`;
- no pattern may match the probe identities in `FOREIGN_PROBES`.
"""

from __future__ import annotations

import re
from pathlib import Path

from generator import safeio, schemas
from generator.errors import Diagnostic, ValidationError
from generator.evidence.model import SignerClass, SignerPolicy, SignerRule
from generator.records import Document
from generator.yamlio import parse_yaml

API_VERSION = "aicr.run/v1"
KIND = "SignerPolicy"
SCHEMA = "signers"

_META = set(".^$*+?{}[]|()")
_URI_PREFIX = re.compile(r"^[a-z][a-z0-9+.-]*://[^/]+/[^/]+/[^/]+/")
_EMAIL_SUFFIX = re.compile(r"@(?:[A-Za-z0-9-]+\\\.)+[A-Za-z]{2,}\$\Z")
# Identities no pattern in the policy may match: someone else's repository, workflow or mailbox.
FOREIGN_PROBES: tuple[str, ...] = (
    "",
    "https://github.com/attacker/evil/.github/workflows/release.yml@refs/heads/main",
    "https://gitlab.com/attacker/evil//.gitlab-ci.yml@refs/heads/main",
    "attacker@evil.example",
)


def literal_prefix(pattern: str) -> str:
    """The characters a match must start with: the pattern after `^` up to its first operator."""
    out: list[str] = []
    i = 1 if pattern.startswith("^") else 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            out.append(pattern[i + 1])
            i += 2
            continue
        if ch in _META or ch == "\\":
            # a quantifier makes the previous character optional too
            if ch in "*?{" and out:
                out.pop()
            break
        out.append(ch)
        i += 1
    return "".join(out)


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` is not an acceptable identity pattern, or None."""
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        return f"identityPattern is not a regular expression: {e}"
    if not pattern.startswith("^") or not pattern.endswith("$") or pattern.endswith("\\$"):
        return "identityPattern must be anchored with ^ and $"
    prefix = literal_prefix(pattern)
    if "://" in pattern or ":\\/\\/" in pattern:
        if not _URI_PREFIX.match(prefix):
            return (
                f"identityPattern is over-broad: its literal prefix {prefix!r} must name "
                "scheme://host/<owner>/<repo>/ before any wildcard"
            )
    elif not _EMAIL_SUFFIX.search(pattern):
        return (
            "identityPattern is over-broad: a non-URI pattern must end with a literal "
            "@domain (e.g. @example\\.com$)"
        )
    for probe in FOREIGN_PROBES:
        if compiled.fullmatch(probe):
            return f"identityPattern is over-broad: it matches {probe!r}"
    return None


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
            problem = pattern_problem(pattern)
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
        if label in labels:
            line, col = doc.locate(f"{path}.label")
            diags.append(
                Diagnostic(
                    doc.rel,
                    line,
                    col,
                    f"{path}.label",
                    f"label {label!r} is already used by $.signers[{labels[label]}]",
                    "signers.duplicate-label",
                )
            )
            continue
        labels[label] = i
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
