"""Incremental site builds: one added evidence file re-renders only the pages it touches, reuses
mkdocs' output, and still gives exactly the bytes of a build from scratch; bad cache entries are
recomputed, never published."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from generator.core.cache import MAGIC, Cache
from generator.evidence import store
from generator.site.build import (
    ENGINE_STAGE,
    PAGES_STAGE,
    SKELETONS_STAGE,
    BuildOptions,
    build_site,
)
from tests.conftest import CATALOG, REPO

EPOCH = 1767225600


def digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A copy of the catalog and the sample evidence, with one evidence file held back."""
    if not any((REPO / "evidence").rglob("*.sigstore.json")):
        pytest.skip("the repository has no sample evidence")
    shutil.copytree(CATALOG, tmp_path / "catalog")
    shutil.copytree(REPO / "evidence", tmp_path / "evidence")
    held = sorted((tmp_path / "evidence").rglob("*.sigstore.json"))[0]
    shutil.move(held, tmp_path / "held.sigstore.json")
    return tmp_path / "catalog", tmp_path / "evidence", held


def opts(catalog: Path, evidence: Path, out: Path, cached: bool = True) -> BuildOptions:
    return BuildOptions(
        catalog=catalog,
        evidence=evidence,
        out=out,
        trust_root="demo",
        source_date_epoch=EPOCH,
        cache_dir=out.parent / ".cache" / "bundles" if cached else None,
    )


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The digests of a build from scratch (no cache) of the catalog and all the sample
    evidence: what a cached build that ends with the held file back must equal. Made once for
    the module (two tests compare against it; each used to make the same build itself)."""
    if not any((REPO / "evidence").rglob("*.sigstore.json")):
        pytest.skip("the repository has no sample evidence")
    root = tmp_path_factory.mktemp("fresh")
    shutil.copytree(CATALOG, root / "catalog")
    shutil.copytree(REPO / "evidence", root / "evidence")
    out = root / "fresh" / "site"
    build_site(opts(root / "catalog", root / "evidence", out, cached=False))
    return digests(out)


@pytest.fixture(scope="module")
def fresh_held_back(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The digests of a build from scratch (no cache) of the catalog and the sample evidence
    but the file `inputs` holds back: what a cached build of those inputs must equal. Made once
    for the module (two tests compare against it; each used to make the same build itself)."""
    if not any((REPO / "evidence").rglob("*.sigstore.json")):
        pytest.skip("the repository has no sample evidence")
    root = tmp_path_factory.mktemp("fresh-held-back")
    shutil.copytree(CATALOG, root / "catalog")
    shutil.copytree(REPO / "evidence", root / "evidence")
    sorted((root / "evidence").rglob("*.sigstore.json"))[0].unlink()  # as `inputs` holds it
    out = root / "fresh" / "site"
    build_site(opts(root / "catalog", root / "evidence", out, cached=False))
    return digests(out)


def _archives_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The archives whose bytes are read from the build cache's store from now on (by render
    key: `Cache._read_many` of the render cache's stage, `render.cache.ARCHIVE_STAGE`)."""
    from generator.render.cache import ARCHIVE_STAGE

    read: list[str] = []
    real = Cache._read_many

    def counting(self: Cache, stage: str, keys: Sequence[str]) -> dict[str, bytes]:
        if stage == ARCHIVE_STAGE:
            read.extend(keys)
        return real(self, stage, keys)

    monkeypatch.setattr(Cache, "_read_many", counting)
    return read


def _rendered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pages rendered from now on (docs-relative), in the plan's order."""
    from generator.site import build

    rendered: list[str] = []
    real = build.PageRenderer.__call__

    def counting(self: build.PageRenderer, todo: list[int]) -> list[tuple[str, tuple[str, ...]]]:
        rendered.extend(self.plan[i].rel for i in todo)
        return real(self, todo)

    monkeypatch.setattr(build.PageRenderer, "__call__", counting)
    return rendered


# the site-wide pages that show counts of runs: rendered again when a run is added or removed
SHOWING_RUNS = ["evidence/index.md", "changelog.md", "signers.md"]


def recipe_pages(run: Path, evidence: Path) -> list[str]:
    """The pages of the recipe of `run` (a file under `evidence`)."""
    recipe = run.relative_to(evidence).parts[0]
    return [f"recipes/{recipe}.md", f"evidence/{recipe}.md"]


