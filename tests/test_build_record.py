"""The record of an output's last build stored as a base and a head (`incremental.record_build`):
a build whose previous record was read writes only the table's difference from that record's
base, and every record reads back as the table it was written from."""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core.cache import Cache
from generator.site import incremental
from generator.site.incremental import BASE_STAGE, BUILD_STAGE, last_record, record_build
from generator.site.publish import FileTable, Row

SECRET = b"s" * 32


def _row(i: int, salt: int = 0) -> Row:
    return (i, 1000 + i + salt, 50 + i, f"sha-{i}-{salt}", f"src-{i}" if i % 2 else "")


def _table(n: int, salt: int = 0) -> FileTable:
    rows = {f"d{i % 7}/f{i}.html": _row(i, salt) for i in range(n)}
    blocks = {
        f"block-{b}": tuple(sorted(r for r in rows if r.endswith(f"{b}.html"))) for b in (1, 2)
    }
    return FileTable(rows, blocks)


def _written(cache: Cache, stage: str) -> list[str]:
    return [k for k in cache.keys(stage) if (cache.raw(stage, k) or b"")]


def _record(cache_dir: Path, out: Path, key: str, table: FileTable) -> None:
    """A build's end: the last record read (as a build reads it), then this one written."""
    cache = Cache(cache_dir, secret=SECRET)
    last_record(cache, out)
    record_build(cache, out, key, {"key": key}, table=table)
    cache.close()


def _read(cache_dir: Path, out: Path) -> incremental.BuildRecord | None:
    return last_record(Cache(cache_dir, secret=SECRET), out)


def test_a_small_change_writes_a_head_and_a_large_one_a_new_base(tmp_path: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    cache_dir = tmp_path / ".cache"
    table = _table(200)
    _record(cache_dir, out, "k1", table)
    base = Cache(cache_dir, secret=SECRET).raw(
        BASE_STAGE, _written(Cache(cache_dir), BASE_STAGE)[0]
    )
    # three files changed, one gone, one added, a block gone: a head amends the same base
    rows = dict(table.rows)
    changed = sorted(rows)[:3]
    for rel in changed:
        rows[rel] = (*rows[rel][:3], "sha-new", "src-new")
    del rows[sorted(rows)[-1]]
    rows["new/file.json"] = (1, 2, 3, "sha-x", "")
    small = FileTable(rows, {"block-1": table.blocks["block-1"], "block-3": ("new/file.json",)})
    _record(cache_dir, out, "k2", small)
    again = Cache(cache_dir, secret=SECRET)
    assert again.raw(BASE_STAGE, again.keys(BASE_STAGE)[0]) == base  # not written again
    read = _read(cache_dir, out)
    assert read is not None and read.key == "k2" and read.files == small
    assert read.files.blocks == small.blocks
    # every row changed: a new base (the record reads the same either way)
    large = _table(150, salt=1)
    _record(cache_dir, out, "k3", large)
    again = Cache(cache_dir, secret=SECRET)
    assert again.raw(BASE_STAGE, again.keys(BASE_STAGE)[0]) != base
    read = _read(cache_dir, out)
    assert read is not None and read.files == large and read.files.blocks == large.blocks


def test_a_head_whose_base_is_not_its_own_is_no_record(tmp_path: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    cache_dir = tmp_path / ".cache"
    _record(cache_dir, out, "k1", _table(40))
    store = Cache(cache_dir, secret=SECRET)
    (where,) = store.keys(BUILD_STAGE)
    head = store.raw(BUILD_STAGE, where)
    _record(cache_dir, out, "k2", _table(40, salt=1))  # a new base and its head
    assert _read(cache_dir, out) is not None
    # as if the build were killed between writing its base and its head: the old head names
    # another base
    store.write_raw(BUILD_STAGE, where, head or b"")
    assert _read(cache_dir, out) is None
    store.write_raw(BASE_STAGE, where, b"garbage")  # a bad base
    assert _read(cache_dir, out) is None


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**32), min_size=1, max_size=6))
def test_every_record_reads_back_as_its_table(seeds: list[int]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = root / "site"
        out.mkdir()
        cache_dir = root / ".cache"
        table = _table(60)
        for n, seed in enumerate(seeds):
            rng = random.Random(seed)
            rows = dict(table.rows)
            for rel in rng.sample(sorted(rows), rng.randint(0, len(rows) // 3)):
                if rng.random() < 0.3:
                    del rows[rel]
                else:
                    rows[rel] = (*rows[rel][:3], f"sha-{seed}", rows[rel][4])
            for i in range(rng.randint(0, 5)):
                rows[f"added/{seed}-{i}"] = (i, i, i, "s", "")
            blocks = {k: v for k, v in table.blocks.items() if all(r in rows for r in v)}
            if rng.random() < 0.5:
                blocks[f"b-{seed}"] = tuple(sorted(rows)[:2])
            table = FileTable(rows, blocks)
            _record(cache_dir, out, f"k{n}", table)
            read = _read(cache_dir, out)
            assert read is not None and read.key == f"k{n}"
            assert read.files == table and read.files.blocks == table.blocks


def test_a_record_in_one_piece_is_still_read(tmp_path: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    table = _table(10)
    store = Cache(tmp_path / ".cache", secret=SECRET)
    old = incremental.BuildRecord("k", b"{}", table)
    where = incremental._record_key(out)
    store.put(BUILD_STAGE, where, incremental.fingerprint(), old.encode(), authenticated=True)
    read = _read(tmp_path / ".cache", out)
    assert read is not None and read.files == table and read.base is None
    _record(tmp_path / ".cache", out, "k2", table)  # then a base and a head
    read = _read(tmp_path / ".cache", out)
    assert read is not None and read.key == "k2" and read.base is not None


def test_a_base_stores_each_path_once() -> None:
    """A block's paths equal to the table's but other strings (as a head's are once applied)
    are stored as the table's own: the pickle holds each path once."""
    table = _table(300)
    rows = dict(table.rows)
    copies = {k: tuple("".join(list(rel)) for rel in v) for k, v in table.blocks.items()}
    assert all(
        a is not b for k, v in copies.items() for a, b in zip(v, table.blocks[k], strict=True)
    )
    alone = incremental.StoredBase("t", rows, {}).encode()
    base = incremental.StoredBase("t", rows, copies)
    decoded = incremental.StoredBase.decode(base.encode())
    assert decoded is not None and decoded.blocks == table.blocks and decoded.rows == rows
    own = {id(rel) for rel in decoded.rows}
    assert all(id(rel) in own for v in decoded.blocks.values() for rel in v)
    paths = sum(len(v) for v in copies.values())
    assert len(base.encode()) - len(alone) < paths * 8  # a reference each, not the path again
