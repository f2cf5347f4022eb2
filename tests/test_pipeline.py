"""One pipeline, derived keys: a cached build is byte for byte the build from scratch.

- `build --repo-url A` then `--repo-url B` into one output, and an edit to SECURITY.md or
  CONTRIBUTING.md: both reached the key of no stage before the keys were derived (issue 29).
- A property test: random sequences of evidence removals and additions, recipe edits, option
  changes and page edits on a small synthetic catalog; after each sequence the cached site is
  compared, file by file, with a `--no-cache` build of the same inputs. Each build after a
  change publishes a delta of the last site (`site/publish.py`), but one after a page of the
  site was edited by hand, which builds the whole tree.
- Derived keys see every field of a record, and refuse a value whose content they cannot see.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.bench.synth import SynthOptions, synthesize
from generator.core import cache as cache_module
from generator.core.memo import Memo, canonical, derive_key
from generator.core.outputs import Delta
from generator.evidence import store
from generator.pipeline import CatalogInput, Inputs, Scope
from generator.site import build as site_build
from generator.site.build import BuildOptions, build_site
from tests.conftest import REPO
from tests.synth_site import cli_build

EPOCH = 1767225600


def digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(2, 6, seed=3, jobs=1), out)
    return out


@pytest.fixture
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AICR_CATALOG_CACHE_KEY", str(tmp_path / "cache.key"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))


def _docs(tmp: Path) -> Path:
    """A docs tree of its own, with CONTRIBUTING.md and SECURITY.md beside it (the site's
    pages of those names come from there)."""
    shutil.copytree(REPO / "docs", tmp / "repo" / "docs")
    for name in ("CONTRIBUTING.md", "SECURITY.md"):
        shutil.copy(REPO / name, tmp / "repo" / name)
    return tmp / "repo" / "docs"


def test_cli_a_second_repo_url_replaces_the_first_everywhere(
    synth: Path, tmp_path: Path, key_file: None
) -> None:
    out = tmp_path / "site"
    cli_build(synth, out, "--repo-url", "https://example.org/first-repo")
    pages = [p for p in out.rglob("*.html") if b"first-repo" in p.read_bytes()]
    assert len(pages) > 10  # linked from every page
    cli_build(synth, out, "--repo-url", "https://example.org/second-repo")
    stale = [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()]
    stale = [p for p in stale if b"first-repo" in (out / p).read_bytes()]
    assert stale == []
    assert all(b"second-repo" in p.read_bytes() for p in pages)


@pytest.mark.parametrize(
    ("name", "page"), [("SECURITY.md", "security"), ("CONTRIBUTING.md", "contributing")]
)
def test_cli_an_edit_to_a_repository_page_reaches_the_site(
    synth: Path,
    tmp_path: Path,
    key_file: None,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    page: str,
) -> None:
    docs = _docs(tmp_path)
    from generator.commands import build as build_cmd

    # the command's options with this test's docs tree (the CLI takes the repository's)
    monkeypatch.setattr(build_cmd, "BuildOptions", functools.partial(BuildOptions, docs=docs))
    out = tmp_path / "site"
    cli_build(synth, out)
    assert b"edited-by-a-maintainer" not in (out / f"{page}.html").read_bytes()
    source = docs.parent / name
    source.write_text(source.read_text() + "\n\nedited-by-a-maintainer\n")
    cli_build(synth, out)
    assert b"edited-by-a-maintainer" in (out / f"{page}.html").read_bytes()


def _git(repo: Path, *args: str) -> str:
    from generator.core import proc

    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_COMMITTER_DATE": "2026-11-02T00:00:00Z",
        "GIT_AUTHOR_DATE": "2026-11-02T00:00:00Z",
    }
    out = proc.run(["git", "-C", str(repo), *args], timeout=60, extra_env=env)
    assert out.ok, out.text()
    return out.text().strip()


def test_cli_committing_the_evidence_after_a_build_reaches_its_run_pages(
    synth: Path, tmp_path: Path, key_file: None
) -> None:
    """A run page names the commit that added its evidence file (git history, not the file's
    bytes): a build before the commit, then the same files committed, must not be taken as
    nothing changed; nor an amend that gives the same files another commit."""
    repo = tmp_path / "repo"
    shutil.copytree(synth, repo)
    _git(repo, "init", "-q")
    out = tmp_path / "site"
    cli_build(repo, out)
    runs = sorted(p for p in (out / "evidence" / "runs").glob("*.html") if p.name != "index.html")
    assert runs and all(b"not in the catalog" in p.read_bytes() for p in runs)
    # the changelog dates each recipe by the commit that added its overlay: history too
    assert b"new recipe: " not in (out / "changelog.html").read_bytes()
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "evidence")
    first = _git(repo, "rev-parse", "HEAD")
    cli_build(repo, out)
    assert all(first[:12].encode() in p.read_bytes() for p in runs)
    assert b"new recipe: " in (out / "changelog.html").read_bytes()
    _git(repo, "commit", "-q", "--amend", "-m", "evidence, amended")
    second = _git(repo, "rev-parse", "HEAD")
    assert second != first
    cli_build(repo, out)
    assert all(second[:12].encode() in p.read_bytes() for p in runs)
    assert not any(first[:12].encode() in p.read_bytes() for p in runs)


def test_cli_a_commit_that_changes_no_page_re_renders_none(
    synth: Path, tmp_path: Path, key_file: None
) -> None:
    """The checked-out commits key the whole build, not every page: a commit that adds an
    evidence file re-renders the pages that show it (and the site-wide ones), a commit of a
    file no page shows re-renders none, and either site is the site from scratch."""
    repo = tmp_path / "repo"
    shutil.copytree(synth, repo)
    held = sorted((repo / "evidence").rglob("*.sigstore.json"))[0]
    kept = held.read_bytes()
    held.unlink()
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "catalog and evidence")
    out = tmp_path / "site"
    cli_build(repo, out)

    def rendered(said: str) -> int:
        found = re.search(r"pages: (\d+) generated \((\d+) rendered", said)
        assert found, said
        return int(found.group(2))

    (repo / "NOTES.txt").write_text("a file no page shows\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "notes")
    said = cli_build(repo, out)
    assert "verify evidence in" in said  # the heads changed: the pipeline ran
    assert rendered(said) == 0
    held.write_bytes(kept)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one run")
    said = cli_build(repo, out)
    total = int(re.search(r"pages: (\d+) generated", said).group(1))  # type: ignore[union-attr]
    assert 0 < rendered(said) < total // 2, said  # its recipe's pages and the site-wide ones
    fresh = tmp_path / "fresh"
    cli_build(repo, fresh, "--no-cache")
    assert digests(out) == digests(fresh)


# --- the property: any sequence of changes, then the cached site is the site from scratch --------


@dataclasses.dataclass
class World:
    """The inputs one example changes: a copy of the synthetic catalog and evidence, a docs
    tree, and the build options."""

    root: Path
    options: BuildOptions
    held: dict[str, bytes]  # evidence files taken out, by relative path

    @property
    def evidence(self) -> Path:
        return self.root / "evidence"


def _world(synth: Path, root: Path) -> World:
    shutil.copytree(synth / "catalog", root / "catalog")
    shutil.copytree(synth / "evidence", root / "evidence")
    docs = _docs(root)
    options = BuildOptions(
        catalog=root / "catalog",
        evidence=root / "evidence",
        out=root / "out" / "site",
        docs=docs,
        trust_root=str(synth / "trust" / "synth-root.json"),
        source_date_epoch=EPOCH,
        bundles=False,
        cache_dir=root / "out" / ".cache" / "bundles",
        jobs=1,
    )
    return World(root, options, {})


def _evidence_files(world: World) -> list[Path]:
    return sorted(world.evidence.rglob("*.sigstore.json"))


def apply(world: World, change: tuple[str, int]) -> None:
    """One change to the inputs (`kind`, a number choosing where)."""
    kind, n = change
    files = _evidence_files(world)
    if kind == "remove-evidence" and files:
        path = files[n % len(files)]
        world.held[path.relative_to(world.evidence).as_posix()] = path.read_bytes()
        path.unlink()
    elif kind == "remove-recipe-evidence" and files:  # a recipe loses its only evidence
        recipe = files[n % len(files)].relative_to(world.evidence).parts[0]
        for path in files:
            if path.relative_to(world.evidence).parts[0] == recipe:
                world.held[path.relative_to(world.evidence).as_posix()] = path.read_bytes()
                path.unlink()
    elif kind == "signer-policy":  # a signer's class and label change: every view of its runs
        path = world.root / "catalog" / "signers.yaml"
        text = path.read_text()
        classes = ("partner", "community", "first-party")
        first = next(c for c in classes if f"- class: {c}" in text)
        text = text.replace(f"- class: {first}", f"- class: {classes[n % 3]}", 1)
        path.write_text(text.replace("label: Synthetic lab", f"label: Lab {n} /", 1))
    elif kind == "rewrite-evidence" and files:  # in place: its size, inode and mtime kept
        path = files[n % len(files)]
        st, data = path.stat(), path.read_bytes()
        at = data.index(b'"payload": "') + len(b'"payload": "') + 20 + n % 50
        with path.open("r+b") as fh:  # one character of the signed payload: now rejected
            fh.seek(at)
            fh.write(b"B" if data[at : at + 1] == b"A" else b"A")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as `touch -r` puts it back
    elif kind == "restore-evidence" and world.held:
        rel = sorted(world.held)[n % len(world.held)]
        (world.evidence / rel).parent.mkdir(parents=True, exist_ok=True)
        (world.evidence / rel).write_bytes(world.held.pop(rel))
    elif kind == "edit-values":  # a recipe's resolved values change: its evidence goes stale
        values = sorted((world.root / "catalog").rglob("values*.yaml"))
        path = values[n % len(values)]
        path.write_text(path.read_text() + f"\nedited{n}: {n}\n")
    elif kind == "repo-url":
        world.options = dataclasses.replace(world.options, repo_url=f"https://e.org/r{n % 3}")
    elif kind == "site-url":
        world.options = dataclasses.replace(world.options, site_url=f"https://e.org/s{n % 3}/")
    elif kind == "security":
        path = world.options.docs.parent / ("SECURITY.md" if n % 2 else "CONTRIBUTING.md")
        path.write_text(path.read_text() + f"\nline {n}\n")
    elif kind == "doc-page":  # a hand-written page of the docs tree
        pages = sorted(world.options.docs.glob("*.md"))
        path = pages[n % len(pages)]
        path.write_text(path.read_text() + f"\n\nparagraph {n}\n")
    elif kind == "bundles":  # the archives on (odd) or off: the render step's memo entry
        world.options = dataclasses.replace(world.options, bundles=n % 2 == 1)
    elif kind == "lose-archive":  # an archive gone from the render cache: made again
        cache_dir = world.options.cache_dir
        archives = sorted(cache_dir.glob("*.tar.gz")) if cache_dir is not None else []
        if archives:
            archives[n % len(archives)].unlink()
    elif kind == "edit-page":  # a finished page of the last build edited in place (a run's
        # page, linked by the next build when untouched, or another page): it is made again
        built = sorted(world.options.out.rglob("*.html"))
        runs = [p for p in built if "/evidence/runs/" in p.as_posix()] if n % 2 else []
        pick = (runs or built)[n % len(runs or built)] if built else None
        if pick is not None:
            pick.write_bytes(pick.read_bytes().replace(b"</body>", b"<p>edited</p></body>"))


CHANGES = st.tuples(
    st.sampled_from(
        [
            "remove-evidence",
            "remove-recipe-evidence",
            "restore-evidence",
            "rewrite-evidence",
            "signer-policy",
            "edit-values",
            "repo-url",
            "site-url",
            "security",
            "doc-page",
            "edit-page",
            "bundles",
            "lose-archive",
        ]
    ),
    st.integers(min_value=0, max_value=1000),
)


PUBLISHED: list[str] = []  # how each build put its site in place: "delta" or "tree"


@pytest.fixture
def worlds(tmp_path: Path, key_file: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # the evidence copies were written just now: count them as settled, so that the stat memo
    # vouches for unchanged files between the builds (`store.FileMemo`)
    monkeypatch.setattr(store, "SETTLED_NS", 0)
    monkeypatch.setattr(cache_module, "SETTLED_NS", 0)  # the evidence tree's, in the build key
    real_delta, real_swap = site_build.commit_delta, site_build.swap_in

    def delta(changes: Delta, out: Path) -> None:
        PUBLISHED.append("delta")
        real_delta(changes, out)

    def swap(new: Path, out: Path) -> None:
        PUBLISHED.append("tree")
        real_swap(new, out)

    monkeypatch.setattr(site_build, "commit_delta", delta)
    monkeypatch.setattr(site_build, "swap_in", swap)
    yield tmp_path


@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(changes=st.lists(CHANGES, min_size=1, max_size=3))
def test_any_changes_then_the_cached_site_is_the_site_from_scratch(
    synth: Path, worlds: Path, changes: list[tuple[str, int]]
) -> None:
    _cached_is_fresh(synth, worlds, changes)


def _cached_is_fresh(synth: Path, worlds: Path, changes: list[tuple[str, int]]) -> None:
    """A cached build, then `changes` each followed by a cached build; the site is then
    compared file by file with a `--no-cache` build of the same inputs."""
    root = Path(worlds) / hashlib.sha256(repr(changes).encode()).hexdigest()[:12]
    world = _world(synth, root)
    PUBLISHED.clear()
    build_site(world.options)  # the cache and the previous site the changes start from
    assert PUBLISHED == ["tree"]  # no previous site: a whole tree
    for change in changes:
        apply(world, change)
        done = len(PUBLISHED)
        build_site(world.options)
        # the site as the last build wrote it is changed in place (a delta: `site/publish.py`),
        # or left alone when nothing changed; one edited by hand is built whole again
        way = PUBLISHED[done:]
        assert way in ([["tree"]] if change[0] == "edit-page" else [[], ["delta"]]), (change, way)
    fresh = dataclasses.replace(world.options, out=root / "fresh" / "site", cache_dir=None)
    build_site(fresh)
    assert digests(world.options.out) == digests(fresh.out), changes
    shutil.rmtree(root)


# the incremental paths each named once, whatever the examples above drew: a recipe losing its
# only evidence, a signer policy change, an option change after an incremental build, and
# changes that each touch one recipe's part of the status
NAMED = [
    [("remove-evidence", 0), ("remove-recipe-evidence", 1), ("repo-url", 1)],
    [("signer-policy", 1), ("restore-evidence", 0), ("site-url", 2)],
    # aggregation is memoized per recipe: one recipe's values (its digest, so its runs go
    # stale), then one run of another recipe, removed and restored
    [("edit-values", 0), ("remove-evidence", 3), ("restore-evidence", 0)],
    # a file rewritten with its size, inode and mtime kept: read again (its ctime moved), so
    # the site shows it rejected, as a build from scratch does
    [("rewrite-evidence", 2), ("repo-url", 0)],
    # finished pages are linked from the last build by their source (`finish_pages`): a run's
    # page edited in place, then one more run, then an edited page of the engine's
    [("edit-page", 1), ("remove-evidence", 2), ("edit-page", 2)],
    # the render step is one memo entry keyed by the catalog's: an evidence-only change takes
    # it, an archive lost from the render cache makes it again, a values edit changes its key
    [("bundles", 1), ("remove-evidence", 1), ("lose-archive", 0), ("edit-values", 1)],
]


@pytest.mark.parametrize(
    "changes",
    NAMED,
    ids=[
        "only-evidence-gone",
        "signer-policy",
        "one-recipe-at-a-time",
        "rewritten-in-place",
        "edited-pages",
        "bundles",
    ],
)
def test_named_changes_then_the_cached_site_is_the_site_from_scratch(
    synth: Path, worlds: Path, changes: list[tuple[str, int]]
) -> None:
    _cached_is_fresh(synth, worlds, changes)


# --- derived keys ------------------------------------------------------------------------------


def test_a_derived_key_sees_every_field_and_the_content_of_every_path(tmp_path: Path) -> None:
    memo = Memo()
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    (catalog / "a.yaml").write_text("a: 1\n")
    record = CatalogInput(catalog)
    key = memo.key("catalog", (), record)
    assert Memo().key("catalog", (), CatalogInput(catalog)) == key
    assert memo.key("catalog", (), CatalogInput(catalog, strict=True)) != key
    assert memo.key("catalog", (), CatalogInput(catalog, scope=Scope("x"))) != key
    assert memo.key("catalog", (), CatalogInput(catalog, named=("x",))) != key
    (catalog / "a.yaml").write_text("a: 2\n")
    assert Memo().key("catalog", (), CatalogInput(catalog)) != key  # content, not the name
    # fields marked NOT_KEYED are how, not what
    one = Inputs(catalog, tmp_path / "evidence", jobs=1)
    assert Memo().key("run", (), one) == Memo().key("run", (), dataclasses.replace(one, jobs=4))


def test_a_value_a_key_cannot_see_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Opaque:
        handle: object

    with pytest.raises(TypeError, match="cannot be part of a derived key"):
        derive_key("x", "", Opaque(object()), lambda p, w: "")
    assert canonical(b"bytes", lambda p, w: "") == {"sha256": hashlib.sha256(b"bytes").hexdigest()}


def test_every_build_option_is_in_the_build_key_unless_marked() -> None:
    """A field added to BuildOptions is keyed by construction: only the fields marked NOT_KEYED
    (or PATH_ONLY, keyed by finer keys) are left out of the record's content."""
    from generator.core.memo import KEY

    marked = {f.name: f.metadata.get(KEY) for f in dataclasses.fields(BuildOptions)}
    by_build = {f.name for f in dataclasses.fields(BuildOptions) if f.metadata.get("keyed-by")}
    # in the whole build's key instead (`incremental.BuildInputs.heads`): held by the CLI tests
    # of a commit after a build, an amend, and a commit that changes no page
    assert by_build == {"evidence_head", "catalog_head"}
    assert {n for n, m in marked.items() if m == "none"} - by_build == {"out", "cache_dir", "jobs"}
    assert {n for n, m in marked.items() if m == "path"} == {"evidence"}