def test_one_added_evidence_file_renders_two_pages_and_matches_a_fresh_build(
    inputs: tuple[Path, Path, Path],
    fresh: dict[str, str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog, evidence, held = inputs
    # the copies were written just now: count them as settled, so their stat memo vouches
    monkeypatch.setattr(store, "SETTLED_NS", 0)
    out = tmp_path / "b" / "site"
    caplog.set_level(logging.INFO, logger="aicr_catalog.build")
    first = build_site(opts(catalog, evidence, out))
    archives_read = _archives_read(monkeypatch)
    assert first.pages_rendered == first.pages and not first.engine_reused
    assert "load + validate" in caplog.text
    shutil.move(tmp_path / "held.sigstore.json", held)  # a lab adds one run

    # someone edits a published file of the previous site in place (same size)
    api = out / "api" / "v1" / "lanes.json"
    api.write_bytes(api.read_bytes().replace(b"lane-36", b"lane-XX"))

    caplog.clear()
    rendered = _rendered(monkeypatch)
    second = build_site(opts(catalog, evidence, out))
    # the catalog did not change: it is not loaded, validated and resolved again
    assert "catalog unchanged" in caplog.text and "load + validate" not in caplog.text
    # files whose bytes the previous build published are linked, not written again
    linked = re.search(r"(\d+) files unchanged since the last build: linked", caplog.text)
    # publishing is counted work: the first build wrote every file and made every archive and
    # signed statement; the second makes the added run's raw file (a `Derived` of its digest:
    # every other run's raw file is linked from the previous tree unread) and signed statement,
    # its recipe's two API files (its detail and its evidence file) and its badges (an SVG and a
    # JSON a profile), links every archive (known by its sealed digest: not one archive's bytes
    # read), every other statement and every other recipe's API files and badges without making
    # or hashing them, and writes only what changed
    assert first.files_linked == 0 and first.files_derived > first.evidence + 2 * first.recipes
    badges = len(list((out / "badges" / held.relative_to(evidence).parts[0]).glob("*.svg")))
    assert badges > 0 and second.files_derived == 2 + 2 + 2 * badges + second.pages_finished, second
    assert archives_read == [], archives_read
    # every page is derived too (`finish_pages`): the first build finished every page; the
    # second finishes only pages whose data blocks or built HTML changed, links the others
    assert first.pages_finished > first.pages
    assert 3 <= second.pages_finished <= 3 + 10, second
    # and it reads no unchanged page whole from the cache: of a page the engine builds only
    # its Markdown skeleton (`SKELETONS_STAGE`), a run's page (stamped) only when it is to be
    # finished; the pages finished here are those just rendered
    assert second.pages_read == 0, second
    assert second.files_written < first.files // 6, second
    assert second.files_linked > first.files // 2
    assert linked and int(linked.group(1)) > first.files // 2, caplog.text
    assert b"lane-XX" not in (out / "api" / "v1" / "lanes.json").read_bytes()
    # the recipe's page, its evidence page and the new run's page, plus the site-wide pages
    # whose inputs changed (`pages.SitePage`: the runs counted on the evidence index, the
    # changelog, the signers' page); the other seven are read from the cache
    assert rendered[:-1] == [*SHOWING_RUNS, *recipe_pages(held, evidence)], rendered
    assert rendered[-1].startswith("evidence/runs/"), rendered  # the new run's page
    assert second.pages_rendered == 3 + 3, second
    # no Markdown skeleton the engine builds changed: a run's page is stamped from the engine's
    # one build of evidence/runs/index.md, never a page of the engine's own
    assert second.engine_reused
    assert second.evidence == first.evidence + 1
    # aggregation is per recipe: the added run's recipe is aggregated again, no other
    assert first.recipes_aggregated == first.recipes and second.recipes_aggregated == 1
    # the evidence files: the added one is read, every other one's digest comes from its stat
    # memo; the views of the added run's recipe are judged again, no other run's
    recipe_runs = len(
        list((evidence / held.relative_to(evidence).parts[0]).rglob("*.sigstore.json"))
    )
    assert first.evidence_read == first.evidence and second.evidence_read == 1, second
    assert first.views_judged == first.evidence and second.views_judged == recipe_runs, second

    assert digests(out) == fresh
    recipe = held.relative_to(evidence).parts[0]
    page = (out / "evidence" / f"{recipe}.html").read_text()
    assert held.name.split(".")[0][:16] in page  # the new run is on its recipe's page


def test_archives_are_read_only_for_a_site_without_them_and_a_damaged_one_is_made_again(
    inputs: tuple[Path, Path, Path],
    fresh_held_back: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second output beside the first shares its render cache but has no previous tree: each
    archive is read from the cache (once), and one whose bytes were damaged behind its sealed
    digest (same size) is rendered again; the site is the site from scratch."""
    from generator.render.cache import ARCHIVE_STAGE

    catalog, evidence, _ = inputs
    build_site(opts(catalog, evidence, tmp_path / "b" / "site"))
    store = Cache(tmp_path / "b" / ".cache")
    key = store.keys(ARCHIVE_STAGE)[0]
    good = store.raw(ARCHIVE_STAGE, key)
    assert good is not None
    store.write_raw(ARCHIVE_STAGE, key, good[:-20] + bytes([good[-20] ^ 0xFF]) + good[-19:])
    store.close()
    read = _archives_read(monkeypatch)
    other = tmp_path / "b" / "other"
    report = build_site(opts(catalog, evidence, other))
    archives = sorted(p.name for p in (other / "downloads").rglob("*.tar.gz"))
    # each archive read once; the damaged one, found unsealed, once more by the render path
    assert len(set(read)) == len(archives) > 0 and len(read) == len(archives) + 1
    assert read.count(key) == 2
    assert report.files_linked == 0
    assert Cache(tmp_path / "b" / ".cache").raw(ARCHIVE_STAGE, key) == good  # made, stored
    assert digests(other) == fresh_held_back


def _entries(cache: Path, stage: str) -> list[str]:
    return Cache(cache).keys(stage)


def test_corrupt_and_planted_entries_are_recomputed(
    inputs: tuple[Path, Path, Path], fresh: dict[str, str], tmp_path: Path
) -> None:
    catalog, evidence, held = inputs
    out = tmp_path / "b" / "site"
    build_site(opts(catalog, evidence, out))
    cache = out.parent / ".cache"
    pages = _entries(cache, PAGES_STAGE)
    engine = _entries(cache, ENGINE_STAGE)
    assert len(pages) >= 2 and len(engine) == 1

    # corrupt one page entry (truncated), plant another: a valid header without this machine's
    # HMAC, over a page that would run a script
    store = Cache(cache)
    store.write_raw(PAGES_STAGE, pages[0], (store.raw(PAGES_STAGE, pages[0]) or b"")[:-10])
    raw = store.raw(PAGES_STAGE, pages[1]) or b""
    header = json.loads(raw[len(MAGIC) : raw.index(b"\n", len(MAGIC))])
    payload = json.dumps(["# x\n", ["<script>window.__pwned=1</script>"]]).encode()
    header["sha256"] = hashlib.sha256(payload).hexdigest()
    store.write_raw(PAGES_STAGE, pages[1], MAGIC + json.dumps(header).encode() + b"\n" + payload)
    store.write_raw(ENGINE_STAGE, engine[0], b"garbage")
    # and a skeleton (the engine's input) planted under another page's key
    shells = _entries(cache, SKELETONS_STAGE)
    store.write_raw(SKELETONS_STAGE, shells[0], store.raw(SKELETONS_STAGE, shells[1]) or b"")
    store.close()

    shutil.move(tmp_path / "held.sigstore.json", held)  # so the build is not skipped
    # without the previous tree no page can be linked: every entry left in the cache is read
    shutil.rmtree(out)
    report = build_site(opts(catalog, evidence, out))
    assert report.pages_rendered >= 3 + 3 and not report.engine_reused
    assert digests(out) == fresh
    assert not any("__pwned" in p.read_text() for p in out.rglob("*.html"))


def test_pages_left_in_the_cache_are_read_when_the_previous_tree_is_gone(
    inputs: tuple[Path, Path, Path], fresh_held_back: dict[str, str], tmp_path: Path
) -> None:
    catalog, evidence, _ = inputs
    out = tmp_path / "b" / "site"
    first = build_site(opts(catalog, evidence, out))
    runs = len(list((out / "evidence" / "runs").glob("*.html"))) - 1  # not the runs' index
    assert runs > 1
    shutil.rmtree(out)  # the last build's record stays in the cache, its tree is gone
    second = build_site(opts(catalog, evidence, out))
    # every page but a run's comes from the cache (the site-wide ones too: their inputs are
    # unchanged), read whole as none can be linked; the runs' pages, which the cache does not
    # keep whole (`build._kept_whole`), are rendered; every page is finished again
    assert second.pages_rendered == runs and second.files_linked == 0, second
    assert second.pages_read == first.pages - runs
    assert second.pages_finished == first.pages_finished
    assert digests(out) == fresh_held_back


def test_entries_of_earlier_inputs_are_swept(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    catalog, evidence, held = inputs
    out = tmp_path / "b" / "site"
    build_site(opts(catalog, evidence, out))
    cache = out.parent / ".cache"
    before = set(_entries(cache, PAGES_STAGE))
    shells = set(_entries(cache, SKELETONS_STAGE))
    shutil.move(tmp_path / "held.sigstore.json", held)
    build_site(opts(catalog, evidence, out))
    after = set(_entries(cache, PAGES_STAGE))
    # the touched recipe's entries (its page and its evidence page) and those of the site-wide
    # pages that count runs were replaced; nothing accumulates (the new run's page is not
    # stored: a run's page is rendered when it is to be finished, `build._kept_whole`; its API
    # files are not stored: they are derived files, linked from the previous site when their
    # source is unchanged)
    assert len(after) == len(before) and len(after - before) == 2 + len(SHOWING_RUNS)
    # the skeletons: one per page the engine builds (a run's page and an evidence page are
    # stamped: the recipe's page is its one), the same ones replaced
    now = set(_entries(cache, SKELETONS_STAGE))
    assert len(now) == len(shells) and len(now - shells) == 1 + len(SHOWING_RUNS)
    assert len(_entries(cache, ENGINE_STAGE)) == 1


def test_a_catalog_change_is_loaded_validated_and_resolved_again(
    inputs: tuple[Path, Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    catalog, evidence, _ = inputs
    out = tmp_path / "b" / "site"
    build_site(opts(catalog, evidence, out))
    registry = catalog / "registry.yaml"
    registry.write_text(registry.read_text() + "\n# a comment changes the file\n")
    caplog.set_level(logging.INFO, logger="aicr_catalog.build")
    build_site(opts(catalog, evidence, out))
    assert "load + validate" in caplog.text and "catalog unchanged" not in caplog.text
    assert len(_entries(out.parent / ".cache", "catalog")) == 1  # the old entry swept


def test_pages_rendered_by_worker_processes_are_the_same(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    from dataclasses import replace

    from generator.site.build import gather, make_pages

    catalog, evidence, _ = inputs
    options = replace(opts(catalog, evidence, tmp_path / "site", cached=False), bundles=False)
    site = gather(options, EPOCH)
    one = make_pages(site, replace(options, jobs=1))
    two = make_pages(site, replace(options, jobs=2))  # 80+ pages: a pool of two workers
    # every page is rendered; the engine gets all but the stamped run and evidence pages
    assert one.rendered == two.rendered == one.count > 64
    assert one.count > len(one.skeletons) - len(one.own)
    assert one.skeletons == two.skeletons and one.content == two.content
    assert any(c.stamp and c.stamp != rel for rel, c in one.content.items())
    # without the cache nothing is left unread: every page's title and blocks are in hand
    assert not any(c.stored for c in one.content.values())


def test_a_stored_page_round_trips_and_storing_it_leaves_its_strings_as_they_were() -> None:
    """Pickling a str that is not ASCII caches its UTF-8 copy in the str (CPython); a stored
    page pickles its own encoding, so the pages a cold build keeps until written stay their
    size once stored."""
    import pickle
    import sys

    from generator.site.incremental import StoredPage

    skeleton = "# Recipe × profile\n\n<!--aicr:island 0-->\n" * 200
    blocks = ("<td>≥ 8 nodes — passed</td>" * 500, "<p>plain ascii</p>", "")
    page = StoredPage(skeleton, blocks)
    sizes = [sys.getsizeof(s) for s in (skeleton, *blocks)]
    loaded = pickle.loads(pickle.dumps(page, protocol=pickle.HIGHEST_PROTOCOL))
    assert [sys.getsizeof(s) for s in (skeleton, *blocks)] == sizes
    assert loaded == page and type(loaded) is StoredPage
    assert isinstance(loaded.blocks, tuple) and loaded.blocks[0] == blocks[0]
    # the reference: a plain tuple of the same strings does grow when pickled
    plain = ("".join(["×", skeleton]),)
    before = sys.getsizeof(plain[0])
    pickle.dumps(plain, protocol=pickle.HIGHEST_PROTOCOL)
    assert sys.getsizeof(plain[0]) > before


def test_an_evidence_only_change_takes_the_render_step_from_its_entry_and_a_lost_archive_is_made(
    inputs: tuple[Path, Path, Path],
    fresh: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bundles depend on the catalog and the options, never on the evidence: a build after
    an evidence file was added takes the render step's result from its one memo entry (no
    recipe bundled, no archive's header read: the store's index says each is there). An
    archive gone from the store makes the step again: that archive is rendered and stored,
    every other one known by its sealed header, and the site is the site from scratch."""
    from generator.render import cache as render_cache
    from generator.site import stages

    catalog, evidence, held = inputs
    out = tmp_path / "b" / "site"
    build_site(opts(catalog, evidence, out))
    bundled: list[str] = []
    real_bundled, real_heads = stages._bundled, Cache.heads
    monkeypatch.setattr(
        stages, "_bundled", lambda c, r, d: bundled.append(r.name) or real_bundled(c, r, d)
    )
    heads: list[str] = []

    def counting(self: Cache, stage: str, keys: Sequence[str], fp: str) -> Any:
        heads.extend(keys)
        return real_heads(self, stage, keys, fp)

    monkeypatch.setattr(Cache, "heads", counting)
    shutil.move(tmp_path / "held.sigstore.json", held)  # a lab adds one run
    build_site(opts(catalog, evidence, out))
    assert bundled == [] and heads == []
    assert len(_entries(out.parent / ".cache", stages.RENDER_STAGE)) == 1

    store = Cache(out.parent / ".cache")
    archives = store.keys(render_cache.ARCHIVE_STAGE)
    assert archives
    lost = archives[0]
    store.sweep(render_cache.ARCHIVE_STAGE, archives[1:])
    store.close()
    shutil.rmtree(out)  # no previous tree to link the lost archive's download from
    read = _archives_read(monkeypatch)
    build_site(opts(catalog, evidence, out))
    # the step was made again: every recipe bundled, every archive's header asked for once
    # (the lost one's not found: rendered), every other one's bytes read once, when published
    assert len(bundled) > 0 and sorted(heads) == archives
    assert sorted(read) == archives[1:] and lost not in read  # the lost one: rendered here
    assert Cache(out.parent / ".cache").keys(render_cache.ARCHIVE_STAGE) == archives
    assert len(_entries(out.parent / ".cache", stages.RENDER_STAGE)) == 1
    assert digests(out) == fresh


def test_outputs_beside_each_other_keep_each_others_entries(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """Two outputs in one directory share the cache beside them. A build sweeps only what no
    output's last build used: building B does not sweep A's pages or archives, so A's next
    build renders and aggregates nothing; once A's output is gone, B's build sweeps A's."""
    catalog, evidence, held = inputs
    other = tmp_path / "other-evidence"
    shutil.copytree(evidence, other)
    shutil.copy(tmp_path / "held.sigstore.json", other / held.relative_to(evidence))
    a, b = tmp_path / "b" / "site-a", tmp_path / "b" / "site-b"
    build_site(opts(catalog, evidence, a))
    cache = tmp_path / "b" / ".cache"
    pages_a = set(_entries(cache, PAGES_STAGE))
    build_site(opts(catalog, other, b))
    pages_b = set(_entries(cache, PAGES_STAGE)) - pages_a
    assert pages_b and pages_a <= set(_entries(cache, PAGES_STAGE))  # B swept none of A's
    next(p for p in sorted(a.rglob("*.html"))).unlink()  # A's output touched: A builds again
    again = build_site(opts(catalog, evidence, a))
    # no page rendered (the site-wide ones are read, their inputs unchanged), no recipe
    # aggregated, mkdocs' output reused (whether a file is read again depends on its age:
    # `store.FileMemo` vouches only for files settled for two seconds)
    assert again.pages_rendered == 0 and again.recipes_aggregated == 0, again
    assert again.engine_reused, again
    shutil.rmtree(a)  # A is gone: what only A used goes with B's next build
    next(p for p in sorted(b.rglob("*.html"))).unlink()
    build_site(opts(catalog, other, b))
    left = set(_entries(cache, PAGES_STAGE))
    assert pages_b <= left <= pages_a | pages_b and pages_a - left  # A's own ones are gone


def test_every_site_wide_page_is_keyed_by_what_it_is_made_of(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """Each site-wide page is a `pages.SitePage`, whose derived key the build can compute: a
    record holding a value no key can see would leave its page rendered by every build."""
    from dataclasses import replace

    from generator.core.cache import Cache
    from generator.site import build, pages
    from generator.site.incremental import RecipeKeys

    catalog, evidence, _ = inputs
    options = replace(opts(catalog, evidence, tmp_path / "site", cached=False), bundles=False)
    site = build.gather(options, EPOCH)
    plan = pages.page_plan(site, "# Contract\n", ())
    keys = RecipeKeys(Cache(tmp_path / "cache"), site, "base")
    shown = [p for p in plan if p.runs is None]
    assert len(shown) >= 10 and all(p.made_of is not None for p in shown)
    parts = [build._site_parts(keys, p) for p in shown]
    assert all(parts) and len(set(parts)) == len(shown), parts
    # the page is what its record makes
    assert all(p.render() == p.made_of.render() for p in shown if p.made_of is not None)
    # a changed input changes the key; the same input, the same key
    index = shown[0]
    assert index.rel == "index.md" and index.made_of is not None
    other = replace(
        index, made_of=replace(index.made_of, inputs={**index.made_of.inputs, "rows": -1})
    )
    assert build._site_parts(keys, other) != build._site_parts(keys, index)
    assert build._site_parts(keys, replace(index)) == build._site_parts(keys, index)


def test_a_recipes_pages_known_from_its_group_entry_are_those_keyed_page_by_page(
    inputs: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pages of a recipe whose group entry the cache holds (`incremental.StoredGroup`)
    are neither planned nor rendered, and are the pages, keys and skeletons the page-by-page
    way gives (the reference: the first build, which found no entry); a group is planned again
    only for a page to be fetched, which is then the page rendered."""
    from dataclasses import replace

    from generator.site import build, pages
    from generator.site.incremental import GROUPS_STAGE, RecipeKeys

    catalog, evidence, _ = inputs
    options = replace(opts(catalog, evidence, tmp_path / "b" / "site"), bundles=False)
    site = build.gather(options, EPOCH)
    cache = Cache(tmp_path / "b" / ".cache")
    first = build.make_pages(site, options, RecipeKeys(cache, site, "base"))
    groups = pages.page_groups(site)
    assert len(Cache(tmp_path / "b" / ".cache").keys(GROUPS_STAGE)) == len(groups) > 1
    planned: list[str] = []
    real = pages.PageGroup.plans

    def counting(self: pages.PageGroup, site: object) -> list[pages.PagePlan]:
        planned.append(self.name)
        return real(self, site)  # type: ignore[arg-type]

    monkeypatch.setattr(pages.PageGroup, "plans", counting)
    second = build.make_pages(site, options, RecipeKeys(cache, site, "base"))
    assert planned == [] and second.rendered == 0
    assert second.skeletons == first.skeletons
    assert {r: (c.key, c.stamp) for r, c in second.content.items()} == {
        r: (c.key, c.stamp) for r, c in first.content.items()
    }
    # every page of a known group is left in the cache; fetched, it is the page rendered
    run = next(r for r, c in first.content.items() if c.stamp and c.stamp != r)
    assert second.content[run].stored
    assert second.fetch([run]) == {run: (first.content[run].fill, first.content[run].blocks)}
    assert len(planned) == 1 and second.rendered == 0
