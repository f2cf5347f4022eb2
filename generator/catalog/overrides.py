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
from collections.abc import Callable, Iterable
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
