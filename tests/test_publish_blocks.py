"""Blocks (`publish.Block`): files published together under one key. A delta whose previous
build published a block of the same key carries its rows over without the block's items being
made or even listed; any other block is put file by file, as `put_all` would. The blocks go
into the file table and through the record; a real one-run rebuild carries every unchanged
recipe's archives and runs as a block and still gives the files of a build from scratch."""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Iterator
from pathlib import Path

from generator.site.incremental import BuildRecord
from generator.site.publish import Block, Derived, FileTable, Published, Publisher


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
