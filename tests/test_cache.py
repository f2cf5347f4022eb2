"""The content-addressed cache: hits, misses, corrupted and foreign entries, --no-cache, HMAC."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generator.cache import MAGIC, Cache, digest, fingerprint, machine_key, tree_digest

FP = "fp-1"


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    return Cache(tmp_path / ".cache", secret=b"k" * 32)


def test_round_trip_and_stats(cache: Cache) -> None:
    key = cache.key("render", FP, "sha256:abc", "helm")
    assert cache.get("render", key, FP) is None
    cache.put("render", key, FP, b"archive bytes")
    assert cache.get("render", key, FP) == b"archive bytes"
    assert cache.stats.hits == {"render": 1}
    assert cache.stats.misses == {"render": 1}
    assert cache.path("render", key).read_bytes().startswith(MAGIC)


def test_keys_depend_on_every_input_and_the_fingerprint(cache: Cache) -> None:
    keys = {
        cache.key("render", FP, "a", "b"),
        cache.key("render", FP, "ab"),
        cache.key("render", FP, "a", "c"),
        cache.key("render", "fp-2", "a", "b"),
        cache.key("verify", FP, "a", "b"),
    }
    assert len(keys) == 5
    assert digest("a", "bc") != digest("ab", "c")


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[:-3],  # truncated payload
        lambda raw: raw[:-1] + bytes([raw[-1] ^ 1]),  # one bit flipped in the payload
        lambda raw: b"garbage",  # not an entry at all
        lambda raw: raw.replace(MAGIC, b"AICR-CACHE 9\n"),  # another format
        lambda raw: raw[: len(MAGIC)] + b"{not json\n" + b"payload",
    ],
)
def test_corrupted_entry_is_detected_deleted_and_recomputed(cache: Cache, damage) -> None:
    key = cache.key("render", FP, "x")
    cache.put("render", key, FP, b"payload" * 10)
    path = cache.path("render", key)
    path.write_bytes(damage(path.read_bytes()))
    assert cache.get("render", key, FP) is None
    assert cache.stats.rejected == {"render": 1}
    assert not path.exists()


def test_foreign_entry_under_another_name_is_rejected(cache: Cache) -> None:
    a, b = cache.key("render", FP, "a"), cache.key("render", FP, "b")
    cache.put("render", a, FP, b"content of a")
    target = cache.path("render", b)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(cache.path("render", a).read_bytes())  # a copied where b belongs
    assert cache.get("render", b, FP) is None
    assert cache.stats.rejected == {"render": 1}


def test_entry_of_another_generator_is_rejected(cache: Cache) -> None:
    key = cache.key("render", FP, "a")
    cache.put("render", key, "old-generator", b"old bytes")
    assert cache.get("render", key, FP) is None
    assert cache.stats.rejected == {"render": 1}


def test_disabled_cache_reads_and_writes_nothing(tmp_path: Path) -> None:
    on = Cache(tmp_path / "c", secret=b"k" * 32)
    key = on.key("render", FP, "a")
    on.put("render", key, FP, b"x")
    off = Cache(tmp_path / "c", enabled=False)
    assert off.get("render", key, FP) is None
    off.put("render", on.key("render", FP, "b"), FP, b"y")
    assert not on.path("render", on.key("render", FP, "b")).exists()
    assert off.stats.hits == {} and off.stats.misses == {}


def test_authenticated_objects_need_this_machines_key(tmp_path: Path) -> None:
    ours = Cache(tmp_path / "c", secret=b"a" * 32)
    key = ours.key("verify", FP, "bundle-sha")
    ours.put_object("verify", key, FP, {"verified": True, "path": "evidence/x"})
    assert ours.get_object("verify", key, FP) == {"verified": True, "path": "evidence/x"}
    # the same directory read with another key (a cache restored from elsewhere): foreign
    theirs = Cache(tmp_path / "c", secret=b"b" * 32)
    assert theirs.get_object("verify", key, FP) is None
    assert theirs.stats.rejected == {"verify": 1}


def test_forged_entry_without_mac_is_never_unpickled(tmp_path: Path) -> None:
    c = Cache(tmp_path / "c", secret=b"a" * 32)
    key = c.key("verify", FP, "x")
    # a well-formed, checksummed entry written without the HMAC (as anyone could write it)
    c.put("verify", key, FP, b"cos\nsystem\n(S'false'\ntR.")
    assert c.get_object("verify", key, FP) is None


def test_machine_key_is_created_private_and_stable(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "cache.key"
    first = machine_key(path)
    assert len(first) == 32
    assert machine_key(path) == first
    assert (os.stat(path).st_mode & 0o777) == 0o600


def test_tree_digest_sees_content_and_names(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.yaml").write_text("1")
    before = tree_digest(tmp_path)
    (tmp_path / "a" / "x.yaml").write_text("2")
    changed = tree_digest(tmp_path)
    (tmp_path / "a" / "x.yaml").rename(tmp_path / "a" / "y.yaml")
    renamed = tree_digest(tmp_path)
    assert len({before, changed, renamed}) == 3
    assert tree_digest(tmp_path / "absent") == ""


def test_fingerprint_covers_the_named_sources() -> None:
    assert fingerprint("evidence") != fingerprint("render")
    assert fingerprint("evidence") == fingerprint("evidence")
