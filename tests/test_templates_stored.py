"""Compiled templates kept in the build cache (`jinja.StoredBytecode`): a template is compiled
once and loaded by later builds, a bad or foreign entry is never loaded (compiled again), and
what is rendered is the same either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.core.cache import Cache
from generator.site import jinja

PAGES = ("pages/legend.md.j2", "pages/compare.md.j2")


@pytest.fixture
def store(tmp_path: Path) -> Cache:
    return Cache(tmp_path / "cache", secret=b"k" * 32)


def _render() -> list[str]:
    jinja.environment().cache.clear()  # type: ignore[union-attr]  # as a new process would
    return [jinja.render(PAGES[0], base=""), jinja.render(PAGES[1])]


def test_a_template_is_compiled_once_then_loaded(store: Cache) -> None:
    plain = _render()
    with jinja.compiled_in(store) as first:
        assert first is not None
        assert _render() == plain
    assert first.compiled >= len(PAGES) and first.loaded == 0
    assert len(store.keys(jinja.TEMPLATES_STAGE)) == first.compiled
    with jinja.compiled_in(store) as second:
        assert second is not None
        assert _render() == plain
    assert second.compiled == 0 and second.loaded == first.compiled
    assert jinja.environment().bytecode_cache is None  # left as it was


def test_a_bad_or_foreign_entry_is_compiled_again(store: Cache) -> None:
    plain = _render()
    with jinja.compiled_in(store):
        _render()
    keys = store.keys(jinja.TEMPLATES_STAGE)
    # one entry's bytes under another's key (a valid entry, of another template), one truncated
    store.write_raw(
        jinja.TEMPLATES_STAGE, keys[0], store.raw(jinja.TEMPLATES_STAGE, keys[1]) or b""
    )
    store.write_raw(
        jinja.TEMPLATES_STAGE, keys[1], (store.raw(jinja.TEMPLATES_STAGE, keys[1]) or b"")[:-9]
    )
    with jinja.compiled_in(store) as again:
        assert again is not None
        assert _render() == plain
    assert again.compiled == 2 and again.loaded == len(keys) - 2


def test_without_a_cache_templates_are_compiled_as_always(tmp_path: Path) -> None:
    plain = _render()
    with jinja.compiled_in(None) as none, jinja.compiled_in(Cache(tmp_path, enabled=False)) as off:
        assert none is None and off is None and jinja.environment().bytecode_cache is None
        assert _render() == plain
