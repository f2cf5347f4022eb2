"""A rebuild of an output that is exactly what the last build wrote is published as a delta:
only the changed files are staged, a journal names the renames and removals, and it is applied
in place. What "intact" means, held here:

- before the journal exists nothing of the output has changed: a bad input fails the build
  before it, and the old site is left byte for byte and stat for stat as it was;
- a build killed once the journal exists is completed by the next one (`remove_leftovers`),
  before anything else: the output is then the new site;
- an output that is not what the last build wrote (edited, a file added) is not patched: the
  build makes the whole tree and swaps it in, which restores it;
- every way ends with the files of a build from scratch (`--no-cache`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from generator.core import outputs
from generator.core.atomic import TreeWriter
from generator.core.cache import tree_listing
from generator.core.errors import CatalogError
from generator.core.safeio import Refusal
from generator.evidence import store
from generator.site import build as build_module
from generator.site.build import BuildOptions, BuildReport, build_site
from generator.site.outdir import remove_leftovers
from generator.site.publish import Published, Publisher

EPOCH = 1767225600


def digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def stats(root: Path) -> list[tuple[str, int, int, int]]:
    """Every file and directory with its inode, mtime and size: what a reader could tell."""
    out = []
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out.append((p.relative_to(root).as_posix(), st.st_ino, st.st_mtime_ns, st.st_size))
    return out


# --- the publisher and the journal, alone ------------------------------------------------------


def _tree(root: Path, files: dict[str, bytes]) -> dict[str, Published]:
    table = {}
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        st = os.lstat(path)
        sha = hashlib.sha256(data).hexdigest()
        table[rel] = Published(st.st_size, st.st_mtime_ns, st.st_ino, sha, "")
    return table


def _staging(tmp_path: Path) -> Path:
    work = tmp_path / ".site-build-x"
    work.mkdir()
    return work / "site"


def test_a_delta_stages_only_what_changed_and_keeps_the_rest_in_place(tmp_path: Path) -> None:
    out = tmp_path / "site"
    known = _tree(
        out, {"same.html": b"same", "edited.json": b"v1", "gone/only.json": b"x", "k/a": b"a"}
    )
    before = {rel: os.lstat(out / rel).st_ino for rel in known}
    publisher = Publisher(_staging(tmp_path), out, known, delta=True)
    publisher.put("same.html", b"same")
    publisher.put("edited.json", b"v2")
    publisher.put("new/file.json", b"new")
    publisher.put_derived("k/a", "", lambda: b"a")  # no source: made, and the same bytes
    publisher.take_rest()
    publisher.close()
    delta = publisher.delta()
    assert delta.moves == ("edited.json", "new/file.json")
    assert delta.removals == ("gone/only.json",)
    assert publisher.counts().kept == 2 and publisher.counts().written == 2
    assert publisher.counts().linked == 0 and publisher.counts().removed == 1
    # nothing of the output was touched yet
    assert (out / "edited.json").read_bytes() == b"v1" and (out / "gone" / "only.json").exists()
    table = publisher.table()
    outputs.commit_delta(delta, out)
    assert digests(out) == {
        rel: hashlib.sha256(data).hexdigest()
        for rel, data in {
            "same.html": b"same",
            "edited.json": b"v2",
            "new/file.json": b"new",
            "k/a": b"a",
        }.items()
    }
    assert not (out / "gone").exists()  # the directory it emptied went with it
    assert os.lstat(out / "same.html").st_ino == before["same.html"]  # kept, not rewritten
    assert not outputs.journal_path(out).exists()
    # the table given for the record is the tree as it now is
    assert [[rel, p.size, p.mtime_ns, p.inode] for rel, p in sorted(table.items())] == (
        tree_listing(out)
    )


def test_a_file_replaced_by_a_directory_and_back(tmp_path: Path) -> None:
    out = tmp_path / "site"
    known = _tree(out, {"a": b"file", "b/c": b"in a directory"})
    publisher = Publisher(_staging(tmp_path), out, known, delta=True)
    publisher.put("a/inner", b"now a directory")
    publisher.put("b", b"now a file")
    publisher.close()
    outputs.commit_delta(publisher.delta(), out)
    assert digests(out) == {
        "a/inner": hashlib.sha256(b"now a directory").hexdigest(),
        "b": hashlib.sha256(b"now a file").hexdigest(),
    }


def test_a_journal_is_completed_after_a_kill_at_any_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed once the journal is written, or halfway through its renames: the next
    `remove_leftovers` completes it (each step may be done twice), then removes the staging
    tree; before the journal nothing had changed."""
    out = tmp_path / "site"
    known = _tree(out, {"a": b"1", "b": b"2", "c/d": b"3"})
    publisher = Publisher(_staging(tmp_path), out, known, delta=True)
    publisher.put("a", b"one")
    publisher.put("b", b"2")
    publisher.put("e/f", b"new")
    publisher.close()
    delta = publisher.delta()
    moved: list[str] = []
    real = TreeWriter.move_in

    def killed_after_one(self: TreeWriter, source: str, rel: str) -> bool:
        if moved:
            raise KeyboardInterrupt  # the kill, after one rename
        moved.append(rel)
        return real(self, source, rel)

    monkeypatch.setattr(TreeWriter, "move_in", killed_after_one)
    with pytest.raises(KeyboardInterrupt):
        outputs.commit_delta(delta, out)
    monkeypatch.setattr(TreeWriter, "move_in", real)
    assert outputs.journal_path(out).exists()
    assert (out / "a").read_bytes() == b"one" and not (out / "e").exists()  # a mix, for now
    remove_leftovers(out)
    assert not outputs.journal_path(out).exists()
    assert not list(tmp_path.glob(".site-build-*"))
    assert {
        p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()
    } == {
        "a": b"one",
        "b": b"2",
        "e/f": b"new",
    }
    assert outputs.complete_delta(out) is False  # nothing left to do


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ({"staging": ".site-build-x/site", "moves": ["../../etc/passwd"], "removals": []}, "moves"),
        ({"staging": ".site-build-x/site", "moves": [], "removals": ["/etc/passwd"]}, "removals"),
        ({"staging": "../elsewhere/site", "moves": [], "removals": []}, "staging"),
        ({"staging": ".other-build-x/site", "moves": [], "removals": []}, "staging"),
        ({"staging": ".site-build-x/site", "moves": []}, "fields"),
    ],
)
def test_a_journal_this_tool_did_not_write_is_refused(
    tmp_path: Path, doc: dict[str, object], why: str
) -> None:
    out = tmp_path / "site"
    _tree(out, {"index.html": b"kept"})
    outputs.journal_path(out).write_text(json.dumps(doc))
    with pytest.raises(Refusal) as caught:
        remove_leftovers(out)
    assert caught.value.rule == outputs.JOURNAL_RULE
    assert why in caught.value.message or "staging tree" in caught.value.message
    assert (out / "index.html").read_bytes() == b"kept"


