"""`diff BASE HEAD` on a throw-away git repository with real catalog data and two commits."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve_all
from generator.cli import main
from generator.core import markdown
from generator.evidence.store import evidence_path
from generator.publish.diff import to_markdown
from generator.render import Deployer
from tests import evidence_fixtures as ef
from tests.conftest import CATALOG


def git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    shutil.copytree(CATALOG, r / "catalog", ignore=shutil.ignore_patterns("schemas", "trust"))
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "base")
    return r


def diff(repo: Path, *args: str) -> tuple[int, str]:
    old = Path.cwd()
    os.chdir(repo)
    try:
        res = CliRunner().invoke(main, ["diff", *args], catch_exceptions=False)
    finally:
        os.chdir(old)
    return res.exit_code, res.stdout


def changed(repo: Path, *extra: str) -> dict[tuple[str, str], dict[str, object]]:
    code, out = diff(repo, "HEAD~1", "HEAD", "--format", "json", *extra)
    assert code == 0, out
    return {(r["recipe"], r["scaleProfile"]): r for r in json.loads(out)["recipes"]}


def users_of(component: str) -> set[tuple[str, str]]:
    cat, _ = load_catalog(CATALOG)
    return {k for k, r in resolve_all(cat).items() if r.component(component) is not None}


def commit(repo: Path, msg: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", msg)


def test_values_file_change_names_exactly_its_users_in_all_formats(repo: Path) -> None:
    values = repo / "catalog/components/slinky-slurm/values.yaml"
    values.write_text(values.read_text() + "\n# tuned\ntestOnlyKey: 1\n")
    commit(repo, "tune slurm values")
    got = changed(repo)
    assert set(got) == users_of("slinky-slurm") != set()
    assert all(r["change"] == "changed" for r in got.values())
    assert all(
        "values file components/slinky-slurm/values.yaml changed" in r["reasons"]
        for r in got.values()
    )
    # a values file reaches every deployer's bundle (argocd-helm's static/ values too)
    every = {str(d) for d in Deployer}
    assert all(set(r["bundlesChanged"]) == every for r in got.values())
    code, text = diff(repo, "HEAD~1", "HEAD", "--no-bundles")
    assert code == 0
    assert f"recipes ({len(got)} changed):" in text
    assert "    - values file components/slinky-slurm/values.yaml changed" in text
    # every format shows the changed value itself, old → new
    path = "components.slinky-slurm.values.testOnlyKey"
    for r in got.values():
        values = {v["path"]: v for v in r["values"]}  # type: ignore[attr-defined]
        assert values[path] == {"path": path, "new": 1}  # no "old": it was absent
    assert f"    {path}: (absent) → 1" in text
    code, md = diff(repo, "HEAD~1", "HEAD", "--format", "markdown", "--no-bundles")
    assert md.startswith("### Catalog impact: `HEAD~1` → `HEAD`")
    for leaf, prof in got:
        assert f"| `{leaf}` | {markdown.text(prof)} | changed |" in md
    assert f"| `{path}` | `(absent)` | `1` |" in md


def test_registry_pin_bump(repo: Path) -> None:
    reg_path = repo / "catalog/registry.yaml"
    cat, _ = load_catalog(CATALOG)
    # a component whose version comes from the registry in every recipe that uses it
    pinned_in_overlays = {
        r.name
        for o in (*cat.overlays.values(), *cat.mixins.values())
        for r in o.component_refs
        if r.version
    }
    comp = sorted(
        n for n in cat.registry.components if n not in pinned_in_overlays and users_of(n)
    )[0]
    old = cat.registry.components[comp].version
    assert old
    text = reg_path.read_text()
    data = yaml.safe_load(text)
    idx = [c["name"] for c in data["components"]].index(comp)
    lines = text.splitlines(keepends=True)
    # edit the defaultVersion line of that component in place
    start = next(i for i, ln in enumerate(lines) if ln.strip() == f"- name: {comp}")
    j = next(i for i in range(start, len(lines)) if "defaultVersion:" in lines[i])
    lines[j] = lines[j].replace(str(old), "99.0.0")
    reg_path.write_text("".join(lines))
    assert (
        yaml.safe_load(reg_path.read_text())["components"][idx]["helm"]["defaultVersion"]
        == "99.0.0"
    )
    commit(repo, "bump")
    got = changed(repo, "--no-bundles")
    assert set(got) == users_of(comp)
    reason = f"registry entry {comp} changed (version {old} → 99.0.0)"
    assert all(reason in r["reasons"] for r in got.values())
    code, out = diff(repo, "HEAD~1", "HEAD", "--format", "json", "--no-bundles")
    assert code == 0
    pins = {p["component"]: p for p in json.loads(out)["pins"]}
    assert pins[comp]["change"] == "bumped" and "99.0.0" in pins[comp]["head"]


def test_new_overlay_is_an_added_recipe_and_nothing_else(repo: Path) -> None:
    src = repo / "catalog/overlays/h100-eks-ubuntu-inference-dynamo.yaml"
    doc = yaml.safe_load(src.read_text())
    doc["metadata"]["name"] = "h100-eks-ubuntu-inference-nim"
    doc["spec"]["criteria"]["platform"] = "nim"
    doc["spec"].pop("componentRefs", None)
    doc["spec"].pop("mixins", None)
    (repo / "catalog/overlays/h100-eks-ubuntu-inference-nim.yaml").write_text(yaml.safe_dump(doc))
    commit(repo, "new leaf")
    got = changed(repo, "--no-bundles")
    assert list(got) == [("h100-eks-ubuntu-inference-nim", "standard")]
    assert got[("h100-eks-ubuntu-inference-nim", "standard")]["change"] == "added"


def test_evidence_added_and_made_stale(repo: Path) -> None:
    cat, _ = load_catalog(CATALOG)
    leaf = "gb300-eks-ubuntu-training-slurm"
    digest = resolve_all(cat)[(leaf, "standard")].digest
    pred = ef.predicate(
        recipe={"name": leaf, "digest": digest},
        scaleProfile={"name": "standard", "version": "0.0.0"},
    )
    payload = ef.statement(pred)
    bundle = ef.sign(ef.make_authority(), payload)
    rel = evidence_path(leaf, ef.ISSUER, ef.IDENTITY, payload)
    (repo / rel).parent.mkdir(parents=True)
    (repo / rel).write_bytes(bundle)
    commit(repo, "evidence")
    code, out = diff(repo, "HEAD~1", "HEAD", "--format", "json", "--no-bundles")
    doc = json.loads(out)
    assert (
        doc["evidence"]["added"] == [rel]
        and doc["recipes"] == []
        and doc["evidence"]["madeStale"] == []
    )
    values = repo / "catalog/components/slinky-slurm/values.yaml"
    values.write_text(values.read_text() + "\nanotherKey: 2\n")
    commit(repo, "change makes evidence stale")
    code, out = diff(repo, "HEAD~1", "HEAD", "--format", "json", "--no-bundles")
    assert json.loads(out)["evidence"]["madeStale"] == [rel]
    code, text = diff(repo, "HEAD~1", "HEAD", "--no-bundles")
    assert code == 0
    assert f"evidence made stale:\n  {rel}" in text


def test_working_tree_is_head_by_default_and_never_touched(repo: Path) -> None:
    values = repo / "catalog/components/slinky-slurm/values.yaml"
    values.write_text(values.read_text() + "\nuncommitted: true\n")
    before = values.read_bytes()
    code, out = diff(repo, "HEAD", "--format", "json", "--no-bundles")
    assert code == 0 and json.loads(out)["head"] == "WORKTREE"
    assert json.loads(out)["recipes"]
    assert values.read_bytes() == before


def test_unknown_revision_is_usage_error(repo: Path) -> None:
    code, _ = diff(repo, "no-such-rev", "HEAD")
    assert code == 2


def test_changed_values_show_old_and_new_and_markdown_is_inert(repo: Path) -> None:
    """A hostile registry value and a hostile values key reach the PR comment as text only."""
    values = repo / "catalog/components/slinky-slurm/values.yaml"
    before = values.read_text()
    values.write_text(before + "\nimage: {tag: '1.0'}\n")
    commit(repo, "base value")
    hostile = "<img src=x onerror=alert(1)> [click](https://evil.example) `x` | y"
    values.write_text(before + "\nimage: {tag: " + json.dumps(hostile) + "}\n")
    commit(repo, "hostile value")
    got = changed(repo, "--no-bundles")
    assert got
    for r in got.values():
        vals = {v["path"]: (v["old"], v["new"]) for v in r["values"]}  # type: ignore[attr-defined]
        assert vals["components.slinky-slurm.values.image.tag"] == ("1.0", hostile)
    code, md = diff(repo, "HEAD~1", "HEAD", "--format", "markdown", "--no-bundles")
    assert code == 0
    # the value sits in a code span fenced by two backticks (it holds one), pipe escaped
    assert '| ``"<img src=x onerror=alert(1)> [click](https://evil.example) `x` \\| y"`` |' in md
    for line in md.splitlines():
        if line.startswith("| "):  # every table row keeps its columns
            cells = [c for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            assert len(cells) in (3, 4, 5), line
    outside_code = re.sub(r"(`+).*?\1", "", md)
    assert "<img" not in outside_code and "](" not in outside_code


def test_markdown_escaping_of_names() -> None:
    from generator.publish.diff import Impact, RecipeChange

    name = "a`b``c<b>x</b>"
    impact = Impact(
        "main",
        "HEAD",
        (RecipeChange(name, "std|x", "added", None, "sha256:1", ("new",), ()),),
        (),
        ("evidence/<script>`.json",),
        (),
        (),
    )
    md = to_markdown(impact)
    assert "| ```a`b``c<b>x</b>``` | std\\|x | added |" in md
    assert "- ```evidence/<script>`.json```" not in md  # one backtick inside: fence of two
    assert "- ``evidence/<script>`.json``" in md
