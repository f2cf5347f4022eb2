"""Wrong answers at the edges (issue 27, item 9), each through the real command line.

- `status RECIPE --evidence DIR` rejected every valid file when DIR was not named `evidence`;
- `snapshot --from` counted a node list given three times as 108 nodes, and crashed on label
  values that are not strings;
- a file name in `evidence/` that is not UTF-8 crashed `build`;
- `diff` never mentioned a change to the signer policy (which can turn SINGLE into CONFIRMED).

(The tar duplicate-entry check bypassed with a trailing slash is in tests/test_file_doors.py.)
Generated variants of each class run under the memory and time limits of the hostile I/O tests.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.cli import main
from generator.core.errors import CatalogError
from generator.scale.collect import (
    CLIQUE_LABEL,
    DRIVER_LABEL,
    DRIVER_PARTS,
    NFD_OS_LABEL,
    readings_from,
)
from tests.kubectl_fixtures import files as kubectl_files
from tests.test_cases import MINIMAL
from tests.test_diff import commit, diff, git
from tests.test_hostile_io import isolated

REPO = Path(__file__).resolve().parent.parent
RECIPE = "gb200-eks-ubuntu-training-kubeflow"
FIXTURE = REPO / "tests" / "fixtures" / "kubectl" / "gb300-eks-36"


# ---------------------------------------------------------------- status --evidence DIR RECIPE


def _rows(evidence: Path) -> list[tuple[Any, ...]]:
    r = CliRunner().invoke(
        main,
        [
            *("status", RECIPE, "--evidence", str(evidence), "--trust-root", "demo"),
            *("--format", "json", "--catalog", str(REPO / "catalog")),
        ],
    )
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.stdout)
    return sorted(
        (row["recipe"], row.get("scaleProfile"), row["consensus"], row["runs"])
        for row in doc["recipes"]
    )


def test_status_of_one_recipe_does_not_depend_on_the_directory_name(tmp_path: Path) -> None:
    """The evidence root is DIR itself: the same rows whatever DIR is called."""
    named = tmp_path / "evidence"
    shutil.copytree(REPO / "evidence", named)
    expected = _rows(named)
    assert any(runs > 0 for *_, runs in expected), expected  # the recipe has runs to lose

    @settings(
        max_examples=3,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(st.sampled_from(["my-evidence", "ev", "EVIDENCE", "evidence.old", "x y"]))
    def prop(name: str) -> None:
        other = tmp_path / "other" / name
        shutil.rmtree(other.parent, ignore_errors=True)
        other.parent.mkdir()
        named.rename(other)
        try:
            assert _rows(other) == expected
        finally:
            other.rename(named)

    prop()


# ---------------------------------------------------------------- snapshot --from


def _from_dir(tmp: Path, change: dict[str, bytes]) -> Path:
    src = tmp / "outputs"
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(FIXTURE, src)
    for name, data in change.items():
        (src / name).write_bytes(data)
    return src


def test_snapshot_refuses_a_node_list_given_three_times(tmp_path: Path) -> None:
    doc = json.loads((FIXTURE / "nodes.json").read_bytes())
    doc["items"] = doc["items"] * 3
    src = _from_dir(tmp_path, {"nodes.json": json.dumps(doc).encode()})
    out = tmp_path / "snapshot.yaml"
    r = CliRunner().invoke(
        main, ["snapshot", "--from", str(src), "-o", str(out), "--catalog", str(REPO / "catalog")]
    )
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    assert "nodes.json" in r.output and "is listed twice" in r.output
    assert not out.exists()


_LABELS = [CLIQUE_LABEL, DRIVER_LABEL, f"{NFD_OS_LABEL}.ID", f"{NFD_OS_LABEL}.VERSION_ID",
           *DRIVER_PARTS, "app"]  # fmt: skip
_ODD = st.one_of(
    st.integers(), st.none(), st.booleans(), st.floats(allow_nan=False),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)  # fmt: skip


def test_odd_label_types_are_located_errors_never_tracebacks() -> None:
    """Generated variants: any label of any node set to a number, null, a list or a mapping
    (with the driver label removed, so the per-part path runs too); every object of a list
    duplicated: a located LoadError naming the file, never another exception."""
    base = kubectl_files()
    nodes = json.loads(base["nodes.json"])

    @settings(max_examples=80, deadline=None, database=None, derandomize=True)
    @given(
        st.integers(0, len(nodes["items"]) - 1),
        st.sampled_from(_LABELS),
        _ODD,
        st.booleans(),
    )
    def prop(index: int, label: str, value: Any, drop_driver: bool) -> None:
        doc = json.loads(base["nodes.json"])
        labels = doc["items"][index]["metadata"].setdefault("labels", {})
        if drop_driver:
            labels.pop(DRIVER_LABEL, None)
        labels[label] = value
        with pytest.raises(CatalogError) as e:
            readings_from({**base, "nodes.json": json.dumps(doc).encode()})
        assert "nodes.json" in str(e.value)
        assert e.value.diagnostics and e.value.diagnostics[0].rule == "snapshot.labels"

    @settings(max_examples=20, deadline=None, database=None, derandomize=True)
    @given(st.sampled_from(sorted(n for n in base if n.endswith(".json"))), st.integers(2, 4))
    def duplicated(name: str, times: int) -> None:
        try:
            doc = json.loads(base[name])
        except ValueError:
            return
        if not isinstance(doc, dict) or not doc.get("items"):
            return
        doc["items"] = doc["items"] * times
        with pytest.raises(CatalogError, match="is listed twice"):
            readings_from({**base, name: json.dumps(doc).encode()})

    def run() -> dict[str, Any]:
        prop()
        duplicated()
        return {}

    isolated(run, seconds=120)


def test_odd_label_type_through_the_cli(tmp_path: Path) -> None:
    doc = json.loads((FIXTURE / "nodes.json").read_bytes())
    gpu = next(i for i in doc["items"] if CLIQUE_LABEL in i["metadata"].get("labels", {}))
    gpu["metadata"]["labels"][CLIQUE_LABEL] = ["rack-1"]
    src = _from_dir(tmp_path, {"nodes.json": json.dumps(doc).encode()})
    r = CliRunner().invoke(
        main, ["snapshot", "--from", str(src), "--catalog", str(REPO / "catalog")]
    )
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    assert f"label '{CLIQUE_LABEL}' is list, not a string" in r.output


# ---------------------------------------------------------------- a non-UTF-8 name in evidence/


@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_a_file_name_that_is_not_utf8_is_a_located_refusal(tmp_path: Path, cache: bool) -> None:
    evidence = tmp_path / "evidence"
    (evidence / "x" / "y").mkdir(parents=True)
    bad = os.fsdecode(b"\xff\xfe.sigstore.json")
    (evidence / "x" / "y" / bad).write_bytes(b"{}")
    os.mkdir(os.fsencode(evidence) + b"/\xffdir")
    catalog = tmp_path / "catalog"  # the minimal catalog, with the demo trust root
    shutil.copytree(MINIMAL, catalog)
    shutil.copytree(REPO / "catalog" / "trust", catalog / "trust", dirs_exist_ok=True)
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        r = CliRunner().invoke(
            main,
            [
                *("build", "--catalog", str(catalog), "--evidence", "evidence", "-o", "site"),
                *("--trust-root", "demo", "--no-bundles"),
                *(() if cache else ("--no-cache",)),
            ],
        )
    finally:
        os.chdir(old)
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)
    assert "\\xff\\xfe.sigstore.json" in r.output
    assert "not valid UTF-8" in r.output
    assert not (tmp_path / "site").exists()


# ---------------------------------------------------------------- diff and the signer policy


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    shutil.copytree(REPO / "catalog", r / "catalog", ignore=shutil.ignore_patterns("schemas"))
    git(r, "init", "-q", "-b", "main")
    commit(r, "base")
    return r


_POLICY_EDITS = {
    "signers": ("catalog/signers.yaml", lambda t: t + "\n# one more signer would go here\n"),
    "trust-root": ("catalog/trust/demo/trusted_root.json", lambda t: t.replace("{", "{ ", 1)),
    "allowlist": ("evidence/allowlist.yaml", None),
}


@pytest.mark.parametrize("edit", sorted(_POLICY_EDITS))
def test_diff_reports_a_signer_policy_change(repo: Path, edit: str) -> None:
    rel, change = _POLICY_EDITS[edit]
    path = repo / rel
    if change is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("firstParty: []\n")
        expected = "added"
    else:
        path.write_text(change(path.read_text()))
        expected = "changed"
    commit(repo, "policy")
    code, out = diff(repo, "HEAD~1", "HEAD", "--format", "json")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["recipes"] == []  # no recipe changed, yet which signatures count did
    assert doc["signerPolicy"] == [{"path": rel, "change": expected}]
    _, text = diff(repo, "HEAD~1", "HEAD")
    assert "signer policy" in text and rel in text and "no change" not in text
    _, md = diff(repo, "HEAD~1", "HEAD", "--format", "markdown")
    assert "Signer policy" in md and rel in md
