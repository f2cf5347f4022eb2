"""The catalog stage resolves each leaf at the default profile once: validation's resolution
(`resolve.check_resolves`, without the digest) is completed (`resolve.with_digest`) rather
than resolved again, and what the stage gives is, byte for byte, what resolving afresh gives."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from generator.catalog import resolve as resolve_module
from generator.core.records import DEFAULT_PROFILE
from generator.pipeline import CatalogInput, _pickled, resolve_catalog, resolve_recipe
from tests.conftest import CATALOG


def test_each_leaf_is_resolved_once_at_the_default_profile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: Counter[tuple[str, str]] = Counter()
    real = resolve_module._resolve

    def counted(catalog: Any, query: Any, profile: str, *args: Any, **kwargs: Any) -> Any:
        calls[(str(query), profile)] += 1
        return real(catalog, query, profile, *args, **kwargs)

    monkeypatch.setattr(resolve_module, "_resolve", counted)
    resolved = resolve_catalog(CatalogInput(CATALOG))
    leaves = resolved.catalog.leaves()
    assert len(leaves) > 1
    assert {leaf: calls[(leaf, DEFAULT_PROFILE)] for leaf in leaves} == dict.fromkeys(leaves, 1)
    # every other profile still resolved, once per recipe it applies to
    others = {k: n for k, n in calls.items() if k[1] != DEFAULT_PROFILE}
    assert others and set(others.values()) == {1}


def test_the_stage_gives_what_resolving_afresh_gives_byte_for_byte() -> None:
    resolved = resolve_catalog(CatalogInput(CATALOG))
    names = list(resolved.by_recipe)
    assert names
    for name in names:
        fresh, failure = resolve_recipe(resolved.catalog, name)  # no validation result given
        assert failure is None
        assert resolved.by_recipe.pickled(name) == _pickled(tuple(fresh)), name
        assert all(r.digest for r in fresh)


def test_check_resolves_completed_is_resolve() -> None:
    resolved = resolve_catalog(CatalogInput(CATALOG))
    catalog = resolved.catalog
    leaf = catalog.leaves()[0]
    checked = resolve_module.check_resolves(catalog, leaf)
    assert checked.digest == ""
    assert resolve_module.with_digest(checked) == resolve_module.resolve(catalog, leaf)
