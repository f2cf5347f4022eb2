"""The qualification timeline (issue 30 item 2) over small git histories built here: a new
failing run, a signer removed from the allowlist, a run removed, a pin bump; cached states."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from generator.site.timeline import changes, snapshots, timeline

REPO = Path(__file__).resolve().parent.parent
RECIPE = "gb200-eks-ubuntu-training-kubeflow"
KEY = f"{RECIPE}@nvl72-2304"
LAB, PARTNER = "8642cb3d685c37cbf3afbef292251ff2", "2285f094d0bad393ac29ca868787970d"


def _run(signer: str, lane: str, verdict: str) -> str:
    """The one committed SAMPLE run of `signer` on `lane` with `verdict` (found by its statement,
    not its file name: re-signing the samples renames every file)."""
    found = []
    for path in sorted((REPO / "evidence" / RECIPE / signer).glob("*.sigstore.json")):
        payload = json.loads(path.read_text())["dsseEnvelope"]["payload"]
        predicate = json.loads(base64.b64decode(payload))["predicate"]
        if predicate["lane"]["name"] == lane and predicate["verdict"] == verdict:
            found.append(path.relative_to(REPO).as_posix())
    assert len(found) == 1, (signer, lane, verdict, found)
    return found[0]


PASS_72 = _run(LAB, "lane-72", "pass")
FAIL_144 = _run(PARTNER, "lane-144", "fail")
LAB_FAIL = _run(LAB, "lane-144", "fail")
PASS_72_ID, FAIL_144_ID = (
    Path(PASS_72).name[:12],
    Path(FAIL_144).name[:12],
)  # as the timeline names them


def _git(repo: Path, *args: str, date: str = "2026-11-01T00:00:00Z") -> None:
    env = {
        "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date,
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "PATH": "/usr/bin:/bin",
    }  # fmt: skip
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def _commit(repo: Path, message: str, date: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message, date=date)  # the committer date the timeline reads


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("history")
    _git(repo, "init", "-q")
    shutil.copytree(REPO / "catalog", repo / "catalog")
    shutil.copytree(REPO / "evidence" / RECIPE, repo / "evidence" / RECIPE)
    (repo / FAIL_144).unlink()
    (repo / LAB_FAIL).unlink()
    saved = (REPO / FAIL_144).read_bytes()
    _commit(repo, "first: lanes 36 and 72 pass", "2026-11-01T10:00:00Z")
    (repo / FAIL_144).write_bytes(saved)
    _commit(repo, "partner lab: lane-144 fails", "2026-11-02T10:00:00Z")
    signers = repo / "catalog" / "signers.yaml"
    text = signers.read_text()
    text = re.sub(r"  - label: Demo partner lab \(sample\)\n(    .*\n)+", "", text)
    signers.write_text(text)
    _commit(repo, "allowlist: drop the partner lab", "2026-11-03T10:00:00Z")
    (repo / PASS_72).unlink()
    _commit(repo, "evidence: withdraw the lane-72 run", "2026-11-04T10:00:00Z")
    registry = repo / "catalog" / "registry.yaml"
    registry.write_text(
        registry.read_text().replace('defaultVersion: "v26.7.0"', 'defaultVersion: "v26.7.1"', 1)
    )
    _commit(repo, "bump gpu-operator", "2026-11-05T10:00:00Z")
    (repo / "README").write_text("not the catalog")
    _commit(repo, "unrelated", "2026-11-06T10:00:00Z")
    return repo


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("timeline-cache")


@pytest.fixture(scope="module")
def found(history: Path, cache: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for c in timeline(history, cache_dir=cache, recipe=RECIPE):
        if f"{c.recipe}@{c.profile}" == KEY:
            out.setdefault(c.subject, []).extend([c.summary, c.direction, *c.causes, c.date, c.id])
    return out


def test_each_commit_that_changed_the_qualification_is_one_dated_explained_change(
    found: dict[str, list[str]],
) -> None:
    assert "unrelated" not in found  # a commit outside catalog/ and evidence/ is not a state
    first = found["first: lanes 36 and 72 pass"]
    assert "2026-11-01T10:00:00Z" in first
    assert any(f"new passing run {PASS_72_ID}" in x for x in first)


def test_a_new_failing_run(found: dict[str, list[str]]) -> None:
    c = found["partner lab: lane-144 fails"]
    assert any(
        x.startswith(f"new failing run {FAIL_144_ID} by Demo partner lab (sample) on lane-144")
        and "coverage short" in x
        for x in c
    ), c
    assert "2026-11-02T10:00:00Z" in c


def test_a_signer_removed_from_the_allowlist(found: dict[str, list[str]]) -> None:
    c = found["allowlist: drop the partner lab"]
    assert any(x.startswith("signer removed from the allowlist: Demo partner lab") for x in c), c


def test_a_run_removed_drops_the_ceiling(found: dict[str, list[str]]) -> None:
    c = found["evidence: withdraw the lane-72 run"]
    assert "loss" in c
    assert any(
        x.startswith("ceiling dropped: lane-72 (72 nodes) → lane-36 (36 nodes)") for x in c
    ), c
    assert any(f"run {PASS_72_ID}" in x and "removed from the evidence" in x for x in c), c


def test_a_pin_bump_makes_the_runs_stale(found: dict[str, list[str]]) -> None:
    c = found["bump gpu-operator"]
    assert "loss" in c
    assert any("ceiling dropped: lane-36 (36 nodes) → none" in x for x in c), c
    assert any("became stale after pin bump: gpu-operator v26.7.0 → v26.7.1" in x for x in c), c


def test_ids_are_unique_and_stable(history: Path, cache: Path, found: dict[str, list[str]]) -> None:
    again = timeline(history, cache_dir=cache, recipe=RECIPE)
    ids = [c.id for c in again]
    assert len(ids) == len(set(ids))
    assert {c.id for c in again if f"{c.recipe}@{c.profile}" == KEY} == {
        v[-1] for v in found.values()
    }


def test_states_are_cached_per_commit_and_only_new_commits_computed(
    history: Path, cache: Path, found: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import generator.site.timeline as tl

    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("a cached commit was computed again")

    monkeypatch.setattr(tl, "snapshot_at", refuse)
    cached = list(snapshots(history, cache_dir=cache, recipe=RECIPE))
    assert len(cached) == 5 and cached[0].subject == "first: lanes 36 and 72 pass"
    assert changes(cached) == timeline(history, cache_dir=cache, recipe=RECIPE)


def test_every_change_appears_once_on_the_recipe_page_changelog_feed_and_api(
    history: Path, cache: Path
) -> None:
    """The stage's output as the site shows it: one recipe-page item, one changelog row and one
    feed entry per change, dated by its commit (never the build's date), ids stable."""
    import json
    import xml.etree.ElementTree as ET
    from dataclasses import replace

    from generator.site import api, changelog, pages
    from tests.test_site_pages import site

    found = [c for c in timeline(history, cache_dir=cache, recipe=RECIPE) if c.profile]
    assert found
    s = site()
    name = s.recipes[0].name
    moved = tuple(replace(c, recipe=name, id=c.id.replace(RECIPE, name, 1)) for c in found)
    s = replace(s, timeline=moved)
    page = pages.recipe_page(s.recipes[0], s)
    for c in moved:
        assert page.count(f'id="{c.anchor}"') == 1
        assert c.summary in page
    rows = changelog.entries(s)
    for c in moved:
        (row,) = [r for r in rows if r.key == f"change-{c.id}"]
        assert row.date == c.date and c.summary in row.title
    feed = ET.fromstring(changelog.atom(s))
    ns = {"a": "http://www.w3.org/2005/Atom"}
    ids = [e.findtext("a:id", namespaces=ns) for e in feed.findall("a:entry", ns)]
    assert len(ids) == len(set(ids))
    for c in moved:
        assert f"urn:aicr-catalog:change-{c.id}" in ids
    files = dict(api.iter_api_files(s))
    doc = json.loads(files["api/v1/timeline.json"])
    # its published schema, beside it in api/v1/schemas/ and under the compat gate
    import jsonschema

    schema = json.loads(files["api/v1/schemas/timeline.schema.json"])
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert doc["kind"] == "Timeline" and all(x["before"] or x["after"] for x in doc["changes"])
    assert [x["id"] for x in doc["changes"]] == [
        c.id for c in sorted(moved, key=lambda c: (c.date, c.id), reverse=True)
    ]
    assert any(x["direction"] == "loss" for x in doc["changes"])


def test_a_shallow_clone_is_refused_not_shown_as_a_short_history(
    history: Path, tmp_path: Path
) -> None:
    """`make site` builds the timeline by default: in a shallow clone (CI's default checkout)
    the history starts at the cut, so every earlier change would silently be missing."""
    from generator.core.errors import CatalogError
    from generator.site.timeline import site_timeline

    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", history.resolve().as_uri(), str(clone)],
        check=True,
        capture_output=True,
    )
    with pytest.raises(CatalogError, match=r"shallow clone.*--unshallow.*--no-timeline"):
        site_timeline(clone / "catalog", clone / "evidence", "demo", None)
