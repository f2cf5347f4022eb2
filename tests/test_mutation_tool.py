"""The mutator behind `make mutation` (tests/mutation/): what it mutates and how it names it."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.mutation.__main__ import load_config, load_equivalent, select
from tests.mutation.mutants import mutants

SOURCE = b'''"""doc"""
LIMIT = 5


def f(a, b, xs):
    if a < b and not xs:
        return 1
    for x in xs:
        if x.any():
            continue
    flags = a | b
    return [x for x in xs if x] or any(xs) or g(key=True)
'''


def _keys(source: bytes) -> list[str]:
    return [m.key.removeprefix("m.py :: ") for m in mutants("m.py", source)]


def test_the_operators_inside_functions_only() -> None:
    assert _keys(SOURCE) == [
        "f :: compare <-><= :: a < b",
        "f :: negate :: a < b and not xs",
        "f :: boolop and->or :: a < b and not xs",
        "f :: exit :: return 1",
        "f :: const 1->2 :: 1",
        "f :: anyall .any->.all :: x.any()",
        "f :: negate :: x.any()",
        "f :: exit :: continue",
        "f :: boolop |->& :: a | b",
        "f :: boolop or->and :: [x for x in xs if x] or any(xs) or g(key=True)",
        "f :: negate :: x",
        "f :: anyall any->all :: any(xs)",
        "f :: const True->False :: g(… key=True …)",
    ]


def test_every_mutant_changes_the_source_and_compiles() -> None:
    for m in mutants("m.py", SOURCE):
        changed = m.apply(SOURCE)
        assert changed != SOURCE
        compile(changed, "m.py", "exec")


def test_names_do_not_depend_on_line_numbers() -> None:
    shifted = SOURCE.replace(b"LIMIT = 5\n", b"LIMIT = 5\n\n\n# a comment\nOTHER = 1\n")
    assert _keys(shifted) == _keys(SOURCE)
    assert [m.line for m in mutants("m.py", shifted)] != [m.line for m in mutants("m.py", SOURCE)]


def test_repeated_snippets_are_numbered() -> None:
    source = b"def f(a):\n    if a:\n        return 0\n    if a:\n        return 0\n"
    assert [k for k in _keys(source) if k.startswith("f :: exit")] == [
        "f :: exit :: return 0",
        "f :: exit :: return 0 #1",
    ]


def test_the_configuration_and_the_equivalent_list_load() -> None:
    config = load_config()
    assert {m.path for m in select(config, "safeio,policy")} == {
        "generator/core/safeio.py",
        "generator/evidence/policy.py",
    }
    reasons = load_equivalent()
    assert all(reason.strip() for reason in reasons.values())


REPO = Path(__file__).resolve().parent.parent
# the chokepoints of issue 27 (one door each for files, writes, network, time, text, patterns):
# every one of them is mutated, so a door cannot lose its tests silently
CHOKEPOINTS = {
    "generator/core/safeio.py",
    "generator/core/atomic.py",
    "generator/core/outputs.py",
    "generator/core/net.py",
    "generator/core/text.py",
    "generator/core/linearmatch.py",
    "generator/core/timeutil.py",
    "generator/core/yamlio.py",
    "generator/catalog/chartvalues.py",
}


def test_every_mapped_module_and_test_file_exists() -> None:
    """`make mutation` skips a module absent from the tree (and refuses only at run time a test
    file that is missing): a rename would silently drop its mutants. Checked here, in `make
    test`: every module of modules.toml exists, every test file (or node id's file) it maps
    exists, every `functions` entry names a function or class of the module, and every
    equivalent.toml entry names a listed module."""
    config = load_config()
    problems = []
    for cfg in config:
        module = REPO / cfg.path
        if not module.is_file():
            problems.append(f"{cfg.path}: no such module")
            continue
        names = {
            n.name
            for n in ast.walk(ast.parse(module.read_text("utf-8")))
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
        problems += [
            f"{cfg.path}: no function {f}"
            for f in cfg.functions
            if not all(part in names for part in f.split("."))  # a method as Class.method
        ]
        if not cfg.tests:
            problems.append(f"{cfg.path}: no test files")
        for test in cfg.tests:
            file, _, node = test.partition("::")
            if not (REPO / file).is_file():
                problems.append(f"{cfg.path}: test file {file} does not exist")
            elif node and f"def {node.split('::')[-1].split('[')[0]}(" not in (
                REPO / file
            ).read_text("utf-8"):
                problems.append(f"{cfg.path}: {test} names no test")
    paths = [cfg.path for cfg in config]
    problems += [f"{p}: listed twice" for p in sorted(set(paths)) if paths.count(p) > 1]
    problems += [f"{p}: chokepoint not mutated" for p in sorted(CHOKEPOINTS - set(paths))]
    problems += [
        f"equivalent.toml: {key.split(' :: ')[0]} is not in modules.toml"
        for key in load_equivalent()
        if key.split(" :: ")[0] not in paths
    ]
    assert problems == []
