"""mkdocs' input kept in memory (`site/build.py` `EngineInput`): its key is the digest of the
docs tree it would write (the same as `tree_digest` of that tree once written), and the tree is
written only when mkdocs must run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generator.core.cache import tree_digest
from generator.site import build as site_build
from generator.site.build import BuildOptions, EngineInput, _portable, build_site
from tests.conftest import CATALOG, REPO

EPOCH = 1767225600


def test_the_in_memory_digest_is_the_written_trees(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    static = {
        "index.md": b"# static\n",
        "assets/x.css": b"body{}",
        "caf\u00e9/n.md": "\u00e9t\u00e9\n".encode(),
        "same.md": b"static, replaced by the skeleton",
    }
    skeletons = {"same.md": "# skeleton \u2713\n", "recipes/a.md": "# a\n", "z.md": ""}
    config = f"docs_dir: {work / 'docs'}\nsite_dir: {work / 'site'}\n"
    engine = EngineInput(work, static, skeletons, config)
    digest, portable = engine.docs_digest(), engine.portable()
    assert not (work / "docs").exists()  # nothing written to be digested
    engine.write()
    # the reference: the tree written and walked, the configuration read back
    assert tree_digest(work / "docs") == digest
    assert _portable(engine.config_file, work) == portable and b"<work>/docs" in portable
    assert (work / "docs" / "same.md").read_text() == skeletons["same.md"]
    # every path and every byte is in the digest
    for changed in (
        EngineInput(work, {**static, "index.md": b"# static!\n"}, skeletons, config),
        EngineInput(work, static, {**skeletons, "z.md": " "}, config),
        EngineInput(work, static, {**skeletons, "y.md": ""}, config),
        EngineInput(work, {k: v for k, v in static.items() if k != "index.md"}, skeletons, config),
    ):
        assert changed.docs_digest() != digest


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[BuildOptions, Path]:
    """Options over copies of the catalog, the sample evidence (one file held back) and the
    docs; the docs trees written (`EngineInput.write`) are counted."""
    if not any((REPO / "evidence").rglob("*.sigstore.json")):
        pytest.skip("the repository has no sample evidence")
    shutil.copytree(CATALOG, tmp_path / "catalog")
    shutil.copytree(REPO / "evidence", tmp_path / "evidence")
    shutil.copytree(REPO / "docs", tmp_path / "repo" / "docs")
    for name in ("CONTRIBUTING.md", "SECURITY.md"):
        shutil.copy(REPO / name, tmp_path / "repo" / name)
    held = sorted((tmp_path / "evidence").rglob("*.sigstore.json"))[0]
    shutil.move(held, tmp_path / "held.sigstore.json")
    out = tmp_path / "b" / "site"
    options = BuildOptions(
        catalog=tmp_path / "catalog",
        evidence=tmp_path / "evidence",
        out=out,
        docs=tmp_path / "repo" / "docs",
        trust_root="demo",
        source_date_epoch=EPOCH,
        bundles=False,
        cache_dir=out.parent / ".cache" / "bundles",
    )
    return options, held


def _count_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    written: list[int] = []
    real = site_build._write

    def counting(root: Path, files: dict[str, bytes | str]) -> None:
        if root.name == "docs":
            written.append(len(files))
        real(root, files)

    monkeypatch.setattr(site_build, "_write", counting)
    return written


def test_a_rebuild_with_the_engine_output_cached_writes_no_docs_file(
    world: tuple[BuildOptions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options, held = world
    written = _count_writes(monkeypatch)
    first = build_site(options)
    # the static docs, then the pages the engine builds: the site-wide ones and the stamp
    # pages (each recipe's and evidence page is stamped from those: generator.site.stamping)
    assert not first.engine_reused and len(written) == 2 and sum(written) > 25
    written.clear()
    shutil.move(tmp_path / "held.sigstore.json", held)  # one more run: no skeleton changes
    second = build_site(options)
    assert second.engine_reused and written == [], written

    # an edited hand-written page changes the docs tree: its key, so mkdocs runs on it again
    page = sorted(options.docs.glob("*.md"))[0]
    page.write_text(page.read_text() + "\n\nan edit-by-a-maintainer paragraph\n")
    third = build_site(options)
    assert not third.engine_reused and len(written) == 2
    built = (options.out / page.name.removesuffix(".md")).with_suffix(".html")
    assert "an edit-by-a-maintainer paragraph" in built.read_text()
