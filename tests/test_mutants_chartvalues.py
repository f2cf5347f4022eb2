"""The behaviours of `generator/catalog/chartvalues.py` that `make mutation` found unpinned
(issue 32): how a template's actions are read (scopes, pipelines, `index`/`dig`, `range`/`with`,
variables) and how a value is judged against how it is printed. Unit level, no Helm: the
Helm-rendering tests of tests/test_chart_values.py run after these.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from generator.catalog import chartvalues
from generator.catalog.chartvalues import INT, NUMBER, RAW, Use, plain_safe, problems, uses
from generator.catalog.load import load_catalog

MINIMAL = Path(__file__).resolve().parent / "cases" / "minimal"
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
        # `$` is the root context wherever `.` is rebound: `$.Values` is `.Values`
        ("{{ with $v.a }}b: {{ $.Values.comp.z }}{{ end }}\n", {(("z",), RAW)}),
        ("{{ range $v.l }}b: {{ $.Values.comp.z | upper }}{{ end }}\n", {(("z",), RAW)}),
        ("b: {{ $.Values.comp }}\n", {((), RAW)}),
        ("b: {{ $.Values.other.x }}\n", set()),
        ("b: {{ $.Values }}\n", set()),
        ("b: {{ $.Valuesx.comp.z }}\n", set()),
        ('{{ range $v.l }}b: {{ index $.Values "comp" "z" }}{{ end }}\n', {(("z",), RAW)}),
        ('{{ range $v.l }}b: {{ index $.Values "other" "z" }}{{ end }}\n', set()),
        ('{{ $x := index $.Values "comp" }}b: {{ $x.y | int }}\n', {(("y",), INT)}),
        ("b: {{ $.Values.comp.z | quote }}\n", set()),
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
        # an empty key literal is a key like any other
        ('b: {{ index $v "" }}\n', {(("",), RAW)}),
        # a base no path is known for, or a key that is no literal after one that is: the keys
        # are not trusted, only what the tokens name themselves
        ('b: {{ index $w "a" }}\n', set()),
        ('b: {{ index $v "a" .k }}\n', {((), RAW)}),
        # `index X` alone and `dig <default> X` are X itself: a variable bound to them is X
        ("{{ $x := index $v }}b: {{ $x.c }}\n", {(("c",), RAW)}),
        ('{{ $x := dig "" $v }}b: {{ $x.c }}\n', {(("c",), RAW)}),
        # a command of three or more words that is not `dig`: each reference it names, as written
        ('b: {{ printf "%s-%s" $v.a $v.b }}\n', {(("a",), RAW), (("b",), RAW)}),
        # a pipe after a parenthesised argument splits the pipeline again
        ('b: {{ (index $v "a") | quote }}\n', set()),
        ('b: {{ (index $v "a") | upper }}\n', {(("a",), RAW)}),
        # a serialiser last, or followed only by re-indenting or trimming: safe; followed by
        # anything else (one function is enough): raw
        ("b:\n{{ $v.a | toYaml }}\n", set()),
        ("b: {{ $v.a | toYaml | trim }}\n", set()),
        ('b: {{ $v.a | toYaml | trimSuffix "x" }}\n', set()),
        ("b: {{ $v.a | toYaml | upper }}\n", {(("a",), RAW)}),
        # malformed actions Helm would refuse are read without a crash: an empty command, an
        # assignment with nothing on its right (it unbinds the variable and prints nothing)
        ("b: {{ $v.a | }}\n", {(("a",), RAW)}),
        ("b: {{ () }}\n", set()),
        ("{{ $x := $v.a }}{{ $x := }}b: {{ $x }}\n", set()),
    ],
)
def test_uses_reads_scopes_pipelines_and_lookups(
    body: str, expected: set[tuple[tuple[str, ...], str]]
) -> None:
    assert _found(body) == expected


def test_uses_records_each_line_once() -> None:
    text = HEAD + "a: {{ $v.x }}\n\nb: {{ $v.x }} {{ $v.x }}\n"
    assert uses(text, "comp") == (Use(("x",), RAW, 2), Use(("x",), RAW, 4))


def test_uses_reports_the_line_of_each_action() -> None:
    # the newline before the first action counts: the text's very first character included
    text = '\n{{ index .Values "comp" "x" }}\n\n  {{ .Values.comp.y }}'
    assert uses(text, "comp") == (Use(("x",), RAW, 2), Use(("y",), RAW, 4))
    assert uses("{{ .Values.comp.x }}", "comp") == (Use(("x",), RAW, 1),)


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


@pytest.mark.parametrize("how", [RAW, INT, NUMBER])
def test_a_long_value_is_quoted_in_the_message_up_to_sixty_characters(how: str) -> None:
    value = "a: " + "b" * 100
    ((_, msg, _),) = problems({"s": value}, (Use(("s",), how, 1),))
    shown = repr(value)[:60]
    assert f"got {shown}" in msg and f"got {repr(value)[:61]}" not in msg


# --- the catalog: which files are read as templates, which layers are judged ------------------

TEMPLATE = """\
{{- $v := index .Values "network-operator" }}
apiVersion: mellanox.com/v1alpha1
kind: NicClusterPolicy
metadata:
  name: nic-cluster-policy
