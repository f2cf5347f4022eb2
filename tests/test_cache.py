"""The content-addressed cache: hits, misses, corrupted and foreign entries, --no-cache, HMAC."""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core import cache as cache_module
from generator.core.cache import (
    MAGIC,
    PAGE_SIZE,
    STORE,
    Cache,
    digest,
    fingerprint,
    machine_key,
    tree_digest,
)

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
    stored = cache.raw("render", key)
    assert stored is not None and stored.startswith(MAGIC)
    assert [p.name for p in cache.root.iterdir() if not p.name.startswith(STORE)] == []


def test_entries_live_in_one_store_and_a_batch_is_one_transaction(cache: Cache) -> None:
    keys = [("a", str(i)) for i in range(1200)]  # more than one query's batch of keys
    made: list[int] = []

    def make(todo: list[int]) -> list[str]:
        made.extend(todo)
        return [f"value {i}" for i in todo]

    assert cache.get_or_make_many("pages", keys, make) == [f"value {i}" for i in range(1200)]
    again = Cache(cache.root, secret=b"k" * 32)
    assert again.get_or_make_many("pages", keys, make) == [f"value {i}" for i in range(1200)]
    assert len(made) == 1200 and again.stats.hits == {"pages": 1200}
    assert len(cache.keys("pages")) == 1200

    def fail(todo: list[int]) -> list[str]:
        raise RuntimeError("the stage failed")

    with pytest.raises(RuntimeError):
        cache.get_or_make_many("pages", [("b", str(i)) for i in range(3)], fail)
    assert len(cache.keys("pages")) == 1200  # nothing half-written


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
def test_corrupted_entry_is_detected_deleted_and_recomputed(
    cache: Cache, damage: Callable[[bytes], bytes]
) -> None:
    key = cache.key("render", FP, "x")
    cache.put("render", key, FP, b"payload" * 10)
    cache.write_raw("render", key, damage(cache.raw("render", key) or b""))
    assert cache.get("render", key, FP) is None
    assert cache.stats.rejected == {"render": 1}
    assert cache.raw("render", key) is None


def test_foreign_entry_under_another_name_is_rejected(cache: Cache) -> None:
    a, b = cache.key("render", FP, "a"), cache.key("render", FP, "b")
    cache.put("render", a, FP, b"content of a")
    cache.write_raw("render", b, cache.raw("render", a) or b"")  # a copied where b belongs
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
    assert on.raw("render", on.key("render", FP, "b")) is None
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


def test_the_mac_covers_the_payload_through_its_digest(tmp_path: Path) -> None:
    """The MAC is of the header, which names the payload's sha256: a payload swapped with its
    digest rewritten in the header is refused, and so is an entry of format 1 (whose MAC was of
    the header and the payload)."""
    c = Cache(tmp_path / "c", secret=b"a" * 32)
    key = c.key("verify", FP, "x")
    c.put_object("verify", key, FP, {"verified": True})
    raw = c.raw("verify", key)
    assert raw is not None
    end = raw.index(b"\n", len(MAGIC))
    payload = raw[end + 1 :]
    forged = pickle.dumps({"verified": False})
    header = raw[len(MAGIC) : end].replace(
        hashlib.sha256(payload).hexdigest().encode(), hashlib.sha256(forged).hexdigest().encode()
    )
    assert c._check(MAGIC + header + b"\n" + forged, "verify", key, FP, True) is None
    assert c._check(raw, "verify", key, FP, True) == payload
    bare = cache_module._header_bytes(key, "verify", FP, hashlib.sha256(payload).hexdigest())
    old_mac = hmac.new(b"a" * 32, bare + b"\0" + payload, hashlib.sha256).hexdigest()
    sha = hashlib.sha256(payload).hexdigest()
    old = b"AICR-CACHE 1\n" + cache_module._header_bytes(key, "verify", FP, sha, old_mac)
    assert c._check(old + b"\n" + payload, "verify", key, FP, True) is None


