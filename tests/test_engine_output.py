"""mkdocs' output in the cache as an index and one entry per file (`generator.site.engine`): a
rebuild that reuses it reads only the files it makes, and an entry found bad or gone makes the
engine run again; every way ends with the files of a build from scratch."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from generator.core.cache import Cache
from generator.site.build import BuildOptions, build_site
from generator.site.engine import ENGINE_STAGE, FILES_STAGE
from tests.conftest import CATALOG, REPO

EPOCH = 1767225600


def digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def world(tmp_path: Path) -> tuple[BuildOptions, Path]:
    """Options over copies of the catalog and the sample evidence, one file held back."""
    if not any((REPO / "evidence").rglob("*.sigstore.json")):
        pytest.skip("the repository has no sample evidence")
    shutil.copytree(CATALOG, tmp_path / "catalog")
    shutil.copytree(REPO / "evidence", tmp_path / "evidence")
    held = sorted((tmp_path / "evidence").rglob("*.sigstore.json"))[0]
    shutil.move(held, tmp_path / "held.sigstore.json")
    out = tmp_path / "b" / "site"
    options = BuildOptions(
        catalog=tmp_path / "catalog",
        evidence=tmp_path / "evidence",
        out=out,
        trust_root="demo",
        source_date_epoch=EPOCH,
        bundles=False,
        cache_dir=out.parent / ".cache" / "bundles",
    )
    return options, held


def _fresh(options: BuildOptions, tmp_path: Path) -> dict[str, str]:
    """The digests of a build from scratch (no cache) of the same inputs."""
    out = tmp_path / "fresh" / "site"
    build_site(dataclasses.replace(options, out=out, cache_dir=None))
    return digests(out)


def _store(options: BuildOptions) -> Cache:
    return Cache(options.out.parent / ".cache")


def _files_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the engine's file entries asked for from now on."""
    asked: list[str] = []
    real = Cache.get_or_make_many

    def counting(
        self: Cache,
        stage: str,
        key_parts: Sequence[Sequence[str | bytes]],
        make: Callable[[list[int]], Sequence[Any]],
        *,
        sweep: bool = False,
    ) -> list[Any]:
        if stage == FILES_STAGE:
            asked.extend(self.key(stage, "", *parts) for parts in key_parts)
        return real(self, stage, key_parts, make, sweep=sweep)

    monkeypatch.setattr(Cache, "get_or_make_many", counting)
    return asked


def test_a_reuse_reads_only_the_files_it_makes(
    world: tuple[BuildOptions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options, held = world
    first = build_site(options)
    store = _store(options)
    stored = set(store.keys(FILES_STAGE))
    assert not first.engine_reused and len(store.keys(ENGINE_STAGE)) == 1 and len(stored) > 50
    asked = _files_read(monkeypatch)
    shutil.move(tmp_path / "held.sigstore.json", held)  # one more run: no skeleton changes
    second = build_site(options)
    assert second.engine_reused
    # the built pages of the pages finished again (the added run's page is stamped from the
    # runs' stamp page): a few, never the whole output; nothing else of it read
    assert 0 < len(asked) <= second.pages_finished < len(stored) // 4, (asked, second)
    assert set(asked) <= stored
    assert set(_store(options).keys(FILES_STAGE)) == stored  # the same bytes, kept
    monkeypatch.undo()
    assert digests(options.out) == _fresh(options, tmp_path)


def test_bad_file_entries_make_the_engine_run_again_and_the_site_is_the_same(
    world: tuple[BuildOptions, Path], tmp_path: Path
) -> None:
    options, held = world
    build_site(options)
    store = _store(options)
    for key in store.keys(FILES_STAGE):  # every file's entry damaged, the index intact
        store.write_raw(FILES_STAGE, key, (store.raw(FILES_STAGE, key) or b"")[:-3])
    store.close()
    shutil.move(tmp_path / "held.sigstore.json", held)
    shutil.rmtree(options.out)  # nothing to link: every built page is read
    report = build_site(options)
    # the index was reused; the files it names, found bad when read, were made again by one
    # more run of the engine (into a directory of its own), and stored again
    assert report.engine_reused and report.pages_finished >= report.pages
    assert digests(options.out) == _fresh(options, tmp_path)
    again = _store(options)
    assert all(len(again.raw(FILES_STAGE, k) or b"") > 0 for k in again.keys(FILES_STAGE))


def test_a_file_entry_gone_makes_the_engine_run(
    world: tuple[BuildOptions, Path], tmp_path: Path
) -> None:
    options, held = world
    build_site(options)
    store = _store(options)
    keys = store.keys(FILES_STAGE)
    store._delete(FILES_STAGE, keys[0])  # as a sweep of another scope could have left it
    store.close()
    shutil.move(tmp_path / "held.sigstore.json", held)
    report = build_site(options)
    assert not report.engine_reused  # the index names a file the store does not hold
    assert _store(options).keys(FILES_STAGE) == keys  # stored again
    assert digests(options.out) == _fresh(options, tmp_path)
