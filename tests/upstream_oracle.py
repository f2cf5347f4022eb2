"""Upstream AICR's real CLI as the oracle: read a recorded corpus, run this project's CLI on the
same inputs, and say, semantically, where the two differ.

A corpus is a folder `../shared/upstream-aicr/<version>/` holding upstream's recipe tree
(`recipes/`) and what upstream's own `aicr` binary wrote for it (`oracle/`: `index.json`,
`recipes/<case>/`, `bundles/<case>/<deployer>/`; its README states the layout). Each corpus this
project conforms to has a file `tests/upstream_corpora/<version>.yaml`: where the corpus lives,
and the list of reasoned, deliberate differences (the same list is the table of
docs/upstream-compatibility.md, checked by the test).

A *case* is one recipe query (`aicr recipe` + `aicr query`) or one bundle run (one deployer, its
flags). Each is run through this project's real CLI (in-process, with click's CliRunner):
`query --format aicr`, `query --format json`, `bundle --recipe <the case's recipe.yaml>` with the
same flags; both sides are reduced to the same semantic model (components and order, dependency
order, versions, chart references, namespaces, every value, every install step or Argo CD
Application, every rendered manifest object; key order and YAML formatting are not significant),
and every difference is a `Finding` at a path such as `helm:gpu-operator/values/operator.tolerations`.
A finding is *explained* by a listed difference whose path and case patterns (fnmatch) match it.

Nothing here imports the resolution or rendering code under test: only the CLI entry point.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CORPORA = REPO / "tests" / "upstream_corpora"
DOC = REPO / "docs" / "upstream-compatibility.md"

# ------------------------------------------------------------------ the corpus and its list


@dataclass(frozen=True)
class Difference:
    """One deliberate difference: what upstream does, what this project does, why; and the
    findings it explains (fnmatch patterns over finding paths, and over case ids)."""

    id: str
    upstream: str
    ours: str
    why: str
    paths: tuple[str, ...]
    cases: tuple[str, ...] = ("*",)
    except_cases: tuple[str, ...] = ()

    def explains(self, case_id: str, finding: Finding) -> bool:
        return (
            any(fnmatch.fnmatchcase(case_id, c) for c in self.cases)
            and not any(fnmatch.fnmatchcase(case_id, c) for c in self.except_cases)
            and any(fnmatch.fnmatchcase(finding.path, p) for p in self.paths)
        )


@dataclass(frozen=True)
class Corpus:
    name: str  # the upstream version every statement about it is about, e.g. v0.11.1
    root: Path  # ../shared/upstream-aicr/<version>
    tree: Path  # its recipe tree
    oracle: Path  # what upstream's CLI wrote
    differences: tuple[Difference, ...]
    known_failing: Mapping[str, str]  # case id -> why it still differs (strict xfail)
    spec: Path  # the corpus file

    def cases(self) -> list[Case]:
        index = json.loads((self.oracle / "index.json").read_text())
        out: list[Case] = []
        for r in index["recipes"]:
            out.append(Case(self, f"recipe/{r['id']}", "recipe", r["id"], None, (), r["exit_code"]))
        for b in index["bundles"]:
            for run in b["runs"]:
                out.append(
                    Case(
                        self,
                        f"bundle/{b['id']}/{run['deployer']}",
                        "bundle",
                        b["id"],
                        run["deployer"],
                        tuple(run["flags"]),
                        run["exit_code"],
                    )
                )
        return out


@dataclass(frozen=True)
class Case:
    corpus: Corpus
    id: str  # recipe/<id> or bundle/<id>/<deployer>
    kind: str  # recipe | bundle
    name: str  # the oracle's case folder
    deployer: str | None
    flags: tuple[str, ...]
    exit_code: int

    @property
    def dir(self) -> Path:
        return self.corpus.oracle / ("recipes" if self.kind == "recipe" else "bundles") / self.name

    @property
    def meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = json.loads((self.dir / "case.json").read_text())
        return meta


@dataclass(frozen=True)
class Finding:
    path: str
    upstream: Any
    ours: Any

    def __str__(self) -> str:  # the line a failing test prints
        def short(v: Any) -> str:
            s = json.dumps(v, sort_keys=True, default=str)
            return s if len(s) <= 160 else s[:157] + "..."

        return f"{self.path}: upstream {short(self.upstream)} / ours {short(self.ours)}"


def corpus_files() -> list[Path]:
    return sorted(CORPORA.glob("*.yaml"))


def load_corpus(spec: Path) -> Corpus:
    raw = yaml.safe_load(spec.read_text())
    root = SHARED / raw["corpus"]
    diffs = tuple(
        Difference(
            id=d["id"],
            upstream=d["upstream"],
            ours=d["ours"],
            why=d["why"],
            paths=tuple(d["paths"]),
            cases=tuple(d.get("cases") or ("*",)),
            except_cases=tuple(d.get("except_cases") or ()),
        )
        for d in raw.get("differences") or ()
    )
    return Corpus(
        name=raw["version"],
        root=root,
        tree=root / raw.get("tree", "recipes"),
        oracle=root / raw.get("oracle", "oracle"),
        differences=diffs,
        known_failing=dict(raw.get("known_failing") or {}),
        spec=spec,
    )


# ------------------------------------------------------------------ running this project's CLI


@dataclass(frozen=True)
class Run:
    exit_code: int
    stdout: str
    stderr: str


def invoke(args: Sequence[str]) -> Run:
    from generator.cli import main

    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


def data_tree(case: Case, scratch: Path) -> Path:
    """The recipe tree a case is answered from: the corpus tree, or (a case run with upstream's
    `--data DIR`) the tree with DIR laid over it as upstream lays it: registry components merged
    by name, every other file replacing or adding."""
    data = case.meta.get("data")
    if not data:
        return case.corpus.tree
    out = scratch / f"tree-{case.name}"
    if out.is_dir():
        return out
    shutil.copytree(case.corpus.tree, out)
    src = case.dir / data
    for p in sorted(src.rglob("*")):
        if p.is_file() and p.name != "registry.yaml":
            (out / p.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, out / p.relative_to(src))
    ext = yaml.safe_load((src / "registry.yaml").read_text())
    reg = yaml.safe_load((out / "registry.yaml").read_text())
    by_name = {c["name"]: c for c in reg["components"]}
    by_name.update({c["name"]: c for c in ext.get("components") or ()})
    reg["components"] = list(by_name.values())
    (out / "registry.yaml").write_text(yaml.safe_dump(reg, sort_keys=False))
    return out


# ------------------------------------------------------------------ the semantic model


def flatten(obj: Any, prefix: str) -> dict[str, Any]:
    """Leaf paths of nested mappings (`a.b.c`); lists and scalars are leaves; an empty mapping
    is a leaf too (so `{}` differs from absent)."""
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: obj}


# the suffix of a finding whose two strings differ only by line breaks at their start (a
# difference may list exactly that, leaving any other difference of the same value unexplained)
LEADING_BREAKS = "/<leading line breaks>"


def compare(path: str, up: Any, ours: Any, out: list[Finding]) -> None:
    if _canon(up) != _canon(ours):
        if isinstance(up, str) and isinstance(ours, str) and up.lstrip("\n") == ours.lstrip("\n"):
            path += LEADING_BREAKS
        out.append(Finding(path, up, ours))


def compare_tree(prefix: str, up: Any, ours: Any, out: list[Finding]) -> None:
    """Leaf by leaf (see `flatten`)."""
    fu, fo = flatten(up, ""), flatten(ours, "")
    for k in sorted(set(fu) | set(fo)):
        compare(f"{prefix}{k}" if k else prefix.rstrip("/."), fu.get(k), fo.get(k), out)


def _canon(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _drop_empty(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v not in (None, "", [], {})}


RECIPE_TOP = ("kind", "apiVersion", "criteria", "constraints", "deploymentOrder", "validation")


def recipe_model(doc: Mapping[str, Any]) -> dict[str, Any]:
    """An upstream-shaped RecipeResult (`aicr recipe`, `query --format aicr`) as a model. Left
    out: `metadata.version`, the version string upstream's build sets (the corpus README)."""
    refs = {r["name"]: _drop_empty(r) for r in doc.get("componentRefs") or ()}
    return {
        **{k: doc.get(k) for k in RECIPE_TOP},
        "appliedOverlays": (doc.get("metadata") or {}).get("appliedOverlays"),
        "componentRefs.order": [r["name"] for r in doc.get("componentRefs") or ()],
        "componentRefs": refs,
        "other": sorted(set(doc) - {*RECIPE_TOP, "metadata", "componentRefs"}),
    }


