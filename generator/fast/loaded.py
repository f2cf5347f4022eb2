"""`LoadedTuple`: a read-only sequence that stands for a tuple read from elsewhere when first
used (a stored aggregate part, a recipe's stored view rows), and is that tuple to its readers.

A subclass says where the tuple comes from (`_tuple`, which loads and keeps it); everything else
is the tuple's: length, indexing and slicing, iteration, truth, equality (with the tuple, or with
any other `LoadedTuple` standing for an equal one), hash, `repr`, and pickling (as the plain
tuple: a loaded value never travels as its loader). `aggregate.Later` and `site.stages.LazyRows`
are its two subclasses; the plain tuple is the reference (tests/test_fast_loaded.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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
