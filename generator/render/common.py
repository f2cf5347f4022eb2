"""Pieces every deployer shares: the bundle tree record, YAML output, names, templates,
`bundle-info.yaml` and `checksums.txt`.

Everything here is pure: a deployer builds a mapping of relative path -> `BundleFile`, and the
writers (`write_bundle`, `archive_bytes`) are the only code that touches the file system.
"""

from __future__ import annotations

import hashlib
import pickle
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

import jinja2
import yaml

from generator import __version__
from generator.core import names
from generator.core.errors import Diagnostic, RenderError
from generator.core.records import Override, RecipeResult, ResolvedComponent

GENERATOR_NAME = "aicr-catalog"
BUNDLE_INFO = "bundle-info.yaml"
CHECKSUMS = "checksums.txt"
RECIPE_FILE = "recipe.yaml"
TEMPLATES = Path(__file__).resolve().parent.parent.parent / "site_templates" / "bundles"

# Where GitOps deployers expect the pushed bundle unless told otherwise (--repo, --revision,
# --repo-path); a placeholder repository, as upstream AICR uses.
DEFAULT_REPO_URL = "https://github.com/example/aicr-bundles.git"
DEFAULT_REVISION = "main"
DEFAULT_REPO_PATH = "."

MODE_FILE = 0o644
MODE_EXEC = 0o755


class Deployer(StrEnum):
    HELM = "helm"
    HELMFILE = "helmfile"
    ARGOCD = "argocd"
    FLUX = "flux"


def deployer_of(value: Deployer | str) -> Deployer:
    """`value` as a Deployer, or a RenderError naming the accepted ones."""
    try:
        return Deployer(value)
    except ValueError as e:
        accepted = ", ".join(d.value for d in Deployer)
        raise RenderError(f"unknown deployer {value!r}; accepted: {accepted}") from e


@dataclass(frozen=True, slots=True)
class BundleFile:
    data: bytes
    mode: int = MODE_FILE


# A rendered bundle: POSIX relative path -> file. Paths never start with "/" nor contain "..".
BundleTree = Mapping[str, BundleFile]


@dataclass(frozen=True, slots=True)
class GitOpsTarget:
    """Where a GitOps deployer (Argo CD, Flux) will find the bundle once it is pushed."""

    repo_url: str = DEFAULT_REPO_URL
    revision: str = DEFAULT_REVISION
    path: str = DEFAULT_REPO_PATH

    def join(self, rel: str) -> str:
        """`rel` (a bundle path) as a path inside the Git repository."""
        base = self.path.strip("/")
        if base in ("", "."):
            return rel
        return f"{base}/{rel}"


@dataclass(frozen=True, slots=True)
class Release:
    """One entry of `bundle-info.yaml` `layout.releases`, in deployment order."""

    name: str
    component: str
    namespace: str
    path: str


@dataclass(frozen=True, slots=True)
class Rendered:
    """What one deployer produced before the shared files are added."""

    files: Mapping[str, BundleFile]
    entrypoint: str
    releases: tuple[Release, ...]


# --- YAML -----------------------------------------------------------------------------------

_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"


