"""`packed_mapping`, `packed_tuple`: a read-only mapping or sequence that pickles as one bytes
object and is unpickled only when first read.

References: the plain `dict` and `tuple` (`packed_mapping_reference`,
`packed_tuple_reference`). A verified statement keeps its whole signed predicate
(`Statement.predicate`, a parsed JSON document), its component versions, its per-phase check
results and its KPIs (`Statement.phases`, `kpis`: one frozen record per check and per KPI,
each built by a Python-level constructor when unpickled). Every rebuild loads every verified
record from the verify stage's cache entries (20,000 at 1,000 recipes) and so built all of
those objects again, although only a few readers look at a predicate (`judge`, `qualify`,
`summary`) and only the recipes made again read their runs' checks and KPIs. Packed, the
value's own pickle is held as bytes inside the record's pickle: loading the record copies one
bytes object, and the value is unpickled the first time it is read (then kept).

It cannot be abused to load untrusted bytes: the bytes are unpickled only if they arrived
inside a pickle that was itself trusted (an authenticated cache entry, a forked worker's
answer), there is no public constructor from bytes, and a packed value made in this process
holds its value from the start.

Read it as the dict or tuple it holds: equality (with its plain type, other mappings or
sequences as that type compares them, and packed values), hashing (none for a mapping, the
tuple's hash), `repr`, iteration order, indexing and slicing (a slice is a plain tuple),
`get`, `in`, `len`, `keys`/`items`/`values` are those of the plain value
(tests/test_fast_packed.py compares each with the references, hypothesis-drawn). Like any
field of a frozen record it is never mutated.

A value made in this process is pickled each time it is pickled (twice for a verified record:
its file's entry and its directory's), and its bytes are not kept: the 20,000 records of a cold
build at 1,000 x 20,000 live through the build, and keeping their bytes beside their values
raised its peak RSS from 1.75-1.83 GB to 2.01 GB. A loaded value keeps its bytes (a record
stored again unread, in a directory's new entry, is not pickled again).

Measured gain: the 200 `verify-dirs` entries of a 200 x 4,000 cache (4,000 verified records),
unpickled with the collector paused, best of 7 in one process: 0.269 s with the four values
plain, 0.220 with the predicate packed, 0.169 and the phases, 0.139 and the component
versions, 0.045 and the KPIs; their bytes 19.5 -> 21.7 -> 22.1 -> 22.2 MB, and about 22.5
with the KPIs (each packed value is a pickle of its own: strings repeated across the fields of
a record are no longer shared). The verify stage alone on a warm cache: see
`generator.evidence.model.Statement`.
"""

from __future__ import annotations

import pickle
from collections.abc import ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from typing import Any, Generic, TypeVar, overload

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

_PROTOCOL = pickle.HIGHEST_PROTOCOL


class _Packed:
    """The packed state: the plain value (None: not unpickled yet) and its pickle (None: not
    pickled yet); never both None."""

    __slots__ = ("_data", "_value")
    _data: bytes | None
    _value: Any

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a {type(self).__name__} is read-only")

    def _plain(self) -> Any:
        value = self._value
        if value is None:
            assert self._data is not None
            value = pickle.loads(self._data)  # bytes that came in a trusted pickle (module)
            object.__setattr__(self, "_value", value)
        return value

    def __reduce__(self) -> tuple[Any, tuple[type[_Packed], bytes]]:
        data = self._data
        if data is None:  # made here: pickled each time, not kept (see the module)
            data = pickle.dumps(self._value, protocol=_PROTOCOL)
        return _unpickled, (type(self), data)

    def __repr__(self) -> str:
        return repr(self._plain())


