"""`fast.loaded.LoadedTuple` against the plain tuple it stands for (the reference), and its two
subclasses' loading: nothing is read until a reader asks."""

from __future__ import annotations

import pickle
from itertools import pairwise
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from generator.fast.loaded import LoadedTuple


class _Counted(LoadedTuple):
    __slots__ = ("_value", "loads")

    def __init__(self, value: tuple[Any, ...]) -> None:
        self._value = value
        self.loads = 0

    def _tuple(self) -> tuple[Any, ...]:
        self.loads += 1
        return self._value


values = st.tuples() | st.lists(st.integers() | st.text(max_size=3), max_size=6).map(tuple)


@given(values, values)
def test_it_reads_as_the_tuple_it_stands_for(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    la, lb = _Counted(a), _Counted(b)
    assert la.loads == 0  # made, not read
    assert len(la) == len(a) and list(la) == list(a) and bool(la) == bool(a)
    assert la[0:2] == a[0:2] and repr(la) == repr(a) and hash(la) == hash(a)
    if a:
        assert la[-1] == a[-1] and la.index(a[0]) == a.index(a[0]) and a[0] in la
    assert (la == b) == (a == b) and (la == lb) == (a == b) and (la == a)
    assert la != list(a)  # as a tuple equals no list
    assert pickle.loads(pickle.dumps(la)) == a and type(pickle.loads(pickle.dumps(la))) is tuple


def test_the_subclasses_are_loaded_tuples() -> None:
    from generator.aggregate import Later, _AllRuns
    from generator.site.stages import LazyRows

    assert issubclass(Later, LoadedTuple) and issubclass(_AllRuns, Later)
    assert issubclass(LazyRows, LoadedTuple)


@st.composite
def _sliced(draw: st.DrawFn) -> tuple[tuple[int, ...], list[list[int]], set[int]]:
    """A tuple's values, its positions cut into slices (in any order), the slices in hand."""
    values = tuple(draw(st.lists(st.integers(), max_size=12)))
    order = draw(st.permutations(range(len(values))))
    cuts = sorted(draw(st.sets(st.integers(1, max(len(values) - 1, 1)), max_size=4)))
    bounds = [0, *(c for c in cuts if c < len(values)), len(values)]
    slices = [list(order[a:b]) for a, b in pairwise(bounds) if b > a]
    held = draw(st.sets(st.integers(0, max(len(slices) - 1, 0)), max_size=len(slices)))
    return values, slices, {h for h in held if h < len(slices)}


@given(_sliced(), st.lists(st.integers(0, 11) | st.lists(st.integers(0, 11)), max_size=6))
def test_slices_read_as_the_tuple_and_load_each_slice_once(
    sliced: tuple[tuple[int, ...], list[list[int]], set[int]], reads: list[Any]
) -> None:
    from generator.fast.loaded import Slices, SliceView

    values, slices, held = sliced
    batches: list[list[int]] = []

    def load(numbers: list[int]) -> list[tuple[int, ...]]:
        assert not set(numbers) & held and numbers == sorted(set(numbers))
        batches.append(numbers)
        return [tuple(values[p] for p in slices[n]) for n in numbers]

    in_hand = {n: tuple(values[p] for p in slices[n]) for n in held}
    store = Slices(slices, in_hand, load)
    view = SliceView(store)
    assert len(view) == len(values) and bool(view) == bool(values) and batches == []
    for read in reads:
        if isinstance(read, int):
            if read < len(values):
                assert view[read] == values[read]
        else:
            at = [p for p in read if p < len(values)]
            part = SliceView(store, at)
            assert len(part) == len(at) and part == tuple(values[p] for p in at)
    assert view == values and tuple(view) == values and view[1:3] == values[1:3]
    loaded = [n for b in batches for n in b]
    assert len(loaded) == len(set(loaded)) == store.loaded  # each slice read once, at most
    more = store.plus((7, 8))
    assert SliceView(more) == (*values, 7, 8)