def test_get_or_make_makes_once_and_reuses(tmp_path: Path) -> None:
    made: list[str] = []

    def make(value: str) -> Callable[[], dict[str, str]]:
        return lambda: made.append(value) or {"v": value}  # type: ignore[func-returns-value]

    first = Cache(tmp_path / "c", secret=b"a" * 32)
    assert first.get_or_make("stage", (FP, "x"), make("x")) == {"v": "x"}
    again = Cache(tmp_path / "c", secret=b"a" * 32)
    assert again.get_or_make("stage", (FP, "x"), make("never")) == {"v": "x"}
    assert again.get_or_make("stage", (FP, "y"), make("y")) == {"v": "y"}
    assert made == ["x", "y"]
    assert again.stats.hits == {"stage": 1} and again.stats.misses == {"stage": 1}
    # another machine's key: the entry is foreign, made again (and never unpickled)
    theirs = Cache(tmp_path / "c", secret=b"b" * 32)
    assert theirs.get_or_make("stage", (FP, "x"), make("x2")) == {"v": "x2"}
    assert theirs.stats.rejected == {"stage": 1}
    # disabled: always made, nothing written
    off = Cache(tmp_path / "off", enabled=False)
    assert off.get_or_make("stage", (FP, "x"), make("x3")) == {"v": "x3"}
    assert not (tmp_path / "off").exists()


def test_get_or_make_many_makes_only_the_missing_in_one_call(tmp_path: Path) -> None:
    calls: list[list[int]] = []

    def make(todo: list[int]) -> list[int]:
        calls.append(todo)
        return [i * 10 for i in todo]

    cache = Cache(tmp_path / "c", secret=b"a" * 32)
    parts = [(FP, str(i)) for i in range(4)]
    assert cache.get_or_make_many("many", parts[:2], make) == [0, 10]
    assert cache.get_or_make_many("many", parts, make) == [0, 10, 20, 30]
    assert calls == [[0, 1], [2, 3]]


def test_stored_tells_what_the_store_holds_unread_and_keeps_it_through_a_sweep(
    tmp_path: Path,
) -> None:
    cache = Cache(tmp_path / "c", secret=b"a" * 32)
    parts = [(FP, str(i)) for i in range(3)]
    cache.get_or_make_many("pages", parts[:2], lambda todo: [str(i) for i in todo], sweep=True)
    cache.finish()
    later = Cache(tmp_path / "c", secret=b"a" * 32)
    held = later.stored("pages", parts, sweep=True)
    assert [there for _, there in held] == [True, True, False]
    assert {key for key, _ in held[:2]} == set(later.keys("pages"))
    assert held[2][0] == later.key("pages", "", *parts[2])
    assert later.stats.hits == {} and later.stats.misses == {}  # nothing was read
    later.finish()  # entries only asked about are served: the sweep keeps them
    assert len(later.keys("pages")) == 2
    assert later.get_or_make_many("pages", parts[1:2], lambda todo: ["x"]) == ["1"]


def test_finish_sweeps_only_stages_served_with_sweep(tmp_path: Path) -> None:
    first = Cache(tmp_path / "c", secret=b"a" * 32)
    for name in ("a", "b"):
        first.get_or_make("swept", (FP, name), lambda n=name: n, sweep=True)
        first.get_or_make("kept", (FP, name), lambda n=name: n)
    first.finish()
    later = Cache(tmp_path / "c", secret=b"a" * 32)
    later.get_or_make("swept", (FP, "b"), lambda: "b", sweep=True)
    later.get_or_make("kept", (FP, "b"), lambda: "b")
    later.finish()
    assert len(later.keys("swept")) == 1 and len(later.keys("kept")) == 2
    assert later.stats.hits == {"swept": 1, "kept": 1}


