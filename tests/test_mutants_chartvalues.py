"""The behaviours of `generator/catalog/chartvalues.py` that `make mutation` found unpinned
(issue 32): how a template's actions are read (scopes, pipelines, `index`/`dig`, `range`/`with`,
variables) and how a value is judged against how it is printed. Unit level, no Helm: the
Helm-rendering tests of tests/test_chart_values.py run after these.
"""

from __future__ import annotations

from typing import Any

import pytest

from generator.catalog import chartvalues
from generator.catalog.chartvalues import INT, NUMBER, RAW, Use, plain_safe, problems, uses

HEAD = '{{- $v := index .Values "comp" }}\n'


def _found(body: str) -> set[tuple[tuple[str, ...], str]]:
    return {(u.path, u.how) for u in uses(HEAD + body, "comp")}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # references: a variable, `.Values.<component>`, `.` inside `with`/`range`
        ("a: {{ .Values.comp }}\n", {((), RAW)}),
        ("a: {{ .Values.other.x }}\n", set()),
        ("a: {{ .Values }}\n", set()),
        ("a: {{ $w.x }}\n", set()),
        ("a: {{ .x }}\n", set()),
        ("{{ with $v.a }}b: {{ .c }}{{ end }}\n", {(("a", "c"), RAW)}),
        ("{{ with $v.a }}{{ .Values.comp.z }}{{ end }}\n", {(("z",), RAW)}),
        ("{{ with $v.a }}b: {{ .Values.x }}{{ end }}\n", set()),
        ("{{ range $v.l }}- {{ .n }}{{ end }}\n", {(("l", "*", "n"), RAW)}),
        ("{{ range $v.l }}{{ end }}c: {{ .n }}\n", set()),
        ("{{ if $v.on }}b: {{ $v.x }}{{ end }}\n", {(("x",), RAW)}),
        ("{{ with $v.a }}{{ if .on }}b: {{ .x }}{{ end }}{{ end }}\n", {(("a", "x"), RAW)}),
        ('{{ define "t" }}b: {{ .x }}{{ end }}\n', set()),
        ("{{ with $v.a }}{{ end }}{{ end }}b: {{ .x }}\n", set()),
        ("{{ with $v.a | default $v.b }}b: {{ .x }}{{ end }}\n", set()),
        (
            "{{ range $i, $e := $v.l }}b: {{ $e.n }} {{ .m }}{{ end }}\n",
            {(("l", "*", "n"), RAW), (("l", "*", "m"), RAW)},
        ),
        ("{{ with $e := $v.a }}b: {{ $e.n }}{{ end }}\n", {(("a", "n"), RAW)}),
        ("{{ range $e := $w.l }}b: {{ $e.n }}{{ end }}\n", set()),
        ('{{ range $e := index .Values "other" }}b: {{ $e }}{{ end }}\n', set()),
        # assignments
        ("{{ $x := $v.a }}b: {{ $x.c }}\n", {(("a", "c"), RAW)}),
        ("{{ $x := $v.a | default 1 }}b: {{ $x }}\n", set()),
        ('{{ $x := index .Values "other" }}b: {{ $x.c }}\n', set()),
        ("{{ $x = $v.a }}b: {{ $x }}\n", {(("a",), RAW)}),
        # index and dig
        ('b: {{ index $v "a" "b" }}\n', {(("a", "b"), RAW)}),
        # a key that is no literal: the whole base is taken as printed (the safe side)
        ("b: {{ index $v .k }}\n", {((), RAW)}),
        ("b: {{ index $v }}\n", {((), RAW)}),
        ('b: {{ dig "a" "b" "" $v }}\n', {(("a", "b"), RAW)}),
        ('b: {{ dig "a" .k "" $v }}\n', {((), RAW)}),
        ('b: {{ dig "a" "" $w }}\n', set()),
        ('b: {{ (index $v "a") }}\n', {(("a",), RAW)}),
        ('b: {{ default (index $v "a") $v.b }}\n', {(("b",), RAW), ((), RAW)}),
        # how it is printed
        ("b: {{ $v.a | int64 }}\n", {(("a",), INT)}),
        ("b: {{ $v.a | squote }}\n", set()),
        ("b: {{ $v.a | indent 2 }}\n", set()),
        ("b: {{ $v.a | toYaml | indent 2 }}\n", set()),
        ("b: {{ $v.a | toYaml | trim | upper }}\n", {(("a",), RAW)}),
        ("b: {{ $v.a | upper }}\n", {(("a",), RAW)}),
        ("b: {{ len $v.a }}\n", set()),
        ("b: {{ $v.a | len }}\n", set()),
        ('b: {{ "lit" }}\n', set()),
        ("{{/* {{ $v.a }} */}}\n", set()),
        ('{{ template "t" $v.a }}\n', set()),
        ("{{ }}\n", set()),
    ],
)
def test_uses_reads_scopes_pipelines_and_lookups(
    body: str, expected: set[tuple[tuple[str, ...], str]]
) -> None:
    assert _found(body) == expected


