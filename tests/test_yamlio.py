"""Safe YAML parsing: the line index, and every way a file is refused (always as a located LoadError)."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.core.errors import Diagnostic, LoadError
from generator.core.records import Document
from generator.core.yamlio import (
    MAX_DEPTH,
    MAX_EXPANDED_BYTES,
    MAX_FILE_BYTES,
    MAX_NODES,
    decode,
    parse_yaml,
)


def refused(raw: bytes | str, *, multi: bool = False) -> Diagnostic:
    """The single diagnostic parse_yaml refuses `raw` with."""
    with pytest.raises(LoadError) as e:
        parse_yaml(raw, "f.yaml", multi=multi)
    assert len(e.value.diagnostics) == 1, e.value.diagnostics
    return e.value.diagnostics[0]


def where(d: Diagnostic) -> tuple[int, int, str, str]:
    return d.line, d.col, d.json_path, d.rule


# ---------------------------------------------------------------- the line index


def test_line_index_of_nested_mappings_and_sequences() -> None:
    doc = parse_yaml("a:\n  b: [1, {c: 2}]\n  d: x\nlist:\n  - one\n  - k: v\n", "f.yaml")
    assert doc.data == {"a": {"b": [1, {"c": 2}], "d": "x"}, "list": ["one", {"k": "v"}]}
    assert doc.lines["$.a.b"] == (2, 3)
    assert doc.lines["$.a.b[0]"] == (2, 7)
    assert doc.lines["$.a.b[1].c"] == (2, 11)
    assert doc.lines["$.a.d"] == (3, 3)
    assert doc.lines["$.list[0]"] == (5, 5)
    assert doc.lines["$.list[1].k"] == (6, 5)


def test_every_json_path_of_the_data_is_indexed() -> None:
    doc = parse_yaml("x:\n  - {a: 1, b: [true, null]}\n  - []\ny: {}\n", "f.yaml")
    assert set(doc.lines) == {
        "$",
        "$.x",
        "$.x[0]",
        "$.x[0].a",
        "$.x[0].b",
        "$.x[0].b[0]",
        "$.x[0].b[1]",
        "$.x[1]",
        "$.y",
    }


def test_locate_falls_back_to_the_closest_indexed_ancestor() -> None:
    doc = parse_yaml("spec:\n  refs:\n    - name: a\n", "f.yaml")
    assert doc.locate("$.spec.refs[0].name") == (3, 7)
    assert doc.locate("$.spec.refs[0].valuesFile") == doc.locate("$.spec.refs[0]") == (3, 7)
    assert doc.locate("$.spec.refs[5]") == doc.locate("$.spec.refs")
    assert doc.locate("$.nowhere.deep") == (1, 1)


def test_document_keeps_relative_path_and_sha256_of_the_bytes() -> None:
    raw = b"a: 1\n"
    from_bytes, from_text = parse_yaml(raw, "x/y.yaml"), parse_yaml(raw.decode(), "x/y.yaml")
    assert from_bytes.rel == "x/y.yaml"
    assert from_bytes.sha256 == from_text.sha256 == hashlib.sha256(raw).hexdigest()
    assert from_bytes == from_text


def test_scalars_are_json_compatible() -> None:
    doc = parse_yaml(
        "d: 2024-01-01\nt: 2001-12-14t21:59:43.10-05:00\ns: !!str 5\nv: 1.34\nn: ~\nb: yes\n",
        "f.yaml",
    )
    assert doc.data == {
        "d": "2024-01-01",  # timestamps stay text: JSON has no date type
        "t": "2001-12-14t21:59:43.10-05:00",
        "s": "5",
        "v": 1.34,
        "n": None,
        "b": True,
    }


def test_non_string_keys_become_their_text() -> None:
    assert parse_yaml("1: a\ntrue: b\n", "f.yaml").data == {"1": "a", "true": "b"}


def test_multi_document_stream_becomes_a_list() -> None:
    doc = parse_yaml("a: 1\n---\nb: 2\n", "m.yaml", multi=True)
    assert doc.data == [{"a": 1}, {"b": 2}]
    assert doc.lines["$[1].b"] == (3, 1)
    assert parse_yaml("# nothing\n", "m.yaml", multi=True).data == []


# ---------------------------------------------------------------- refusals, each located


def test_duplicate_key_points_at_the_second_and_names_the_first() -> None:
    d = refused("a:\n  x: 1\n  y: 2\n  x: 3\n")
    assert where(d) == (4, 3, "$.a.x", "yaml.duplicate-key")
    assert "first defined on line 2" in d.message


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("true: 1\nyes: 2\n", "true"),  # YAML 1.1 booleans spelt two ways
        ("1: a\n'1': b\n", "1"),  # an int key and its text
        ("0x10: a\n16: b\n", "16"),  # the same int in hex
    ],
)
def test_duplicate_keys_through_different_spellings(text: str, key: str) -> None:
    d = refused(text)
    assert (d.line, d.json_path, d.rule) == (2, f"$.{key}", "yaml.duplicate-key")


def test_syntax_error_is_located() -> None:
    d = refused("a: [1, 2\nb: 3\n")
    assert d.rule == "yaml.parse" and d.line == 2
    assert "flow sequence" in d.message


def test_tab_indentation_is_a_parse_error_at_the_tab() -> None:
    d = refused("a:\n\tb: 1\n")
    assert (d.line, d.col, d.rule) == (2, 1, "yaml.parse")


@pytest.mark.parametrize(
    "text",
    [
        "x: !!binary aGVsbG8=\n",
        "x: !!set {a, b}\n",
        "x: !!omap [a: 1]\n",
        "x: !custom 1\n",
        "x: !!python/object/apply:os.system [id]\n",
        "x: !!python/name:os.system\n",
    ],
)
def test_only_json_compatible_tags(text: str) -> None:
    d = refused(text)
    assert (d.line, d.col, d.json_path, d.rule) == (1, 4, "$.x", "yaml.tag")


def test_merge_keys_are_refused() -> None:
    d = refused("base: &b {a: 1}\nother:\n  <<: *b\n  c: 2\n")
    assert (d.line, d.rule) == (3, "yaml.tag") and "merge keys" in d.message


def test_complex_keys_are_refused() -> None:
    d = refused("? [a, b]\n: c\n")
    assert (d.line, d.rule) == (1, "yaml.key")


@pytest.mark.parametrize("value", [".inf", "-.inf", ".NaN", "+.INF"])
def test_non_finite_numbers(value: str) -> None:
    d = refused(f"a:\n  b: {value}\n")
    assert (d.line, d.col, d.json_path, d.rule) == (2, 6, "$.a.b", "yaml.non-finite")


def test_large_finite_numbers_are_fine() -> None:
    value = parse_yaml("a: 1.0e+308\n", "f.yaml").data["a"]
    assert value == 1e308 and math.isfinite(value)
    # YAML 1.1 needs the dot: 1e308 is a string, which is no business of the loader's
    assert parse_yaml("a: 1e308\n", "f.yaml").data["a"] == "1e308"


def test_empty_file_and_comment_only_file() -> None:
    assert where(refused("")) == (1, 1, "$", "yaml.empty")
    assert where(refused("# only a comment\n")) == (1, 1, "$", "yaml.empty")


def test_several_documents_where_one_is_expected() -> None:
    d = refused("a: 1\n---\nb: 2\n---\nc: 3\n")
    assert (d.line, d.rule) == (3, "yaml.multi-document") and "found 3" in d.message


def test_depth_limit_boundary() -> None:
    # the root collection is depth 0, so MAX_DEPTH + 1 nested lists are the deepest accepted
    ok = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert parse_yaml(ok, "f.yaml").data is not None
    deep = "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2)
    d = refused(deep)
    assert (d.line, d.col, d.rule) == (1, MAX_DEPTH + 2, "yaml.too-deep")


def test_block_nesting_depth_is_located_at_the_first_level_too_deep() -> None:
    text = (
        "".join(f"{'  ' * i}k{i}:\n" for i in range(MAX_DEPTH + 5)) + "  " * (MAX_DEPTH + 5) + "v\n"
    )
    d = refused(text)
    assert d.rule == "yaml.too-deep"
    # key k<i> is on line i + 1 and its value (depth i + 1) starts on line i + 2: the first
    # mapping too deep is the value of k<MAX_DEPTH>
    assert d.line == MAX_DEPTH + 2
    assert d.json_path == "$." + ".".join(f"k{i}" for i in range(MAX_DEPTH + 1))


def test_alias_bomb_is_stopped() -> None:
    levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for prev, cur in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]")
    d = refused("\n".join(levels) + "\n")
    # 10^9 nodes: refused by their expanded size before anything is built
    assert d.rule == "yaml.alias-bomb" and str(MAX_EXPANDED_BYTES) in d.message


def test_many_small_aliases_are_stopped_by_the_node_count() -> None:
    # 1,000 x 1,000 one-character scalars: small expanded size, too many nodes
    text = "a: &a [" + ", ".join(["x"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 1000) + "]\n"
    d = refused(text)
    assert d.rule == "yaml.alias-bomb" and str(MAX_NODES) in d.message


def test_one_large_scalar_aliased_many_times_is_stopped_by_its_expanded_size() -> None:
    # the bomb: few nodes (far below MAX_NODES), each a 600 KB scalar once expanded
    text = "a: &a " + "x" * 600_000 + "\nb: [" + ", ".join(["*a"] * 100) + "]\n"
    d = refused(text)
    assert (d.line, d.rule) == (2, "yaml.alias-bomb") and "bytes" in d.message


def test_recursive_alias_is_refused() -> None:
    d = refused("a: &a [1, *a]\n")
    assert d.rule == "yaml.alias-bomb" and "recursive" in d.message


def test_aliases_within_the_bound_are_accepted() -> None:
    text = "a: &a " + "x" * 1000 + "\nb: [" + ", ".join(["*a"] * 100) + "]\n"
    assert parse_yaml(text, "f.yaml").data["b"][99] == "x" * 1000


@pytest.mark.parametrize(
    "text",
    [
        "- " * 50_000 + "x\n",  # compact block sequences: one line
        "note: don't\nk: " + "[" * 50_000 + "\n",  # an apostrophe in a plain scalar
        "k: [\"]]]\", '}}', " + "[" * 5000 + "\n",
        "a: |\n  [[[[\nb: " + "{a: " * 5000 + "\n",
        "".join(f"{' ' * i}- \n" for i in range(3000)),
        "? " * 3000 + "x\n",
        "[" + "a: [" * 3000 + "\n",
    ],
    ids=[
        "compact-seq",
        "apostrophe",
        "quoted-closers",
        "block-scalar",
        "indented",
        "keys",
        "pairs",
    ],
)
def test_deep_nesting_of_every_kind_is_refused_without_recursing(text: str) -> None:
    # the composer would recurse once per level in C (a segfault at ~50,000 levels); the
    # event pass refuses the 66th level first, with its position
    d = refused(text)
    assert d.rule == "yaml.too-deep" and d.line >= 1 and d.col >= 1


def test_small_aliases_are_expanded_into_copies() -> None:
    doc = parse_yaml("a: &x {k: [1, 2]}\nb: *x\n", "f.yaml")
    assert doc.data == {"a": {"k": [1, 2]}, "b": {"k": [1, 2]}}
    assert doc.data["a"] is not doc.data["b"]
    assert doc.lines["$.b.k"] == (1, 8)  # an alias's nodes keep the anchor's position


# ---------------------------------------------------------------- bytes → text


def test_decode_refuses_other_encodings_with_line_and_column() -> None:
    with pytest.raises(LoadError) as e:
        decode(b"a: 1\nb: caf\xe9\n", "f.yaml")
    d = e.value.diagnostics[0]
    assert (d.line, d.col, d.rule) == (2, 7, "yaml.encoding") and "0xe9" in d.message


def test_decode_refuses_utf16() -> None:
    with pytest.raises(LoadError) as e:
        parse_yaml("a: 1\n".encode("utf-16"), "f.yaml")
    assert e.value.diagnostics[0].rule == "yaml.encoding"


def test_decode_refuses_a_byte_order_mark() -> None:
    with pytest.raises(LoadError) as e:
        parse_yaml(b"\xef\xbb\xbfa: 1\n", "f.yaml")
    assert where(e.value.diagnostics[0]) == (1, 1, "$", "yaml.bom")


def test_size_limit_boundary() -> None:
    at_limit = b"#" * (MAX_FILE_BYTES - 5) + b"\na: 1"
    assert len(at_limit) == MAX_FILE_BYTES
    assert parse_yaml(at_limit, "f.yaml").data == {"a": 1}
    with pytest.raises(LoadError) as e:
        parse_yaml(at_limit + b"\n", "f.yaml")
    d = e.value.diagnostics[0]
    assert (d.line, d.rule) == (0, "yaml.too-large") and str(MAX_FILE_BYTES + 1) in d.message


# ---------------------------------------------------------------- properties

# NEL and the Unicode line/paragraph separators are line breaks to YAML 1.1; PyYAML's emitter
# folds them inside plain and single-quoted scalars, so they cannot round-trip through safe_dump
_chars = st.characters(exclude_categories=["Cs"], exclude_characters="\x85\u2028\u2029")
_keys = st.text(_chars, min_size=0, max_size=8)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)  # the JSON-exact range
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(_chars, max_size=12)
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)


def _paths(data: Any, path: str = "$") -> set[str]:
    out = {path}
    if isinstance(data, dict):
        for k, v in data.items():
            out |= _paths(v, f"{path}.{k}")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out |= _paths(v, f"{path}[{i}]")
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json)
def test_round_trip_of_json_data_with_a_complete_index(data: Any) -> None:
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    doc = parse_yaml(text, "f.yaml")
    assert doc.data == data
    if not any("." in p or "[" in p for p in _keys_of(data)):
        assert _paths(data) <= set(doc.lines)


def _keys_of(data: Any) -> set[str]:
    if isinstance(data, dict):
        return set(data) | {k for v in data.values() for k in _keys_of(v)}
    if isinstance(data, list):
        return {k for v in data for k in _keys_of(v)}
    return set()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(lambda s: s.encode("utf-8")))
def test_any_input_gives_a_document_or_a_located_load_error(raw: bytes) -> None:
    try:
        doc = parse_yaml(raw, "f.yaml")
    except LoadError as e:
        assert e.diagnostics and all(d.path == "f.yaml" and d.rule for d in e.diagnostics)
    else:
        assert isinstance(doc, Document) and "$" in doc.lines


def test_too_deep_in_a_later_document_of_a_stream_names_that_document() -> None:
    with pytest.raises(LoadError) as e:
        parse_yaml("a: 1\n---\nb: " + "[" * 50_000 + "\n", "m.yaml", multi=True)
    d = e.value.diagnostics[0]
    assert (d.line, d.rule) == (3, "yaml.too-deep")
    assert d.json_path == "$[1].b" + "[0]" * MAX_DEPTH