def recipe_findings(up: Mapping[str, Any], ours: Mapping[str, Any]) -> list[Finding]:
    a, b = recipe_model(up), recipe_model(ours)
    out: list[Finding] = []
    for k in (*RECIPE_TOP, "appliedOverlays", "componentRefs.order", "other"):
        compare(f"recipe:{k}", a[k], b[k], out)
    for n in sorted(set(a["componentRefs"]) | set(b["componentRefs"])):
        ra, rb = a["componentRefs"].get(n), b["componentRefs"].get(n)
        if ra is None or rb is None:
            compare(f"recipe:componentRefs/{n}", ra, rb, out)
            continue
        for f in sorted(set(ra) | set(rb) - {"name"}):
            compare(f"recipe:componentRefs/{n}/{f}", ra.get(f), rb.get(f), out)
    return out


def hydrated_model_upstream(doc: Mapping[str, Any]) -> dict[str, Any]:
    crit = {k: v for k, v in (doc.get("criteria") or {}).items() if not (k == "nodes" and v == 0)}
    comps = {}
    for n, c in (doc.get("components") or {}).items():
        comps[n] = _drop_empty({k: c.get(k) for k in HYDRATED_FIELDS}) | {
            "values": c.get("values") or {}
        }
    return {
        "appliedOverlays": (doc.get("metadata") or {}).get("appliedOverlays"),
        "criteria": crit,
        "constraints": doc.get("constraints") or [],
        "deploymentOrder": doc.get("deploymentOrder"),
        "components": comps,
    }


HYDRATED_FIELDS = ("chart", "namespace", "source", "type", "version", "dependencyRefs")


def hydrated_model_ours(doc: Mapping[str, Any]) -> dict[str, Any]:
    """This project's `query --format json` (aicr.run/v1) in the same terms."""
    spec = doc["spec"]
    crit = {k: v or "any" for k, v in (spec.get("criteria") or {}).items()}
    comps = {}
    for c in spec.get("componentRefs") or ():
        comps[c["name"]] = _drop_empty({k: c.get(k) for k in HYDRATED_FIELDS}) | {
            "values": c.get("values") or {}
        }
    disabled = (doc.get("spec") or {}).get("disabledComponents")
    if disabled is not None:  # pragma: no cover - shape of a later version
        comps.update(disabled)
    return {
        "appliedOverlays": doc["metadata"].get("appliedOverlays"),
        "criteria": {d: crit.get(d, "any") for d in sorted(crit)},
        "constraints": [_drop_empty(c) for c in spec.get("constraints") or ()],
        "deploymentOrder": spec.get("deploymentOrder"),
        "components": comps,
    }


