"""Manifest injection through values (issue 27, item 2): a values string holding a newline, `: `
or a bracket, printed unquoted by a local chart's template, adds objects no reviewer sees.

- The project's own templates print every value through a quoting or typing function (a scan).
- `chartvalues` finds what a template prints and how; `validate` refuses, located, a values file
  or override that sets a value a template prints unsafely; `bundle` refuses the merged values
  (`--set` included) before writing anything.
- Every local chart of every recipe (this catalog and both upstream AICR trees) is rendered with
  the pinned Helm under hostile values: whenever `chartvalues` lets the values through, the
  rendered object set (kind, name, namespace) is the one the chart renders with its own values;
  the project's own charts keep their object set even when the check is bypassed for a value
  they print typed (`| int`).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.catalog import chartvalues
from generator.catalog.load import load_catalog
from generator.catalog.manifests import read_manifests
from generator.catalog.resolve import resolve
from generator.cli import main
from generator.core.errors import CatalogError
from generator.render.common import folders, local_chart_files

REPO = Path(__file__).resolve().parents[1]
CATALOG = REPO / "catalog"

INJECTION = (
    "1\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
    "metadata:\n  name: pwned\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n"
    "  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: Group\n"
    "  name: system:authenticated\n  apiGroup: rbac.authorization.k8s.io"
)
HOSTILE = (
    INJECTION,
    "x\n---\nkind: Secret\napiVersion: v1\nmetadata: {name: leak}",
    "a: b",
    "{kind: Secret}",
    "[1, 2]",
    '"quoted" tail',
    "'single",
    "}} {{ .Release.Name }}",
    "x # comment",
    "- item",
    "x\n  extra: key",
    "x\r\nkind: Secret",
)
# borderline: one-line scalars the check lets through, which must change nothing either
BORDERLINE = (
    "---",
    "yes",
    "1.0",
    "a,b",
    "x-y_z.w/v@1",
    "~",
)


# --- the scan: the project's own templates print nothing raw -----------------------------------


def _own_templates() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted(CATALOG.glob("components/*/manifests/*")):
        text = path.read_text(encoding="utf-8")
        if "{{" in text:
            out.append((path.relative_to(CATALOG).as_posix(), path.parts[-3], text))
    return out


# Values the project's own templates may print raw: none. Every value is printed through a
# quoting or typing function (`| int`, `| quote`, `toYaml`).
RAW_ALLOWED: set[tuple[str, str]] = set()


def test_own_templates_print_every_value_quoted_or_typed() -> None:
    templates = _own_templates()
    assert templates, "the catalog has manifest templates that read values"
    raw = {
        (rel, ".".join(u.path))
        for rel, comp, text in templates
        for u in chartvalues.uses(text, comp)
        if u.how == chartvalues.RAW
    }
    extra = sorted(raw - RAW_ALLOWED)
    assert extra == [], f"print values with `| quote`, `| int` or `toYaml`: {extra}"
    typed = {(rel, ".".join(u.path)) for rel, comp, text in templates
             for u in chartvalues.uses(text, comp) if u.how == chartvalues.INT}  # fmt: skip
    assert ("components/nodewright-operator/manifests/tuning-training.yaml",
            "tuning.interruptionBudget.count") in typed  # fmt: skip


@pytest.mark.parametrize(
    ("action", "how"),
    [
        ("{{ $v.a.b }}", "raw"),
        ("{{ .Values.comp.a.b }}", "raw"),
        ('{{ index .Values "comp" "a" "b" }}', "raw"),
        ('{{ dig "a" "b" 1 $v }}', "raw"),
        ('{{ default "x" $v.a.b }}', "raw"),
        ("{{ $v.a.b | int }}", "int"),
        ("{{ $v.a.b | float64 }}", "number"),
        ("{{ $v.a.b | quote }}", None),
        ("{{ toYaml $v.a.b | nindent 4 }}", None),
        ("{{ $v.a.b | toJson }}", None),
        ('{{ eq $v.a.b "x" }}', None),
    ],
)
def test_uses_reads_how_each_value_is_printed(action: str, how: str | None) -> None:
    text = '{{- $v := index .Values "comp" }}\nkey: ' + action + "\n"
    found = chartvalues.uses(text, "comp")
    if how is None:
        assert found == ()
    else:
        assert [(u.path, u.how, u.line) for u in found] == [(("a", "b"), how, 2)]


def test_range_items_are_checked() -> None:
    text = (
        '{{- $v := index .Values "comp" }}\n{{- range $v.names }}\n- {{ . }}\n{{- end }}\n'
        "{{- range $k, $x := $v.env }}\n{{ $k }}={{ $x }}\n{{- end }}\n"
    )
    found = {(u.path, u.how) for u in chartvalues.uses(text, "comp")}
    assert found == {(("names", "*"), "raw"), (("env", "*"), "raw")}
    probs = chartvalues.problems(
        {"names": ["ok", "a\nb"], "env": {"A": "x: y"}}, tuple(chartvalues.uses(text, "comp"))
    )
    assert [p[0] for p in probs] == ["$.env.A", "$.names[1]"]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=30))
def test_a_plain_safe_string_stays_one_scalar(s: str) -> None:
    """Whatever `plain_safe` lets through, pasted after `key: `, parses to one key whose value
    is a scalar, and adds no document."""
    if not chartvalues.plain_safe(s):
        return
    docs = list(yaml.safe_load_all(f"key: {s}\nnext: 1\n"))
    assert len(docs) == 1 and list(docs[0]) == ["key", "next"]
    assert not isinstance(docs[0]["key"], dict | list)


# --- through the CLI ---------------------------------------------------------------------------


def _catalog_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "catalog"
    shutil.copytree(CATALOG, dst)
    return dst


def test_validate_refuses_a_catalog_value_a_template_would_print_raw(tmp_path: Path) -> None:
    cat = _catalog_copy(tmp_path)
    vf = cat / "components/nodewright-operator/values.yaml"
    data = yaml.safe_load(vf.read_text())
    data["tuning"]["interruptionBudget"]["count"] = INJECTION
    vf.write_text(yaml.safe_dump(data, sort_keys=False))
    out = CliRunner().invoke(main, ["validate", str(cat)])
    assert out.exit_code == 1, out.output
    line = next(x for x in out.output.splitlines() if "[values." in x)
    assert line.startswith("components/nodewright-operator/values.yaml:")
    assert ": $.tuning.interruptionBudget.count: " in line
    _rel, ln, col = line.split(":")[:3]
    assert int(ln) > 1 and int(col) > 1
    assert vf.read_text().splitlines()[int(ln) - 1].strip().startswith("count:")


@pytest.mark.parametrize("payload", HOSTILE)
def test_bundle_refuses_set_values_a_template_would_print_raw(tmp_path: Path, payload: str) -> None:
    out_dir = tmp_path / "b"
    r = CliRunner().invoke(
        main,
        ["bundle", "--catalog", str(CATALOG), "--recipe", "gb200-aks-ubuntu-training-kubeflow",
         "--deployer", "helm", "-o", str(out_dir),
         "--set", f"nodewright-operator:tuning.interruptionBudget.count={payload}"],
    )  # fmt: skip
    assert r.exit_code == 1, r.output
    assert "$.components[" in r.output
    assert "[values.type]" in r.output or "[values.unsafe-print]" in r.output
    assert not out_dir.exists()


# --- every local chart, rendered by Helm with hostile values ----------------------------------

TREES = {
    "catalog": CATALOG,
    "upstream-v0.11.1": REPO.parent / "shared/upstream-aicr/v0.11.1/recipes",
    "upstream-main": REPO.parent / "shared/upstream-aicr/main-9793720d/recipes",
}


def _local_charts(tree: Path) -> list[tuple[str, dict[str, bytes], Any]]:
    """(component, chart files by name, component values) of every distinct local chart with
    value-reading templates that the tree's leaf recipes produce."""
    catalog, _ = load_catalog(tree)
    seen: dict[tuple[str, tuple[tuple[str, bytes], ...]], tuple[str, dict[str, bytes], Any]] = {}
    for leaf in catalog.leaves():
        try:
            result = resolve(catalog, leaf)
            fs = folders(result, read_manifests(catalog, result))
        except CatalogError:
            continue  # `validate` reports it (upstream main has recipes that do not resolve)
        for f in fs:
            if not f.local or not f.templates or (f.component.name, f.templates) in seen:
                continue
            files = local_chart_files(f, "")
            chart = {p.split("/", 1)[1]: b.data for p, b in files.items()}
            seen[(f.component.name, f.templates)] = (f.component.name, chart, f.component.values)
    return list(seen.values())


