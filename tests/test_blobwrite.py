"""`blobwrite.insert_parts` against its reference (the parts joined and bound), and the
cache's large entries written through it: stored bytes equal, read back, and counted (the
largest value bound as a statement's parameter, the Python bytes allocated at once)."""

from __future__ import annotations

import sqlite3
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core import cache as cache_module
from generator.core.blobwrite import insert_parts, insert_parts_reference
from generator.core.cache import Cache

TABLE = "CREATE TABLE t (id INTEGER PRIMARY KEY, stage TEXT, key TEXT UNIQUE, data BLOB NOT NULL)"


def _db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.execute(TABLE)
    return db


def _rows(db: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return list(db.execute("SELECT id, stage, key, data FROM t ORDER BY id"))


@given(
    rows=st.lists(
        st.tuples(st.sampled_from("abc"), st.lists(st.binary(max_size=300), max_size=4)),
        max_size=6,
    )
)
@settings(max_examples=200, deadline=None)
def test_the_same_rows_as_the_reference(rows: list[tuple[str, list[bytes]]]) -> None:
    """Inserted and replaced (a key again), the tables hold the same rows."""
    fast, plain = _db(), _db()
    for key, parts in rows:
        insert_parts(fast, "t", {"stage": "s", "key": key}, "data", parts)
        insert_parts_reference(plain, "t", {"stage": "s", "key": key}, "data", parts)
    assert _rows(fast) == _rows(plain)


def test_a_name_that_is_not_plain_is_refused() -> None:
    for table, column in (("t; DROP TABLE t", "data"), ("t", "data)--")):
        with pytest.raises(ValueError, match="not a plain SQL name"):
            insert_parts(_db(), table, {"key": "k"}, column, [b"x"])


class _Counting(sqlite3.Connection):
    """A connection counting the largest bytes value bound to any statement."""

    largest = 0

    def _count(self, params: Any) -> None:
        for p in params:
            if isinstance(p, bytes | bytearray | memoryview):
                _Counting.largest = max(_Counting.largest, len(p))

    def execute(self, sql: str, params: Any = (), /) -> sqlite3.Cursor:
        self._count(params)
        return super().execute(sql, params)

    def executemany(self, sql: str, seq: Any, /) -> sqlite3.Cursor:
        rows = list(seq)
        for params in rows:
            self._count(params)
        return super().executemany(sql, rows)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Counting]]:
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real(*args, factory=_Counting, **kwargs)

    monkeypatch.setattr(cache_module.sqlite3, "connect", connect)
    _Counting.largest = 0
    yield _Counting


VALUE = {f"page-{i}.html": bytes([i % 251]) * 40_000 for i in range(100)}  # 4 MB of pages


def test_a_large_entry_is_never_bound_whole(
    tmp_path: Path, counting: type[_Counting], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cache_module.LARGE_BYTES <= 8 * 2**20
    monkeypatch.setattr(cache_module, "LARGE_BYTES", 2**20)  # this test's 4 MB is large
    cache = Cache(tmp_path / "c", secret=b"k" * 32)
    small = {"a": b"x" * 1000}
    cache.get_or_make_many("s", [["big"], ["small"]], lambda todo: [VALUE, small][: len(todo)])
    assert counting.largest < 4000  # the small entry, bound whole; the big one never
    cache.close()
    again = Cache(tmp_path / "c", secret=b"k" * 32)
    got = again.get_or_make_many("s", [["big"], ["small"]], lambda todo: pytest.fail("made"))
    assert got == [VALUE, small]
    again.close()


def test_the_reference_path_binds_it_whole(
    tmp_path: Path, counting: type[_Counting], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the count above would see without the large path: the whole entry bound."""
    monkeypatch.setattr(cache_module, "LARGE_BYTES", 2**62)
    cache = Cache(tmp_path / "c", secret=b"k" * 32)
    cache.get_or_make_many("s", [["big"]], lambda todo: [VALUE])
    assert counting.largest > 4_000_000
    cache.close()


@pytest.mark.parametrize("large", [True, False])
def test_storing_a_large_value_allocates_its_pickle_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    """Python's bytes allocated at once while a 4 MB value is stored: its pickle, and (the
    reference path) the entry joined from it and the MAC's input joined from it."""
    monkeypatch.setattr(cache_module, "LARGE_BYTES", 2**20 if large else 2**62)
    cache = Cache(tmp_path / "c", secret=b"k" * 32)
    cache.get_or_make_many("s", [["warm"]], lambda todo: [b""])  # the store opened
    tracemalloc.start()
    try:
        cache.get_or_make_many("s", [["big"]], lambda todo: [VALUE])
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    cache.close()
    # the pickle alone peaks at 1.4 times its size (its buffer grows as it is written)
    if large:
        assert peak < 1.5 * 4_000_000
    else:
        assert peak > 2 * 4_000_000
