"""The suite's schedule (tests/conftest.py HEAVY_FIRST): the files it names exist, once each, and
collection puts them first in that order, each file's tests together."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import HEAVY_FIRST, pytest_collection_modifyitems

TESTS = Path(__file__).resolve().parent


def test_every_heavy_file_is_a_test_file_named_once() -> None:
    assert len(HEAVY_FIRST) == len(set(HEAVY_FIRST))
    missing = [name for name in HEAVY_FIRST if not (TESTS / name).is_file()]
    assert missing == [], f"HEAVY_FIRST names files that are gone: {missing}"


class _Item:
    def __init__(self, name: str, n: int) -> None:
        self.path = TESTS / name
        self.n = n


def test_listed_files_come_first_in_order_and_each_file_stays_together() -> None:
    light = "test_names.py"
    assert light not in HEAVY_FIRST
    order = [light, HEAVY_FIRST[1], HEAVY_FIRST[0], light, HEAVY_FIRST[1], HEAVY_FIRST[0]]
    items = [_Item(name, n) for n, name in enumerate(order)]
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert [(i.path.name, i.n) for i in items] == [
        (HEAVY_FIRST[0], 2),
        (HEAVY_FIRST[0], 5),
        (HEAVY_FIRST[1], 1),
        (HEAVY_FIRST[1], 4),
        (light, 0),
        (light, 3),
    ]


def test_make_test_runs_whole_files_in_this_order() -> None:
    makefile = (TESTS.parent / "Makefile").read_text()
    (line,) = [x for x in makefile.splitlines() if "-n 2" in x and "pytest" in x]
    assert "--dist loadfile" in line and "--no-loadscope-reorder" in line, line