def _objects(
    helm: Path, chart: dict[str, bytes], values: Any, component: str, work: Path
) -> set[tuple[str, str, str]] | str:
    """The (kind, name, namespace) set `helm template` renders, or Helm's error text."""
    if work.exists():
        shutil.rmtree(work)
    for name, data in chart.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(data)
    (work / "values.yaml").write_text(yaml.safe_dump({component: values}))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "HELM_CACHE_HOME": str(work / ".c")}
    out = subprocess.run(
        [str(helm), "template", "r", str(work), "--namespace", "ns"],
        capture_output=True, text=True, env=env, check=False, timeout=60,
    )  # fmt: skip
    if out.returncode != 0:
        return out.stderr
    try:
        docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    except yaml.YAMLError as e:
        return f"unparseable output: {e}"
    return {
        (str(d.get("kind")), str((d.get("metadata") or {}).get("name")),
         str((d.get("metadata") or {}).get("namespace", ""))) if isinstance(d, dict) else ("?", str(d), "")
        for d in docs
    }  # fmt: skip


def _kinds(objects: set[tuple[str, str, str]]) -> list[str]:
    return sorted(kind for kind, _, _ in objects)


def _set(values: Any, path: tuple[str, ...], payload: str) -> Any:
    """A copy of `values` with `payload` at `path` (`*`: a new key / every list item)."""
    if not path:
        return payload
    key, rest = path[0], path[1:]
    if key == chartvalues.ANY:
        if isinstance(values, list) and values:
            return [_set(v, rest, payload) for v in values]
        base = dict(values) if isinstance(values, dict) else {}
        base["HOSTILE"] = _set(None, rest, payload)
        return base
    base = dict(values) if isinstance(values, dict) else {}
    base[key] = _set(base.get(key), rest, payload)
    return base