def hydrated_findings(up: Mapping[str, Any], ours: Mapping[str, Any]) -> list[Finding]:
    a, b = hydrated_model_upstream(up), hydrated_model_ours(ours)
    a["criteria"] = {d: a["criteria"].get(d, "any") for d in sorted(a["criteria"])}
    a["constraints"] = [_drop_empty(c) for c in a["constraints"]]
    out: list[Finding] = []
    for k in ("appliedOverlays", "criteria", "constraints", "deploymentOrder"):
        compare(f"hydrated:{k}", a[k], b[k], out)
    for n in sorted(set(a["components"]) | set(b["components"])):
        ca, cb = a["components"].get(n), b["components"].get(n)
        if ca is None or cb is None:
            compare(f"hydrated:components/{n}", ca is not None, cb is not None, out)
            continue
        for f in HYDRATED_FIELDS:
            compare(f"hydrated:components/{n}/{f}", ca.get(f), cb.get(f), out)
        compare_tree(f"hydrated:components/{n}/values/", ca["values"], cb["values"], out)
    return out


# ------------------------------------------------------------------ bundles


def _yaml_objects(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def _object_key(o: Mapping[str, Any]) -> str:
    meta = o.get("metadata") or {}
    return f"{o.get('kind')}/{meta.get('namespace') or '-'}/{meta.get('name')}"


def _objects(objs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {_object_key(o): o for o in objs}


_UP_HELM = re.compile(
    r"helm upgrade --install (\S+) (\S+) \\\n(?:\s+--repo (\S+) \\\n)?\s+--version (\S+) \\\n"
    r"\s+-n (\S+) --create-namespace"
)
_UP_STEP = re.compile(
    r'^(?:retry "(\S+) helm install" \\|'
    r'retry "(\S+) (?:pre-install |post-install )?manifests")',
    re.M,
)


def upstream_helm(bundle: Path) -> dict[str, Any]:
    """An upstream helm bundle: components in deploy.sh order, each with its deploy steps
    (`manifests`, `chart`), its chart install, values and manifest objects (pre-rendered)."""
    text = (bundle / "deploy.sh").read_text()
    order: list[str] = []
    steps: dict[str, list[str]] = {}
    for m in _UP_STEP.finditer(text):
        name = m.group(1) or m.group(2)
        if name not in order:
            order.append(name)
        steps.setdefault(name, []).append("chart" if m.group(1) else "manifests")
    installs = {
        m.group(1): {
            "release": m.group(1),
            "chart": m.group(2),
            "repo": m.group(3),
            "version": m.group(4),
            "namespace": m.group(5),
        }
        for m in _UP_HELM.finditer(text)
    }
    comps = {}
    for n in order:
        objs: list[dict[str, Any]] = []
        mdir = bundle / n / "manifests"
        if mdir.is_dir():
            for p in sorted(mdir.iterdir()):
                objs += _yaml_objects(p.read_text())
        values = yaml.safe_load((bundle / n / "values.yaml").read_text()) or {}
        comps[n] = {
            "steps": steps[n],
            "install": installs.get(n),
            "values": values,
            "manifests": _objects(objs),
        }
    recipe = yaml.safe_load((bundle / "recipe.yaml").read_text())
    return {
        "order": order,
        "components": comps,
        "recipe.componentRefs": sorted(r["name"] for r in recipe.get("componentRefs") or ()),
        "recipe.deploymentOrder": recipe.get("deploymentOrder"),
    }


_OUR_HELM = re.compile(
    r"helm upgrade --install (\S+) (\S+) \\\n(?:\s+--repo (\S+) \\\n)?"
    r"(?:\s+--version (\S+) \\\n)?\s+--namespace (\S+)"
)


def _unquote(s: str | None) -> str | None:
    return None if s is None else shlex.split(s)[0]


def helm_template(helm: Path, chart_dir: Path, release: str, namespace: str) -> list[Any]:
    out = subprocess.run(
        [str(helm), "template", release, str(chart_dir), "--namespace", namespace],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "HELM_CACHE_HOME": str(chart_dir.parent / ".helm-cache")},
    )
    if out.returncode != 0:
        raise AssertionError(f"helm template {chart_dir.name} failed: {out.stderr}")
    return _yaml_objects(out.stdout)


def our_releases(bundle: Path) -> list[dict[str, Any]]:
    info = yaml.safe_load((bundle / "bundle-info.yaml").read_text())
    return list(info["releases"])


def our_helm(bundle: Path, helm: Path) -> dict[str, Any]:
    """This project's helm bundle in the same terms: a local chart (the component's manifests,
    Helm templates) is rendered with the pinned Helm, as `helm upgrade --install` would."""
    order: list[str] = []
    comps: dict[str, dict[str, Any]] = {}
    for r in our_releases(bundle):
        n = r["component"]
        if n not in order:
            order.append(n)
            comps[n] = {"steps": [], "install": None, "values": {}, "manifests": {}}
        folder = bundle / r["path"]
        c = comps[n]
        if (folder / "Chart.yaml").is_file():
            c["steps"].append("manifests")
            c["manifests"].update(_objects(helm_template(helm, folder, r["name"], r["namespace"])))
            if c["install"] is None:
                local = yaml.safe_load((folder / "values.yaml").read_text()) or {}
                c["values"] = local.get(n) or {}
        else:
            c["steps"].append("chart")
            m = _OUR_HELM.search((folder / "install.sh").read_text())
            assert m is not None, f"{folder}/install.sh installs no chart"
            c["install"] = {
                "release": _unquote(m.group(1)),
                "chart": _unquote(m.group(2)),
                "repo": _unquote(m.group(3)),
                "version": _unquote(m.group(4)),
                "namespace": _unquote(m.group(5)),
            }
            c["values"] = yaml.safe_load((folder / "values.yaml").read_text()) or {}
    recipe = yaml.safe_load((bundle / "recipe.yaml").read_text())
    refs = recipe["spec"]["componentRefs"]
    return {
        "order": order,
        "components": comps,
        "recipe.componentRefs": sorted(r["name"] for r in refs),
        "recipe.deploymentOrder": recipe["spec"].get("deploymentOrder"),
    }


def bundle_findings(prefix: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    for k in sorted(set(a) - {"components"}):
        compare(f"{prefix}:{k}", a[k], b.get(k), out)
    for n in sorted(set(a["components"]) | set(b["components"])):
        ca, cb = a["components"].get(n), b["components"].get(n)
        if ca is None or cb is None:
            compare(f"{prefix}:{n}", ca is not None, cb is not None, out)
            continue
        for f in sorted(set(ca) - {"values", "manifests", "application"}):
            if isinstance(ca[f], dict) and isinstance(cb.get(f), dict):
                compare_tree(f"{prefix}:{n}/{f}/", ca[f], cb[f], out)
            else:
                compare(f"{prefix}:{n}/{f}", ca[f], cb.get(f), out)
        compare_tree(f"{prefix}:{n}/values/", ca["values"], cb["values"], out)
        if "application" in ca:
            compare_tree(f"{prefix}:{n}/application/", ca["application"], cb["application"], out)
        ma, mb = ca.get("manifests", {}), cb.get("manifests", {})
        for key in sorted(set(ma) | set(mb)):
            oa, ob = ma.get(key), mb.get(key)
            if oa is None or ob is None:
                compare(f"{prefix}:{n}/manifests/{key}", oa is not None, ob is not None, out)
            else:
                compare_tree(f"{prefix}:{n}/manifests/{key}/", oa, ob, out)
    return out


def _value_files(app: dict[str, Any]) -> None:
    """`$values/<folder>/values.yaml` names the folder the values live in, which is the
    layout's business; what the Application deploys is the values themselves (compared)."""
    spec = app.get("spec") or {}
    for s in spec.get("sources") or ():
        helm = s.get("helm") or {}
        if "valueFiles" in helm:
            helm["valueFiles"] = ["$values/<component>/values.yaml" for _ in helm["valueFiles"]]
    if isinstance(spec.get("sources"), list):
        # by role, so that each field of each source is compared on its own
        spec["sources"] = {
            ("values" if s.get("ref") == "values" else "chart" if "chart" in s else "local"): s
            for s in spec["sources"]
        }


def upstream_argocd(bundle: Path) -> dict[str, Any]:
    root = yaml.safe_load((bundle / "app-of-apps.yaml").read_text())
    comps: dict[str, dict[str, Any]] = {}
    apps = sorted(
        (yaml.safe_load(p.read_text()) for p in bundle.glob("*/application.yaml")),
        key=lambda a: (int(a["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]),),
    )
    for app in apps:
        n = app["metadata"]["name"]
        _value_files(app)
        values = yaml.safe_load((bundle / n / "values.yaml").read_text()) or {}
        comps[n] = {"application": app, "values": values}
    return {
        "app-of-apps": root,
        "order": [a["metadata"]["name"] for a in apps],
        "components": comps,
    }


def our_argocd(bundle: Path) -> dict[str, Any]:
    root = yaml.safe_load((bundle / "app-of-apps.yaml").read_text())
    comps: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for r in our_releases(bundle):
        n = r["component"]
        folder = bundle / r["path"]
        app = yaml.safe_load((folder / "application.yaml").read_text())
        _value_files(app)
        if n not in comps:
            order.append(n)
            comps[n] = {"application": app, "values": {}, "local": []}
        if (folder / "Chart.yaml").is_file():
            comps[n]["local"].append(r["name"])
            if r["name"] == n:
                local = yaml.safe_load((folder / "values.yaml").read_text()) or {}
                comps[n]["values"] = local.get(n) or {}
        else:
            comps[n]["application"] = app
            comps[n]["values"] = yaml.safe_load((folder / "values.yaml").read_text()) or {}
    return {"app-of-apps": root, "order": order, "components": comps}


def argocd_findings(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    compare_tree("argocd:app-of-apps/", a["app-of-apps"], b["app-of-apps"], out)
    compare("argocd:order", a["order"], b["order"], out)
    for n in sorted(set(a["components"]) | set(b["components"])):
        ca, cb = a["components"].get(n), b["components"].get(n)
        if ca is None or cb is None:
            compare(f"argocd:{n}", ca is not None, cb is not None, out)
            continue
        compare_tree(f"argocd:{n}/application/", ca["application"], cb["application"], out)
        compare_tree(f"argocd:{n}/values/", ca["values"], cb["values"], out)
        compare(f"argocd:{n}/local-charts", [], cb.get("local", []), out)
    return out


# ------------------------------------------------------------------ numbered bundles (2026)
#
# Upstream at 9793720d (and this project) lay a bundle out as one folder per release,
# `NNN-<release>/` in deployment order (`<component>-pre`/`-post` for its manifests, as local
# charts), flux as `<release>/` folders. Every deployer is reduced to the same model: the
# releases in order, and per release its chart (repository, chart, version; none for a local
# chart), namespace, values after merge (charts only: a local chart's values are compared through
# what Helm renders from them), the objects of a local chart rendered with the pinned Helm, and
# what the deployer orders them by (Argo CD's Application and its wave, helmfile's `needs` and
# level, Flux's `dependsOn`).

_NUMBERED = re.compile(r"(\d{3})-(.+)")


def _values_file(path: Path) -> dict[str, Any]:
    """A values file as Helm merges it: every document that is a mapping, in order (upstream
    writes `# Generated by AICR` headers, some files as two documents)."""
    if not path.is_file():
        return {}
    out: dict[str, Any] = {}
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict):
            out = _merge(out, doc)
    return out


def _merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in top.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _chart_ref(chart: str | None, repo: str | None, version: str | None) -> dict[str, Any]:
    """A chart reference in one spelling: `oci://host/path/chart` and (`chart`, `--repo`) alike
    become repository + chart name; the version as written."""
    chart = chart or ""
    if chart.startswith("oci://") and not repo:
        repo, _, chart = chart.rpartition("/")
    return {"repo": (repo or "").rstrip("/") or None, "chart": chart or None, "version": version}


def numbered_folders(bundle: Path) -> list[tuple[str, Path]]:
    """(release, folder) of a numbered bundle, in folder order."""
    out = []
    for p in sorted(bundle.iterdir()):
        m = _NUMBERED.fullmatch(p.name)
        if p.is_dir() and m:
            out.append((m.group(2), p))
    return out


def render_local(
    helm: Path, folder: Path, release: str, ns: str, *files: Path, sets: Sequence[str] = ()
) -> dict[str, Any]:
    """The objects a local chart renders to (`helm template`, the given values files)."""
    args = [a for f in files if f.is_file() for a in ("-f", str(f))]
    args += [a for v in sets for a in ("--set", v)]
    out = subprocess.run(
        [str(helm), "template", release, str(folder), "--namespace", ns, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "HELM_CACHE_HOME": str(folder.parent / ".helm-cache")},
    )
    if out.returncode != 0:  # a finding, not a crash: Helm refuses what the chart renders
        return {"<helm template fails>": out.stderr.strip().splitlines()[-1][-160:]}
    return _objects(_yaml_objects(out.stdout))


def _release(
    local: bool, ns: str | None, chart: dict[str, Any] | None, values: dict[str, Any]
) -> dict[str, Any]:
    return {
        "local": local,
        "namespace": ns,
        "chart": chart,
        "values": {} if local else values,
        "manifests": {},
    }


_SH_NS = re.compile(r"--namespace (\S+)")
_ENV = re.compile(r"^(\w+)='([^']*)'$", re.M)


def upstream_numbered_helm(bundle: Path, helm: Path) -> dict[str, Any]:
    """Upstream's helm (and helmfile) folders: `install.sh` (namespace), `upstream.env` (chart,
    repository, version) or a local chart, `values.yaml` + `cluster-values.yaml`."""
    comps: dict[str, dict[str, Any]] = {}
    for rel, folder in numbered_folders(bundle):
        ns_m = _SH_NS.search((folder / "install.sh").read_text())
        ns = ns_m.group(1) if ns_m else None
        files = (folder / "values.yaml", folder / "cluster-values.yaml")
        values = _merge(_values_file(files[0]), _values_file(files[1]))
        if (folder / "Chart.yaml").is_file():
            comps[rel] = _release(True, ns, None, values)
            comps[rel]["manifests"] = render_local(helm, folder, rel, ns or "default", *files)
        else:
            env = dict(_ENV.findall((folder / "upstream.env").read_text()))
            ref = _chart_ref(env.get("CHART"), env.get("REPO"), env.get("VERSION"))
            comps[rel] = _release(False, ns, ref, values)
    return {"order": list(comps), "components": comps}


def our_numbered_helm(bundle: Path, helm: Path) -> dict[str, Any]:
    """This project's helm folders in the same terms (bundle-info.yaml names each release)."""
    comps: dict[str, dict[str, Any]] = {}
    for r in our_releases(bundle):
        folder = bundle / r["path"]
        values = _values_file(folder / "values.yaml")
        if (folder / "Chart.yaml").is_file():
            comps[r["name"]] = _release(True, r["namespace"], None, values)
            comps[r["name"]]["manifests"] = render_local(
                helm, folder, r["name"], r["namespace"], folder / "values.yaml"
            )
            continue
        m = _OUR_HELM.search((folder / "install.sh").read_text())
        assert m is not None, f"{folder}/install.sh installs no chart"
        ref = _chart_ref(_unquote(m.group(2)), _unquote(m.group(3)), _unquote(m.group(4)))
        comps[r["name"]] = _release(False, _unquote(m.group(5)), ref, values)
    return {"order": list(comps), "components": comps}


def _normal_app(app: dict[str, Any]) -> dict[str, Any]:
    """An Application with its folder names (`NNN-`) and value-file paths left out (the layout
    is compared as the release order) and its sources keyed by role."""
    app = json.loads(json.dumps(app))
    spec = app.get("spec") or {}
    if "source" in spec:
        spec["sources"] = [spec.pop("source")]
    for s in spec.get("sources") or ():
        if isinstance(s.get("path"), str):
            s["path"] = _NUMBERED.sub(r"\2", s["path"])
        helm_ = s.get("helm") or {}
        if "values" in helm_:  # inline values (argocd-helm): compared as values
            helm_.pop("values")
            if not helm_:
                s.pop("helm")
    _value_files(app)
    return app


def _app_values(app: dict[str, Any]) -> dict[str, Any]:
    spec = app.get("spec") or {}
    for s in [spec.get("source") or {}, *(spec.get("sources") or ())]:
        inline = (s.get("helm") or {}).get("values")
        if isinstance(inline, str):
            return yaml.safe_load(inline) or {}
    return {}


def numbered_argocd(bundle: Path, helm: Path, apps: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """An Argo CD bundle (either side; `apps`: each release's Application): per release its
    Application (normalised, wave included), chart, namespace, values (the folder's values
    file, or the Application's inline values) and a local chart's rendered objects."""
    comps: dict[str, dict[str, Any]] = {}
    for rel, folder in numbered_folders(bundle):
        app = apps[rel]
        spec = app["spec"]
        src = next(
            (s for s in [spec.get("source") or {}, *(spec.get("sources") or ())] if "chart" in s),
            None,
        )
        ns = (spec.get("destination") or {}).get("namespace")
        values = _values_file(folder / "values.yaml") | _app_values(app)
        if (folder / "Chart.yaml").is_file():
            comps[rel] = _release(True, ns, None, values)
            comps[rel]["manifests"] = render_local(
                helm, folder, rel, ns or "default", folder / "values.yaml"
            )
        else:
            assert src is not None, f"{folder}: an Application without a chart"
            ref = _chart_ref(src["chart"], src.get("repoURL"), str(src.get("targetRevision")))
            comps[rel] = _release(False, ns, ref, values)
        comps[rel]["application"] = _normal_app(app)
    return {"order": list(comps), "components": comps}


def folder_apps(bundle: Path) -> dict[str, dict[str, Any]]:
    return {
        rel: yaml.safe_load((folder / "application.yaml").read_text())
        for rel, folder in numbered_folders(bundle)
    }


_SEMVER = re.compile(r"v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?")


def rendered_apps(bundle: Path, helm: Path, scratch: Path) -> tuple[bool, dict[str, Any]]:
    """Whether an argocd-helm chart's version is one Helm takes (SemVer), and the Applications
    it renders (`repoURL` given, as its README says; a copy with a SemVer version when it is not,
    so that what it would deploy is still compared), by name."""
    chart = yaml.safe_load((bundle / "Chart.yaml").read_text())
    valid = bool(_SEMVER.fullmatch(str(chart.get("version"))))
    if not valid:
        copy = scratch / f"semver-{bundle.parent.name}-{bundle.name}"
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(bundle, copy)
        (copy / "Chart.yaml").write_text(yaml.safe_dump({**chart, "version": "0.0.0"}))
        bundle = copy
    objs = render_local(
        helm,
        bundle,
        "aicr",
        "argocd",
        sets=("repoURL=oci://registry.example/c", "targetRevision=1.0.0"),
    )
    if "<helm template fails>" in objs:
        raise AssertionError(f"{bundle}: {objs['<helm template fails>']}")
    return valid, {
        o["metadata"]["name"]: o for o in objs.values() if o.get("kind") == "Application"
    }


def _helmfile_docs(bundle: Path) -> list[dict[str, Any]]:
    """helmfile.yaml and, when it names sub-helmfiles (upstream's `level-N.yaml`), those in order."""
    top = yaml.safe_load((bundle / "helmfile.yaml").read_text()) or {}
    subs = [yaml.safe_load((bundle / h["path"]).read_text()) for h in top.get("helmfiles") or ()]
    return [top, *subs]


_RELEASE_OPTIONS = ("wait", "timeout", "disableValidation", "createNamespace")


def helmfile_model(bundle: Path, helm: Path, components: Mapping[str, str]) -> dict[str, Any]:
    """A helmfile bundle (either side): per release its chart (the repository named by its
    prefix), namespace, values (its values files, merged), options, rendered local chart, and
    its level: upstream's `level-N.yaml` index, or (one helmfile with `needs`) the depth of the
    release over `needs`, a release of the same component (`-pre`, `-post`) at its level.
    `components`: release -> component (a release not in it is its own component)."""
    docs = _helmfile_docs(bundle)
    leveled = len(docs) > 1
    comps: dict[str, dict[str, Any]] = {}
    for level, doc in enumerate(docs[1:] if leveled else docs):
        defaults = doc.get("helmDefaults") or docs[0].get("helmDefaults") or {}
        repos = {r["name"]: r for r in doc.get("repositories") or ()}
        for r in doc.get("releases") or ():
            rel, ns, chart = r["name"], r.get("namespace"), str(r["chart"])
            files = [bundle / v for v in r.get("values") or () if isinstance(v, str)]
            values: dict[str, Any] = {}
            for f in files:
                values = _merge(values, _values_file(f))
            if chart.startswith("./"):
                comps[rel] = _release(True, ns, None, values)
                folder = bundle / chart
                comps[rel]["manifests"] = render_local(helm, folder, rel, ns or "default", *files)
            else:
                prefix, _, name = chart.partition("/")
                repo = repos[prefix]
                url = ("oci://" if repo.get("oci") else "") + str(repo["url"])
                comps[rel] = _release(False, ns, _chart_ref(name, url, r.get("version")), values)
            opts = {k: r.get(k, defaults.get(k)) for k in _RELEASE_OPTIONS}
            comps[rel]["options"] = opts
            comps[rel]["level"] = level if leveled else None
            comps[rel]["needs"] = [str(n).rpartition("/")[2] for n in r.get("needs") or ()]
    if not leveled:
        for rel in comps:  # in order: a release needs only releases before it
            c = comps[rel]
            c["level"] = max(
                (
                    comps[n]["level"] + (components.get(n, n) != components.get(rel, rel))
                    for n in c["needs"]
                ),
                default=0,
            )
    for c in comps.values():
        c.pop("needs")
    return {"components": comps}


def flux_model(bundle: Path, helm: Path, scratch: Path) -> dict[str, Any]:
    """A Flux bundle (either side): every HelmRelease its kustomization lists, by name: its
    chart (through its source: a HelmRepository, an OCIRepository, or the bundle's own Git
    repository for a local chart, rendered with its inline values), target namespace, values,
    `dependsOn` (a set: Flux orders by it) and the rest of its spec."""
    kust = yaml.safe_load((bundle / "kustomization.yaml").read_text())
    objs = [o for r in kust["resources"] for o in _yaml_objects((bundle / r).read_text())]
    sources = {(o["kind"], o["metadata"]["name"]): o for o in objs if o["kind"] != "HelmRelease"}
    comps: dict[str, dict[str, Any]] = {}
    for o in (o for o in objs if o["kind"] == "HelmRelease"):
        rel, spec = o["metadata"]["name"], dict(o["spec"])
        ns = spec.pop("targetNamespace", None)
        values = spec.pop("values", None) or {}
        deps = sorted(d["name"] for d in spec.pop("dependsOn", None) or ())
        chart = (spec.pop("chart", None) or {}).get("spec") or {}
        ref = spec.pop("chartRef", None)
        if ref is not None:  # an OCIRepository: the whole artifact, its tag the version
            src = sources[(ref["kind"], ref["name"])]["spec"]
            comps[rel] = _release(
                False, ns, _chart_ref(src["url"], None, src["ref"]["tag"]), values
            )
        elif chart["sourceRef"]["kind"] == "GitRepository":
            comps[rel] = _release(True, ns, None, values)
            inline = scratch / f"flux-values-{bundle.name}-{rel}.yaml"
            inline.write_text(yaml.safe_dump(values))
            folder = bundle / str(chart["chart"])
            comps[rel]["manifests"] = render_local(helm, folder, rel, ns or "default", inline)
        else:
            src = sources[("HelmRepository", chart["sourceRef"]["name"])]["spec"]
            url = str(src["url"])
            if src.get("type") == "oci" and not url.startswith("oci://"):
                url = "oci://" + url
            ref_ = _chart_ref(str(chart["chart"]), url, str(chart.get("version")))
            comps[rel] = _release(False, ns, ref_, values)
        comps[rel]["dependsOn"] = deps
        comps[rel]["spec"] = spec
    return {"components": comps}


# ------------------------------------------------------------------ one case


# ------------------------------------------------------------------ one case


@dataclass
class Outcome:
    case_id: str
    findings: list[Finding] = field(default_factory=list)
    explained: dict[str, list[Finding]] = field(default_factory=dict)  # difference id -> findings
    unexplained: list[Finding] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return not self.findings


def _criteria_args(case: Case, tree: Path) -> list[str]:
    return ["--catalog", str(tree), *case.meta["criteria_flags"]]


def run_recipe_case(case: Case, scratch: Path) -> list[Finding]:
    tree = data_tree(case, scratch)
    out: list[Finding] = []
    meta = case.meta
    recipe_cmd = next(c for c in meta["commands"] if c["argv"][1] == "recipe")
    query_cmd = next(c for c in meta["commands"] if c["argv"][1] == "query")
    ours = invoke(["query", *_criteria_args(case, tree), "--format", "aicr"])
    compare("recipe:exit", recipe_cmd["exit_code"], ours.exit_code, out)
    if recipe_cmd["exit_code"] == 0 and ours.exit_code == 0:
        # the YAML form (v0.11.1's corpus) or, where a corpus keeps only it, the JSON form
        recorded = case.dir / "recipe.yaml"
        if not recorded.is_file():
            recorded = case.dir / recipe_cmd["stdout"]
        up = yaml.safe_load(recorded.read_text())
        out += recipe_findings(up, yaml.safe_load(ours.stdout))
    elif recipe_cmd["exit_code"] != 0:
        compare("recipe:stdout", "", ours.stdout, out)
    ours_json = invoke(["query", *_criteria_args(case, tree), "--format", "json"])
    compare("hydrated:exit", query_cmd["exit_code"], ours_json.exit_code, out)
    if query_cmd["exit_code"] == 0 and ours_json.exit_code == 0:
        up = json.loads((case.dir / "hydrated.json").read_text())
        out += hydrated_findings(up, json.loads(ours_json.stdout))
    elif query_cmd["exit_code"] != 0:
        compare("hydrated:stdout", "", ours_json.stdout, out)
    return out


def run_bundle_case(case: Case, scratch: Path, helm: Path) -> list[Finding]:
    tree = data_tree(case, scratch)
    dep = case.deployer
    assert dep is not None
    out_dir = scratch / f"bundle-{case.name}-{dep}"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    args = ["bundle", "--recipe", str(case.dir / "recipe.yaml"), "--catalog", str(tree)]
    ours = invoke([*args, "--deployer", dep, "-o", str(out_dir), *case.flags])
    out: list[Finding] = []
    compare(f"{dep}:exit", case.exit_code, ours.exit_code, out)
    if case.exit_code != 0 or ours.exit_code != 0:
        if ours.exit_code != 0 and case.exit_code == 0:
            out.append(Finding(f"{dep}:stderr", None, ours.stderr.strip()[-400:]))
        return out
    up_dir = case.dir / dep
    if numbered_folders(up_dir) or (dep == "flux" and (up_dir / "sources").is_dir()):
        return out + numbered_findings(dep, up_dir, out_dir, helm)
    if dep not in ("helm", "argocd"):  # pragma: no cover - no such corpus
        out.append(Finding(f"{dep}:layout", "upstream layout without a model", None))
        return out
    if dep == "helm":
        out += bundle_findings("helm", upstream_helm(up_dir), our_helm(out_dir, helm))
    else:
        out += argocd_findings(upstream_argocd(up_dir), our_argocd(out_dir))
    return out


def numbered_findings(dep: str, up: Path, ours: Path, helm: Path) -> list[Finding]:
    """Upstream's 2026 bundle of deployer `dep` against this project's, in one model."""
    out: list[Finding] = []
    if dep in ("helm",):
        a, b = upstream_numbered_helm(up, helm), our_numbered_helm(ours, helm)
    elif dep == "argocd":
        a, b = (
            numbered_argocd(up, helm, folder_apps(up)),
            numbered_argocd(ours, helm, folder_apps(ours)),
        )
        root_a = yaml.safe_load((up / "app-of-apps.yaml").read_text())
        root_b = yaml.safe_load((ours / "app-of-apps.yaml").read_text())
        compare_tree("argocd:app-of-apps/", root_a, root_b, out)
    elif dep == "argocd-helm":
        (valid_a, apps_a), (valid_b, apps_b) = (
            rendered_apps(up, helm, ours.parent),
            rendered_apps(ours, helm, ours.parent),
        )
        compare("argocd-helm:Chart.yaml/version-is-semver", valid_a, valid_b, out)
        a, b = numbered_argocd(up, helm, apps_a), numbered_argocd(ours, helm, apps_b)
        roots_a = [_normal_app(v) for k, v in apps_a.items() if k not in a["components"]]
        roots_b = [_normal_app(v) for k, v in apps_b.items() if k not in b["components"]]
        compare("argocd-helm:app-of-apps/count", len(roots_a), len(roots_b), out)
        if roots_a and roots_b:
            compare_tree("argocd-helm:app-of-apps/", roots_a[0], roots_b[0], out)
    elif dep == "flux":
        a, b = flux_model(up, helm, ours.parent), flux_model(ours, helm, ours.parent)
    elif dep == "helmfile":
        mine = {r["name"]: r["component"] for r in our_releases(ours)}
        a, b = helmfile_model(up, helm, {}), helmfile_model(ours, helm, mine)
    else:
        out.append(Finding(f"{dep}:layout", "upstream layout without a model", None))
        return out
    return out + bundle_findings(dep, a, b)


def run_case(case: Case, scratch: Path, helm: Path) -> Outcome:
    findings = (
        run_recipe_case(case, scratch)
        if case.kind == "recipe"
        else run_bundle_case(case, scratch, helm)
    )
    outcome = Outcome(case.id, findings)
    for f in findings:
        by = next((d for d in case.corpus.differences if d.explains(case.id, f)), None)
        if by is None:
            outcome.unexplained.append(f)
        else:
            outcome.explained.setdefault(by.id, []).append(f)
    return outcome


def unexplained(corpus: Corpus, case_id: str, findings: Sequence[Finding]) -> list[Finding]:
    """The findings of case `case_id` no listed difference of `corpus` explains."""
    return [f for f in findings if not any(d.explains(case_id, f) for d in corpus.differences)]


# ------------------------------------------------------------------ the documentation's table

_BEGIN = "<!-- differences {version} begin (tests/upstream_corpora/{version}.yaml) -->"
_END = "<!-- differences {version} end -->"


def table_rows(corpus: Corpus) -> list[str]:
    def cell(s: str) -> str:
        return " ".join(s.split()).replace("|", "\\|")

    rows = [
        f"| upstream {corpus.name} | this project | why | id |",
        "| --- | --- | --- | --- |",
    ]
    for d in corpus.differences:
        rows.append(f"| {cell(d.upstream)} | {cell(d.ours)} | {cell(d.why)} | `{d.id}` |")
    return rows


def doc_table(corpus: Corpus, text: str) -> list[str] | None:
    begin, end = _BEGIN.format(version=corpus.name), _END.format(version=corpus.name)
    if begin not in text or end not in text:
        return None
    block = text.split(begin, 1)[1].split(end, 1)[0]
    return [line for line in block.strip().splitlines() if line.strip()]


def write_doc_table(corpus: Corpus, text: str) -> str:
    begin, end = _BEGIN.format(version=corpus.name), _END.format(version=corpus.name)
    block = "\n".join([begin, *table_rows(corpus), end])
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        return head + block + rest.split(end, 1)[1]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def report(corpus: Corpus, scratch: Path, helm: Path) -> Iterator[Outcome]:
    for case in corpus.cases():
        yield run_case(case, scratch, helm)


@cache
def helm_binary() -> Path | None:
    for candidate in (os.environ.get("AICR_HELM"), str(REPO / ".tools" / "helm")):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    found = shutil.which("helm")
    return Path(found) if found else None