class _Dumper(_BaseDumper):  # type: ignore[misc,valid-type]
    """Safe dumper (libyaml when present) that never writes anchors or aliases.

    `represent_data` builds the nodes of plain data (dict, list, str, int, bool, None) directly:
    the same nodes `SafeRepresenter` builds for them (with `_represent_str` for strings), without
    its per-node alias bookkeeping and representer lookup, which cost more than the emitter.
    Every other type, and every dump with a default style or without a default flow style, goes
    through the registered representers.
    """

    # tag of each plain scalar the emitter has asked about (`resolve` below), per process
    _implicit_tags: ClassVar[dict[str, str]] = {}

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        """The tag a scalar would resolve to, memoized: the emitter asks twice for every scalar,
        and without path resolvers the answer depends on the text alone (`implicit[1]` only
        matters after a path resolver has run). Everything else goes to the resolver."""
        if kind is not yaml.ScalarNode or self.yaml_path_resolvers:
            resolved: str = super().resolve(kind, value, implicit)
            return resolved
        if not implicit[0]:
            return str(self.DEFAULT_SCALAR_TAG)
        memo = self._implicit_tags
        tag = memo.get(value)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(value) <= 256:  # keys, names, numbers: what repeats; long texts would pile up
                if len(memo) >= 100_000:
                    memo.clear()
                memo[value] = tag
        return tag

    def represent_data(self, data: Any) -> yaml.Node:
        if self.default_style is not None or self.default_flow_style is None:
            plain: yaml.Node = super().represent_data(data)
            return plain
        flow = self.default_flow_style
        sort_keys = self.sort_keys
        scalar, mapping, sequence = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode
        other = super().represent_data

        def node(x: Any) -> yaml.Node:
            t = type(x)
            if t is str:
                style = "|" if "\n" in x and not x.endswith(" ") else None
                return scalar(_STR_TAG, x, style=style)
            if t is dict:
                items = list(x.items())
                if sort_keys:
                    try:
                        items = sorted(items)
                    except TypeError:
                        pass
                return mapping(_MAP_TAG, [(node(k), node(v)) for k, v in items], flow_style=flow)
            if t is list:
                return sequence(_SEQ_TAG, [node(v) for v in x], flow_style=flow)
            if t is int:
                return scalar(_INT_TAG, str(x))
            if t is bool:
                return scalar(_BOOL_TAG, "true" if x else "false")
            if x is None:
                return scalar(_NULL_TAG, "null")
            built: yaml.Node = other(x)  # its children come back here through represent_data
            return built

        return node(data)


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data and not data.endswith(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


# Memo of `to_yaml` per process. The same documents are dumped again and again: `recipe.yaml` for
# each of the four deployers, a component's `values.yaml` for three of them, and components shared
# by many recipes. The key is sha256 over the object's pickle, which records every value with its
# exact type (1, 1.0, True and "1" all differ; so do a str and a str subclass), plus the options;
# equal pickles mean equal inputs, so a hit returns exactly what `yaml.dump` would. Only successful
# dumps are kept; the memo is emptied when it grows past _MEMO_LIMIT characters.
_MEMO: dict[tuple[bool, bytes], str] = {}
_MEMO_LIMIT = 32 << 20
_memo_chars = 0


def _memo_key(obj: Any, sort_keys: bool) -> tuple[bool, bytes] | None:
    try:
        data = pickle.dumps(obj, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
        return None  # not plain data: dump it uncached (yaml.dump reports what it cannot write)
    return sort_keys, hashlib.sha256(data).digest()


def to_yaml(obj: Any, *, sort_keys: bool = False) -> str:
    """Block-style YAML, UTF-8 safe, no aliases, stable for identical input."""
    global _memo_chars
    key = _memo_key(obj, sort_keys)
    if key is not None:
        hit = _MEMO.get(key)
        if hit is not None:
            return hit
    text = _dump(obj, sort_keys)
    if key is not None:
        if _memo_chars + len(text) > _MEMO_LIMIT:
            _MEMO.clear()
            _memo_chars = 0
        _MEMO[key] = text
        _memo_chars += len(text)
    return text


def _dump(obj: Any, sort_keys: bool) -> str:
    text: str = yaml.dump(
        obj,
        Dumper=_Dumper,
        sort_keys=sort_keys,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
        indent=2,
    )
    return text


def yaml_bytes(obj: Any, *, sort_keys: bool = False, header: str = "") -> bytes:
    return (header + to_yaml(obj, sort_keys=sort_keys)).encode("utf-8")


def yaml_stream(docs: Sequence[Any], *, header: str = "") -> bytes:
    return (header + "".join("---\n" + to_yaml(d) for d in docs)).encode("utf-8")


def header_comment(result: RecipeResult) -> str:
    return (
        f"# Generated by {GENERATOR_NAME} {__version__} from recipe {result.name} "
        f"(scale profile {result.scale_profile} {result.scale_profile_version}). Do not edit.\n"
    )


# --- names ----------------------------------------------------------------------------------

_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str, limit: int = 63) -> str:
    """A DNS-1123 label made from `text` (lower case, digits and dashes)."""
    s = _SLUG.sub("-", text.lower()).strip("-")[:limit].strip("-")
    return s or "x"


def is_oci(repository: str | None) -> bool:
    return bool(repository) and str(repository).startswith("oci://")


def chart_reference(c: ResolvedComponent) -> str:
    """`oci://registry/path/chart` for OCI charts, the bare chart name otherwise."""
    if is_oci(c.repository):
        return f"{str(c.repository).rstrip('/')}/{chart_leaf(c)}"
    return chart_leaf(c)


def has_chart(c: ResolvedComponent) -> bool:
    return c.chart is not None and c.type.lower() == "helm"


_DNS_LABEL = names.DNS_LABEL
_RECIPE_NAME = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,198}[a-z0-9])?$")
_TOKEN = names.TOKEN  # chart, version, repository: no spaces or quotes