def test_a_new_store_has_large_pages_and_a_batch_goes_in_in_key_order(cache: Cache) -> None:
    """Entries are tens of KB: a new store takes SQLite's largest page (one page, not a chain
    of 4 KiB overflow pages, per entry), and a batch is inserted in the table's order, so
    SQLite fills pages one after the other instead of rewriting pages all over the table."""
    cache.get_or_make_many("warm", [(FP, "0")], lambda t: [0] * len(t))  # opens the store
    db = cache._store_db()
    assert db.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE == 65536
    batches: list[list[str]] = []

    class Recording:  # the connection, recording each batch's keys in the order inserted
        def execute(self, *args: Any) -> Any:
            return db.execute(*args)

        def executemany(self, sql: str, rows: Any) -> Any:
            rows = list(rows)
            batches.append([key for _, key, _ in rows])
            return db.executemany(sql, rows)

    cache._db = Recording()  # type: ignore[assignment]
    values = cache.get_or_make_many("s", [(FP, str(i)) for i in range(50)], lambda t: list(t))
    assert values == list(range(50))
    assert len(batches) == 1 and len(batches[0]) == 50 and batches[0] == sorted(batches[0])
    assert batches[0] != [cache.key("s", "", FP, str(i)) for i in range(50)]  # not as given


def test_a_large_batch_is_written_as_it_is_made_not_held_whole(
    cache: Cache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch's stored bytes are written about every `WRITE_BYTES` (the pages of a cold build
    are hundreds of MB: held whole beside the pages, they made the build's peak); every value
    is stored all the same."""
    monkeypatch.setattr(cache_module, "WRITE_BYTES", 10_000)
    cache.get_or_make_many("warm", [(FP, "0")], lambda t: [0] * len(t))  # opens the store
    db = cache._store_db()
    batches: list[int] = []

    class Recording:  # the connection, recording the bytes of each batch written
        def execute(self, *args: Any) -> Any:
            return db.execute(*args)

        def executemany(self, sql: str, rows: Any) -> Any:
            rows = list(rows)
            batches.append(sum(len(data) for _, _, data in rows))
            return db.executemany(sql, rows)

    cache._db = Recording()  # type: ignore[assignment]
    parts = [(FP, str(i)) for i in range(20)]
    values = cache.get_or_make_many("s", parts, lambda t: [bytes([i]) * 3000 for i in t])
    assert len(batches) >= 5 and all(n < 10_000 + 4_000 for n in batches)
    cache._db = db
    again = cache.get_or_make_many("s", parts, lambda t: pytest.fail("made again"))
    assert again == values == [bytes([i]) * 3000 for i in range(20)]


def _bytes_read() -> int:
    """Bytes this process has read through system calls (Linux), SQLite's included."""
    with open("/proc/self/io", encoding="ascii") as f:
        fields = dict(line.split(": ") for line in f.read().splitlines())
    return int(fields["rchar"])


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="counts reads through /proc")
def test_finding_entries_reads_no_other_entry(tmp_path: Path) -> None:
    """Looking keys up reads the index, not the blobs of the entries on the way: in the layout
    before (a WITHOUT ROWID table keyed by stage and key) every lookup read whole entries,
    which cost a cold build gigabytes of reads once a store held a few large entries."""
    blob = os.urandom(300_000)
    first = Cache(tmp_path / "c", secret=b"a" * 32)
    parts = [(FP, str(i)) for i in range(60)]
    first.get_or_make_many("big", parts, lambda t: [blob] * len(t))
    first.close()
    later = Cache(tmp_path / "c", secret=b"a" * 32)  # a new connection: nothing in memory
    later._store_db()
    before = _bytes_read()
    assert all(there for _, there in later.stored("big", parts))
    assert later.keys("big") == sorted(later.key("big", "", *p) for p in parts)
    later.get_or_make_many("big", [(FP, "new")], lambda t: [b"x"] * len(t))
    assert _bytes_read() - before < 2_000_000  # 18 MB of entries, none of them read


