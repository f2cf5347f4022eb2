"""`fast.loaded.LoadedTuple` against the plain tuple it stands for (the reference), and its two
subclasses' loading: nothing is read until a reader asks."""

from __future__ import annotations

import pickle
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
