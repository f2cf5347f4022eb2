"""Blocks (`publish.Block`): files published together under one key. A delta whose previous
build published a block of the same key carries its rows over without the block's items being
made or even listed; any other block is put file by file, as `put_all` would. The blocks go
into the file table and through the record; a real one-run rebuild carries every unchanged
recipe's archives and runs as a block and still gives the files of a build from scratch."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from generator.evidence import store
from generator.evidence.view import EvidenceView
from generator.site import build as build_module
from generator.site.build import BuildOptions, build_site
from generator.site.incremental import BuildRecord
from generator.site.publish import Block, Derived, FileTable, Published, Publisher

EPOCH = 1767225600


def _tree(root: Path, files: dict[str, bytes], sources: dict[str, str]) -> dict[str, Published]:
    table = {}
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        st = os.lstat(path)
        sha = hashlib.sha256(data).hexdigest()
        table[rel] = Published(st.st_size, st.st_mtime_ns, st.st_ino, sha, sources.get(rel, ""))
    return table


FILES = {f"b{b}/f{i}.json": b"%d-%d" % (b, i) for b in range(3) for i in range(4)}


def _items(b: int, listed: list[int], *, change: bool = False) -> Iterator[tuple[str, Derived]]:
    listed.append(b)
    for i in range(4):
        rel = f"b{b}/f{i}.json"
        data = b"changed" if change and i == 0 else FILES[rel]
        source = "new" if change and i == 0 else f"src-{rel}"
        yield rel, Derived(source, lambda data=data: data)  # type: ignore[misc]


def _publisher(tmp_path: Path, blocks: dict[str, tuple[str, ...]], *, delta: bool) -> Publisher:
    out = tmp_path / "site"
    known = FileTable(
        FileTable.of(_tree(out, FILES, {rel: f"src-{rel}" for rel in FILES})).rows, blocks
    )
    staging = tmp_path / ".site-build-x" / "site"
    staging.mkdir(parents=True)
    return Publisher(staging, out, known, delta=delta)


def _blocks() -> dict[str, tuple[str, ...]]:
    return {f"key-{b}": tuple(f"b{b}/f{i}.json" for i in range(4)) for b in range(3)}


def test_a_delta_carries_a_block_of_the_same_key_without_listing_it(tmp_path: Path) -> None:
    publisher = _publisher(tmp_path, _blocks(), delta=True)
    listed: list[int] = []
    publisher.put_all(
        [
            Block("key-0", lambda: _items(0, listed)),  # same key: carried, not listed
            Block("key-1-new", lambda: _items(1, listed, change=True)),  # another key: put
            Block("", lambda: _items(2, listed)),  # no key: put, never recorded
        ]
    )
    publisher.close()
    assert listed == [1, 2]
    assert publisher.carried == 1 and publisher.kept == 4 + 3 + 4
    assert publisher.delta().moves == ("b1/f0.json",) and publisher.delta().removals == ()
    table = publisher.table()
    assert table.blocks == {"key-0": _blocks()["key-0"], "key-1-new": _blocks()["key-1"]}
    assert all(table.rows[rel] is publisher.known.rows[rel] for rel in _blocks()["key-0"])
    assert dict(table) == publisher.table_reference()


def test_a_block_is_put_file_by_file_when_it_cannot_be_carried(tmp_path: Path) -> None:
    # a new tree (no delta): every file linked by its source, none carried
    publisher = _publisher(tmp_path, _blocks(), delta=False)
    listed: list[int] = []
    publisher.put_all([Block("key-0", lambda: _items(0, listed))])
    publisher.close()
    assert listed == [0] and publisher.carried == 0 and publisher.linked == 4
    # a delta where one of the block's paths was put already: put file by file
    other = _publisher(tmp_path / "again", _blocks(), delta=True)
    other.put("b0/f1.json", b"put first")
    other.put_all([Block("key-0", lambda: _items(0, listed))])
    other.close()
    assert listed == [0, 0] and other.carried == 0
    # a recorded block naming a path the table does not hold: put file by file
    broken = _publisher(tmp_path / "broken", {"key-0": ("b0/f0.json", "absent.json")}, delta=True)
    broken.put_all([Block("key-0", lambda: _items(0, listed))])
    broken.close()
    assert listed == [0, 0, 0] and broken.carried == 0 and broken.kept == 4


def test_a_new_tree_table_holds_its_blocks_and_the_record_keeps_them(tmp_path: Path) -> None:
    from generator.core.cache import listing_rows

    publisher = _publisher(tmp_path, {}, delta=False)
    listed: list[int] = []
    publisher.put_all([Block("key-0", lambda: _items(0, listed)), ("x.json", b"x")])
    publisher.close()
    root = publisher.root
    table = publisher.tree_table(listing_rows(root))
    assert table.blocks == {"key-0": _blocks()["key-0"]}
    assert table["x.json"].sha256 == hashlib.sha256(b"x").hexdigest()
    assert table["b0/f0.json"].source == "src-b0/f0.json"
    record = BuildRecord("key", b"{}", table)
    decoded = BuildRecord.decode(record.encode())
    assert decoded is not None and decoded.files == table
    assert decoded.files.blocks == table.blocks
    # a record of the format before blocks reads as a table of none
    old = pickle.loads(record.encode())
    legacy = BuildRecord.decode(pickle.dumps(("build-record 2", *old[1:9])))
    assert legacy is not None and legacy.files == table and legacy.files.blocks == {}


# --- a real rebuild -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(3, 6, seed=5, jobs=1), out)
    return out


@pytest.fixture
def world(synth: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BuildOptions]:
    monkeypatch.setenv("AICR_CATALOG_CACHE_KEY", str(tmp_path / "cache.key"))
    monkeypatch.setattr(store, "SETTLED_NS", 0)
    shutil.copytree(synth / "catalog", tmp_path / "catalog")
    shutil.copytree(synth / "evidence", tmp_path / "evidence")
    options = BuildOptions(
        catalog=tmp_path / "catalog",
        evidence=tmp_path / "evidence",
        out=tmp_path / "out" / "site",
        trust_root=str(synth / "trust" / "synth-root.json"),
        source_date_epoch=EPOCH,
        cache_dir=tmp_path / "out" / ".cache" / "bundles",
        jobs=1,
    )
    build_site(options)
    yield options


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_one_run_rebuild_lists_only_the_changed_recipes_block(
    world: BuildOptions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One run removed: the rebuild is a delta that carries every recipe's archives and every
    other recipe name's runs as a block, listing the items of the changed name's block alone;
    the site is a build from scratch's, and the next build of the same inputs does nothing."""
    seen: list[Publisher] = []
    made = build_module._publisher

    def spy(*args: object) -> Publisher:
        publisher = made(*args)  # type: ignore[arg-type]
        seen.append(publisher)
        return publisher

    listed: list[str] = []
    runs, archives = build_module._runs, build_module._archives

    def runs_spy(group: Sequence[EvidenceView], code: str) -> Iterator[tuple[str, object]]:
        listed.append(group[0].recipe)
        return runs(group, code)  # type: ignore[return-value]

    def archives_spy(downloads: Sequence[object]) -> Iterator[tuple[str, object]]:
        listed.append("archives")
        return archives(downloads)  # type: ignore[arg-type,return-value]

    monkeypatch.setattr(build_module, "_publisher", spy)
    monkeypatch.setattr(build_module, "_runs", runs_spy)
    monkeypatch.setattr(build_module, "_archives", archives_spy)
    sorted(world.evidence.rglob("*.sigstore.json"))[0].unlink()
    report = build_site(world)
    (publisher,) = seen
    assert publisher.is_delta and report.files_removed >= 2, report
    assert len(listed) == 1 and listed[0] != "archives", listed
    blocks = publisher.table().blocks
    assert publisher.carried == len(blocks) - 1 > 0, (publisher.carried, len(blocks))
    assert any(rel.startswith("downloads/") for rels in blocks.values() for rel in rels)
    fresh = dataclasses.replace(world, out=tmp_path / "fresh" / "site", cache_dir=None)
    build_site(fresh)
    assert _digests(world.out) == _digests(fresh.out)
    assert build_site(world) == report  # recorded: nothing to do