def test_a_store_in_the_layout_before_is_made_again(tmp_path: Path) -> None:
    """A store whose table is the WITHOUT ROWID layout is emptied and made in the new one (its
    entries are made again), then works as any store."""
    import sqlite3

    (tmp_path / "c").mkdir()
    old = sqlite3.connect(tmp_path / "c" / STORE)
    old.execute(
        "CREATE TABLE entries (stage TEXT NOT NULL, key TEXT NOT NULL, data BLOB NOT NULL, "
        "PRIMARY KEY (stage, key)) WITHOUT ROWID"
    )
    old.execute("INSERT INTO entries VALUES ('s', 'k', x'00')")
    old.commit()
    old.close()
    c = Cache(tmp_path / "c", secret=b"a" * 32)
    assert c.keys("s") == []
    sql = c._store_db().execute("SELECT sql FROM sqlite_master WHERE name = 'entries'")
    assert "WITHOUT ROWID" not in sql.fetchone()[0].upper()
    assert c.get_or_make("s", (FP, "1"), lambda: 7) == 7
    assert Cache(tmp_path / "c", secret=b"a" * 32).get_or_make("s", (FP, "1"), lambda: 8) == 7


def test_a_store_mostly_free_after_a_sweep_is_rewritten_and_keeps_its_entries(
    tmp_path: Path,
) -> None:
    """A build that replaced most entries leaves most of the store's pages free; `finish`
    rewrites it (VACUUM), so later entries are not scattered over freed pages. A build that
    replaced a few entries does not."""
    blob = os.urandom(40_000)  # 10 pages each: 300 entries fill 12 MB

    def build(names: range) -> Cache:
        c = Cache(tmp_path / "c", secret=b"a" * 32)
        c.get_or_make_many(
            "big", [(FP, str(i)) for i in names], lambda t: [blob] * len(t), sweep=True
        )
        return c

    def pages(c: Cache) -> int:
        return int(c._store_db().execute("PRAGMA page_count").fetchone()[0])

    first = build(range(300))
    first.finish()
    size = pages(first)
    few = build(range(10, 310))  # 10 entries replaced: a few free pages, no rewrite
    few.finish()
    assert few.stats.misses == {"big": 10} and pages(few) >= size
    many = build(range(1000, 1060))  # every entry replaced, most of the store now free
    many.finish()
    assert pages(many) < size / 3
    assert os.path.getsize(tmp_path / "c" / STORE) < size * PAGE_SIZE / 3
    again = build(range(1000, 1060))
    assert again.stats.hits == {"big": 60} and not again.compact()


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


# --- the stage hooks: verification and whole builds ------------------------------------------------

from generator.bench.synth import SynthOptions, synthesize  # noqa: E402
from generator.evidence.model import SignerPolicy, TrustRoot  # noqa: E402
from generator.evidence.policy import read_policy  # noqa: E402
from generator.evidence.store import find_files, load  # noqa: E402
from generator.evidence.trustroot import load_trust_root  # noqa: E402
from generator.evidence.verify import verify_evidence  # noqa: E402


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(4, 12, seed=5, jobs=1), out)
    return out


def _inputs(synth: Path) -> tuple[TrustRoot, SignerPolicy]:
    root = load_trust_root(str(synth / "trust" / "synth-root.json"))
    policy = read_policy(synth / "catalog" / "signers.yaml", "signers.yaml")
    return root, policy


