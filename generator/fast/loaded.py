"""`LoadedTuple`: a read-only sequence that stands for a tuple read from elsewhere when first
used (a stored aggregate part, a recipe's stored view rows), and is that tuple to its readers.

A subclass says where the tuple comes from (`_tuple`, which loads and keeps it); everything else
is the tuple's: length, indexing and slicing, iteration, truth, equality (with the tuple, or with
any other `LoadedTuple` standing for an equal one), hash, `repr`, and pickling (as the plain
tuple: a loaded value never travels as its loader). `aggregate.Later` and `site.stages.LazyRows`
are its two subclasses; the plain tuple is the reference (tests/test_fast_loaded.py).

`Slices` and `SliceView`: a tuple read in slices (a directory's records, say), a slice when one
of its values is first used, and the slices a reader needs at once in one batch
(`SliceView.need`); `evidence.verify_cache.Records` is the verify stage's records so read."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any


class LoadedTuple(Sequence[Any]):
    """The tuple `_tuple()` gives, read when first used. Not a record: it loads."""

    __slots__ = ()

    def _tuple(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._tuple())

    def __getitem__(self, index: Any) -> Any:
        return self._tuple()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._tuple())

    def __bool__(self) -> bool:
        return bool(self._tuple())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LoadedTuple):
            other = other._tuple()
        return self._tuple() == other

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __repr__(self) -> str:
        return repr(self._tuple())

    def __reduce__(self) -> tuple[type[tuple[Any, ...]], tuple[tuple[Any, ...]]]:
        return tuple, (self._tuple(),)


class _Absent:
    __slots__ = ()


_ABSENT: Any = _Absent()


class Slices:
    """The values of a tuple cut into slices (each a set of positions), a slice read when one of
    its values is first needed: `load(numbers)` gives the values of the slices `numbers`, each
    in its positions' order, in one call (one batch of reads for every slice a reader needs at
    once, `need`). The slices in `held` are in hand from the start. Not a record: it loads, and
    counts the slices it loaded (`loaded`)."""

    __slots__ = ("_load", "_slice", "_slices", "_values", "loaded")

    def __init__(
        self,
        slices: Sequence[Sequence[int]],
        held: Mapping[int, Sequence[Any]],
        load: Callable[[list[int]], Sequence[Sequence[Any]]],
    ) -> None:
        size = sum(len(s) for s in slices)
        self._values: list[Any] = [_ABSENT] * size
        self._slice: list[int] = [0] * size
        self._slices = tuple(tuple(s) for s in slices)
        self._load = load
        self.loaded = 0
        for number, positions in enumerate(self._slices):
            for p in positions:
                self._slice[p] = number
        for number, values in held.items():
            self._put(number, values)

    def _put(self, number: int, values: Sequence[Any]) -> None:
        positions = self._slices[number]
        if len(values) != len(positions):
            raise AssertionError(f"slice {number}: {len(values)} values for {len(positions)}")
        for p, v in zip(positions, values, strict=True):
            self._values[p] = v

    def __len__(self) -> int:
        return len(self._values)

    def get(self, position: int) -> Any:
        value = self._values[position]
        if value is _ABSENT:
            self.need((position,))
            value = self._values[position]
        return value

    def need(self, positions: Iterable[int]) -> None:
        """Load, in one call of `load`, every slice holding one of `positions` not yet in hand."""
        values, slice_of = self._values, self._slice
        todo = sorted({slice_of[p] for p in positions if values[p] is _ABSENT})
        if not todo:
            return
        got = self._load(todo)
        if len(got) != len(todo):
            raise AssertionError(f"{len(got)} slices loaded for {len(todo)} asked")
        for number, slice_values in zip(todo, got, strict=True):
            self._put(number, slice_values)
        self.loaded += len(todo)

    def in_hand(self, position: int) -> bool:
        return self._values[position] is not _ABSENT

    def plus(self, values: Sequence[Any]) -> Slices:
        """These slices and one more, `values`, in hand, at the positions after these: a new
        store (the slices this one has in hand are in hand there too; it loads the others
        with the same `load`)."""
        n = len(self._values)
        out = Slices.__new__(Slices)
        out._values = [*self._values, *values]
        out._slice = [*self._slice, *([len(self._slices)] * len(values))]
        out._slices = (*self._slices, tuple(range(n, n + len(values))))
        out._load, out.loaded = self._load, 0
        return out


class SliceView(LoadedTuple):
    """The values of `Slices` at `at` (every position, in order, when None), as a tuple: its
    length and truth without loading anything, one value loading its slice alone, and the
    whole view loading every slice it needs in one batch. Not a record: it loads."""

    __slots__ = ("_at", "_store", "_whole")

    def __init__(self, store: Slices, at: Sequence[int] | None = None) -> None:
        self._store = store
        self._at: Sequence[int] = range(len(store)) if at is None else at
        self._whole: tuple[Any, ...] | None = None

    def _tuple(self) -> tuple[Any, ...]:
        if self._whole is None:
            store, at = self._store, self._at
            store.need(at)
            self._whole = tuple(store.get(p) for p in at)
        return self._whole

    def __len__(self) -> int:
        return len(self._at)

    def __bool__(self) -> bool:
        return len(self._at) > 0

    def __getitem__(self, index: Any) -> Any:
        if self._whole is not None:
            return self._whole[index]
        if isinstance(index, slice):
            at = self._at[index]
            self._store.need(at)
            return tuple(self._store.get(p) for p in at)
        return self._store.get(self._at[index])

    def need(self) -> None:
        """Load every slice this view needs, in one batch (before its values are read one by
        one)."""
        self._store.need(self._at)
