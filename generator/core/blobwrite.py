"""`insert_parts`: one row stored with a large BLOB made of parts, never joined in memory.

Reference: `insert_parts_reference`, the plain `INSERT OR REPLACE` binding the parts joined
(`b"".join(parts)`). Binding a BLOB of N bytes costs far more than N: the joined bytes, then
SQLite's own copy of the bound value and the record it builds from it (measured: +87 MB of
high-water RSS to insert 45 MB). Here the row is inserted with `zeroblob(N)` (SQLite writes it
without a buffer of N bytes) and the parts are written into it through the incremental BLOB
interface, page by page; the stored row is the same. Call it inside a transaction of the
caller's.

Measured: the cache entry of the engine's output (45 MB at 1,000 recipes x 20,000 runs,
written by `Cache.get_or_make_many`) raised the process's high-water mark by 174 MB through the
reference path (its pickle, the entry joined from header and pickle, SQLite's two copies);
by 45 MB here (the pickle alone). Its time, 45 MB into a store in WAL mode, three pairs: 0.12-0.15
CPU-s here against 0.15-0.17 (0.20-0.23 s wall against 0.16-0.17: the zeros are written
first). tests/test_blobwrite.py holds the stored bytes equal to the reference's and counts
the largest value bound as a parameter.

It is the build cache's SQLite writer (`core/cache.py` its one caller), so it sits in `core/`
beside the cache: the two import `sqlite3`, no module outside `core/` does (it was
`generator/fast/blobwrite.py` until December 2026).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence

_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def _names(table: str, columns: Sequence[str]) -> None:
    for name in (table, *columns):
        if not _NAME.fullmatch(name):  # code's constants, never data: refused all the same
            raise ValueError(f"not a plain SQL name: {name!r}")


def insert_parts(
    db: sqlite3.Connection,
    table: str,
    values: Mapping[str, str | int],
    column: str,
    parts: Sequence[bytes],
) -> None:
    """`INSERT OR REPLACE` into `table` one row: `values` by column, and in `column` the
    bytes of `parts` one after the other (as `insert_parts_reference`, without joining them)."""
    names = [*values, column]
    _names(table, names)
    marks = ", ".join(["?"] * len(values) + ["zeroblob(?)"])
    size = sum(len(p) for p in parts)
    cursor = db.execute(
        f"INSERT OR REPLACE INTO {table} ({', '.join(names)}) VALUES ({marks})",
        (*values.values(), size),
    )
    row = cursor.lastrowid
    if row is None:  # pragma: no cover - an INSERT always names its row
        raise sqlite3.DatabaseError(f"{table}: the row inserted has no rowid")
    if size:
        with db.blobopen(table, column, row) as blob:
            for part in parts:
                blob.write(part)


def insert_parts_reference(
    db: sqlite3.Connection,
    table: str,
    values: Mapping[str, str | int],
    column: str,
    parts: Sequence[bytes],
) -> None:
    """The plain statement: the parts joined and bound as one value."""
    names = [*values, column]
    _names(table, names)
    marks = ", ".join(["?"] * len(names))
    db.execute(
        f"INSERT OR REPLACE INTO {table} ({', '.join(names)}) VALUES ({marks})",
        (*values.values(), b"".join(parts)),
    )