def test_verify_cached_verifies_only_what_it_has_not_seen(synth: Path, tmp_path: Path) -> None:
    from generator.evidence.verify_cache import verify_cached

    root, policy = _inputs(synth)
    files = find_files([synth / "evidence"], base=synth)
    current = {"nothing@standard": "sha256:0"}
    expected = verify_evidence(
        [load(f) for f in files], trust_roots=root, policy=policy, current_digests=current, jobs=1
    )

    first = Cache(tmp_path / "c", secret=b"s" * 32)
    got, keys = verify_cached(
        files, trust_root=root, policy=policy, current_digests=current, cache=first, jobs=1
    )
    assert got == expected and len(set(keys)) == len(files)
    dirs = len({f.location.split("/")[1] for f in files if f.location})
    assert first.stats.misses == {
        "verify": len(files),
        "verify-dirs": dirs,
        "verify-heads": dirs,
        "verify-last": dirs,
    }
    assert first.stats.hits == {}

    again = Cache(tmp_path / "c", secret=b"s" * 32)
    assert verify_cached(
        files, trust_root=root, policy=policy, current_digests=current, cache=again, jobs=1
    ) == (expected, keys)
    # the heads every call, the records once used (compared here)
    assert again.stats.hits == {"verify-dirs": dirs, "verify-heads": dirs}
    assert again.stats.misses == {}

    # no entry per file; one directory's entry corrupted: detected, that directory's files
    # verified again (its records are in no other entry), same records
    assert again.keys("verify") == []
    entries = again.keys("verify-dirs")
    raw = again.raw("verify-dirs", entries[0]) or b""
    again.write_raw("verify-dirs", entries[0], raw[:-1] + bytes([raw[-1] ^ 0xFF]))
    third = Cache(tmp_path / "c", secret=b"s" * 32)
    assert (
        verify_cached(
            files, trust_root=root, policy=policy, current_digests=current, cache=third, jobs=1
        )[0]
        == expected
    )
    sizes = Counter(f.location.split("/")[1] for f in files if f.location)
    assert third.stats.rejected == {"verify-dirs": 1}
    assert third.stats.misses["verify-dirs"] == 1
    assert third.stats.misses["verify"] in set(sizes.values())


def test_verify_cached_judges_staleness_against_this_builds_recipes(
    synth: Path, tmp_path: Path
) -> None:
    from generator.evidence.model import VerifiedEvidence
    from generator.evidence.verify_cache import verify_cached

    root, policy = _inputs(synth)
    files = find_files([synth / "evidence"], base=synth)
    cache = Cache(tmp_path / "c", secret=b"s" * 32)
    stale_all, _ = verify_cached(
        files, trust_root=root, policy=policy, current_digests={}, cache=cache, jobs=1
    )
    verified = [r for r in stale_all if isinstance(r, VerifiedEvidence)]
    assert verified and all(r.stale for r in verified)
    current = {
        f"{r.statement.recipe}@{r.statement.scale_profile or 'standard'}": r.statement.recipe_digest
        for r in verified
    }
    fresh, _ = verify_cached(
        files, trust_root=root, policy=policy, current_digests=current, cache=cache, jobs=1
    )
    assert not any(r.stale for r in fresh if isinstance(r, VerifiedEvidence))
    assert cache.stats.misses["verify"] == len(files)  # the second call verified nothing


def test_a_new_evidence_file_is_the_only_one_verified(synth: Path, tmp_path: Path) -> None:
    from generator.evidence.verify_cache import verify_cached

    root, policy = _inputs(synth)
    files = find_files([synth / "evidence"], base=synth)
    cache = Cache(tmp_path / "c", secret=b"s" * 32)
    verify_cached(files[:-1], trust_root=root, policy=policy, current_digests={}, cache=cache)
    later = Cache(tmp_path / "c", secret=b"s" * 32)
    records, _ = verify_cached(
        files, trust_root=root, policy=policy, current_digests={}, cache=later
    )
    # its directory's entry is made again from the entry it had last (named, then read); the
    # others are read when their records are used
    last = [f for f in files if f.location.split("/")[1] == files[-1].location.split("/")[1]]
    dirs = len({f.location.split("/")[1] for f in files})
    assert later.stats.misses == {"verify": 1, "verify-dirs": 1, "verify-heads": 1}
    named = {"verify-last": 1, "verify-dirs": 1}
    assert later.stats.hits == {"verify": len(last) - 1, "verify-heads": dirs - 1, **named}
    assert len(tuple(records)) == len(files)
    assert later.stats.hits == {
        "verify": len(last) - 1,
        "verify-dirs": dirs,
        "verify-heads": dirs - 1,
        "verify-last": 1,
    }