@pytest.mark.parametrize("tree_name", sorted(TREES))
def test_every_local_chart_keeps_its_objects_under_hostile_values(
    tree_name: str, helm: Path, tmp_path: Path
) -> None:
    tree = TREES[tree_name]
    if not tree.is_dir():
        pytest.skip(f"{tree} is not here")
    charts = _local_charts(tree)
    assert charts, f"{tree_name} produces local charts"
    own = tree_name == "catalog"
    rendered = refused = 0
    for component, chart, values in charts:
        found = tuple(
            u for name, data in chart.items() if name.startswith("templates/")
            for u in chartvalues.uses(data.decode(), component)
        )  # fmt: skip
        baseline = _objects(helm, chart, values, component, tmp_path / "w")
        if isinstance(baseline, str) and not own:
            continue  # an upstream chart its own values do not render (upstream main's state)
        assert not isinstance(baseline, str), f"{tree_name} {component}: {baseline}"
        for i, use in enumerate(dict.fromkeys(u.path for u in found)):
            # every hostile payload; one borderline payload per value, in turn (Helm is slow)
            for payload in (*HOSTILE, BORDERLINE[i % len(BORDERLINE)]):
                hostile = _set(values, use, payload)
                problems = chartvalues.problems(hostile, found)
                raw_use = any(u.how == chartvalues.RAW for u in found if u.path == use)
                if problems and (raw_use or not own):
                    refused += 1  # the bundle is never written: nothing reaches Helm
                    continue
                got = _objects(helm, chart, hostile, component, tmp_path / "w")
                rendered += 1
                where = f"{tree_name} {component} {'.'.join(use)}={payload!r}"
                if isinstance(got, str):
                    continue  # Helm refused the values: no object at all is applied
                if payload in HOSTILE:
                    assert got == baseline, f"{where}: {sorted(got ^ baseline)}"
                else:  # the value may be a name or namespace: the same objects, by kind
                    assert _kinds(got) == _kinds(baseline), f"{where}: {sorted(got ^ baseline)}"
    assert rendered + refused > 0


