"""Canonical serialization: RFC 8785 JSON for digests, sorted YAML/JSON for files people read."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from generator.fast import yamlwrite
from generator.fast.jcs import canonical_json as canonical_json


def check_canonical(obj: Any) -> None:
    """Raise what `canonical_json(obj)` raises, if anything (for callers that need to know the
    object has a canonical form, not what it is)."""
    canonical_json(obj)


def sha256_digest(obj: Any) -> str:
    """`sha256:<hex>` over the canonical JSON form of `obj`."""
    return "sha256:" + hashlib.sha256(canonical_json(obj)).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def dump_yaml(obj: Any) -> str:
    """Deterministic YAML: sorted keys, block style, no aliases, unicode kept."""
    return yamlwrite.dump_yaml(obj, yamlwrite.YamlStyle.CATALOG, sort_keys=True)


def dump_json(obj: Any) -> str:
    """Deterministic, human-readable JSON (sorted keys, two-space indent, trailing newline)."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
