"""generator.fast.packed: a packed mapping or tuple answers every question as the plain dict or
tuple it holds (the reference), before and after a pickle round trip, and is unpickled only
when read."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.fast.packed import (
    PackedMapping,
    PackedTuple,
    _unpickled,
    packed_mapping,
    packed_mapping_reference,
    packed_tuple,
    packed_tuple_reference,
)

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False),
    st.sampled_from([-0.0, 0.0, 1.0, 1e308]),
    st.text(max_size=5),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)
_dicts = st.dictionaries(st.text(max_size=4), _json, max_size=6)
_tuples = st.lists(_json, max_size=6).map(tuple)


def _round_trip(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def _hash_of(value: Any) -> object:
    try:
        return hash(value)
    except TypeError as e:
        return type(e)


def _mapping_answers(m: Any) -> tuple[Any, ...]:
    keys = list(m)
    return (
        repr(m),
        keys,
        len(m),
        bool(m),
        [m[k] for k in keys],
        [k in m for k in [*keys, "\x00absent"]],
        [m.get(k) for k in [*keys, "\x00absent"]],
        m.get("\x00absent", 7),
        list(m.keys()),
        list(m.items()),
        list(m.values()),
        _hash_of(m),
    )


def _tuple_answers(t: Any) -> tuple[Any, ...]:
    return (
        repr(t),
        list(t),
        len(t),
        bool(t),
        [t[i] for i in range(-len(t), len(t))],
        t[1:],
        t[::-1],
        list(reversed(t)),
        [x in t for x in [*t, object()]],
        [t.count(x) for x in t],
        [t.index(x) for x in t],
        _hash_of(t),
        t + (1,),  # noqa: RUF005 (the operator is what is tested)
        (1,) + t,  # noqa: RUF005
    )


@settings(max_examples=150, deadline=None)
@given(_dicts, _dicts)
def test_a_packed_mapping_answers_as_the_dict_it_holds(
    a: dict[str, Any], b: dict[str, Any]
) -> None:
    ref, other_ref = packed_mapping_reference(a), packed_mapping_reference(b)
    for made in (packed_mapping(a), _round_trip(packed_mapping(a))):
        assert isinstance(made, PackedMapping)
        assert _mapping_answers(made) == _mapping_answers(ref)
        for other in (other_ref, packed_mapping(b), _round_trip(packed_mapping(b))):
            assert (made == other) is (ref == other_ref)
            assert (other == made) is (other_ref == ref)
            assert (made != other) is (ref != other_ref)
        assert made == ref and ref == made and made == MappingProxyType(ref)
        assert made != list(ref) and made != tuple(ref.items())
        assert copy.deepcopy(made) == ref and copy.copy(made) == ref


@settings(max_examples=150, deadline=None)
@given(_tuples, _tuples)
def test_a_packed_tuple_answers_as_the_tuple_it_holds(
    a: tuple[Any, ...], b: tuple[Any, ...]
) -> None:
    ref, other_ref = packed_tuple_reference(a), packed_tuple_reference(b)
    for made in (packed_tuple(a), _round_trip(packed_tuple(a))):
        assert isinstance(made, PackedTuple)
        assert _tuple_answers(made) == _tuple_answers(ref)
        for other in (other_ref, packed_tuple(b), _round_trip(packed_tuple(b))):
            assert (made == other) is (ref == other_ref)
            assert (other == made) is (other_ref == ref)
        assert made == ref and made != list(ref)  # a tuple equals no list
        assert made + packed_tuple(b) == ref + other_ref


@pytest.mark.parametrize(
    ("pack", "value"),
    [(packed_mapping, {"a": [1, {"b": 2.5}], "c": None}), (packed_tuple, (1, "x", (2, 3)))],
)
def test_a_loaded_value_is_unpickled_only_when_read_and_pickles_as_the_same_bytes(
    pack: Callable[[Any], Any], value: Any
) -> None:
    made = pack(value)
    data = pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL)
    assert made._data is None  # made here: its bytes are not kept beside its value
    assert pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL) == data
    loaded = pickle.loads(data)
    assert loaded._value is None  # not unpickled by loading
    assert pickle.dumps(loaded, protocol=pickle.HIGHEST_PROTOCOL) == data  # nor by storing
    assert loaded._value is None
    assert loaded == value and loaded._value == value  # read: unpickled, and kept
    assert pickle.dumps(loaded, protocol=pickle.HIGHEST_PROTOCOL) == data


def test_only_plain_dicts_and_tuples_are_packed_and_a_packed_value_is_read_only() -> None:
    proxy = MappingProxyType({"a": 1})
    assert packed_mapping(proxy) is proxy
    done = packed_mapping({"a": 1})
    assert packed_mapping(done) is done
    assert packed_tuple(done_t := packed_tuple((1,))) is done_t
    items = [1, 2]
    assert packed_tuple(items) is items  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        done._value = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(done)
    source = {"a": [1]}
    copied = packed_mapping(source)
    source["b"] = [2]
    assert copied == {"a": [1]}  # a copy: adding to the dict given adds nothing to it


def test_the_loader_makes_nothing_but_packed_values() -> None:
    with pytest.raises(TypeError):
        _unpickled(dict, pickle.dumps({}))  # type: ignore[arg-type]
