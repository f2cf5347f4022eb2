"""generator.fast.yamlwrite: the fast BUNDLE path writes exactly what a plain `yaml.dump` with
the style's dumper writes (`dump_yaml_reference`), from the memo too; the CATALOG style is the
reference itself; `render.common.to_yaml` and `core.canonical.dump_yaml` go through it.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core.canonical import dump_yaml as catalog_dump_yaml
from generator.fast import yamlwrite
from generator.fast.yamlwrite import YamlStyle, dump_yaml, dump_yaml_reference
from generator.render.common import to_yaml as render_to_yaml

# --- YAML ---------------------------------------------------------------------------------------


def _plain_dump(obj: Any, sort_keys: bool) -> str:
    return dump_yaml_reference(obj, YamlStyle.BUNDLE, sort_keys=sort_keys)


def to_yaml(obj: Any, *, sort_keys: bool = False) -> str:
    return dump_yaml(obj, YamlStyle.BUNDLE, sort_keys=sort_keys)


@pytest.fixture(autouse=True)
def _empty_memo() -> None:
    yamlwrite._MEMO.clear()


def test_memo_hits_only_for_equal_typed_values() -> None:
    # equal under ==, different YAML: the memo must tell them apart
    variants: list[Any] = [
        {"a": 1},
        {"a": 1.0},
        {"a": True},
        {"a": "1"},
        {1: "a"},
        {"1": "a"},
        {True: "a"},
        {"a": [1]},
        {"a": (1,)},
        {"a": None},
        {"a": ""},
        {"b": 1, "a": 2},
        {"a": 2, "b": 1},
    ]
    for _ in range(2):  # the second round is served from the memo
        for v in variants:
            for sort_keys in (False, True):
                assert to_yaml(v, sort_keys=sort_keys) == _plain_dump(v, sort_keys), v
    assert len(yamlwrite._MEMO) > 0


class _Str(str):
    pass


def test_memo_does_not_serve_values_yaml_refuses() -> None:
    assert to_yaml({"a": "x"}) == "a: x\n"
    with pytest.raises(yaml.representer.RepresenterError):
        to_yaml({"a": _Str("x")})  # a str subclass is not plain data for the safe dumper
    with pytest.raises(yaml.representer.RepresenterError):
        to_yaml({"a": object()})  # cannot even be pickled: dumped uncached, and refused
    assert to_yaml({"a": "x"}) == "a: x\n"


def test_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlwrite, "_MEMO_LIMIT", 100)
    for i in range(50):
        assert to_yaml({"key": f"value {i}"}) == f"key: value {i}\n"
    assert sum(len(t) for t in yamlwrite._MEMO.values()) <= 100


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(
        [
            "",
            " ",
            "yes",
            "No",
            "on",
            "null",
            "~",
            "1.0",
            "0x1F",
            "1e3",
            ".inf",
            "2024-01-01",
            "<<",
            "=",
            "a: b",
            "- x",
            "#c",
            "line\nline",
            "line\nend ",
            "tab\there",
            "é",
            "\u2028",
            "'q'",
            '"d"',
        ]
    ),
    st.binary(max_size=8),
    st.dates(),
    st.datetimes(),
)
_keys = st.one_of(st.text(max_size=10), st.integers(-5, 5), st.booleans(), st.none())
_data = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
        st.frozensets(st.integers(0, 9), max_size=3).map(set),
    ),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(_data, st.booleans())
def test_to_yaml_is_what_yaml_dump_writes(obj: Any, sort_keys: bool) -> None:
    expected = _plain_dump(obj, sort_keys)
    assert dump_yaml(obj, YamlStyle.BUNDLE, sort_keys=sort_keys, memo=False) == expected
    assert to_yaml(obj, sort_keys=sort_keys) == expected
    assert to_yaml(obj, sort_keys=sort_keys) == expected  # from the memo


def test_a_dump_without_the_memo_leaves_it_alone() -> None:
    doc = {"a": [1, {"b": "x"}]}
    assert dump_yaml(doc, memo=False) == _plain_dump(doc, False)
    assert yamlwrite._MEMO == {}


def test_to_yaml_of_dates_and_mixed_keys() -> None:
    obj = {
        "when": datetime.date(2024, 1, 2),
        "at": datetime.datetime(2024, 1, 2, 3, 4, 5),
        2: "two",
        "b": {"z": 1, "a": [1, 2.5, None, "x\ny"]},
    }
    for sort_keys in (False, True):
        assert to_yaml(obj, sort_keys=sort_keys) == _plain_dump(obj, sort_keys)


def test_resolver_memo_keeps_quoting_what_would_read_back_as_another_type() -> None:
    yamlwrite._FastDumper._implicit_tags.clear()
    tricky = ["yes", "1", "1.5", "null", "~", "", "2024-01-01", "true", "<<", "=", "plain"]
    obj: dict[str, Any] = {t: [t, {t: t}] for t in tricky}
    obj["note"] = "two\nlines"  # a literal block: the document goes to yaml.dump (_FastDumper)
    first = to_yaml(obj)
    yamlwrite._MEMO.clear()  # dump again, now with every tag from the resolver memo
    assert to_yaml(obj) == first == _plain_dump(obj, False)
    assert yaml.safe_load(first) == obj
    assert set(yamlwrite._FastDumper._implicit_tags) >= set(tricky) - {""}


@settings(max_examples=150, deadline=None)
@given(_data)
def test_the_catalog_style_is_the_plain_dump(obj: Any) -> None:
    want = yaml.dump(
        obj,
        Dumper=yamlwrite._CatalogDumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=100,
    )
    assert catalog_dump_yaml(obj) == dump_yaml(obj, YamlStyle.CATALOG, sort_keys=True) == want


def test_the_two_styles_differ_where_they_should() -> None:
    doc = {"z": "a long line " * 12, "a": "two\nlines ", "m": "x\ny"}
    bundle = render_to_yaml(doc)
    catalog = catalog_dump_yaml(doc)
    assert bundle.startswith("z: ") and catalog.startswith("a: ")  # given order vs sorted
    assert "'two\n\n  lines '" in bundle and '"two\\nlines "' in catalog  # trailing space
    assert "m: |-\n  x\n  y\n" in bundle and "m: |-\n  x\n  y\n" in catalog
    assert max(map(len, bundle.splitlines())) > 140 > max(map(len, catalog.splitlines()))  # folded
    assert yaml.safe_load(bundle) == yaml.safe_load(catalog) == doc


# --- the direct emitter (plain documents written without yaml.dump) ----------------------------

_tricky_text = st.sampled_from(
    ["", " ", "yes", "No", "null", "~", "1.0", "0x1F", "0o17", "+1", "-.5", ".inf", "2024-01-01",
     "<<", "=", "a: b", "- x", "-", "?", ":", "#c", "a  #b", "*a", "&a", "!t", "%p", "@", "`",
     "|", ">", "[", "{", ",", "tab\there", "é", "\u2028", "\x85", "\r", "\ufeff", "\x00",
     "'q'", '"d"', "trail ", " lead", "x" * 130, "line\nline"]
)  # fmt: skip
_plain_text = st.one_of(
    st.text(max_size=12), _tricky_text, st.text(alphabet=" -:#'\"\t\\é\u2028ab01.", max_size=8)
)
_plain_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    _plain_text,
)
_plain_keys = st.one_of(_plain_text, st.integers(-5, 5), st.booleans(), st.none())
_plain_data = st.recursive(
    _plain_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_plain_keys, inner, max_size=4)
    ),
    max_leaves=40,
)


@settings(max_examples=1500, deadline=None)
@given(_plain_data, st.booleans())
def test_the_direct_emitter_writes_what_yaml_dump_writes(obj: Any, sort_keys: bool) -> None:
    # None: left to yaml.dump (a multi-line or complex-key scalar, an empty or scalar document)
    got = yamlwrite._emitted(obj, sort_keys)
    assert got is None or got == _plain_dump(obj, sort_keys)


def test_the_direct_emitter_writes_the_documents_bundles_hold() -> None:
    # the shapes of recipe.yaml and bundle-info.yaml: nested mappings, indentless sequences of
    # mappings, empty collections, quoted look-alikes, floats (0.0 and -0.0 apart)
    doc = {
        "apiVersion": "aicr.run/v1",
        "spec": {
            "componentRefs": [
                {"name": "a", "values": {"x": [1, {"y": []}], "z": {}}, "depth": 0},
                {"name": "b", "dependencyRefs": ["a"], "values": {"on": "yes", "n": "1"}},
            ],
            "overrides": [{"value": -0.0}, {"value": 0.0}, {"value": 2.5}, {"value": None}],
            "nested": [[1, [2, {"k": [[]]}]], [{}]],
        },
    }
    for sort_keys in (False, True):
        yamlwrite._SCALARS.clear()
        first = yamlwrite._emitted(doc, sort_keys)
        assert first == _plain_dump(doc, sort_keys)  # not None: written directly
        assert yamlwrite._emitted(doc, sort_keys) == first  # again, every scalar from its memo
        assert first is not None and yaml.safe_load(first) == doc


@pytest.mark.parametrize(
    "doc",
    [
        {"a": "two\nlines"},  # a literal block: indented by where it stands
        {"a": ["x\u2028y"]},  # a YAML line break libyaml folds into a quoted scalar
        {"k" * 200: 1},  # a complex `? ` key
        {"a": _Str("x")},  # not plain data (yaml.dump refuses it)
        {"a": (1, 2)},
        {},
        [],
    ],
)
def test_the_direct_emitter_leaves_the_rest_to_yaml_dump(doc: Any) -> None:
    assert yamlwrite._emitted(doc, False) is None


def test_the_scalar_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlwrite, "_SCALARS_LIMIT", 400)
    yamlwrite._SCALARS.clear()
    monkeypatch.setattr(yamlwrite, "_scalar_chars", 0)
    for i in range(200):
        doc = {f"key {i}": f"value {i}"}
        assert yamlwrite._emitted(doc, False) == _plain_dump(doc, False)
    held = sum(len(k[2]) + len(t or "") + 16 for k, t in yamlwrite._SCALARS.items())
    assert 0 < held <= 400 and len(yamlwrite._SCALARS) < 200


def _dicts(obj: Any) -> list[Any]:
    """Every non-empty dict and list inside `obj` (itself included)."""
    found: list[Any] = []
    if type(obj) is dict:
        if obj:
            found.append(obj)
        for v in obj.values():
            found += _dicts(v)
    elif type(obj) is list:
        if obj:
            found.append(obj)
        for v in obj:
            found += _dicts(v)
    return found


@settings(max_examples=600, deadline=None)
@given(_plain_data, st.booleans(), st.randoms(use_true_random=False))
def test_blocks_written_already_are_what_yaml_dump_writes(
    obj: Any, sort_keys: bool, rnd: Any
) -> None:
    """A document written with some of its mappings' texts given (`block`, then
    `dump_yaml(blocks=)`) is the plain dump; a mapping yaml.dump wrote has no block."""
    blocks: dict[int, tuple[Any, str]] = {}
    for d in _dicts(obj):
        if rnd.random() < 0.5:
            continue
        text = yamlwrite.block(d, sort_keys=sort_keys)
        assert yamlwrite.emitted_block(d, sort_keys=sort_keys) == text
        if text is None:
            assert yamlwrite._emitted(d, sort_keys) is None
        else:
            assert text == _plain_dump(d, sort_keys)
            blocks[id(d)] = (d, text)
    got = dump_yaml(obj, YamlStyle.BUNDLE, sort_keys=sort_keys, memo=False, blocks=blocks)
    assert got == _plain_dump(obj, sort_keys)


def test_a_block_is_found_by_identity_only() -> None:
    inner = {"b": [1, {"c": "x"}]}
    doc = {"a": {"k": inner, "l": dict(inner)}}
    text = yamlwrite.block(inner, sort_keys=False)
    assert text == "b:\n- 1\n- c: x\n"
    stale = {id(inner): (dict(inner), "WRONG\n")}  # another object under its id: not used
    assert dump_yaml(doc, memo=False, blocks=stale) == _plain_dump(doc, False)
    given_ = {id(inner): (inner, text)}
    assert dump_yaml(doc, memo=False, blocks=given_) == _plain_dump(doc, False)
    assert yamlwrite.block({"a": "two\nlines"}, sort_keys=False) is None  # yaml.dump's text
    assert yamlwrite.block({}, sort_keys=False) is None
    yamlwrite._MEMO.clear()  # the memo emptied: the block is written again, still the same
    assert yamlwrite.block(inner, sort_keys=False) == text
