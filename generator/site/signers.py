"""The signer policy as a page: who may sign evidence this catalog counts, for which class,
under which identity (catalog/signers.yaml, the allowlist, as a directory of signers).

`signer_entries` reads the policy as the verifier applies it (`policy_from`: entries with
problems are left out, fail closed, and the page says how many) and adds what this build's
evidence shows of each signer: its counted runs and the recipes they cover.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from generator.core.records import Catalog
from generator.evidence.view import EvidenceView

SIGNERS_FILE = "signers.yaml"


@dataclass(frozen=True, slots=True)
class SignerEntry:
    """One entry of the signer policy, as the site lists it."""

    label: str
    klass: str  # first-party | partner | community
    issuer: str
    identity: str  # exact certificate identity, "" when a pattern
    pattern: str  # anchored regular expression over identities, "" when exact
    trust_root: str  # "" for every trust root; else only under this one (demo)
    description: str
    runs: int = 0  # counted runs of this build signed under the entry
    recipes: tuple[str, ...] = ()  # recipes those runs cover


@dataclass(frozen=True, slots=True)
class SignerPolicyView:
    entries: tuple[SignerEntry, ...]  # by class (first-party, partner, community), then label
    left_out: int  # entries of the file the verifier refuses (schema, over-broad, duplicate)
    present: bool  # the catalog has a signers.yaml


_CLASS_ORDER = {"first-party": 0, "partner": 1, "community": 2}


def signer_policy(catalog: Catalog, runs: Iterable[EvidenceView] = ()) -> SignerPolicyView:
    """The policy of `catalog` as the verifier applies it, with the counted runs of `runs`."""
    from generator.evidence.policy import policy_from

    doc = catalog.documents.get(SIGNERS_FILE)
    if doc is None:
        return SignerPolicyView((), 0, False)
    policy, _problems = policy_from(doc)
    raw = doc.data.get("signers") if isinstance(doc.data, dict) else None
    described = {
        e.get("label"): str(e.get("description") or "")
        for e in (raw if isinstance(raw, list) else [])
        if isinstance(e, dict)
    }
    counted: dict[str, list[EvidenceView]] = {}
    for run in runs:
        if run.counted and run.signer_label:
            counted.setdefault(run.signer_label, []).append(run)
    entries = [
        SignerEntry(
            label=r.label,
            klass=str(r.klass),
            issuer=r.issuer,
            identity=r.identity or "",
            pattern=r.identity_pattern or "",
            trust_root=r.trust_root or "",
            description=described.get(r.label, ""),
            runs=len(counted.get(r.label, ())),
            recipes=tuple(sorted({e.recipe for e in counted.get(r.label, ())})),
        )
        for r in policy.rules
    ]
    entries.sort(key=lambda e: (_CLASS_ORDER.get(e.klass, 3), e.label))
    total = len(raw) if isinstance(raw, list) else 0
    return SignerPolicyView(tuple(entries), total - len(entries), True)
