"""The mutator behind `make mutation` (tests/mutation/): what it mutates and how it names it."""

from __future__ import annotations

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
