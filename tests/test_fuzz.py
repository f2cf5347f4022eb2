"""Fuzzing `validate`: generated YAML documents and mutations of real catalog files.

Whatever a contributor's pull request contains, load + validate must end with diagnostics (never an
escaped exception) within a time bound. 2,000 examples run in CI (two tests of 1,000); set
AICR_FUZZ_EXAMPLES for a nightly-sized run.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.catalog.load import load_catalog
from generator.core.errors import Severity
from generator.validate import validate_catalog
from tests.conftest import REPO

MINIMAL = REPO / "tests" / "cases" / "minimal"
EXAMPLES = int(os.environ.get("AICR_FUZZ_EXAMPLES", "1000"))
BOUND_SECONDS = 5.0
TARGETS = sorted(p.relative_to(MINIMAL).as_posix() for p in MINIMAL.rglob("*.yaml"))
NASTY = [
    "&a [1, 2]",
    "*a",
    "<<: *a",
    "!!python/object:os.system {}",
    "\t",
    "\ufeff",
    "\x00",
    "key: [",
    ": :",
    "---",
    "...",
    "? complex",
    "!!binary aGk=",
    "{a: 1, a: 2}",
    "'unterminated",
    '"\\xff"',
    "- - - -",
    "1e309",
    ".nan",
    "apiVersion: aicr.run/v9",
    "kind: Nope",
    "\u202e",
    "../../etc/passwd",
    "/abs/path.yaml",
    "%YAML 1.1",
    "&x {b: *x}",
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("fuzz") / "catalog"
    shutil.copytree(MINIMAL, root)
    yield root


def run_validate(root: Path) -> None:
    # CPU time, not wall time: the bound catches a blow-up (an alias bomb, a pathological
    # input), and a loaded machine stretches wall time but not the CPU a validation takes
    start = time.process_time()
    catalog, load_diags = load_catalog(root)
    diags = validate_catalog(catalog, load_diagnostics=load_diags)
    elapsed = time.process_time() - start
    assert elapsed < BOUND_SECONDS, f"validate took {elapsed:.2f} CPU-s"
    for d in diags:
        assert d.rule and d.message and d.line >= 0 and d.col >= 0
        assert d.severity in (Severity.ERROR, Severity.WARNING)


def _restore(root: Path, rel: str) -> None:
    shutil.copyfile(MINIMAL / rel, root / rel)


def mutate(data: bytes, ops: list[tuple[int, int, int]]) -> bytes:
    lines = data.split(b"\n")
    for kind, pos, pick in ops:
        i = pos % (len(lines) or 1)
        if not lines:
            lines = [b""]
        if kind == 0:  # delete a line
            del lines[i]
        elif kind == 1:  # duplicate a line (duplicate keys, repeated list items)
            lines.insert(i, lines[i])
        elif kind == 2:  # insert something nasty
            lines.insert(i, NASTY[pick % len(NASTY)].encode("utf-8"))
        elif kind == 3:  # flip a byte
            flat = b"\n".join(lines)
            if flat:
                j = (pos * 7919) % len(flat)
                flat = flat[:j] + bytes([(flat[j] + 1 + pick) % 256]) + flat[j + 1 :]
            lines = flat.split(b"\n")
        elif kind == 4:  # change indentation
            lines[i] = b"  " * (pick % 4) + lines[i].lstrip()
        else:  # truncate
            lines = lines[: i + 1]
    return b"\n".join(lines)


ops = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 10_000), st.integers(0, 255)),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(target=st.sampled_from(TARGETS), operations=ops)
def test_mutated_real_files_never_crash(
    workdir: Path, target: str, operations: list[tuple[int, int, int]]
) -> None:
    original = (MINIMAL / target).read_bytes()
    (workdir / target).write_bytes(mutate(original, operations))
    try:
        run_validate(workdir)
    finally:
        _restore(workdir, target)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(NASTY),
)
documents: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=25,
)
headers = st.sampled_from(
    [
        {},
        {"apiVersion": "aicr.run/v1beta1", "kind": "RecipeMetadata"},
        {
            "apiVersion": "aicr.nvidia.com/v1alpha1",
            "kind": "RecipeMetadata",
            "metadata": {"name": "eks"},
        },
        {"apiVersion": "aicr.run/v1beta1", "kind": "ComponentRegistry"},
    ]
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(target=st.sampled_from(TARGETS), header=headers, body=documents, spec=documents)
def test_generated_documents_never_crash(
    workdir: Path, target: str, header: dict[str, Any], body: Any, spec: Any
) -> None:
    doc: Any = {**header, "spec": spec, "extra": body} if header else body
    try:
        text = yaml.safe_dump(doc, allow_unicode=True)
    except yaml.YAMLError:
        return
    (workdir / target).write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        run_validate(workdir)
    finally:
        _restore(workdir, target)
