"""Issue 31: the site's bundle downloads are `aicr-catalog bundle`'s bundles.

The site renders every leaf × profile × deployer through the command's own path
(`generator.render.bundled.bundled_recipe`: the registry's node-scheduling defaults, the
bundler's injections, the registry's blocking validations), so an archive's files are the
command's output files with default flags, byte for byte, for this project's catalog and for
upstream's August tree. Where the command refuses (AKS: the wildcard accelerated toleration), the
site publishes no archive but the refusal, with a command that works.
"""

from __future__ import annotations

import ast
import io
import shlex
import tarfile
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.cli import main
from generator.core.errors import Severity
from generator.core.records import DEFAULT_PROFILE, Catalog
from generator.render import Deployer
from generator.render.bundled import Refusal
from generator.site import stages
from generator.site.model import Download

REPO = Path(__file__).resolve().parent.parent
GENERATOR = REPO / "generator"
OURS = REPO / "catalog"
AUGUST = REPO.parent / "shared" / "upstream-aicr" / "main-9793720d" / "recipes"
DEPLOYERS = tuple(d.value for d in Deployer)
EPOCH = 1_700_000_000

OUR_LEAVES = ("gb300-eks-ubuntu-training-slurm", "gb200-gke-cos-inference-dynamo")
AUGUST_LEAVES = ("h100-eks-ubuntu-training-kubeflow", "gb200-oke-ubuntu-training-kubeflow")
AUGUST_AKS = "h100-aks-ubuntu-training-kubeflow"
REFUSAL_RULE = "bundle.wildcard-toleration"


@cache
def _catalog(root: Path) -> Catalog:
    if not root.is_dir():
        pytest.skip(f"{root} is absent (a clone without ../shared)")
    cat, diags = load_catalog(root)
    assert [d for d in diags if d.severity is Severity.ERROR] == []
    return cat


def _site(
    root: Path, leaves: tuple[str, ...]
) -> tuple[dict[stages.Key, tuple[Download, ...]], dict[stages.Key, tuple[Refusal, ...]], object]:
    """What the site's render stage publishes for `leaves` at the default scale profile."""
    cat = _catalog(root)
    results = [resolve(cat, name, profile=DEFAULT_PROFILE) for name in leaves]
    return stages.render_bundles(cat, results, DEPLOYERS, EPOCH, None, jobs=1)


def _archive_files(data: bytes) -> dict[str, tuple[bytes, int]]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        out = {}
        for m in tar.getmembers():
            if m.isfile():
                f = tar.extractfile(m)
                assert f is not None
                out[m.name.split("/", 1)[1]] = (f.read(), m.mode & 0o777)
        return out


def _command_files(args: list[str], out: Path) -> dict[str, tuple[bytes, int]]:
    result = CliRunner().invoke(main, [*args, "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return {
        p.relative_to(out).as_posix(): (p.read_bytes(), p.stat().st_mode & 0o777)
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("root", "leaves"), [(OURS, OUR_LEAVES), (AUGUST, AUGUST_LEAVES)], ids=["ours", "august"]
)
def test_a_site_archive_holds_the_bundle_commands_files(
    root: Path, leaves: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For a few leaves and every deployer: the site archive's files (bytes and modes) are the
    files `aicr-catalog bundle` writes with default flags, and `bundle --archive` writes the
    site's archive byte for byte."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    downloads, refused, _ = _site(root, leaves)
    assert refused == {}
    for name in leaves:
        got = {d.deployer: d for d in downloads[(name, DEFAULT_PROFILE)]}
        assert sorted(got) == sorted(DEPLOYERS), name
        for deployer, d in got.items():
            args = ["bundle", "--catalog", str(root), "--recipe", name, "--deployer", deployer]
            files = _command_files(args, tmp_path / f"{name}-{deployer}")
            assert _archive_files(d.content) == files, (name, deployer)
            archived = _command_files([*args, "--archive"], tmp_path / f"a-{name}-{deployer}")
            assert archived == {d.file.rsplit("/", 1)[-1]: (d.content, 0o644)}, (name, deployer)


def test_the_august_bundles_carry_what_the_bundler_adds() -> None:
    """The shared path is not a no-op on the August tree: the site's recipe gets the registry's
    default tolerations and the bundler's own injections, as overrides its README records, and
    the values carry them."""
    downloads, _, _ = _site(AUGUST, AUGUST_LEAVES[:1])
    (d,) = [d for d in downloads[(AUGUST_LEAVES[0], DEFAULT_PROFILE)] if d.deployer == "helm"]
    files = _archive_files(d.content)
    readme = files["README.md"][0].decode()
    assert "nodeScheduling: default accelerated tolerations" in readme and "bundler: " in readme
    values = next(v for p, (v, _) in files.items() if p.endswith("-gpu-operator/values.yaml"))
    assert b"- operator: Exists" in values


def test_where_bundle_refuses_the_site_publishes_the_refusal_not_an_archive(
    tmp_path: Path,
) -> None:
    """AKS with default flags: `bundle` exits 2 on the registry's wildcard-toleration rule; the
    site has no archive for any deployer, but the rule, the command's message and a command
    that renders the bundle, which does."""
    downloads, refused, _ = _site(AUGUST, (AUGUST_AKS,))
    assert downloads[(AUGUST_AKS, DEFAULT_PROFILE)] == ()
    refusals = refused[(AUGUST_AKS, DEFAULT_PROFILE)]
    assert [r.deployer for r in refusals] == list(DEPLOYERS)
    base = ["bundle", "--catalog", str(AUGUST), "--recipe", AUGUST_AKS]
    for r in refusals:
        assert r.rule == REFUSAL_RULE and "wildcard" in r.message
        cli = CliRunner().invoke(main, [*base, "--deployer", r.deployer, "-o", str(tmp_path / "x")])
        assert cli.exit_code == 2 and f"error: {r.message}" in cli.stderr, cli.stderr
        assert REFUSAL_RULE in cli.stderr
    args = shlex.split(refusals[0].command)
    assert args[:2] == ["aicr-catalog", "bundle"] and "--accelerated-node-toleration" in args
    args[args.index("-o") + 1] = str(tmp_path / "works")
    works = CliRunner().invoke(main, [*args[1:], "--catalog", str(AUGUST)])
    assert works.exit_code == 0, works.stderr
    assert (tmp_path / "works" / "checksums.txt").is_file()


# what upstream's bundler adds to a recipe, and its blocking validations: called only on the
# one path of `bundle` and the site
BUNDLER_STEPS = {
    "scheduling_overrides",
    "selector_warnings",
    "dra_chart_version_overrides",
    "gateway_source_range_overrides",
    "check_bundle",
}
ONE_PATH = GENERATOR / "render" / "bundled.py"


def test_what_the_bundler_adds_is_computed_on_one_path_only() -> None:
    """No second copy of the bundler's steps: a module other than generator/render/bundled.py
    calling one (a site or command path around it) fails here."""
    around = []
    for path in sorted(GENERATOR.rglob("*.py")):
        if path == ONE_PATH:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                if name in BUNDLER_STEPS:
                    around.append(f"{path.relative_to(REPO)}:{node.lineno} {name}")
    assert around == []