def test_the_render_test_catches_a_raw_print(helm: Path, tmp_path: Path) -> None:
    """The template as it was (`count: {{ $budget.count }}`) under the issue's value renders an
    extra ClusterRoleBinding: what the check refuses is exactly what Helm would inject, and the
    typed template (`| int`) renders no such object even with the check bypassed."""
    charts = {c: ch for c, ch, _ in _local_charts(CATALOG)}
    typed = charts["nodewright-operator"]
    name = next(n for n, d in typed.items() if b"{{ $budget.count | int }}" in d)
    raw = dict(typed)
    raw[name] = typed[name].replace(b"{{ $budget.count | int }}", b"{{ $budget.count }}")
    values = {"tuning": {"interruptionBudget": {"count": INJECTION}}}
    got = _objects(helm, raw, values, "nodewright-operator", tmp_path / "w")
    assert not isinstance(got, str), got
    assert ("ClusterRoleBinding", "pwned", "") in got
    found = tuple(chartvalues.uses(raw[name].decode(), "nodewright-operator"))
    assert chartvalues.problems(values, found), "the check refuses what Helm would inject"
    got = _objects(helm, typed, values, "nodewright-operator", tmp_path / "w")
    assert not isinstance(got, str) and ("ClusterRoleBinding", "pwned", "") not in got


def test_bundle_verify_refuses_edited_values_even_with_matching_checksums(tmp_path: Path) -> None:
    """A bundle whose local chart values were edited to inject, checksums.txt rewritten to
    match, is not called clean by `bundle verify`: the values are judged against how the
    chart's templates print them, located in the bundle's values.yaml."""
    import hashlib

    out = tmp_path / "b"
    runner = CliRunner()
    r = runner.invoke(
        main,
        ["bundle", "--catalog", str(CATALOG), "--recipe", "gb300-eks-ubuntu-training-slurm",
         "--scale-profile", "nvl72-2304", "--deployer", "helm", "-o", str(out)],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    (chart,) = [p for p in out.iterdir() if p.name.endswith("nodewright-operator-post")]
    vf = chart / "values.yaml"
    data = yaml.safe_load(vf.read_text())
    data["nodewright-operator"]["tuning"]["interruptionBudget"]["count"] = INJECTION
    vf.write_text(yaml.safe_dump(data))
    lines = []
    for line in (out / "checksums.txt").read_text().splitlines():
        digest, rel = line.split("  ", 1)
        if rel == f"{chart.name}/values.yaml":
            digest = hashlib.sha256(vf.read_bytes()).hexdigest()
        lines.append(f"{digest}  {rel}")
    (out / "checksums.txt").write_text("\n".join(lines) + "\n")
    r = runner.invoke(main, ["bundle", "verify", str(out)])
    assert r.exit_code == 1, r.output
    text = r.output + (r.stderr if r.stderr_bytes is not None else "")
    want = f"{chart.name}/values.yaml:"
    line = next(x for x in text.splitlines() if x.startswith(want))
    assert "$.nodewright-operator.tuning.interruptionBudget.count: " in line
    assert "[values.type]" in line