def test_build_skip_needs_the_same_key_and_an_untouched_output(tmp_path: Path) -> None:
    from generator.site.incremental import record_build, unchanged_build

    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("built")
    cache = Cache(tmp_path / ".cache", secret=b"s" * 32)
    report = {"out": "site", "pages": 3, "notes": []}
    record_build(cache, out, "key-1", report)
    assert unchanged_build(cache, out, "key-1") == report
    assert unchanged_build(cache, out, "key-2") is None  # inputs changed
    (out / "index.html").write_text("edited by hand")
    assert unchanged_build(cache, out, "key-1") is None  # output changed
    assert unchanged_build(Cache(tmp_path / ".cache", enabled=False), out, "key-1") is None
    (out / "index.html").write_text("built")
    record_build(cache, out, "key-1", report)
    os.utime(out / "index.html", ns=(1, 1))
    record_build(cache, out, "key-1", report)
    assert unchanged_build(cache, out, "key-1") == report
    # the same entry read with another machine's key (planted or restored): not trusted
    assert unchanged_build(Cache(tmp_path / ".cache", secret=b"x" * 32), out, "key-1") is None


def test_build_key_sees_catalog_evidence_and_options(synth: Path, tmp_path: Path) -> None:

    from generator.core.memo import Memo
    from generator.site.build import TEMPLATES, BuildOptions, static_docs
    from generator.site.incremental import build_key as whole_key
    from generator.site.incremental import inputs_key

    def build_key(options: BuildOptions, epoch: int, templates: Path) -> str:
        memo = Memo()  # no cache: every file read afresh
        base = inputs_key(options, epoch, templates, memo, static_docs(options))
        return whole_key(options, memo, base)

    options = BuildOptions(
        catalog=synth / "catalog",
        evidence=synth / "evidence",
        out=tmp_path / "site",
        trust_root=str(synth / "trust" / "synth-root.json"),
    )
    key = build_key(options, 0, TEMPLATES)
    assert build_key(options, 0, TEMPLATES) == key
    assert build_key(options, 1, TEMPLATES) != key
    assert build_key(replace(options, strict=True), 0, TEMPLATES) != key
    assert build_key(replace(options, bundles=False), 0, TEMPLATES) != key
    assert build_key(replace(options, repo_url="https://example.org/b"), 0, TEMPLATES) != key
    assert build_key(replace(options, jobs=3), 0, TEMPLATES) == key  # how, not what
    extra = synth / "evidence" / "x" / "y" / "z.sigstore.json"
    extra.parent.mkdir(parents=True)
    extra.write_bytes(b"{}")
    try:
        assert build_key(options, 0, TEMPLATES) != key
    finally:
        extra.unlink()
    assert build_key(options, 0, TEMPLATES) == key