def _identity_problems(result: RecipeResult) -> list[Diagnostic]:
    """Names that reach file paths, YAML keys and shell comments must be plain (fail closed)."""
    diags: list[Diagnostic] = []

    def bad(where: str, what: str, value: object, pattern: str) -> None:
        diags.append(
            Diagnostic(
                RECIPE_FILE, 0, 0, where, f"{what} {value!r} is not {pattern}", "render.unsafe-name"
            )
        )

    if not names.valid(_RECIPE_NAME, result.name):
        bad("$.metadata.name", "recipe name", result.name, "a lower-case DNS name")
    for what, value in (
        ("scale profile", result.scale_profile),
        ("scale profile version", result.scale_profile_version),
    ):
        if not names.valid(_TOKEN, value):
            bad("$.metadata.scaleProfile", what, value, "a plain token")
    for c in result.components:
        where = f"$.components[{c.order}]"
        if not names.valid(_DNS_LABEL, c.name):
            bad(where, "component name", c.name, "a DNS label")
        if not c.namespace:
            diags.append(
                Diagnostic(
                    RECIPE_FILE,
                    0,
                    0,
                    where,
                    f"component {c.name} has no namespace: each of its Helm releases needs one "
                    "(the recipe's namespace, or the registry's default for the component)",
                    "render.no-namespace",
                )
            )
        elif not names.valid(_DNS_LABEL, c.namespace):
            bad(where, f"namespace of {c.name}", c.namespace, "a DNS label")
        for field_name, field_value in (
            ("chart", c.chart),
            ("version", c.version),
            ("repository", c.repository),
        ):
            if field_value is not None and not names.valid(_TOKEN, field_value):
                bad(where, f"{field_name} of {c.name}", field_value, "a plain token")
    return diags


def check_renderable(result: RecipeResult, deployer: Deployer) -> None:
    """Fail closed on what this renderer cannot express, naming every component at fault."""
    diags: list[Diagnostic] = _identity_problems(result)
    names = {c.name for c in result.components}
    for c in result.components:
        where = f"$.components[{c.order}]"
        if c.type.lower() not in ("helm",):
            diags.append(
                Diagnostic(
                    RECIPE_FILE,
                    0,
                    0,
                    where,
                    f"component {c.name} has type {c.type}; the {deployer} deployer renders Helm "
                    "components (with optional manifests) only",
                    "render.unsupported-type",
                )
            )
            continue
        if c.chart is not None and (not c.repository or not c.version):
            diags.append(
                Diagnostic(
                    RECIPE_FILE,
                    0,
                    0,
                    where,
                    f"component {c.name} has chart {c.chart} but no "
                    + ("repository" if not c.repository else "pinned version"),
                    "render.unpinned-chart",
                )
            )
        if c.chart is None and not (c.manifest_files or c.pre_manifest_files):
            diags.append(
                Diagnostic(
                    RECIPE_FILE,
                    0,
                    0,
                    where,
                    f"component {c.name} has neither a chart nor manifests: nothing to deploy",
                    "render.empty-component",
                )
            )
        for dep in c.dependency_refs:
            if dep not in names:
                diags.append(
                    Diagnostic(
                        RECIPE_FILE,
                        0,
                        0,
                        where,
                        f"component {c.name} depends on {dep}, which is not in the recipe",
                        "render.unknown-dependency",
                    )
                )
    if diags:
        raise RenderError(f"recipe {result.name} cannot be rendered for {deployer}", diags)


