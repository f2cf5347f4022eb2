"""Properties of the check expression language (generator/scale/checkexpr.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from generator.scale.checkexpr import (
    ExprError,
    NotApplicable,
    Scope,
    Unavailable,
    Unset,
    compare,
    evaluate_expr,
    to_count,
)

versions = st.lists(st.integers(min_value=0, max_value=999), min_size=1, max_size=4).map(tuple)


def scope(**kw: Any) -> Scope:
    base: dict[str, Any] = dict(
        readings={}, components={}, criteria={"accelerator": "gb300"}, names={}, tables={},
        name_sources={"nodes": "K8s.nodes.gpu"},
    )  # fmt: skip
    base.update(kw)
    return Scope(**base)


def _pad(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))


@given(versions, versions, st.sampled_from([">=", "<=", ">", "<"]))
def test_versions_compare_as_padded_tuples(a: tuple[int, ...], b: tuple[int, ...], op: str) -> None:
    text_a = "v" + ".".join(map(str, a)) + "-eks-1"
    text_b = ".".join(map(str, b)) + (".0" if len(b) == 1 else "")
    pa, pb = _pad(a, b)
    want = {">=": pa >= pb, "<=": pa <= pb, ">": pa > pb, "<": pa < pb}[op]
    assert compare(text_a, op, text_b) is want


@given(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6))
def test_number_ordering_is_total_and_consistent(a: int, b: int) -> None:
    assert compare(a, "<", b) is (a < b)
    assert compare(a, ">=", b) is (not compare(a, "<", b))
    assert compare(str(a), "==", b) is (a == b)


@given(st.integers(0, 100), st.integers(1, 10_000))
def test_percent_counts_round_up_and_never_exceed_the_total(pct: int, total: int) -> None:
    n = to_count(f"{pct}%", total)
    assert n == math.ceil(total * pct / 100)
    assert 0 <= n <= total


@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(1, 50))
def test_arithmetic_matches_python(a: int, b: int, c: int) -> None:
    text = f"{a} + {b} * {c} - ({a} // {c}) % {c}"
    assert evaluate_expr(text, scope()) == a + b * c - (a // c) % c


def test_names_readings_values_and_their_absence() -> None:
    s = scope(
        readings={"K8s.dns.replicas": 3},
        components={"nfd": {"master": {"replicaCount": 2}}},
        names={"rack": 18},
        tables={"t": {"gb300": 4}},
    )
    assert evaluate_expr("m('K8s.dns.replicas') * rack", s) == 54
    assert (
        evaluate_expr("v('nfd', 'master.replicaCount') + lookup('t', criteria('accelerator'))", s)
        == 6
    )
    assert evaluate_expr("has('K8s.dns.replicas') and not has('K8s.x.y')", s) is True
    assert evaluate_expr("component('nfd') and not component('gpu-operator')", s) is True
    assert evaluate_expr("criteria('os')", s) == "any"
    with pytest.raises(Unavailable) as e:
        evaluate_expr("nodes", s)
    assert e.value.what == "K8s.nodes.gpu"
    with pytest.raises(Unavailable):
        evaluate_expr("m('K8s.x.y')", s)
    with pytest.raises(NotApplicable):
        evaluate_expr("v('gpu-operator', 'a')", s)
    with pytest.raises(Unset):
        evaluate_expr("v('nfd', 'master.config')", s)
    with pytest.raises(ExprError):
        evaluate_expr("lookup('t', 'h100')", s)
    with pytest.raises(ExprError):
        evaluate_expr("undefined_name", s)
    with pytest.raises(ExprError):
        evaluate_expr("1 / 0", s)


def test_defaults_are_lazy() -> None:
    s = scope(components={"gpu-operator": {"driver": {"version": "580.1"}}})
    # the default would need a reading the scope lacks; it is never evaluated
    assert evaluate_expr("v('gpu-operator', 'driver.version', m('GPU.smi.driver'))", s) == "580.1"
    assert evaluate_expr("lookup('t', 'k', m('A.b.c'))", scope(tables={"t": {"k": 1}})) == 1


def test_null_values_count_as_unset() -> None:
    s = scope(components={"p": {"storage": {"emptyDir": None}}})
    assert evaluate_expr("v('p', 'storage.emptyDir', 'none')", s) == "none"