def test_no_change_rebuild_is_skipped_and_no_cache_builds_again(
    synth: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from generator.site.build import BuildOptions, build_site

    monkeypatch.setenv("AICR_CATALOG_CACHE_KEY", str(tmp_path / "key"))
    out = tmp_path / "site"
    options = BuildOptions(
        catalog=synth / "catalog",
        evidence=synth / "evidence",
        out=out,
        trust_root=str(synth / "trust" / "synth-root.json"),
        source_date_epoch=0,
        bundles=False,
        cache_dir=tmp_path / ".cache" / "bundles",
        jobs=1,
    )
    first = build_site(options)
    stamp = (out / "index.html").stat().st_mtime_ns
    second = build_site(options)
    assert second == first
    assert (out / "index.html").stat().st_mtime_ns == stamp  # nothing was rewritten
    third = build_site(replace(options, cache_dir=None))
    assert third == first
    assert (out / "index.html").stat().st_mtime_ns != stamp  # built from scratch


def test_tree_digest_memo_skips_unchanged_files_and_sees_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    root.mkdir()
    for i in range(3):
        (root / f"f{i}").write_text(str(i))
    old = time.time() - 60
    for p in root.iterdir():
        os.utime(p, (old, old))
    memo: dict[str, list[object]] = {}
    plain = tree_digest(root)
    # written just now (their ctime): recorded without a digest, so read again next time
    assert tree_digest(root, (), memo) == plain and set(memo) == {"f0", "f1", "f2"}
    assert all(entry[4] == "" for entry in memo.values())
    monkeypatch.setattr(cache_module, "SETTLED_NS", 0)  # the test cannot wait two seconds
    assert tree_digest(root, (), memo) == plain and all(entry[4] for entry in memo.values())
    # a memo that lies about a file whose stat is unchanged is believed (that is the point) ...
    memo["f0"][4] = "0" * 64
    assert tree_digest(root, (), memo) != plain
    # ... but any change of size, mtime, inode or ctime makes it read the file again: here
    # the same size and the mtime put back (`touch -r`), which only the ctime tells
    stat = (root / "f0").stat()
    with (root / "f0").open("r+") as fh:
        fh.write("0")
    os.utime(root / "f0", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (root / "f0").stat().st_ino == stat.st_ino
    assert tree_digest(root, (), memo) == plain
    (root / "f1").write_text("changed")
    assert tree_digest(root, (), memo) == tree_digest(root) != plain


def test_a_sweep_keeps_what_other_scopes_last_used_while_their_output_exists(
    tmp_path: Path,
) -> None:
    """Two outputs share one cache: each build's sweep keeps the other's last build's entries,
    and drops them once that output is gone."""
    out_a, out_b = tmp_path / "a", tmp_path / "b"
    out_a.mkdir()
    out_b.mkdir()
    a = Cache(tmp_path / "c", secret=b"a" * 32, scope=str(out_a))
    a.get_or_make_many("pages", [(FP, "1"), (FP, "2")], lambda t: [str(i) for i in t], sweep=True)
    a.finish()
    b = Cache(tmp_path / "c", secret=b"a" * 32, scope=str(out_b))
    b.get_or_make_many("pages", [(FP, "2"), (FP, "3")], lambda t: [str(i) for i in t], sweep=True)
    b.finish()
    assert len(b.keys("pages")) == 3  # a's "1" kept for a's next build
    again = Cache(tmp_path / "c", secret=b"a" * 32, scope=str(out_a))
    assert again.get_or_make_many("pages", [(FP, "1")], lambda t: ["made"]) == ["0"]  # a hit
    # a scope's own entries it no longer uses go; another scope's stay
    again.get_or_make_many("pages", [(FP, "4")], lambda t: ["4"], sweep=True)
    again.finish()
    assert {again.key("pages", "", FP, n) for n in "234"} == set(again.keys("pages"))
    out_b.rmdir()  # b's output is gone: a's next sweep forgets what b used
    last = Cache(tmp_path / "c", secret=b"a" * 32, scope=str(out_a))
    last.get_or_make_many("pages", [(FP, "4")], lambda t: ["4"], sweep=True)
    last.finish()
    assert last.keys("pages") == [last.key("pages", "", FP, "4")]


def test_one_scope_sweeps_as_before(tmp_path: Path) -> None:
    """Without another scope, a sweep keeps exactly what the build used."""
    c = Cache(tmp_path / "c", secret=b"a" * 32)
    assert c.kept("pages", ["x", "y"]) == {"x", "y"}
    assert Cache(tmp_path / "c", secret=b"a" * 32).kept("pages", ["y"]) == {"y"}
    off = Cache(tmp_path / "off", enabled=False)
    assert off.kept("pages", ["z"]) == {"z"} and not (tmp_path / "off").exists()


# --- the fast paths beside their references ------------------------------------------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)  # quotes, NUL, é


@given(_TEXT, _TEXT, _TEXT, st.binary(max_size=64), st.one_of(st.none(), _TEXT))
def test_header_bytes_are_json_dumps(
    key: str, stage: str, fp: str, payload: bytes, mac: str | None
) -> None:
    sha = hashlib.sha256(payload).hexdigest()
    assert cache_module._header_bytes(key, stage, fp, sha, mac) == (
        cache_module._header_reference(key, stage, fp, payload, mac)
    )


@settings(max_examples=40)
@given(_TEXT, _TEXT, _TEXT, st.binary(max_size=64), st.booleans())
def test_entries_and_their_check_are_the_references(
    key: str, stage: str, fp: str, payload: bytes, auth: bool
) -> None:
    """`_entry` writes the reference's bytes, and `_check` accepts and refuses what the
    reference does: the entry itself, and each damage of it (another key, stage,
    fingerprint, machine key, a flipped byte anywhere, a truncation)."""
    c = Cache(Path("unused"), secret=b"k" * 32)
    other = Cache(Path("unused"), secret=b"o" * 32)
    entry = c._entry(stage, key, fp, payload, auth)
    assert entry == c._entry_reference(stage, key, fp, payload, auth)
    step = max(1, len(entry) // 48)  # a byte in each stretch of the header and the payload
    damaged = [
        entry[:i] + bytes([entry[i] ^ 1]) + entry[i + 1 :] for i in range(0, len(entry), step)
    ]
    for raw in [entry, entry[:-1], *damaged]:
        for cache_, k, s, f, a in [
            (c, key, stage, fp, auth),
            (c, key + "x", stage, fp, auth),
            (c, key, stage + "x", fp, auth),
            (c, key, stage, fp + "x", auth),
            (other, key, stage, fp, auth),
        ]:
            assert cache_._check(raw, s, k, f, a) == cache_._check_reference(raw, s, k, f, a)
        # read the other way than written: refused (the reference took an authenticated
        # entry read without authentication; no stage reads its entries both ways)
        assert c._check(raw, stage, key, fp, not auth) is None
    assert c._check(entry, stage, key, fp, auth) == payload


@pytest.mark.parametrize("name", [STORE, f"{STORE}-journal", f"{STORE}-wal", f"{STORE}-shm"])
def test_a_link_planted_at_the_store_is_refused_and_its_target_left_alone(
    tmp_path: Path, name: str
) -> None:
    """SQLite follows a link at the store's name (or its -journal, -wal or -shm file) by
    itself: the cache refuses it, naming the file, before SQLite opens anything."""
    from generator.core.safeio import Refusal

    root = tmp_path / ".cache"
    root.mkdir()
    target = tmp_path / "elsewhere.db"
    target.write_bytes(b"not the cache's")
    (root / name).symlink_to(target)
    planted = Cache(root, secret=b"k" * 32)
    with pytest.raises(Refusal) as err:
        planted.put("render", planted.key("render", FP, "x"), FP, b"payload")
    assert err.value.rule == cache_module.STORE_RULE and name in str(err.value)
    assert target.read_bytes() == b"not the cache's"
    assert sorted(p.name for p in root.iterdir()) == [name]


def test_the_store_writes_an_entry_once_through_its_rollback_journal(tmp_path: Path) -> None:
    """The store keeps SQLite's rollback journal (`cache.JOURNAL`): a new entry is written
    into the store alone, no WAL beside it; a store left in WAL mode (made before) is switched
    on open, its entries kept."""
    import sqlite3

    root = tmp_path / ".cache"
    root.mkdir()
    with sqlite3.connect(root / STORE) as old:  # a store as issue 29's earlier rounds made it
        old.execute("PRAGMA journal_mode=WAL")
    c = Cache(root, secret=b"k" * 32)
    key = c.key("render", FP, "x")
    c.put("render", key, FP, b"payload")
    mode = c._store_db().execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == cache_module.JOURNAL.lower() == "delete"
    c.close()
    assert sorted(p.name for p in root.iterdir()) == [STORE]
    assert Cache(root, secret=b"k" * 32).get("render", key, FP) == b"payload"
