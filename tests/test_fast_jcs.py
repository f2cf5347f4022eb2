"""generator.fast.jcs: the C `json` path writes RFC 8785 bytes, or leaves the object to `rfc8785`
(the reference), which gives the same bytes or raises the same error."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core.canonical import check_canonical
from generator.fast.jcs import canonical_json, canonical_json_reference

_keys = st.one_of(
    st.text(max_size=4),
    st.sampled_from(["a", "B", "é", "\U0001f600", "\uffff", "\ue000", "\U00010000x", "ab"]),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1.0, 0.5, 1e21, 1e-7, 123456789.0, -0.0, 5e-324]),
    st.text(max_size=6),
    st.sampled_from(["\x00\x1f\x7f", '"\\/', "\u2028\u2029", "\ud800", "é€😀"]),
)


def _containers_of(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(_keys, inner, max_size=4),
    )


_json = st.recursive(_scalars, _containers_of, max_leaves=20)


def _outcome(f: Any, obj: Any) -> Any:
    try:
        return f(obj)
    except (ValueError, UnicodeEncodeError) as e:
        return type(e)


@settings(max_examples=400, deadline=None)
@given(_json)
def test_canonical_json_is_rfc8785(obj: Any) -> None:
    assert _outcome(canonical_json, obj) == _outcome(canonical_json_reference, obj)


def test_canonical_json_leaves_what_json_writes_differently_to_rfc8785() -> None:
    cases: list[Any] = [
        {"x": 1.0},  # json: 1.0, JCS: 1
        {"x": 1e-7},
        {"\U0001f600": 1, "\uffff": 2},  # UTF-16 order differs from code point order
        {"x": [2**53]},
        {1: "non-string key"},
        {"x": math.inf},
        {"x": "\ud800"},
        {"x": b"bytes"},
    ]
    for obj in cases:
        assert _outcome(canonical_json, obj) == _outcome(canonical_json_reference, obj), obj
    assert canonical_json({"\U0001f600": 1, "\uffff": 2}) == canonical_json_reference(
        {"\U0001f600": 1, "\uffff": 2}
    )
    itself: list[Any] = []
    itself.append(itself)
    with pytest.raises(RecursionError):
        canonical_json(itself)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_check_canonical_raises_what_canonical_json_raises(obj: Any) -> None:
    want = _outcome(canonical_json, obj)
    got = _outcome(check_canonical, obj)
    assert got == (want if isinstance(want, type) else None)
