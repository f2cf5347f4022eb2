"""Parse user overrides: `--set component:path=value` and `--set-file component:path=FILE`.

`--set` values are scalars, typed: `true`/`false` -> bool, integers -> int, decimal or exponent
numbers -> float, anything else (including `null`, `nan`, `1e`, `007`) -> the string as written.
Quote-free by design: `--set c:p=true` is the boolean, a string "true" needs `--set-file`.
`--set-file` reads a YAML or JSON file holding an object, deep-merged at `path` (or at the
component's root when `path` is empty: `--set-file component=FILE`); its recorded origin names
the file by its base name only.

Parsing only: whether the component exists, is enabled, or contradicts a scale-profile owned
value is decided by `generator.catalog.resolve.resolve`, which rejects such overrides.

Entry: `parse_overrides(sets, set_files) -> tuple[Override, ...]`, every error collected into one
UsageError (`parse_set`, `parse_set_file` and `typed_scalar` parse one of each).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.core import names, safeio
from generator.core.errors import Diagnostic, LoadError, UsageError
from generator.core.records import Override

_COMPONENT = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")
_PATH_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
_INT = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"^[-+]?(([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)$")


def _usage(origin: str, message: str, rule: str) -> UsageError:
    return UsageError(f"{origin}: {message}", [Diagnostic(origin, 0, 0, "$", message, rule)])


def typed_scalar(text: str) -> bool | int | float | str:
    """The typed value of a `--set` right-hand side.

    ValueError for a number no recipe can hold, as the YAML loader judges catalog numbers
    (`yamlio`): an integer beyond ±(2^53 - 1), which JSON and the recipe digest (RFC 8785)
    cannot represent exactly, and a number that overflows to infinity.
    """
    from generator.core.yamlio import MAX_SAFE_INT

    if text == "true":
        return True
    if text == "false":
        return False
    if names.valid(_INT, text):
        # length first: Python's int() refuses more than 4,300 digits with its own error
        if len(text.lstrip("+-")) > len(str(MAX_SAFE_INT)) or abs(int(text)) > MAX_SAFE_INT:
            raise ValueError(
                f"integer outside the range JSON represents exactly (±{MAX_SAFE_INT}); "
                "give a larger number as a string with --set-file"
            )
        return int(text)
    if names.valid(_FLOAT, text):
        number = float(text)
        if not math.isfinite(number):
            raise ValueError(f"number {text[:40]!r} overflows to infinity")
        return number
    return text


def _split(option: str, text: str, *, allow_root: bool) -> tuple[str, str, str]:
    """`component:path=rhs` -> (component, path, rhs)."""
    origin = f"{option} {text}"
    if "=" not in text:
        raise _usage(origin, f"expected COMPONENT:PATH=VALUE, got {text!r}", "override.syntax")
    left, rhs = text.split("=", 1)
    if ":" in left:
        component, path = left.split(":", 1)
    elif allow_root:
        component, path = left, ""
    else:
        raise _usage(origin, f"expected COMPONENT:PATH=VALUE, got {text!r}", "override.syntax")
    if not names.valid(_COMPONENT, component):
        raise _usage(origin, f"invalid component name {component!r}", "override.component")
    if path or not allow_root:
        bad = [s for s in path.split(".") if not names.valid(_PATH_SEGMENT, s)]
        if bad:
            raise _usage(
                origin,
                f"invalid values path {path!r} (dotted keys of letters, digits, '_' and '-')",
                "override.path",
            )
    return component, path, rhs


def parse_set(text: str) -> Override:
    """One `--set component:path=value`."""
    component, path, rhs = _split("--set", text, allow_root=False)
    try:
        value = typed_scalar(rhs)
    except ValueError as e:
        raise _usage(f"--set {text}", str(e), "override.number") from None
    return Override(component, path, value, f"--set {text}")


def _load_object(path: str, read: Callable[[str], bytes]) -> dict[str, Any]:
    from generator.core.yamlio import parse_yaml

    origin = f"--set-file {path}"
    try:
        raw = read(path)
    except OSError as e:
        raise _usage(origin, f"cannot read {path}: {e.strerror or e}", "override.file") from e
    except safeio.Refusal as e:
        raise _usage(origin, f"cannot read {path}: {e.message}", "override.file") from None
    try:
        doc = parse_yaml(raw, path)
    except LoadError as e:
        raise UsageError(f"{path}: not valid YAML/JSON", e.diagnostics) from e
    if not isinstance(doc.data, dict):
        kind = "empty" if doc.data is None else type(doc.data).__name__
        raise _usage(origin, f"{path} must hold a YAML/JSON object, found {kind}", "override.file")
    return doc.data


def _read(path: str) -> bytes:
    return safeio.read(Path(path), limit=safeio.YAML_BYTES)  # a FIFO cannot block


def parse_set_file(text: str, read: Callable[[str], bytes] = _read) -> Override:
    """One `--set-file component:path=FILE` (or `component=FILE` for the whole values)."""
    component, path, file = _split("--set-file", text, allow_root=True)
    if not file:
        raise _usage(f"--set-file {text}", "no file given after '='", "override.syntax")
    # The origin names the file without its directory: bundle-info.yaml must not carry absolute
    # paths, and the same file content gives the same bundle wherever it lives.
    left = text.split("=", 1)[0]
    name = file.replace("\\", "/").rsplit("/", 1)[-1]
    return Override(component, path, _load_object(file, read), f"--set-file {left}={name}")


def parse_overrides(
    sets: Iterable[str] = (), set_files: Iterable[str] = (), read: Callable[[str], bytes] = _read
) -> tuple[Override, ...]:
    """All overrides, `--set-file` first then `--set`, each group in the order given, so a
    scalar `--set` refines an object from `--set-file`. Collects every error before raising."""
    out: list[Override] = []
    diags: list[Diagnostic] = []
    messages: list[str] = []
    for text in set_files:
        try:
            out.append(parse_set_file(text, read))
        except UsageError as e:
            diags.extend(e.diagnostics)
            messages.append(e.message)
    for text in sets:
        try:
            out.append(parse_set(text))
        except UsageError as e:
            diags.extend(e.diagnostics)
            messages.append(e.message)
    if diags:
        raise UsageError("; ".join(messages), diags)
    return tuple(out)


# ---------------------------------------------------------------- node scheduling
#
# Upstream AICR's `aicr bundle` writes node tolerations (and, when given, node selectors) into
# every component's values at the paths its registry entry lists under
# `nodeScheduling.{system,accelerated}.{tolerationPaths,nodeSelectorPaths}`. Without a toleration
# flag for a class, that class's paths get `[{operator: Exists}]` (tolerate every taint), which
# replaces what the values files set there. When given, `--workload-selector` goes to
# `podScheduling.workload.workloadSelectorPaths`, `--workload-gate` (a taint, as the string
# `key=value:effect` or `key:effect`) to `nodeScheduling.accelerated.taintStrPaths`, and
# `--nodes N` (N > 0) to `nodeScheduling.nodeCountPaths`. These are the same: overrides applied
# before the user's `--set`, recorded like them.

SCHEDULING_CLASSES = ("system", "accelerated")
DEFAULT_TOLERATIONS: tuple[dict[str, str], ...] = ({"operator": "Exists"},)
_TAINT_KEY = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
SCHEDULING_ORIGIN = "nodeScheduling:"


@dataclass(frozen=True, slots=True)
class NodeScheduling:
    """The scheduling flags of `bundle`, as given (each a tuple of the flag's values)."""

    system_selectors: tuple[str, ...] = ()
    system_tolerations: tuple[str, ...] = ()
    accelerated_selectors: tuple[str, ...] = ()
    accelerated_tolerations: tuple[str, ...] = ()
    workload_selectors: tuple[str, ...] = ()
    workload_gate: str | None = None
    nodes: int = 0  # 0 = unset, as upstream


def parse_toleration(option: str, text: str) -> dict[str, str]:
    """`key=value:effect` (operator Equal) or `key:effect` (operator Exists)."""
    head, sep, effect = text.rpartition(":")
    key, eq, value = head.partition("=")
    if not sep or effect not in _EFFECTS or not names.valid(_TAINT_KEY, key):
        raise _usage(
            f"{option} {text}",
            f"expected KEY=VALUE:EFFECT or KEY:EFFECT with EFFECT one of {', '.join(_EFFECTS)}",
            "scheduling.toleration",
        )
    if eq:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}


