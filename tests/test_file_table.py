"""The file table is built once: the record decodes into rows (`FileTable`), the publisher
carries the row of every file it keeps over as it is, and a delta's `table()` makes a row only
for the files it staged. Held here against the references beside them (`table_reference`,
`BuildRecord.decode_reference`), by counted work (rows made, files hashed), and on a real
one-run rebuild."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from generator.bench.synth import SynthOptions, synthesize
from generator.core.cache import tree_listing
from generator.evidence import store
from generator.site import build as build_module
from generator.site.build import BuildOptions, build_site
from generator.site.incremental import BuildRecord
from generator.site.publish import FileTable, Published, Publisher

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


def _delta(tmp_path: Path, n: int = 50) -> tuple[Publisher, FileTable]:
    """A delta publish of every kind of file: kept by source and by bytes, kept with another
    source, changed, put twice, new, gone, and files the engine wrote (one the same)."""
    out = tmp_path / "site"
    files = {f"d{i % 7}/f{i}.json": b"%d" % i for i in range(n)}
    files |= {"same.html": b"same", "edited.json": b"v1", "gone.json": b"x", "asset.js": b"js"}
    files |= {"resourced.json": b"r", "twice.html": b"t"}
    sources = {rel: f"src-{rel}" for rel in files if rel.startswith("d")}
    sources["resourced.json"] = "old-source"
    known = FileTable.of(_tree(out, files, sources))
    staging = tmp_path / ".site-build-x" / "site"
    staging.mkdir(parents=True)
    (staging / "asset.js").write_bytes(b"js")  # the engine's, the same bytes: kept
    (staging / "engine.css").write_bytes(b"css")  # the engine's, new: moved
    publisher = Publisher(staging, out, known, delta=True)
    for rel in sorted(files):
        if rel.startswith("d"):
            made = b"changed" if rel == "d3/f3.json" else files[rel]
            source = "new-source" if rel == "d3/f3.json" else sources[rel]
            publisher.put_derived(rel, source, lambda made=made: made)  # type: ignore[misc]
    publisher.put("same.html", b"same")
    publisher.put("edited.json", b"v2")
    publisher.put_derived("resourced.json", "new-source", lambda: b"r")  # same bytes
    publisher.put("twice.html", b"first")
    publisher.put("twice.html", b"t")  # the last bytes win: those recorded, kept
    publisher.put("new/file.json", b"new")
    publisher.take_rest()
    publisher.close()
    return publisher, known


def test_a_delta_table_is_its_reference(tmp_path: Path) -> None:
    publisher, _known = _delta(tmp_path)
    reference = publisher.table_reference()
    table = publisher.table()
    assert dict(table) == reference and table == reference
    assert publisher.table() is table  # made once
    assert publisher.delta().moves == ("d3/f3.json", "edited.json", "engine.css", "new/file.json")
    assert publisher.delta().removals == ("gone.json",)
    assert table["resourced.json"].source == "new-source"
    assert "twice.html" not in publisher.delta().moves


def test_a_delta_makes_rows_only_for_what_changed(tmp_path: Path) -> None:
    """Counted work: of a table of 1,000 files where one changed, the new table holds the
    previous table's row object for every file kept with its source, and each file of the
    delta's table is hashed only when it was put as bytes."""
    publisher, known = _delta(tmp_path, 1000)
    table = publisher.table()
    made = {rel for rel, row in table.rows.items() if row is not known.rows.get(rel)}
    moved = set(publisher.delta().moves)
    assert made == moved | {"resourced.json"}, made
    # bytes hashed: 6 puts (twice.html twice), 2 engine files, 1 derived file made; none of
    # the 999 kept by their source
    assert publisher.hashed == 9
    assert publisher.counts().kept == len(table) - len(moved)


def test_a_record_decodes_to_its_reference_and_reads_the_list_format(tmp_path: Path) -> None:
    files = _tree(tmp_path, {"a.html": b"a", "d/b.json": b"bb", "caf\u00e9.svg": b""}, {})
    files["a.html"] = Published(1, 2, 3, "sha-a", "source-a")
    record = BuildRecord("key", b'{"pages": 1}', FileTable.of(files))
    payload = record.encode()
    decoded = BuildRecord.decode(payload)
    assert decoded is not None and decoded.files == files == BuildRecord.decode_reference(payload)
    assert (decoded.key, decoded.report) == ("key", b'{"pages": 1}')
    # a record written by the previous code (a list per field) reads the same
    rels = tuple(sorted(files))
    rows = [files[r] for r in rels]
    old = (
        "build-record 2", "key", b"{}", rels,
        [p.size for p in rows], [p.mtime_ns for p in rows], [p.inode for p in rows],
        [p.sha256 for p in rows], [p.source for p in rows],
    )  # fmt: skip
    again = BuildRecord.decode(pickle.dumps(old))
    assert again is not None and again.files == files
    assert BuildRecord.decode(pickle.dumps(("build-record 1", *old[1:]))) is None
    empty = BuildRecord.decode(BuildRecord("k", b"{}", FileTable({})).encode())
    assert empty is not None and len(empty.files) == 0