def manifest_name(rel: str) -> str:
    """The file name a catalog manifest gets inside the bundle (its base name, as upstream)."""
    return rel.rsplit("/", 1)[-1]


def chart_leaf(c: ResolvedComponent) -> str:
    """The chart's own name: a repository-alias prefix such as `nvidia/` in `nvidia/nvsentinel`
    is dropped, as upstream AICR does (the repository is given separately, so `helm --repo`,
    an OCI reference, Argo CD and Flux all want the bare name)."""
    if c.chart is None:
        raise RenderError(f"component {c.name} has no chart")
    leaf = c.chart.rstrip("/").rsplit("/", 1)[-1]
    if not leaf:
        raise RenderError(f"component {c.name} has an empty chart name {c.chart!r}")
    return leaf


# --- folders: the numbered layout every deployer shares ---------------------------------------
#
# A component becomes one to three folders, numbered consecutively in deployment order:
#   NNN-<name>-pre    local chart of its preManifestFiles (before the chart)
#   NNN-<name>        its upstream chart (values.yaml), or, for a component without a chart,
#                     the local chart of its manifests
#   NNN-<name>-post   local chart of its manifestFiles (after the chart)
# A local chart is Chart.yaml + values.yaml + templates/<manifest files, byte for byte>: the
# manifests are Helm templates, rendered by Helm (helm, helmfile) or by Argo CD / Flux from the
# bundle's repository, never parsed here.

PHASE_PRE = "pre"
PHASE_MAIN = "main"
PHASE_POST = "post"
_PHASE_RANK = {PHASE_PRE: 0, PHASE_MAIN: 1, PHASE_POST: 2}
HELM_RELEASE_NAME_MAX = 53  # Helm refuses longer release names
# a top-level `kind: Namespace` line: text scan, the templates are never parsed
_NAMESPACE_KIND = re.compile(rb"(?m)^kind:[ \t]*Namespace[ \t]*\r?$")


@dataclass(frozen=True, slots=True)
class Folder:
    """One numbered folder of the bundle: a Helm release of an upstream or a local chart."""

    component: ResolvedComponent
    phase: str  # PHASE_PRE, PHASE_MAIN or PHASE_POST
    release: str  # <name>, <name>-pre or <name>-post: Helm release, Application, HelmRelease
    dir: str  # NNN-<release>
    templates: tuple[tuple[str, bytes], ...]  # local charts: (file name, manifest bytes)

    @property
    def local(self) -> bool:
        """A local chart (wrapping manifests), as opposed to the component's upstream chart."""
        return not (self.phase == PHASE_MAIN and has_chart(self.component))

    @property
    def creates_namespace(self) -> bool:
        """Whether the release may create its namespace: not when one of its templates declares
        a Namespace itself (Helm would refuse to adopt the namespace it created)."""
        return not any(_NAMESPACE_KIND.search(data) for _, data in self.templates)

    @property
    def wave(self) -> int:
        """Argo CD sync wave: the component's dependency depth, pre before chart before post."""
        return 3 * self.component.depth + _PHASE_RANK[self.phase]


