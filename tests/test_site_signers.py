"""The signer policy page's records (issue 30 item 5): the allowlist as the verifier applies it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from generator.catalog.load import load_catalog
from generator.core.yamlio import parse_yaml
from generator.site.pages import signers_page
from generator.site.signers import SignerEntry, SignerPolicyView, newest_recipes, signer_policy
from tests.test_site_pages import run
from tests.test_site_pages import site as site_data

REPO = Path(__file__).resolve().parent.parent


def test_every_entry_of_the_repository_policy_is_listed_by_class() -> None:
    catalog, _ = load_catalog(REPO / "catalog")
    policy = signer_policy(catalog)
    raw = catalog.documents["signers.yaml"].data["signers"]
    assert policy.present and policy.left_out == 0
    assert {e.label for e in policy.entries} == {e["label"] for e in raw}
    order = [e.klass for e in policy.entries]
    assert order == sorted(order, key=["first-party", "partner", "community"].index)
    pattern = [e for e in policy.entries if e.pattern]
    assert pattern and all(e.identity == "" and e.pattern.startswith("^") for e in pattern)
    assert all(e.description for e in policy.entries)


def test_refused_entries_are_left_out_and_counted() -> None:
    catalog, _ = load_catalog(REPO / "catalog")
    text = (
        "apiVersion: aicr.run/v1\nkind: SignerPolicy\nsigners:\n"
        "  - label: Lab\n    class: partner\n    issuer: https://token.actions.githubusercontent.com\n"
        "    identity: https://github.com/o/r/.github/workflows/q.yml@refs/heads/main\n"
        "  - label: Everyone\n    class: community\n"
        "    issuer: https://token.actions.githubusercontent.com\n    identityPattern: ^.*$\n"
    )
    docs = {**catalog.documents, "signers.yaml": parse_yaml(text, "signers.yaml")}
    policy = signer_policy(replace(catalog, documents=docs))
    assert [e.label for e in policy.entries] == ["Lab"] and policy.left_out == 1


def test_no_policy_file_says_so() -> None:
    catalog, _ = load_catalog(REPO / "catalog")
    docs = {k: v for k, v in catalog.documents.items() if k != "signers.yaml"}
    policy = signer_policy(replace(catalog, documents=docs))
    assert not policy.present and policy.entries == ()


def test_a_signer_lists_its_newest_recipes_and_counts_the_others() -> None:
    """Issue 29: the page lists at most NEWEST recipes per signer (newest run first, then by
    name), counts the rest and says where they are, so it does not grow with the catalog."""
    base = run("small", 8, "a", "pass")
    runs = [
        replace(base, recipe=f"r{i:02d}", attested_at=f"2026-11-{1 + i % 5:02d}T00:00:00Z")
        for i in range(12)
    ]
    assert newest_recipes(runs, 4) == ("r04", "r09", "r03", "r08")
    # a recipe ranks by its newest run: an older run of r00 does not demote a newer one
    later = replace(runs[0], attested_at="2026-12-01T00:00:00Z")
    assert newest_recipes([*runs, later], 2) == ("r00", "r04")
    assert newest_recipes([], 4) == ()

    entry = SignerEntry("Lab a", "partner", "i", "x", "", "", "d", 12, 12, ("r04", "r09"))
    policy = SignerPolicyView((entry,), 0, True)
    site = replace(site_data(), signers=policy)
    text = signers_page(site)
    assert "12 on 12 recipes, the newest 2 listed" in text
    assert 'and <a href="#signers-more">10 more</a>' in text and 'id="signers-more"' in text
    assert text.count('href="evidence/r') == 2
