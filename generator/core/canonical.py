"""Canonical serialization: RFC 8785 JSON for digests, sorted YAML/JSON for files people read."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785
import yaml

# RFC 8785 integers: the range an IEEE 754 double holds exactly.
_INT_MAX = 2**53 - 1
# More dicts and lists than a catalog holds: beyond, the data may contain itself.
_CONTAINERS = 1_000_000
_FAST_ENCODER = json.JSONEncoder(
    ensure_ascii=False, check_circular=False, allow_nan=False, sort_keys=True, separators=(",", ":")
)


def _float_is_plain(f: float) -> bool:
    """Whether Python writes `f` as RFC 8785 does (0.5 yes; 1.0, 1e-07 and NaN no)."""
    try:
        return rfc8785.dumps(f) == repr(f).encode()
    except rfc8785.CanonicalizationError:
        return False


def _plain(obj: Any, *, strings: bool = False) -> bool:
    """Whether `json` writes `obj` byte for byte as RFC 8785 does: exact dict/list/tuple/str/int/
    bool/None (and floats Python prints the JCS way), string keys within the Basic Multilingual
    Plane (where code point order is UTF-16 order), integers within ±(2**53 - 1).

    `strings`: also whether every string encodes as UTF-8 (no unpaired surrogates), which
    `canonical_json` otherwise learns only when it encodes."""
    stack = [obj]
    pop, push = stack.pop, stack.extend
    budget = _CONTAINERS  # a structure that contains itself is not plain (rfc8785 says why)
    while stack:
        o = pop()
        t = type(o)
        if t is str:
            if strings and not o.isascii() and not _encodes(o):
                return False
            continue
        if o is None or t is bool:
            continue
        if t is dict:
            for k in o:
                if type(k) is not str or (
                    not k.isascii() and (max(k) > "\uffff" or (strings and not _encodes(k)))
                ):
                    return False
            push(o.values())
            budget -= 1
        elif t is list or t is tuple:
            push(o)
            budget -= 1
        elif t is int:
            if not -_INT_MAX <= o <= _INT_MAX:
                return False
        elif t is float:
            if not _float_is_plain(o):
                return False
        else:
            return False
        if budget < 0:
            return False
    return True


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_canonical(obj: Any) -> None:
    """Raise what `canonical_json(obj)` raises, if anything, without writing the bytes (for
    callers that need to know the object has a canonical form, not what it is)."""
    if not _plain(obj, strings=True):
        canonical_json(obj)


def canonical_json(obj: Any) -> bytes:
    """RFC 8785 (JCS) bytes of a JSON-compatible object.

    Plain data (what a catalog is made of) goes through the C `json` encoder, which writes it
    exactly as RFC 8785 does; anything else (floats Python prints differently, integers beyond
    2**53, keys outside the BMP, other types, unpaired surrogates) through `rfc8785`, which
    also raises its errors.
    """
    if _plain(obj):
        try:
            return _FAST_ENCODER.encode(obj).encode("utf-8")
        except UnicodeEncodeError:
            pass  # an unpaired surrogate: rfc8785 raises its own error below
    return rfc8785.dumps(obj)


def sha256_digest(obj: Any) -> str:
    """`sha256:<hex>` over the canonical JSON form of `obj`."""
    return "sha256:" + hashlib.sha256(canonical_json(obj)).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Dumper(yaml.SafeDumper):
    """Safe dumper that never emits anchors/aliases (shared sub-objects are written out)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(obj: Any) -> str:
    """Deterministic YAML: sorted keys, block style, no aliases, unicode kept."""
    return yaml.dump(
        obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True, width=100
    )


def dump_json(obj: Any) -> str:
    """Deterministic, human-readable JSON (sorted keys, two-space indent, trailing newline)."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