def _templates(
    c: ResolvedComponent, manifests: Mapping[str, bytes], *, pre: bool
) -> tuple[tuple[str, bytes], ...]:
    """(template file name, bytes) of a component's (pre-)manifests, sorted by file name."""
    rels = c.pre_manifest_files if pre else c.manifest_files
    out: dict[str, bytes] = {}
    diags: list[Diagnostic] = []
    for rel in rels:
        data = manifests.get(rel)
        name = manifest_name(rel)
        if data is None:
            diags.append(
                Diagnostic(
                    rel,
                    0,
                    0,
                    "$",
                    f"manifest of component {c.name} was not supplied to the renderer",
                    "render.missing-manifest",
                )
            )
            continue
        if name.startswith("_") or name == "NOTES.txt" or not names.valid(_TEMPLATE_NAME, name):
            diags.append(
                Diagnostic(
                    rel,
                    0,
                    0,
                    "$",
                    f"manifest file name {name!r} of component {c.name} cannot be a Helm "
                    "template (Helm skips `_*` partials and NOTES.txt; names are plain tokens)",
                    "render.manifest-name",
                )
            )
            continue
        if name in out:
            diags.append(
                Diagnostic(
                    rel,
                    0,
                    0,
                    "$",
                    f"two manifests of component {c.name} are both named {name}",
                    "render.manifest-collision",
                )
            )
            continue
        out[name] = data
    if diags:
        raise RenderError(f"component {c.name}: manifests cannot be packaged", diags)
    return tuple(sorted(out.items()))


_TEMPLATE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def folders(result: RecipeResult, manifests: Mapping[str, bytes]) -> tuple[Folder, ...]:
    """The bundle's folders in deployment order (see the layout above).

    Raises RenderError when a manifest is missing or misnamed, or when an injected release
    (`<name>-pre`, `<name>-post`) would collide with a component of the recipe or exceed Helm's
    release name limit.
    """
    planned: list[tuple[ResolvedComponent, str, str, tuple[tuple[str, bytes], ...]]] = []
    for c in result.components:
        pre = _templates(c, manifests, pre=True)
        post = _templates(c, manifests, pre=False)
        if pre:
            planned.append((c, PHASE_PRE, f"{c.name}-{PHASE_PRE}", pre))
        if has_chart(c):
            planned.append((c, PHASE_MAIN, c.name, ()))
            if post:
                planned.append((c, PHASE_POST, f"{c.name}-{PHASE_POST}", post))
        elif post or not pre:
            planned.append((c, PHASE_MAIN, c.name, post))
    diags: list[Diagnostic] = []
    names = {c.name for c in result.components}
    for c, phase, release, _ in planned:
        where = f"$.components[{c.order}]"
        if phase != PHASE_MAIN and release in names:
            diags.append(
                Diagnostic(
                    RECIPE_FILE,
                    0,
                    0,
                    where,
                    f"component {c.name} needs a release {release} for its {phase} manifests, "
                    f"but the recipe has a component of that name",
                    "render.release-collision",
                )
            )
        if len(release) > HELM_RELEASE_NAME_MAX:
            diags.append(
                Diagnostic(
                    RECIPE_FILE,
                    0,
                    0,
                    where,
                    f"release name {release} is longer than Helm's {HELM_RELEASE_NAME_MAX} "
                    "characters",
                    "render.unsafe-name",
                )
            )
    if len(planned) > 999:
        diags.append(
            Diagnostic(
                RECIPE_FILE, 0, 0, "$", f"{len(planned)} folders exceed NNN-", "render.too-many"
            )
        )
    if diags:
        raise RenderError(f"recipe {result.name} cannot be laid out", diags)
    return tuple(
        Folder(c, phase, release, f"{i:03d}-{release}", tpl)
        for i, (c, phase, release, tpl) in enumerate(planned, start=1)
    )


def head_release(c: ResolvedComponent, all_folders: Sequence[Folder]) -> str:
    """The first release of component `c` (what waits for its dependencies)."""
    return next(f.release for f in all_folders if f.component.name == c.name)


def tail_release(c: ResolvedComponent, all_folders: Sequence[Folder]) -> str:
    """The last release of component `c` (what its dependants wait for)."""
    return [f.release for f in all_folders if f.component.name == c.name][-1]


def previous_release(f: Folder, all_folders: Sequence[Folder]) -> str | None:
    """The release of the same component just before `f` (None for the component's first)."""
    mine = [g for g in all_folders if g.component.name == f.component.name]
    i = mine.index(f)
    return mine[i - 1].release if i else None


