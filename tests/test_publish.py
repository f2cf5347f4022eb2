"""The publisher writes only what changed: a file the previous build published with the same
bytes is linked; a derived file whose source is unchanged is linked without being made; the
previous tree is never modified; a file the engine wrote is replaced, not written through."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from generator.site.publish import Derived, Published, Publisher, derived_source


def _previous(
    tmp_path: Path, files: dict[str, bytes], sources: dict[str, str]
) -> dict[str, Published]:
    old = tmp_path / "old"
    table = {}
    for rel, data in files.items():
        path = old / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        st = os.lstat(path)
        sha = hashlib.sha256(data).hexdigest()
        table[rel] = Published(st.st_size, st.st_mtime_ns, st.st_ino, sha, sources.get(rel, ""))
    return table


def test_unchanged_sources_are_linked_without_being_made(tmp_path: Path) -> None:
    source = derived_source("statement", "code", "bundle-sha")
    known = _previous(
        tmp_path,
        {"a.json": b"same", "s/one.json": b"statement", "s/two.json": b"statement 2"},
        {"s/one.json": source, "s/two.json": source},
    )
    new = tmp_path / "new"
    made: list[str] = []

    def make(text: bytes) -> Derived:
        def run() -> bytes:
            made.append(text.decode())
            return text

        return Derived(source, run)

    (tmp_path / "old" / "s" / "two.json").write_bytes(b"edited in place")  # not as recorded
    publisher = Publisher(new, tmp_path / "old", known)
    publisher.put_all(
        [
            ("a.json", b"same"),  # same bytes: linked
            ("b.json", b"new file"),  # written
            ("s/one.json", make(b"statement")),  # same source, file as recorded: linked, not made
            ("s/two.json", make(b"statement 2")),  # same source, file edited: made again
            ("s/three.json", Derived(source, lambda: None)),  # made, gives no file
        ]
    )
    publisher.close()
    assert made == ["statement 2"]
    assert publisher.counts().written == 2 and publisher.linked == 2
    assert publisher.counts().derived_made == 2
    assert (new / "s" / "one.json").read_bytes() == b"statement"
    assert (new / "s" / "two.json").read_bytes() == b"statement 2"
    assert not (new / "s" / "three.json").exists()
    assert os.stat(new / "a.json").st_ino == os.stat(tmp_path / "old" / "a.json").st_ino
    assert (tmp_path / "old" / "s" / "two.json").read_bytes() == b"edited in place"  # untouched
    assert publisher.sources == {"s/one.json": source, "s/two.json": source}
    assert set(publisher.sums) == {"a.json", "b.json", "s/one.json", "s/two.json"}


def test_another_source_is_made_and_an_engine_file_is_replaced(tmp_path: Path) -> None:
    known = _previous(tmp_path, {"x.json": b"old"}, {"x.json": "source-1"})
    new = tmp_path / "new"
    new.mkdir()
    (new / "page.html").write_bytes(b"engine's page")  # written by the engine before
    publisher = Publisher(new, tmp_path / "old", known)
    publisher.put_derived("x.json", "source-2", lambda: b"new")
    publisher.put("page.html", b"page with its blocks")
    publisher.put("page.html", b"page, twice")  # the last bytes win
    publisher.close()
    assert (new / "x.json").read_bytes() == b"new"
    assert (new / "page.html").read_bytes() == b"page, twice"
    assert publisher.counts().derived_made == 1 and publisher.linked == 0


def test_an_empty_source_is_never_linked_by_source(tmp_path: Path) -> None:
    """A file published as given records the source ""; a derived file without a source (a
    build without a cache) is made, never taken for it."""
    known = _previous(tmp_path, {"x.json": b"as given"}, {})
    publisher = Publisher(tmp_path / "new", tmp_path / "old", known)
    publisher.put_derived("x.json", "", lambda: b"made")
    publisher.close()
    assert (tmp_path / "new" / "x.json").read_bytes() == b"made"
    assert publisher.counts().derived_made == 1 and publisher.linked == 0
