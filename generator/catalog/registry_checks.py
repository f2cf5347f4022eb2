"""The registry's bundle-time validations (upstream, 2026): `components[].validations`, each a
named check with a severity, criteria `conditions` and a message, run by `aicr bundle` on every
enabled component of the recipe.

This project runs the blocking one whose inputs it has, `CheckWildcardAcceleratedToleration`
(error): a component that would render a keyless (wildcard) accelerated-node toleration, on the
services its conditions name (AKS: "AKS admission collapses a pod's tolerations to just the
wildcard"), is refused as an invalid request (exit 2) until keyed tolerations are given
(`--accelerated-node-toleration nvidia.com/gpu:NoSchedule`). The other functions upstream names
read cluster snapshots or bundle-time details this project does not model; they are listed by
`unmodelled` so a caller can say so, never silently skipped.

Entry: `check_bundle(registry_data, result, accelerated_tolerations)` raises UsageError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from generator.catalog.overrides import parse_toleration, registry_entries
from generator.core.errors import Diagnostic, UsageError
from generator.core.records import RecipeResult

WILDCARD_TOLERATION = "CheckWildcardAcceleratedToleration"


def _conditions_hold(conditions: Any, result: RecipeResult) -> bool:
    """Every criteria dimension the check names holds one of its listed values."""
    if not isinstance(conditions, Mapping):
        return True
    for dim, allowed in conditions.items():
        value = result.criteria.get(dim) if dim in ("service", "accelerator", "os", "intent",
                                                    "platform") else None  # fmt: skip
        if not isinstance(allowed, list) or value not in allowed:
            return False
    return True


def _wildcard(accelerated_tolerations: Sequence[str]) -> bool:
    """The accelerated tolerations rendered are keyless: the default `[{operator: Exists}]`, or
    a given toleration without a key."""
    if not accelerated_tolerations:
        return True
    parsed = [parse_toleration("--accelerated-node-toleration", t) for t in accelerated_tolerations]
    return any(not t.get("key") for t in parsed)


def _accelerated_paths(entry: Mapping[str, Any]) -> bool:
    block = (entry.get("nodeScheduling") or {}).get("accelerated") or {}
    return bool(block.get("tolerationPaths")) if isinstance(block, Mapping) else False


def unmodelled(registry_data: Any) -> tuple[str, ...]:
    """The validation functions the registry names that this project does not run."""
    names = {
        str(v.get("function"))
        for e in registry_entries(registry_data).values()
        for v in e.get("validations") or ()
        if isinstance(v, Mapping) and v.get("function") != WILDCARD_TOLERATION
    }
    return tuple(sorted(names))


def check_bundle(
    registry_data: Any, result: RecipeResult, accelerated_tolerations: Sequence[str]
) -> None:
    """Refuse the bundle when a blocking registry validation this project runs fails."""
    entries = registry_entries(registry_data)
    for c in result.components:  # the enabled components, in order
        entry = entries.get(c.name) or {}
        for v in entry.get("validations") or ():
            if not isinstance(v, Mapping) or v.get("function") != WILDCARD_TOLERATION:
                continue
            if v.get("severity") != "error" or not _conditions_hold(v.get("conditions"), result):
                continue
            if _accelerated_paths(entry) and _wildcard(accelerated_tolerations):
                msg = (
                    f"{c.name} renders a wildcard (keyless) accelerated-node toleration. "
                    + " ".join(str(v.get("message") or "").split())
                )
                diag = Diagnostic("registry.yaml", 0, 0, "$", msg, "bundle.wildcard-toleration")
                raise UsageError(msg, [diag])
