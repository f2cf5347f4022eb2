"""Golden bundle trees: each deployer for two recipes of the repository's catalog, one of them
`gb300-eks-ubuntu-training-slurm` with the large scale profile, plus the hand-made sample recipe
of tests/test_render.py (pre/post manifests, OCI, a manifests-only component), whose goldens
change only when the renderer does. Refresh with
`pytest tests/test_render_golden.py --update-goldens` and review the diff."""

from __future__ import annotations

import difflib
import shutil

import pytest

from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.render import Deployer, render_bundle, write_bundle
from tests.conftest import CATALOG, REPO
from tests.test_render import MANIFESTS, sample_result

GOLDEN = REPO / "tests" / "golden" / "bundles"
CASES = (
    ("gb300-eks-ubuntu-training-slurm", "nvl72-2304"),
    ("h100-gke-cos-inference-dynamo", "standard"),
    ("sample-recipe", "standard"),
)


def _tree(recipe: str, profile: str, deployer: Deployer):  # type: ignore[no-untyped-def]
    if recipe == "sample-recipe":  # hand-made: independent of catalog changes
        return render_bundle(sample_result(), deployer, MANIFESTS)
    catalog, _ = load_catalog(CATALOG)
    result = resolve(catalog, recipe, profile=profile)
    manifests = {
        rel: (CATALOG / rel).read_bytes()
        for c in result.components
        for rel in (*c.manifest_files, *c.pre_manifest_files)
    }
    return render_bundle(result, deployer, manifests)


@pytest.mark.parametrize("deployer", list(Deployer))
@pytest.mark.parametrize(("recipe", "profile"), CASES)
def test_bundle_matches_golden(
    recipe: str, profile: str, deployer: Deployer, update_goldens: bool
) -> None:
    tree = _tree(recipe, profile, deployer)
    where = GOLDEN / f"{recipe}-{profile}" / str(deployer)
    if update_goldens:
        if where.exists():
            shutil.rmtree(where)
        write_bundle(tree, where)
        return
    assert where.is_dir(), f"no golden at {where}; run pytest --update-goldens and review"
    on_disk = sorted(p.relative_to(where).as_posix() for p in where.rglob("*") if p.is_file())
    assert on_disk == list(tree), "file list differs from the golden"
    for rel in tree:
        want = (where / rel).read_bytes()
        got = tree[rel].data
        if got != want:
            diff = "".join(
                difflib.unified_diff(
                    want.decode(errors="replace").splitlines(keepends=True),
                    got.decode(errors="replace").splitlines(keepends=True),
                    f"golden/{rel}",
                    f"rendered/{rel}",
                )
            )
            pytest.fail(f"{rel} differs from the golden:\n{diff[:4000]}")
        executable = bool((where / rel).stat().st_mode & 0o111)
        assert executable == bool(tree[rel].mode & 0o111), rel


def test_goldens_cover_every_deployer_and_the_large_profile() -> None:
    dirs = {p.relative_to(GOLDEN).as_posix() for p in GOLDEN.glob("*/*") if p.is_dir()}
    assert {f"{r}-{p}/{d}" for r, p in CASES for d in Deployer} <= dirs
    assert "gb300-eks-ubuntu-training-slurm-nvl72-2304/helm" in dirs