# --- whole builds --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(2, 6, seed=3, jobs=1), out)
    return out


@pytest.fixture
def world(synth: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BuildOptions]:
    """A copy of the synthetic catalog and evidence, built once into `out/site` (cached)."""
    monkeypatch.setenv("AICR_CATALOG_CACHE_KEY", str(tmp_path / "cache.key"))
    monkeypatch.setattr(store, "SETTLED_NS", 0)
    shutil.copytree(synth / "catalog", tmp_path / "catalog")
    shutil.copytree(synth / "evidence", tmp_path / "evidence")
    options = BuildOptions(
        catalog=tmp_path / "catalog",
        evidence=tmp_path / "evidence",
        out=tmp_path / "out" / "site",
        trust_root=str(synth / "trust" / "synth-root.json"),
        source_date_epoch=EPOCH,
        bundles=False,
        cache_dir=tmp_path / "out" / ".cache" / "bundles",
        jobs=1,
    )
    first = build_site(options)
    assert first.files_kept == 0  # nothing to keep: a new tree
    yield options


def _fresh(options: BuildOptions, root: Path) -> dict[str, str]:
    import dataclasses

    fresh = dataclasses.replace(options, out=root / "fresh" / "site", cache_dir=None)
    build_site(fresh)
    return digests(fresh.out)


def _remove_one_run(options: BuildOptions) -> Path:
    run = sorted(options.evidence.rglob("*.sigstore.json"))[0]
    run.unlink()
    return run


def test_one_run_removed_is_a_delta_of_the_files_it_changed(
    world: BuildOptions, tmp_path: Path
) -> None:
    out = world.out
    before = {rel: ino for rel, ino, _, _ in stats(out)}
    run = _remove_one_run(world)
    report = build_site(world)
    # the files the run changed are written and moved in; every other file stays where it was
    # (the same inode), none is linked; the run's raw file and signed statement are removed
    assert report.files_linked == 0 and report.files_removed >= 2, report
    assert report.files_kept + report.files_written <= report.files, report
    assert report.files_written < report.files // 4, report
    after = {rel: ino for rel, ino, _, _ in stats(out)}
    same = sum(1 for rel, ino in after.items() if before.get(rel) == ino)
    assert same >= report.files_kept, (same, report)
    assert not any(run.name in rel for rel in after)
    assert not outputs.journal_path(out).exists()
    assert not list(out.parent.glob(".site-build-*"))
    assert digests(out) == _fresh(world, tmp_path)
    # and the record is the tree's: the next build of the same inputs does nothing
    again = build_site(world)
    assert again == report


def test_a_bad_input_leaves_the_old_site_as_it_was(world: BuildOptions) -> None:
    out = world.out
    before = stats(out)
    _remove_one_run(world)  # a change the build would publish...
    overlay = sorted((world.catalog / "overlays").glob("*.yaml"))[-1]
    overlay.write_text(overlay.read_text() + "\n  : [unclosed\n")  # ...and a broken input
    with pytest.raises(CatalogError):
        build_site(world)
    assert stats(out) == before  # not one file or directory of the old site touched
    assert not outputs.journal_path(out).exists()
    assert not list(out.parent.glob(".site-build-*"))


