"""The signer policy page's records (issue 30 item 5): the allowlist as the verifier applies it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from generator.catalog.load import load_catalog
from generator.core.yamlio import parse_yaml
from generator.site.signers import signer_policy

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