def test_uses_records_each_line_once() -> None:
    text = HEAD + "a: {{ $v.x }}\n\nb: {{ $v.x }} {{ $v.x }}\n"
    assert uses(text, "comp") == (Use(("x",), RAW, 2), Use(("x",), RAW, 4))


def test_a_pipe_inside_parentheses_does_not_split_the_pipeline() -> None:
    # `(… | quote)` is an argument: the value printed is `default`'s, raw
    assert _found("b: {{ default ($v.a | quote) $v.b }}\n") == {(("a",), RAW), (("b",), RAW)}
    assert _found("b: {{ ($v.a | quote) }}\n") == {(("a",), RAW)}


@pytest.mark.parametrize(
    "value",
    [None, True, 0, 1.5, "", "plain", "yes", "1.0", "---", "~", "a,b", "x-y_z.w/v@1", "a'b"],
)
def test_plain_safe_values(value: Any) -> None:
    assert plain_safe(value)


@pytest.mark.parametrize(
    "value",
    [[], {}, b"x", " lead", "trail ", "a\nb", "a\tb", "a\rb", "a\x85b", "a\u2028b", "a\u2029b",
     "{{ x }}", "x }}", "a: b", "{k: v}", "[1]", "x # c", '"q" t', "'s", "- i", "*a",
     "!t x", "%x", "@x", "a: b: c"],
)  # fmt: skip
def test_plain_unsafe_values(value: Any) -> None:
    assert not plain_safe(value)


def test_problems_judges_each_use_and_locates_each_value() -> None:
    found = (
        Use(("n",), INT, 1),
        Use(("f",), NUMBER, 2),
        Use(("s",), RAW, 3),
        Use(("l", "*"), RAW, 4),
        Use(("m", "*", "k"), RAW, 5),
        Use(("absent", "x"), RAW, 6),
    )
    good = {"n": 3, "f": 1.5, "s": "ok", "l": ["a", 1], "m": {"b": {"k": "x"}, "a": {"k": 2}}}
    assert problems(good, found) == []
    assert problems({"f": 2}, found) == []
    bad = {
        "n": True,
        "f": "1",
        "s": "a: b",
        "l": ["a", ["x"]],
        "m": {"b": {"k": "x\ny"}, "a": {"k": {}}},
        "absent": "scalar",
    }
    got = problems(bad, found, "$.over")
    assert [(jp, rule) for jp, _, rule in got] == [
        ("$.over.f", "values.type"),
        ("$.over.l[1]", "values.unsafe-print"),
        ("$.over.m.a.k", "values.unsafe-print"),
        ("$.over.m.b.k", "values.unsafe-print"),
        ("$.over.n", "values.type"),
        ("$.over.s", "values.unsafe-print"),
    ]
    msgs = {jp: msg for jp, msg, _ in got}
    assert "n must be an integer" in msgs["$.over.n"] and "True" in msgs["$.over.n"]
    assert "f must be a number" in msgs["$.over.f"]
    assert "got list" in msgs["$.over.l[1]"] and "got dict" in msgs["$.over.m.a.k"]
    assert "got 'a: b'" in msgs["$.over.s"]
    assert problems({"n": 1.0, "f": False}, found)[0][0] == "$.f"
    assert [p[0] for p in problems({"n": 1.0, "f": False}, found)] == ["$.f", "$.n"]


def test_problems_reports_a_path_once_the_first_way_it_breaks() -> None:
    found = (Use(("a",), INT, 1), Use(("a",), RAW, 2))
    ((jp, msg, rule),) = problems({"a": "x\ny"}, found)
    assert (jp, rule) == ("$.a", "values.type") and "integer" in msg


def test_folder_problems_reads_every_template_of_the_chart() -> None:
    templates = (
        ("a.yaml", (HEAD + "a: {{ $v.a | int }}\n").encode()),
        ("b.yaml", (HEAD + "b: {{ $v.b }}\n").encode()),
    )
    got = chartvalues.folder_problems("comp", {"a": "x", "b": "c: d"}, templates, "$.comp")
    assert [(jp, rule) for jp, _, rule in got] == [
        ("$.comp.a", "values.type"),
        ("$.comp.b", "values.unsafe-print"),
    ]
    assert chartvalues.folder_problems("comp", {"a": "x"}, (), "$") == []