def test_a_file_table_is_a_mapping_of_published(tmp_path: Path) -> None:
    files = {"a": Published(1, 2, 3, "s", ""), "b/c": Published(4, 5, 6, "t", "u")}
    table = FileTable.of(files)
    assert FileTable.of(table) is table
    assert table["b/c"] == files["b/c"] and table.get("x") is None and "a" in table
    assert "x" not in table and len(table) == 2 and sorted(table) == ["a", "b/c"]
    assert table == files and table == FileTable.of(dict(files)) and table != {"a": files["a"]}
    with pytest.raises(KeyError):
        table["x"]


# --- a real rebuild -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(2, 6, seed=3, jobs=1), out)
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
        bundles=False,
        cache_dir=tmp_path / "out" / ".cache" / "bundles",
        jobs=1,
    )
    build_site(options)
    yield options


def test_a_one_run_rebuild_makes_rows_for_the_files_it_moved_alone(
    world: BuildOptions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One run removed: the publisher is a delta; every row of its table but those of the
    files it moved (and those kept under another source: the badges) is the recorded row; no
    derived file kept by its source is hashed; the table is the tree's listing."""
    seen: list[Publisher] = []
    made = build_module._publisher

    def spy(*args: object) -> Publisher:
        publisher = made(*args)  # type: ignore[arg-type]
        seen.append(publisher)
        return publisher

    monkeypatch.setattr(build_module, "_publisher", spy)
    sorted(world.evidence.rglob("*.sigstore.json"))[0].unlink()
    report = build_site(world)
    (publisher,) = seen
    assert publisher.is_delta and report.files_kept > 0
    table, known = publisher.table(), publisher.known
    fresh = {rel for rel, row in table.rows.items() if row is not known.rows.get(rel)}
    moved = set(publisher.delta().moves)
    assert moved <= fresh and len(fresh) < report.files // 4, (fresh, report.files)
    # a file kept (its bytes the same) gets a new row only when made from another source
    assert all(table[rel].source != known[rel].source for rel in fresh - moved), fresh - moved
    # hashed: the files put as bytes (the engine's, the indexes) and the derived files made;
    # none of the derived files kept by their source (the runs' raw files and statements)
    derived = len(publisher.sources)
    assert derived > 0 and publisher.derived_made < derived
    assert publisher.hashed == report.files - derived + publisher.derived_made, publisher.hashed
    listing = [[rel, p.size, p.mtime_ns, p.inode] for rel, p in sorted(table.items())]
    assert listing == tree_listing(world.out)


def test_api_sources_digest_each_recipes_runs_once(
    world: BuildOptions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sources of the API's per-recipe files and badges (`incremental.api_reuse`) digest
    a recipe's runs once per runs object, not once per file, and each equals its reference."""
    from generator.site import incremental

    keyed: list[str] = []
    asked: list[tuple[str, str, Any, str]] = []
    keys: list[incremental.RecipeKeys] = []
    runs_key, made = incremental._runs_key, incremental.api_reuse

    def count(recipe_keys: incremental.RecipeKeys, name: str, runs: Any) -> str:
        keyed.append(name)
        return runs_key(recipe_keys, name, runs)

    def spy(recipe_keys: incremental.RecipeKeys | None, sums: Any) -> Any:
        reuse = made(recipe_keys, sums)
        assert recipe_keys is not None
        keys.append(recipe_keys)

        def source(kind: str, name: str, runs: Any) -> str:
            got = reuse.source(kind, name, runs)
            asked.append((kind, name, runs, got))
            return got

        return type(reuse)(source, reuse.sums)

    monkeypatch.setattr(incremental, "_runs_key", count)
    monkeypatch.setattr(build_module, "api_reuse", spy)
    sorted(world.evidence.rglob("*.sigstore.json"))[0].unlink()
    report = build_site(world)
    assert len(asked) >= 3 * report.recipes  # a detail, an evidence file, badges per recipe
    # once per recipe name and the runs it holds (the recipe's, its evidence group's and its
    # published block's are sequences of the same runs): fewer than asked
    runs_held = {(n, tuple(map(id, r))) for _, n, r, _ in asked}
    assert len(keyed) < len(asked) and len(keyed) == len(runs_held)
    assert len(runs_held) < len({(n, id(r)) for _, n, r, _ in asked})
    monkeypatch.setattr(incremental, "_runs_key", runs_key)
    for kind, name, runs, got in asked:
        assert got == incremental.api_source_reference(keys[0], kind, name, runs), (kind, name)
    assert len({got for *_, got in asked}) == len(asked)  # every file its own source
