"""The signer policy as a page: who may sign evidence this catalog counts, for which class,
under which identity (catalog/signers.yaml, the allowlist, as a directory of signers).

`signer_entries` reads the policy as the verifier applies it (`policy_from`: entries with
problems are left out, fail closed, and the page says how many) and adds what this build's
evidence shows of each signer: its counted runs, how many recipes they cover, and the newest
`NEWEST` of those recipes (by the newest counted run on each). The page lists only those, so it
does not grow with the catalog (issue 29): each recipe's evidence page names the signers of its
runs, and the evidence index reaches every recipe.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from generator.core.records import Catalog
from generator.evidence.view import RunFacts

SIGNERS_FILE = "signers.yaml"
NEWEST = 20  # recipes listed per signer: the newest its counted runs cover


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
    recipes: int = 0  # distinct recipes those runs cover
    newest: tuple[str, ...] = ()  # at most NEWEST of them, newest counted run first

    @property
    def more(self) -> int:
        """The covered recipes the page does not list."""
        return self.recipes - len(self.newest)


@dataclass(frozen=True, slots=True)
class SignerPolicyView:
    entries: tuple[SignerEntry, ...]  # by class (first-party, partner, community), then label
    left_out: int  # entries of the file the verifier refuses (schema, over-broad, duplicate)
    present: bool  # the catalog has a signers.yaml


_CLASS_ORDER = {"first-party": 0, "partner": 1, "community": 2}


def newest_recipes(runs: Iterable[RunFacts], limit: int) -> tuple[str, ...]:
    """The recipes `runs` cover, newest first: by each recipe's newest attestation (ISO 8601
    UTC text, so ordered as text), then by name; at most `limit`."""
    newest: dict[str, str] = {}
    for e in runs:
        if e.attested_at >= newest.get(e.recipe, ""):
            newest[e.recipe] = e.attested_at
    # by name, then (a stable sort) by attestation, newest first
    ranked = sorted(sorted(newest.items()), key=lambda kv: kv[1], reverse=True)
    return tuple(name for name, _ in ranked[:limit])


def signer_policy(catalog: Catalog, runs: Iterable[RunFacts] = ()) -> SignerPolicyView:
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
    counted: dict[str, list[RunFacts]] = {}
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
            recipes=len({e.recipe for e in counted.get(r.label, ())}),
            newest=newest_recipes(counted.get(r.label, ()), NEWEST),
        )
        for r in policy.rules
    ]
    entries.sort(key=lambda e: (_CLASS_ORDER.get(e.klass, 3), e.label))
    total = len(raw) if isinstance(raw, list) else 0
    return SignerPolicyView(tuple(entries), total - len(entries), True)