class PackedMapping(_Packed, Mapping[K, V], Generic[K, V]):
    """A read-only mapping (a dict copy of `value`) that pickles as the bytes of its pickle."""

    __slots__ = ()

    def __init__(self, value: Mapping[K, V]) -> None:
        object.__setattr__(self, "_value", dict(value))
        object.__setattr__(self, "_data", None)

    def _dict(self) -> dict[K, V]:
        value: dict[K, V] = self._plain()
        return value

    def __getitem__(self, key: K) -> V:
        return self._dict()[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())

    def __contains__(self, key: object) -> bool:
        return key in self._dict()

    def get(self, key: K, default: Any = None) -> Any:
        return self._dict().get(key, default)

    def keys(self) -> KeysView[K]:
        return self._dict().keys()

    def items(self) -> ItemsView[K, V]:
        return self._dict().items()

    def values(self) -> ValuesView[V]:
        return self._dict().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedMapping):
            return self._dict() == other._dict()
        if isinstance(other, dict):
            return self._dict() == other
        if isinstance(other, Mapping):  # as `Mapping.__eq__` compares two mappings
            return self._dict() == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a dict has none


class PackedTuple(_Packed, Sequence[T], Generic[T]):
    """A read-only sequence (a tuple of `value`) that pickles as the bytes of its pickle."""

    __slots__ = ()

    def __init__(self, value: Sequence[T]) -> None:
        object.__setattr__(self, "_value", tuple(value))
        object.__setattr__(self, "_data", None)

    def _tuple(self) -> tuple[T, ...]:
        value: tuple[T, ...] = self._plain()
        return value

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...
    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        return self._tuple()[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self._tuple())

    def __len__(self) -> int:
        return len(self._tuple())

    def __contains__(self, item: object) -> bool:
        return item in self._tuple()

    def __reversed__(self) -> Iterator[T]:
        return reversed(self._tuple())

    def index(self, value: Any, start: int = 0, stop: int = 2**63 - 1) -> int:
        return self._tuple().index(value, start, stop)

    def count(self, value: Any) -> int:
        return self._tuple().count(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedTuple):
            return self._tuple() == other._tuple()
        if isinstance(other, tuple):
            return self._tuple() == other
        return NotImplemented  # a tuple equals no list: nor does this

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __add__(self, other: object) -> tuple[Any, ...]:
        if isinstance(other, PackedTuple):
            return self._tuple() + other._tuple()
        if isinstance(other, tuple):
            return self._tuple() + other
        return NotImplemented

    def __radd__(self, other: object) -> tuple[Any, ...]:
        if isinstance(other, tuple):
            return other + self._tuple()
        return NotImplemented


def _unpickled(kind: type[_Packed], data: bytes) -> _Packed:
    """The packed value of `data` (its pickle), not unpickled yet: only `__reduce__` names it,
    so only a trusted pickle reaches it."""
    if kind is not PackedMapping and kind is not PackedTuple:
        raise TypeError(f"not a packed type: {kind!r}")
    packed = kind.__new__(kind)
    object.__setattr__(packed, "_value", None)
    object.__setattr__(packed, "_data", data)
    return packed


def packed_mapping(value: Mapping[K, V]) -> Mapping[K, V]:
    """`value` packed when it is a plain dict; anything else (packed already, another kind of
    mapping) as it is."""
    return PackedMapping(value) if type(value) is dict else value


def packed_tuple(value: Sequence[T]) -> Sequence[T]:
    """`value` packed when it is a plain tuple; anything else (packed already, another kind of
    sequence) as it is."""
    return PackedTuple(value) if type(value) is tuple else value


def packed_mapping_reference(value: Mapping[K, V]) -> Mapping[K, V]:
    """`packed_mapping` as the plain dict it stands for (the reference)."""
    return dict(value)


def packed_tuple_reference(value: Sequence[T]) -> Sequence[T]:
    """`packed_tuple` as the plain tuple it stands for (the reference)."""
    return tuple(value)


__all__ = [
    "PackedMapping",
    "PackedTuple",
    "packed_mapping",
    "packed_mapping_reference",
    "packed_tuple",
    "packed_tuple_reference",
]