def test_a_build_killed_after_its_journal_is_completed_by_the_next(
    world: BuildOptions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = world.out
    old = digests(out)
    _remove_one_run(world)
    real = outputs._apply

    def killed(delta: outputs.Delta, out: Path) -> None:
        raise KeyboardInterrupt  # the kill: the journal is written, nothing applied

    monkeypatch.setattr(outputs, "_apply", killed)
    with pytest.raises(KeyboardInterrupt):
        build_site(world)
    monkeypatch.setattr(outputs, "_apply", real)
    assert digests(out) == old  # the journal is there, the site not changed yet
    assert outputs.journal_path(out).exists()
    assert len(list(out.parent.glob(".site-build-*"))) == 1  # its staged files are kept
    fresh = _fresh(world, tmp_path)
    remove_leftovers(out)  # what the next build does first
    assert digests(out) == fresh
    assert not outputs.journal_path(out).exists()
    assert not list(out.parent.glob(".site-build-*"))
    report = build_site(world)  # and the next build leaves the site so
    assert digests(out) == fresh, report


@pytest.mark.parametrize("edit", ["edited", "added", "removed"])
def test_an_output_edited_by_hand_is_built_whole_and_restored(
    world: BuildOptions, tmp_path: Path, edit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = world.out
    page = sorted(out.rglob("*.html"))[0]
    if edit == "edited":
        page.write_bytes(page.read_bytes().replace(b"</body>", b"<p>by hand</p></body>"))
    elif edit == "added":
        (out / "extra.html").write_text("added by hand")
    else:
        page.unlink()
    _remove_one_run(world)
    committed: list[str] = []
    monkeypatch.setattr(
        build_module, "commit_delta", lambda *a: committed.append("delta")
    )  # must not be used
    report: BuildReport = build_site(world)
    assert committed == [] and report.files_kept == 0 and report.files_linked > 0, report
    assert digests(out) == _fresh(world, tmp_path)


def test_the_file_table_is_one_record_read_once_per_cache(tmp_path: Path) -> None:
    """The record round-trips (every field of every file), is read from the store once per
    `Cache`, and its listing equals the tree's walk in either form (lists or tuples) until a
    file is touched."""
    from generator.core.cache import Cache
    from generator.site import incremental

    out = tmp_path / "site"
    _tree(out, {"a.html": b"a", "d/b.json": b"b"})
    cache = Cache(tmp_path / ".cache", secret=b"s" * 32)
    incremental.record_build(
        cache, out, "key-1", {"pages": 1}, {"a.html": "sha-a"}, {"a.html": "source-a"}
    )
    again = Cache(tmp_path / ".cache", secret=b"s" * 32)
    record = incremental.last_record(again, out)
    assert record is not None and record.key == "key-1"
    listed = tree_listing(out)
    assert record.files["a.html"] == Published(*listed[0][1:], "sha-a", "source-a")
    assert record.files["d/b.json"].sha256 == "" and json.loads(record.report) == {"pages": 1}
    assert record.listing() == listed and record.listing() == [tuple(e) for e in listed]
    assert list(record.listing()) == listed
    assert incremental.last_record(again, out) is record  # read once: its head and base
    assert again.stats.hits == {"build": 1, "build-base": 1}
    os.utime(out / "a.html", ns=(1, 1))
    assert record.listing() != tree_listing(out)
    assert not incremental.as_recorded(out, record.files)
    # another machine's key: the record is not trusted
    assert incremental.last_record(Cache(tmp_path / ".cache", secret=b"x" * 32), out) is None


def test_a_journal_that_is_a_link_is_refused_unread(tmp_path: Path) -> None:
    out = tmp_path / "site"
    _tree(out, {"index.html": b"kept"})
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"staging": ".site-build-x/site", "moves": [], "removals": []}))
    outputs.journal_path(out).symlink_to(target)
    with pytest.raises(Refusal):
        remove_leftovers(out)
    assert (out / "index.html").read_bytes() == b"kept" and target.exists()


def test_a_move_the_file_system_refuses_says_how_to_get_out(tmp_path: Path) -> None:
    """A directory planted where a staged file goes: the journal stays (the next build tries
    again), the error names the journal to remove; removing it and building again rebuilds the
    site whole (`test_an_output_edited_by_hand_is_built_whole_and_restored`)."""
    out = tmp_path / "site"
    known = _tree(out, {"a": b"1"})
    publisher = Publisher(_staging(tmp_path), out, known, delta=True)
    publisher.put("a", b"2")
    publisher.close()
    (out / "a").unlink()
    (out / "a").mkdir()  # planted after the check
    with pytest.raises(Refusal) as caught:
        outputs.commit_delta(publisher.delta(), out)
    assert str(outputs.journal_path(out)) in caught.value.message
    assert outputs.journal_path(out).exists()
    with pytest.raises(Refusal):
        remove_leftovers(out)  # still refused: the journal is kept until it can be completed
    (out / "a").rmdir()
    remove_leftovers(out)
    assert (out / "a").read_bytes() == b"2" and not outputs.journal_path(out).exists()
