"""The cache's per-stage directories from before the SQLite store are removed, once, with a note.

Builds before `store.sqlite3` kept each entry as `.cache/<stage>/<2 hex>/<64 hex>` (pickles
under an `AICR-CACHE` header): tens of thousands of files nothing reads any more. The first
open of the store removes a directory in exactly that layout, never `bundles/` or `timeline/`
(in use) and never a directory holding anything else.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from generator.core.cache import MAGIC, Cache, remove_legacy_dirs

KEY = "00" + "c" * 62  # the first entry `_legacy` writes


def _legacy(root: Path, stage: str, n: int = 3) -> None:
    for i in range(n):
        key = f"{i:02x}" + "c" * 62
        path = root / stage / key[:2] / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(MAGIC + b'{"stage": "' + stage.encode() + b'"}\n' + b"pickle")


def test_old_stage_directories_go_and_the_rest_stays(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AICR_CATALOG_CACHE_KEY", str(tmp_path / "cache.key"))
    root = tmp_path / ".cache"
    for stage in ("verify", "pages", "mkdocs", "bundles", "timeline"):
        _legacy(root, stage)
    (root / "bundles" / "x-helm.tar.gz").write_bytes(b"archive")
    (root / "mine" / "ab").mkdir(parents=True)
    (root / "mine" / "ab" / "notes.txt").write_text("not an entry")  # not the old layout
    (root / "site.build.lock").write_bytes(b"")

    caplog.set_level(logging.INFO, logger="aicr_catalog.build")
    cache = Cache(root, secret=b"k" * 32)
    assert cache.get_or_make("pages", ("a",), lambda: 1) == 1  # opens the store
    cache.close()

    left = sorted(p.name for p in root.iterdir())
    assert "verify" not in left and "pages" not in left and "mkdocs" not in left
    assert {"bundles", "timeline", "mine", "site.build.lock", "store.sqlite3"} <= set(left)
    assert (root / "bundles" / "x-helm.tar.gz").read_bytes() == b"archive"
    assert len(list((root / "timeline").rglob("*"))) == 6  # three 2-hex directories, a file each
    notes = [r.getMessage() for r in caplog.records if "old per-stage" in r.getMessage()]
    assert notes == [
        "removed the cache's old per-stage directories (now in store.sqlite3): mkdocs, pages, "
        "verify"
    ]
    # no pickle of the old layout is left anywhere but in the kept directories
    assert not [p for p in root.rglob("*") if p.is_file() and len(p.name) == 64
                and p.parts[len(root.parts)] not in ("bundles", "timeline")]  # fmt: skip


def test_nothing_to_remove_says_nothing(tmp_path: Path) -> None:
    assert remove_legacy_dirs(tmp_path / "absent") == ()
    (tmp_path / "timeline").mkdir()
    (tmp_path / "verify" / "zz").mkdir(parents=True)  # "zz" is not hex: not the old layout
    assert remove_legacy_dirs(tmp_path) == ()
    assert (tmp_path / "verify" / "zz").is_dir()
    _legacy(tmp_path, "catalog")
    (tmp_path / "catalog" / KEY[:2] / "short").write_bytes(b"")  # a name not 64 hex
    assert remove_legacy_dirs(tmp_path) == ()
    (tmp_path / "catalog" / KEY[:2] / "short").unlink()
    assert remove_legacy_dirs(tmp_path) == ("catalog",)


def test_the_render_caches_old_directory_of_archives_goes(tmp_path: Path) -> None:
    """The archives now live in the store (`render.cache`): `bundles/` as the render cache
    left it (archives named by their render key, and their seals) is removed; a `bundles/`
    holding anything else is left alone."""
    archives = tmp_path / "bundles"
    archives.mkdir()
    for end in (".tar.gz", ".tar.gz.digest", ".tar.gz.hmac"):
        (archives / f"{KEY}-gb200-eks-ubuntu-training-helm{end}").write_bytes(b"x")
    (tmp_path / "timeline").mkdir()
    assert remove_legacy_dirs(tmp_path) == ("bundles",)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["timeline"]
    archives.mkdir()
    (archives / f"{KEY}-x-helm.tar.gz").write_bytes(b"x")
    (archives / "notes.txt").write_text("mine")
    assert remove_legacy_dirs(tmp_path) == ()
    assert (archives / "notes.txt").read_text() == "mine"