def local_chart_files(f: Folder, header: str) -> dict[str, BundleFile]:
    """Chart.yaml, values.yaml and templates/ of a local-chart folder.

    values.yaml nests the component's merged values under its name, because the manifests read
    them as `index .Values "<component>"` (upstream AICR's convention for manifest templates).
    """
    c = f.component
    chart: dict[str, Any] = {
        "apiVersion": "v2",
        "name": f.release,
        "description": f"The {'pre-' if f.phase == PHASE_PRE else ''}manifests of component "
        f"{c.name}, as a local chart",
        "type": "application",
        "version": __version__,
    }
    if c.version:
        chart["appVersion"] = c.version
    chart["annotations"] = {
        "aicr.run/component": c.name,
        "aicr.run/phase": f.phase,
        "aicr.run/generated-by": f"{GENERATOR_NAME} {__version__}",
    }
    files = {
        f"{f.dir}/Chart.yaml": BundleFile(yaml_bytes(chart, header=header)),
        f"{f.dir}/values.yaml": BundleFile(
            yaml_bytes({c.name: _sorted_plain(c.values)}, header=header)
        ),
    }
    for name, data in f.templates:
        files[f"{f.dir}/templates/{name}"] = BundleFile(data)
    return files


def _sorted_plain(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {k: _sorted_plain(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list | tuple):
        return [_sorted_plain(v) for v in obj]
    return obj


def dependency_names(c: ResolvedComponent, result: RecipeResult) -> tuple[str, ...]:
    """The component's dependencies in deployment order (only those in the recipe)."""
    order = {x.name: x.order for x in result.components}
    return tuple(sorted((d for d in set(c.dependency_refs) if d in order), key=order.__getitem__))


# --- templates ------------------------------------------------------------------------------


def _sh(value: object) -> str:
    return shlex.quote(str(value))


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # shell and Markdown: values are quoted with `sh` explicitly
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        # templates are read once per process (as `renderer_fingerprint` hashes them once), not
        # stat()ed again on every one of the thousands of files a build renders
        auto_reload=False,
    )
    env.filters["sh"] = _sh
    return env


_ENV: jinja2.Environment | None = None


def render_template(template: str, /, **context: Any) -> bytes:
    """Render one of `site_templates/bundles/` with the single bundle Jinja environment."""
    global _ENV
    if _ENV is None:
        _ENV = _env()
    try:
        text = _ENV.get_template(template).render(**context)
    except jinja2.TemplateError as e:
        raise RenderError(f"template {template} failed: {e}") from e
    return text.encode("utf-8")


# --- bundle-info and checksums --------------------------------------------------------------


def override_json(o: Override) -> dict[str, Any]:
    return {"component": o.component, "path": o.path, "value": o.value, "origin": o.origin}


def bundle_info(
    result: RecipeResult,
    deployer: Deployer,
    rendered: Rendered,
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "apiVersion": "aicr.run/v1",
        "kind": "BundleInfo",
        "generator": {"name": GENERATOR_NAME, "version": __version__},
        "deployer": str(deployer),
        "entrypoint": rendered.entrypoint,
        "recipe": {
            "name": result.name,
            "version": __version__,
            "digest": result.digest,
            "path": RECIPE_FILE,
        },
        "scaleProfile": {"name": result.scale_profile, "version": result.scale_profile_version},
        "overrides": [override_json(o) for o in result.overrides],
        "settings": dict(settings),
        "releases": [
            {"name": r.name, "component": r.component, "namespace": r.namespace, "path": r.path}
            for r in rendered.releases
        ],
    }


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def checksums_text(files: Mapping[str, BundleFile]) -> bytes:
    """`sha256sum` format (`<hex>  <path>`), sorted by path, every file but checksums.txt."""
    lines = [f"{sha256_hex(files[p].data)}  {p}\n" for p in sorted(files) if p != CHECKSUMS]
    return "".join(lines).encode("utf-8")


def check_paths(paths: Sequence[str]) -> None:
    bad = [
        p
        for p in paths
        if not p
        or p.startswith("/")
        or "\\" in p
        or any(s in ("", ".", "..") for s in p.split("/"))
    ]
    if bad:
        raise RenderError(
            "unsafe bundle paths",
            [
                Diagnostic(p, 0, 0, "$", "bundle path is absolute or not normalized", "render.path")
                for p in bad
            ],
        )