spec:
  image: {{ $v.image }}
  count: {{ $v.count | int }}
"""


def _catalog(tmp_path: Path) -> Path:
    """The minimal case catalog with network-operator's manifest a template printing `image`
    raw and `count` as an integer; its overlay names a values file of its own, overrides, and a
    manifest file load does not classify (outside `manifests/`) that would print `name` raw."""
    cat = tmp_path / "catalog"
    shutil.copytree(MINIMAL, cat)
    comp = cat / "components/network-operator"
    (comp / "manifests/nic-cluster-policy.yaml").write_text(TEMPLATE)
    (comp / "values.yaml").write_text('image: "a: b"\ncount: 2\nname: "c: d"\n')
    (comp / "values-eks.yaml").write_text('count: 3\nimage: "x\\n- y"\n')
    (comp / "notes.yaml").write_text('# name: {{ index .Values "network-operator" "name" }}\n')
    ov = cat / "overlays/eks-training.yaml"
    text = ov.read_text()
    text = text.replace("network-operator/values.yaml", "network-operator/values-eks.yaml")
    text = text.replace(
        "        - components/network-operator/manifests/nic-cluster-policy.yaml\n",
        "        - components/network-operator/manifests/nic-cluster-policy.yaml\n"
        "        - components/network-operator/notes.yaml\n",
    )
    text = text.replace(
        "      dependencyRefs:", "      overrides:\n        count: many\n      dependencyRefs:"
    )
    ov.write_text(text)
    return cat


def _problems(cat: Path) -> list[tuple[str, int, str, str]]:
    catalog, _ = load_catalog(cat)
    return [(d.path, d.line, d.json_path, d.rule) for d in chartvalues.catalog_problems(catalog)]


def test_catalog_problems_judges_the_base_values_the_values_file_and_the_overrides(
    tmp_path: Path,
) -> None:
    """Every layer is judged and located in its own file: the component's values.yaml, the
    values file an overlay names, the overlay's overrides; a file the overlay lists as a
    manifest that load did not classify as a template (`notes.yaml`) is not read as one."""
    comp, count = "components/network-operator", "$.spec.componentRefs[0].overrides.count"
    assert _problems(_catalog(tmp_path)) == [
        (f"{comp}/values.yaml", 1, "$.image", "values.unsafe-print"),
        (f"{comp}/values-eks.yaml", 2, "$.image", "values.unsafe-print"),
        ("overlays/eks-training.yaml", 18, count, "values.type"),
    ]


def test_a_template_gone_since_load_is_skipped_not_a_crash(tmp_path: Path) -> None:
    """Load read and classified the template; it cannot be read again (load reports such a
    file): it contributes no use, so nothing is judged."""
    cat = _catalog(tmp_path)
    catalog, _ = load_catalog(cat)
    (cat / "components/network-operator/manifests/nic-cluster-policy.yaml").unlink()
    assert list(chartvalues.catalog_problems(catalog)) == []