def parse_selector(option: str, text: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not names.valid(_TAINT_KEY, key):
        raise _usage(f"{option} {text}", "expected KEY=VALUE", "scheduling.selector")
    return key, value


def parse_taint_string(option: str, text: str) -> str:
    """A taint as upstream writes it for `taintStrPaths`: `key=value:effect` or `key:effect`."""
    t = parse_toleration(option, text)
    head = f"{t['key']}={t['value']}" if "value" in t else t["key"]
    return f"{head}:{t['effect']}"


def _scheduling_paths(
    raw: Any, cls: str | None, kind: str, block_key: str = "nodeScheduling"
) -> tuple[str, ...]:
    """The paths a registry entry lists at `<block_key>[.<cls>].<kind>`."""
    block = ((raw or {}).get(block_key) or {}) if isinstance(raw, dict) else {}
    if not isinstance(block, dict):
        return ()
    inner = block if cls is None else block.get(cls)
    paths = inner.get(kind) if isinstance(inner, dict) else None
    return tuple(p for p in paths or () if isinstance(p, str) and p)


def scheduling_overrides(
    registry_entries: Mapping[str, Any],
    components: Iterable[str],
    flags: NodeScheduling,
    values: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[Override, ...]:
    """The overrides upstream's bundler applies for node scheduling, for `components` (the
    recipe's enabled components, in order), given each component's raw registry entry.
    `values` (each component's recipe `overrides`; upstream since 2026): the tolerations are
    appended to those the recipe's overrides list there, each once, and replace what only a
    values file sets (BCM's control-plane tolerations stay, aws-efa's file default goes);
    None: they replace whatever is there."""
    components = tuple(components)
    tol_flags = {"system": flags.system_tolerations, "accelerated": flags.accelerated_tolerations}
    sel_flags = {"system": flags.system_selectors, "accelerated": flags.accelerated_selectors}
    out: list[Override] = []
    for cls in SCHEDULING_CLASSES:
        option = f"--{cls}-node-toleration"
        given = tol_flags[cls]
        tolerations = [parse_toleration(option, t) for t in given] or [
            dict(t) for t in DEFAULT_TOLERATIONS
        ]
        origin = (
            f"{SCHEDULING_ORIGIN} " + " ".join(f"{option} {t}" for t in given)
            if given
            else f"{SCHEDULING_ORIGIN} default {cls} tolerations"
        )
        sel_option = f"--{cls}-node-selector"
        selectors = dict(parse_selector(sel_option, s) for s in sel_flags[cls])
        sel_origin = f"{SCHEDULING_ORIGIN} " + " ".join(f"{sel_option} {s}" for s in sel_flags[cls])
        for comp in components:
            raw = registry_entries.get(comp)
            for path in _scheduling_paths(raw, cls, "tolerationPaths"):
                given_there = _list_at((values or {}).get(comp), path) if values else []
                added = [dict(t) for t in tolerations if t not in given_there]
                out.append(Override(comp, path, [*given_there, *added], origin))
            if selectors:
                for path in _scheduling_paths(raw, cls, "nodeSelectorPaths"):
                    out.append(Override(comp, path, dict(selectors), sel_origin))
    out.extend(_workload_overrides(registry_entries, components, flags))
    return tuple(out)


def _list_at(values: Mapping[str, Any] | None, path: str) -> list[Any]:
    """The list at dotted `path` of `values` (a copy), or [] where there is none."""
    node: Any = values
    for key in path.split("."):
        node = node.get(key) if isinstance(node, Mapping) else None
    return (
        [dict(t) if isinstance(t, Mapping) else t for t in node] if isinstance(node, list) else []
    )


def _workload_overrides(
    registry_entries: Mapping[str, Any], components: tuple[str, ...], flags: NodeScheduling
) -> Iterator[Override]:
    """`--workload-selector`, `--workload-gate` and `--nodes` at their registry paths."""
    selectors = dict(parse_selector("--workload-selector", s) for s in flags.workload_selectors)
    sel_origin = f"{SCHEDULING_ORIGIN} " + " ".join(
        f"--workload-selector {s}" for s in flags.workload_selectors
    )
    gate = (
        parse_taint_string("--workload-gate", flags.workload_gate)
        if flags.workload_gate is not None
        else None
    )
    for comp in components:
        raw = registry_entries.get(comp)
        if selectors:
            for path in _scheduling_paths(
                raw, "workload", "workloadSelectorPaths", "podScheduling"
            ):
                yield Override(comp, path, dict(selectors), sel_origin)
        if gate is not None:
            for path in _scheduling_paths(raw, "accelerated", "taintStrPaths"):
                yield Override(
                    comp, path, gate, f"{SCHEDULING_ORIGIN} --workload-gate {flags.workload_gate}"
                )
        if flags.nodes > 0:
            for path in _scheduling_paths(raw, None, "nodeCountPaths"):
                yield Override(
                    comp, path, flags.nodes, f"{SCHEDULING_ORIGIN} --nodes {flags.nodes}"
                )


# What upstream's bundler (2026) injects on its own, recorded like the scheduling overrides:
# the gpu-operator chart version as an annotation of the DRA driver's pods (a DaemonSet re-roll
# on every gpu-operator chart bump), when the bundle has both components; and agentgateway's
# source ranges when the recipe leaves them empty.
BUNDLER_ORIGIN = "bundler:"
DRA_COMPONENT = "nvidia-dra-driver-gpu"
DRA_ANNOTATED = ("controller.podAnnotations", "kubeletPlugin.podAnnotations")
DRA_ANNOTATION = "aicr.run/gpu-operator-chart-version"


def dra_chart_version_overrides(
    versions: Mapping[str, str | None], dra_values: Mapping[str, Any] | None
) -> tuple[Override, ...]:
    """Upstream's injected annotation: `versions`, each bundled component's chart version;
    `dra_values`, the DRA driver's merged values (None: not bundled). Each annotated map keeps
    the annotations the values already give it."""
    version = versions.get("gpu-operator")
    if dra_values is None or not version:
        return ()
    out = []
    for path in DRA_ANNOTATED:
        node: Any = dra_values
        for key in path.split("."):
            node = node.get(key) if isinstance(node, Mapping) else None
        current = dict(node) if isinstance(node, Mapping) else {}
        out.append(
            Override(
                DRA_COMPONENT,
                path,
                {**current, DRA_ANNOTATION: version},
                f"{BUNDLER_ORIGIN} gpu-operator chart version on {DRA_COMPONENT}'s pods",
            )
        )
    return tuple(out)


GATEWAY_COMPONENT = "agentgateway"
GATEWAY_RANGES_PATH = "allowedSourceRanges"
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")  # RFC 1918


def gateway_source_range_overrides(
    gateway_values: Mapping[str, Any] | None,
) -> tuple[Override, ...]:
    """Upstream's injected default (#1373): agentgateway's `allowedSourceRanges`, left empty by
    the recipe, becomes the private RFC 1918 ranges, so the inference gateway's load balancer is
    reachable from the cluster and its network but never open to the internet. None: not
    bundled."""
    if gateway_values is None or gateway_values.get(GATEWAY_RANGES_PATH):
        return ()
    return (
        Override(
            GATEWAY_COMPONENT,
            GATEWAY_RANGES_PATH,
            list(PRIVATE_RANGES),
            f"{BUNDLER_ORIGIN} private source ranges for {GATEWAY_COMPONENT}'s load balancer",
        ),
    )


def selector_warnings(
    registry_entries: Mapping[str, Any],
    components: Iterable[str],
    intent: str | None,
    flags: NodeScheduling,
) -> tuple[str, ...]:
    """Upstream's registry `validations` this project knows (`CheckWorkloadSelectorMissing`,
    `CheckAcceleratedSelectorMissing`, severity warning), as upstream's bundler runs them: for a
    component in the bundle, when the recipe's intent is one of the entry's `conditions.intent`
    and the selector flag was not given, its message."""
    missing = {
        "CheckWorkloadSelectorMissing": not flags.workload_selectors,
        "CheckAcceleratedSelectorMissing": not flags.accelerated_selectors,
    }
    out: list[str] = []
    for comp in components:
        raw = registry_entries.get(comp)
        checks = raw.get("validations") if isinstance(raw, dict) else None
        for check in checks if isinstance(checks, list) else ():
            if not isinstance(check, dict) or not missing.get(str(check.get("function"))):
                continue
            intents = (check.get("conditions") or {}).get("intent")
            if isinstance(intents, list) and intent not in intents:
                continue
            out.append(f"{comp}: {check.get('message') or check['function']}")
    return tuple(out)


def registry_entries(doc_data: Any) -> dict[str, Any]:
    """A registry document's raw component entries by name (what `scheduling_overrides` reads)."""
    comps = doc_data.get("components") if isinstance(doc_data, dict) else None
    return {
        c["name"]: c for c in comps or () if isinstance(c, dict) and isinstance(c.get("name"), str)
    }
