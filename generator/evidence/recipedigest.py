"""Upstream AICR's recipe digest (`aicr evidence digest`, predicate `recipe.digest`), recomputed.

Upstream hashes a *canonical* form of the hydrated recipe YAML: the YAML node tree with every
comment removed and every mapping's keys sorted (byte order), written back with Go's yaml.v3
encoder (4-space indent, sequences indented under their key, scalar styles as parsed, no line
folding); for predicate v3 `metadata.version` is dropped first (it names the binary, not the
recipe). The digest is the lower-case hex sha256 of those bytes (no `sha256:` prefix in the
predicate).

`canonical_yaml` re-implements that encoder for the YAML a recipe holds (block mappings and
sequences, plain / single- / double-quoted / literal / folded scalars, empty flow collections).
Aliases are written out expanded (upstream would keep `*alias`); recipes carry none.
"""

from __future__ import annotations

import hashlib

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

RECIPE_EVIDENCE_V3 = "https://aicr.run/recipe-evidence/v3"
INDENT = 4


class DigestError(ValueError):
    """The recipe YAML cannot be canonicalized the way upstream does."""


def _compose(data: bytes) -> Node:
    if not data.strip():
        raise DigestError("cannot canonicalize an empty recipe")
    try:
        node = yaml.compose(data.decode("utf-8"), Loader=yaml.SafeLoader)
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise DigestError(f"recipe is not YAML: {e}") from e
    if node is None:
        raise DigestError("cannot canonicalize an empty recipe")
    return node


def _sort(node: Node, strip_version: bool, top: bool = True) -> Node:
    if isinstance(node, MappingNode):
        pairs = []
        for k, v in node.value:
            if not isinstance(k, ScalarNode):
                raise DigestError("a mapping key is not a scalar")
            pairs.append((k, _sort(v, strip_version, False)))
        if top and strip_version:
            pairs = [(k, _drop_version(v) if k.value == "metadata" else v) for k, v in pairs]
        pairs.sort(key=lambda kv: kv[0].value.encode())
        return MappingNode(node.tag, pairs, flow_style=node.flow_style)
    if isinstance(node, SequenceNode):
        return SequenceNode(node.tag, [_sort(v, strip_version, False) for v in node.value])
    return node


def _drop_version(node: Node) -> Node:
    if not isinstance(node, MappingNode):
        return node
    return MappingNode(node.tag, [(k, v) for k, v in node.value if k.value != "version"])


def _double_quoted(value: str) -> str:
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\0":
            out.append("\\0")
        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0 or code in (0xFEFF, 0x2028, 0x2029):
            out.append(f"\\x{code:02X}" if code <= 0xFF else f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _scalar(node: ScalarNode, indent: int) -> str:
    value: str = str(node.value)
    style = node.style
    if style == '"':
        return _double_quoted(value)
    if style == "'":
        if "\n" in value:
            return _double_quoted(value)
        return "'" + value.replace("'", "''") + "'"
    if style in ("|", ">"):
        chomp = (
            ""
            if value.endswith("\n") and not value.endswith("\n\n")
            else ("-" if not value.endswith("\n") else "+")
        )
        body = value[:-1] if value.endswith("\n") else value
        pad = " " * indent
        lines = [pad + line if line else "" for line in body.split("\n")]
        lead = str(INDENT) if value[:1] in (" ", "\n") else ""
        return f"{style}{lead}{chomp}\n" + "\n".join(lines)
    if value == "" and node.tag == "tag:yaml.org,2002:str":
        return '""'
    return value


def _emit(node: Node, indent: int, out: list[str], prefix: str) -> None:
    """Write `node` after `prefix` (the text already on its first line)."""
    if isinstance(node, ScalarNode):
        out.append(prefix + _scalar(node, indent))
        return
    if isinstance(node, MappingNode):
        if not node.value:
            out.append(prefix + "{}")
            return
        first = True
        for k, v in node.value:
            head = (prefix if first else " " * indent) + _scalar(k, indent) + ":"
            first = False
            _child(v, indent, out, head)
        return
    if isinstance(node, SequenceNode):
        if not node.value:
            out.append(prefix + "[]")
            return
        first = True
        for v in node.value:
            head = (prefix if first else " " * indent) + "- "
            first = False
            _emit(v, indent + 2, out, head)
        return
    raise DigestError(f"unsupported YAML node {type(node).__name__}")


def _child(v: Node, indent: int, out: list[str], head: str) -> None:
    if isinstance(v, MappingNode) and v.value:
        out.append(head)
        _emit(v, indent + INDENT, out, " " * (indent + INDENT))
    elif isinstance(v, SequenceNode) and v.value:
        out.append(head)
        _emit(v, indent + INDENT, out, " " * (indent + INDENT))
    else:
        _emit(v, indent + INDENT, out, head + " ")


def canonical_yaml(data: bytes, *, strip_version: bool) -> bytes:
    """The canonical bytes upstream hashes (see the module docstring)."""
    node = _sort(_compose(data), strip_version)
    out: list[str] = []
    _emit(node, 0, out, "")
    return ("\n".join(out) + "\n").encode()


def recipe_digest(recipe_yaml: bytes, predicate_type: str) -> str:
    """Lower-case hex sha256 of the canonical recipe, as upstream stamps into predicate.recipe.digest
    (v3: metadata.version excluded; v1/v2: included)."""
    canon = canonical_yaml(recipe_yaml, strip_version=predicate_type == RECIPE_EVIDENCE_V3)
    return hashlib.sha256(canon).hexdigest()
