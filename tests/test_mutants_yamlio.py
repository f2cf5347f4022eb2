"""The behaviours of `generator/core/yamlio.py` that `make mutation` found unpinned (issue 32).

yamlio is the one reader of every YAML and JSON text (issue 27): these tests pin its bounds at
their exact edges (bytes, nesting, nodes, expanded size, integer size), the JSON reader's own
checks, the node-level readers (`compose_first`, `compose`, `check_syntax`) and the located
diagnostics of each refusal.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from generator.core.errors import Diagnostic, LoadError
from generator.core.yamlio import (
    INDEX,
    JSON_DEPTH,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_INT_DIGITS,
    MAX_SAFE_INT,
    Bounds,
    _diag,
    check_syntax,
    compose,
    compose_first,
    load_json,
    load_yaml,
    parse_json,
    parse_yaml,
)


def _refusal(call: object, *args: object, **kwargs: object) -> Diagnostic:
    assert callable(call)
    with pytest.raises(LoadError) as e:
        call(*args, **kwargs)
    assert len(e.value.diagnostics) == 1, e.value.diagnostics
    return e.value.diagnostics[0]


# ---------------------------------------------------------------- JSON


def test_json_size_limit_is_exact_and_counts_utf8_bytes() -> None:
    assert parse_json('"' + "x" * 8 + '"', "f.json", limit=10) == "x" * 8
    d = _refusal(parse_json, '"' + "x" * 9 + '"', "f.json", limit=10)
    assert (d.path, d.rule) == ("f.json", "json.too-large")
    assert "11 bytes; the limit is 10 bytes" in d.message
    # a str is measured in its UTF-8 bytes: 4 characters, 10 bytes
    assert parse_json('"éééé"'.encode(), "f.json", limit=10) == "éééé"
    assert _refusal(parse_json, '"ééééé"', "f.json", limit=11).rule == "json.too-large"


def test_json_not_utf8_is_refused_with_its_offset() -> None:
    d = _refusal(parse_json, b'{"a": "caf\xe9"}', "f.json")
    assert d.rule == "json.encoding" and "offset 10" in d.message


@pytest.mark.parametrize("opener", ["[", '{"k": '])
def test_json_depth_limit_is_exact(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    ok = opener * JSON_DEPTH + "1" + closer * JSON_DEPTH
    assert parse_json(ok, "f.json") is not None
    deep = opener * (JSON_DEPTH + 1) + "1" + closer * (JSON_DEPTH + 1)
    d = _refusal(parse_json, deep, "f.json")
    assert d.rule == "json.too-deep" and str(JSON_DEPTH) in d.message


def test_json_depth_counts_mixed_brackets_and_closes_them() -> None:
    mixed = '{"k": [' * 33 + "1" + "]}" * 33  # 66 levels, half of each kind
    assert _refusal(parse_json, mixed, "f.json").rule == "json.too-deep"
    # many brackets, none deep: every closing bracket ends a level
    siblings = "[" + ", ".join(["[[1]]"] * 100) + "]"
    assert len(parse_json(siblings, "f.json")) == 100
    siblings = "[" + ", ".join(['{"a": {"b": 1}}'] * 100) + "]"
    assert len(parse_json(siblings, "f.json")) == 100


def test_json_brackets_inside_strings_do_not_nest() -> None:
    inside = '["' + "[{" * 100 + '"]'
    assert parse_json(inside, "f.json") == ["[{" * 100]
    # an escaped quote does not end the string; an escaped backslash does not escape the quote
    escaped = '["\\"' + "[" * 100 + '"]'
    assert parse_json(escaped, "f.json") == ['"' + "[" * 100]
    after = '["\\\\", ' + "[" * 70 + "1" + "]" * 70 + "]"
    assert _refusal(parse_json, after, "f.json").rule == "json.too-deep"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_non_finite_constants_are_refused(constant: str) -> None:
    d = _refusal(parse_json, f'{{"a": {constant}}}', "f.json")
    assert d.rule == "json.parse" and "non-finite" in d.message


def test_json_syntax_error_is_located() -> None:
    d = _refusal(parse_json, '{"a": 1,\n "b": }', "f.json")
    assert (d.line, d.col, d.rule) == (2, 7, "json.parse")


def test_load_json_and_load_yaml_read_through_safeio(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"a": [1]}', encoding="utf-8")
    assert load_json(tmp_path / "a.json", root=tmp_path) == {"a": [1]}
    (tmp_path / "bad.json").write_text('{"a": ', encoding="utf-8")
    assert _refusal(load_json, tmp_path / "bad.json", root=tmp_path).path == str(
        tmp_path / "bad.json"
    )
    assert _refusal(load_json, tmp_path / "bad.json", root=tmp_path, rel="r.json").path == "r.json"
    (tmp_path / "a.yaml").write_text("# nothing\n", encoding="utf-8")
    assert load_yaml(tmp_path / "a.yaml", root=tmp_path, allow_empty=True).data is None
    d = _refusal(load_yaml, tmp_path / "a.yaml", root=tmp_path, rel="r.yaml")
    assert (d.path, d.rule) == ("r.yaml", "yaml.empty")
    (tmp_path / "b.yaml").write_text("a: 123456\n", encoding="utf-8")
    small = Bounds(file_bytes=12)
    assert load_yaml(tmp_path / "b.yaml", root=tmp_path, bounds=small).rel == str(
        tmp_path / "b.yaml"
    )


# ---------------------------------------------------------------- YAML scalars


def test_integer_bounds_are_exact() -> None:
    assert parse_yaml(f"a: {MAX_SAFE_INT}\n", "f.yaml").data == {"a": MAX_SAFE_INT}
    assert parse_yaml(f"a: {-MAX_SAFE_INT}\n", "f.yaml").data == {"a": -MAX_SAFE_INT}
    for text in (f"a: {MAX_SAFE_INT + 1}\n", f"a: {-MAX_SAFE_INT - 1}\n"):
        d = _refusal(parse_yaml, text, "f.yaml")
        assert (d.line, d.col, d.json_path, d.rule) == (1, 4, "$.a", "yaml.number")
    d = _refusal(parse_yaml, "a: " + "1" * (MAX_INT_DIGITS + 1) + "\n", "f.yaml")
    assert d.rule == "yaml.number" and f"{MAX_INT_DIGITS + 1} digits" in d.message
    # exactly MAX_INT_DIGITS digits is read (then refused as out of JSON's range, not by digits)
    d = _refusal(parse_yaml, "a: " + "1" * MAX_INT_DIGITS + "\n", "f.yaml")
    assert d.rule == "yaml.number" and "digits" not in d.message


def test_booleans_and_timestamps() -> None:
    data = parse_yaml("a: true\nb: 2024-01-02\n", "f.yaml").data
    assert data == {"a": True, "b": "2024-01-02"}


def test_strings_mode_keeps_every_scalar_as_its_text() -> None:
    data = parse_yaml("version: 1.10\nn: 3\nok: yes\n", "f.yaml", strings=True).data
    assert data == {"version": "1.10", "n": "3", "ok": "yes"}
    assert parse_yaml("version: 1.10\n", "f.yaml").data == {"version": 1.1}
    d = _refusal(parse_yaml, "a: !!binary aGk=\n", "f.yaml", strings=True)
    assert d.rule == "yaml.tag"


def test_a_control_character_is_refused_at_its_position() -> None:
    d = _refusal(parse_yaml, "a: 1\nbc: x\x01y\n", "f.yaml")
    assert (d.line, d.col, d.rule) == (2, 6, "yaml.parse") and "#x0001" in d.message


# ---------------------------------------------------------------- bounds


def test_bounds_are_the_callers() -> None:
    small = Bounds(file_bytes=8, nodes=2, expanded_bytes=20)
    assert parse_yaml(b"a: 12345", "f.yaml", bounds=small).data == {"a": 12345}
    assert _refusal(parse_yaml, b"a: 123456", "f.yaml", bounds=small).rule == "yaml.too-large"
    # 3 nodes built: the mapping and its two values (keys are read, not built)
    d = _refusal(parse_yaml, "a: 1\nb: 2\n", "f.yaml", bounds=small)
    assert d.rule == "yaml.alias-bomb" and "more than 2 nodes" in d.message
    assert parse_yaml("a: 1\n", "f.yaml", bounds=small).data == {"a": 1}
    big = "k: " + "x" * (MAX_FILE_BYTES + 10) + "\n"
    assert len(parse_yaml(big.encode(), "index.yaml", bounds=INDEX).data["k"]) > MAX_FILE_BYTES


def test_expanded_size_limit_is_exact_and_names_the_largest_path() -> None:
    # sizes: each scalar its length + 1, each collection 1 + its children
    # keys "a", "b": 2 each; a: 9; b: 1 + 9 + 9 = 19; the mapping: 1 + 2 + 9 + 2 + 19 = 33
    text = "a: &a xxxxxxxx\nb: [*a, *a]\n"
    assert (
        parse_yaml(text, "f.yaml", bounds=Bounds(expanded_bytes=33)).data["b"] == ["xxxxxxxx"] * 2
    )
    d = _refusal(parse_yaml, text, "f.yaml", bounds=Bounds(expanded_bytes=32))
    assert d.rule == "yaml.alias-bomb" and "33 bytes; the limit is 32" in d.message
    assert (d.line, d.json_path) == (1, "$")
    d = _refusal(parse_yaml, text, "f.yaml", bounds=Bounds(expanded_bytes=15))
    assert (d.line, d.col, d.json_path) == (2, 4, "$.b") and "19 bytes" in d.message
    d = _refusal(parse_yaml, "a: &a [1, 2]\nb: [0, [*a, *a, *a]]\n", "f.yaml",
                 bounds=Bounds(expanded_bytes=12))  # fmt: skip
    assert d.json_path == "$.b[1]"


def test_expanded_size_in_a_stream_names_the_document() -> None:
    text = "a: 1\n---\nx: &x yyyyyyyy\nz: [*x, *x, *x]\n"
    d = _refusal(parse_yaml, text, "f.yaml", multi=True, bounds=Bounds(expanded_bytes=25))
    assert d.json_path == "$[1].z"
    # only the documents together are too large (11 bytes each): the last one is named
    two = "a: &a [1]\nb: *a\n---\nc: &c [1]\nd: *c\n"
    assert len(parse_yaml(two, "f.yaml", multi=True, bounds=Bounds(expanded_bytes=22)).data) == 2
    d = _refusal(parse_yaml, two, "f.yaml", multi=True, bounds=Bounds(expanded_bytes=15))
    assert (d.line, d.json_path) == (4, "$[1]")


# ---------------------------------------------------------------- streams and nodes


def test_a_stream_indexes_each_document() -> None:
    doc = parse_yaml("a: 1\n---\nb: [x]\n", "f.yaml", multi=True)
    assert doc.data == [{"a": 1}, {"b": ["x"]}]
    assert doc.lines["$"] == (1, 1)
    assert doc.lines["$[1].b[0]"] == (3, 5)


def test_compose_first_returns_the_first_document_under_the_bounds() -> None:
    node = compose_first(b"# c\n---\na: 1\n---\nb: 2\n", "f.yaml")
    assert isinstance(node, yaml.MappingNode) and node.value[0][0].value == "a"
    assert compose_first(b"# only a comment\n", "f.yaml") is None
    bomb = "a: &a " + "x" * 600_000 + "\nb: [" + ", ".join(["*a"] * 10) + "]\n"
    assert _refusal(compose_first, bomb.encode(), "f.yaml").rule == "yaml.alias-bomb"
    assert _refusal(compose_first, b"\xef\xbb\xbfa: 1\n", "f.yaml").rule == "yaml.bom"
    deep = ("[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2)).encode()
    assert _refusal(compose_first, deep, "f.yaml").rule == "yaml.too-deep"


def test_compose_returns_every_document_under_the_bounds() -> None:
    nodes = compose("a: 1\n---\nb: 2\n", "f.yaml")
    assert [n.value[0][0].value for n in nodes] == ["a", "b"]
    bomb = "a: &a " + "x" * 600_000 + "\nb: [" + ", ".join(["*a"] * 10) + "]\n"
    d = _refusal(compose, "x: 1\n---\n" + bomb, "f.yaml")
    assert (d.rule, d.json_path) == ("yaml.alias-bomb", "$[1].b")
    assert _refusal(compose, "a: &a [*a]\n", "f.yaml").rule == "yaml.alias-bomb"


def test_check_syntax_refuses_bad_yaml_and_deep_nesting_builds_nothing() -> None:
    check_syntax("a: 1\n---\nb: [1, 2]\n", "t.yaml")
    with pytest.raises(yaml.YAMLError):
        check_syntax("a: [1\n", "t.yaml")
    deep = "x: 1\n---\n" + "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2)
    d = _refusal(check_syntax, deep, "t.yaml")
    assert (d.line, d.rule, d.json_path) == (3, "yaml.too-deep", "$[1]" + "[0]" * (MAX_DEPTH + 1))


# ---------------------------------------------------------------- positions


def test_a_diagnostic_without_a_mark_has_no_position() -> None:
    d = _diag("f.yaml", None, "m", "yaml.parse")
    assert (d.line, d.col, d.json_path) == (0, 0, "$")
    d = _diag("f.yaml", yaml.Mark("f.yaml", 0, 2, 5, "", 0), "m", "yaml.parse", "$.a")
    assert (d.line, d.col, d.json_path) == (3, 6, "$.a")


def test_file_too_large_has_no_position() -> None:
    d = _refusal(parse_yaml, b"a: 12345", "f.yaml", bounds=Bounds(file_bytes=4))
    assert (d.line, d.col, d.json_path, d.rule) == (0, 0, "$", "yaml.too-large")


def test_encoding_error_column_counts_from_the_newline_before_it() -> None:
    d = _refusal(parse_yaml, b"\n\xe9", "f.yaml")
    assert (d.line, d.col, d.rule) == (2, 1, "yaml.encoding") and "offset 1" in d.message
    d = _refusal(parse_yaml, b"\xe9", "f.yaml")
    assert (d.line, d.col) == (1, 1)


def test_a_scalar_counts_as_a_level_of_nesting() -> None:
    # MAX_DEPTH + 1 nested lists pass the event pass (collections only); the scalar inside the
    # innermost is one level deeper, refused by the builder, located at the scalar
    assert parse_yaml("[" * MAX_DEPTH + "x" + "]" * MAX_DEPTH, "f.yaml").data is not None
    d = _refusal(parse_yaml, "[" * (MAX_DEPTH + 1) + "x" + "]" * (MAX_DEPTH + 1), "f.yaml")
    assert (d.line, d.col, d.rule) == (1, MAX_DEPTH + 2, "yaml.too-deep")
    assert d.json_path == "$" + "[0]" * (MAX_DEPTH + 1)


def test_a_tab_before_the_error_is_named_and_only_then() -> None:
    d = _refusal(parse_yaml, "a: 1\nb:\tc: [1\n", "f.yaml")
    assert (d.line, d.col) == (2, 5) and "a tab character" in d.message
    # an error at the end of the text (past its last line) and one with no tab before it
    d = _refusal(parse_yaml, "a: [1, 2", "f.yaml")
    assert (d.line, d.col) == (2, 1) and "tab" not in d.message
    d = _refusal(parse_yaml, "a: [1, 2\nb: 3\t\n", "f.yaml")
    assert "tab" not in d.message


def test_empty_documents_and_streams() -> None:
    empty = parse_yaml("# c\n", "f.yaml", allow_empty=True)
    assert (empty.data, empty.lines) == (None, {"$": (1, 1)})
    assert empty.sha256 == hashlib.sha256(b"# c\n").hexdigest()
    stream = parse_yaml("", "f.yaml", multi=True)
    assert (stream.data, stream.lines) == ([], {"$": (1, 1)})
    assert parse_yaml("a: 1\n", "f.yaml", allow_empty=True).data == {"a": 1}


def test_a_control_character_after_a_leading_newline() -> None:
    d = _refusal(parse_yaml, "\nb: \x01\n", "f.yaml")
    assert (d.line, d.col, d.rule) == (2, 4, "yaml.parse")


def test_each_mapping_is_one_level_of_nesting() -> None:
    ok = "{a: " * MAX_DEPTH + "1" + "}" * MAX_DEPTH  # the scalar at depth MAX_DEPTH
    assert parse_yaml(ok, "f.yaml").data is not None
    deep = "{a: " * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    d = _refusal(parse_yaml, deep, "f.yaml")
    assert (d.rule, d.json_path) == ("yaml.too-deep", "$" + ".a" * (MAX_DEPTH + 1))


def test_the_event_pass_accepts_the_deepest_allowed_nesting() -> None:
    # MAX_DEPTH + 1 collections (the root is depth 0 in the builder) with more indicator
    # characters than that, so the event pass runs rather than its short cut
    levels = MAX_DEPTH + 1
    text = "# -:-:\n" + "[" * levels + "]" * levels
    assert parse_yaml(text, "f.yaml").data is not None
    check_syntax(text, "t.yaml")
    d = _refusal(parse_yaml, "# -:-:\n" + "[" * (levels + 1) + "]" * (levels + 1), "f.yaml")
    assert (d.line, d.col, d.rule) == (2, levels + 1, "yaml.too-deep")


def test_too_deep_names_the_key_and_the_item_it_is_under() -> None:
    # the second key of a mapping, the second item of a list: the path the slow pass tracks
    d = _refusal(parse_yaml, "a: 1\nb: [x, " + "[" * 70 + "\n", "f.yaml")
    assert (d.line, d.col, d.rule) == (2, 71, "yaml.too-deep")
    assert d.json_path == "$.b[1]" + "[0]" * (MAX_DEPTH - 1)


def test_a_scalar_aliased_from_several_collections_is_no_recursion() -> None:
    doc = parse_yaml("a: &s x\nb: [*s]\nc: [*s, *s]\n", "f.yaml")
    assert doc.data == {"a": "x", "b": ["x"], "c": ["x", "x"]}


# ---------------------------------------------------------------- the path of an expansion too large


def test_expanded_size_path_stops_at_a_child_exactly_at_the_limit() -> None:
    # sizes: a's list [1, 2] is 5; [*a, *a, *a] is 16; b: 1 + 2 + 16 = 19; the document 29.
    # A child exactly at the limit is not too large: the path stops at its parent.
    text = "a: &a [1, 2]\nb: [0, [*a, *a, *a]]\n"
    d = _refusal(parse_yaml, text, "f.yaml", bounds=Bounds(expanded_bytes=19))
    assert (d.line, d.col, d.json_path) == (1, 1, "$") and "29 bytes" in d.message
    d = _refusal(parse_yaml, text, "f.yaml", bounds=Bounds(expanded_bytes=16))
    assert (d.line, d.col, d.json_path) == (2, 4, "$.b") and "19 bytes" in d.message
    # two documents of 11 bytes each, the limit 11: neither alone is too large, the last is named
    two = "a: &a [1]\nb: *a\n---\nc: &c [1]\nd: *c\n"
    d = _refusal(parse_yaml, two, "f.yaml", multi=True, bounds=Bounds(expanded_bytes=11))
    assert (d.line, d.json_path) == (4, "$[1]") and "11 bytes" in d.message


def test_expanded_size_path_follows_the_first_child_too_large() -> None:
    # both keys' values are over the limit of 4 (a: 5 bytes, b: 19): the first is named
    text = "a: &a [1, 2]\nb: [0, [*a, *a, *a]]\n"
    d = _refusal(parse_yaml, text, "f.yaml", bounds=Bounds(expanded_bytes=4))
    assert (d.line, d.col, d.json_path) == (1, 4, "$.a") and "5 bytes" in d.message
    # a list of two items over the limit (5 and 11 bytes): the first is named, not the last
    d = _refusal(parse_yaml, "- &a [1, 2]\n- [*a, *a]\n", "f.yaml", bounds=Bounds(expanded_bytes=4))
    assert (d.line, d.col, d.json_path) == (1, 3, "$[0]") and "5 bytes" in d.message


# ---------------------------------------------------------------- streams: each document is one level


def test_each_document_of_a_stream_is_one_level_deep() -> None:
    # the data of a stream is the list of its documents: a document's root is depth 1
    ok = "a: 1\n---\n" + "[" * (MAX_DEPTH - 1) + "x" + "]" * (MAX_DEPTH - 1)
    assert parse_yaml(ok, "f.yaml", multi=True).data[1] is not None
    deep = "a: 1\n---\n" + "[" * MAX_DEPTH + "x" + "]" * MAX_DEPTH
    d = _refusal(parse_yaml, deep, "f.yaml", multi=True)
    assert (d.line, d.rule, d.json_path) == (3, "yaml.too-deep", "$[1]" + "[0]" * MAX_DEPTH)


def test_node_readers_name_the_document_of_a_stream() -> None:
    # compose_first and compose read streams: their refusals name the document ($[i])
    deep = "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2)
    for call, arg in ((compose_first, deep.encode()), (compose, deep)):
        d = _refusal(call, arg, "f.yaml")
        assert (d.rule, d.json_path) == ("yaml.too-deep", "$[0]" + "[0]" * (MAX_DEPTH + 1))
    d = _refusal(compose, "x: 1\n---\n" + deep, "f.yaml")
    assert d.json_path == "$[1]" + "[0]" * (MAX_DEPTH + 1)
    bomb = "a: &a " + "x" * 600_000 + "\nb: [" + ", ".join(["*a"] * 10) + "]\n"
    d = _refusal(compose_first, bomb.encode(), "f.yaml")
    assert (d.line, d.col, d.json_path) == (2, 4, "$[0].b")


def test_a_single_document_is_indexed_from_the_top_of_the_file() -> None:
    # "$" is the whole file, at line 1 column 1, wherever its first node starts
    doc = parse_yaml("\n\n  a: 1\n", "f.yaml")
    assert doc.lines == {"$": (1, 1), "$.a": (3, 3)}


# ---------------------------------------------------------------- JSON refusals with no position


def test_json_refusals_before_parsing_have_no_position() -> None:
    # size, encoding and depth are judged on the whole text: no line or column is claimed
    cases: list[tuple[bytes, int]] = [
        (b'"' + b"x" * 20 + b'"', 10),
        (b'{"a": "caf\xe9"}', 100),
        (b"[" * (JSON_DEPTH + 1) + b"]" * (JSON_DEPTH + 1), 1000),
        (b'{"a": NaN}', 100),
    ]
    rules = []
    for raw, limit in cases:
        d = _refusal(parse_json, raw, "f.json", limit=limit)
        assert (d.line, d.col, d.json_path) == (0, 0, "$"), d
        rules.append(d.rule)
    assert rules == ["json.too-large", "json.encoding", "json.too-deep", "json.parse"]


def test_json_depth_at_the_limit_past_the_bracket_count_short_cut() -> None:
    # more brackets than JSON_DEPTH (so the depth is measured), nested exactly JSON_DEPTH deep
    ok = "[" * JSON_DEPTH + "1" + "]" * JSON_DEPTH
    assert parse_json(ok[:-1] + ", []]", "f.json") is not None
    # a closing bracket ends one level: after [0] the next list is at depth 2, not 1
    deep = "[[0], " + "[" * JSON_DEPTH + "1" + "]" * JSON_DEPTH + "]"
    assert _refusal(parse_json, deep, "f.json").rule == "json.too-deep"


def test_two_documents_where_one_is_expected() -> None:
    d = _refusal(parse_yaml, "a: 1\n---\nb: 2\n", "f.yaml")
    assert (d.line, d.col, d.rule) == (3, 1, "yaml.multi-document") and "found 2" in d.message


def test_a_tab_after_the_error_is_not_named() -> None:
    # the error is at the second ':' (column 5, no context mark); the tab right after it is
    # not before the error, so indentation is not blamed
    d = _refusal(parse_yaml, "a: b:\tc\n", "f.yaml")
    assert (d.line, d.col, d.rule) == (1, 5, "yaml.parse")
    assert "mapping values" in d.message and "tab" not in d.message
