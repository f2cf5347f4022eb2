"""Upstream AICR's recipe digest (`aicr evidence digest`, predicate `recipe.digest`), recomputed.

Upstream hashes a *canonical* form of the hydrated recipe YAML: the YAML node tree with every
comment removed and every mapping's keys sorted (byte order), written back with Go's yaml.v3
encoder; for predicate v3 `metadata.version` is dropped first (it names the binary, not the
recipe). The digest is the lower-case hex sha256 of those bytes (no `sha256:` prefix in the
predicate).

`canonical_yaml` writes what yaml.v3 v3.0.1 (the version upstream vendors) writes for the YAML a
recipe holds: 4-space indentation that is "more regular" (a nested node goes to the next
multiple of 4, or 2 past a sequence's "- "), no line folding, scalar and collection styles as
parsed (plain, single- and double-quoted, literal and folded with their chomping and indentation
hints, including yaml.v3's extra break in folded text), empty and flow collections inline, a
null written as nothing. It was checked byte for byte against yaml.v3 on every YAML file of
upstream's v0.11.1 recipe tree and of this catalog, and on tests/fixtures/upstream-canonical.yaml
(see tests/test_evidence_oci.py). Aliases are written out expanded (yaml.v3 would keep
`*alias`); recipes carry none. Only the first document of a stream is read, as yaml.v3 does.
"""

from __future__ import annotations

import hashlib
import re

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from generator.core.errors import LoadError
from generator.core.yamlio import compose_first

RECIPE_EVIDENCE_V3 = "https://aicr.run/recipe-evidence/v3"
INDENT = 4


class DigestError(ValueError):
    """The recipe YAML cannot be canonicalized the way upstream does."""


def _compose(data: bytes) -> Node:
    if not data.strip():
        raise DigestError("cannot canonicalize an empty recipe")
    try:
        # the one bounded reader: size, depth and alias expansion (a 500-byte alias bomb in a
        # pulled summary bundle's recipe.yaml is refused here, before anything expands it)
        node = compose_first(data, "recipe.yaml")
    except LoadError as e:
        raise DigestError(f"recipe is not YAML within bounds: {e.message}") from e
    except RecursionError as e:
        raise DigestError("recipe is not YAML within bounds: nesting too deep") from e
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
        return SequenceNode(
            node.tag,
            [_sort(v, strip_version, False) for v in node.value],
            flow_style=node.flow_style,
        )
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


def _scalar(node: ScalarNode, indent: int, width: int = INDENT) -> str:
    """The scalar as yaml.v3 writes it; `indent` is the indentation of block scalar lines."""
    value: str = str(node.value)
    style = node.style
    if style == '"':
        return _double_quoted(value)
    if style == "'":
        if "\n" in value:
            return _double_quoted(value)
        return "'" + value.replace("'", "''") + "'"
    if style in ("|", ">"):
        hint = str(width) if value[:1] in (" ", "\t", "\n") else ""
        if not value or not value.endswith("\n"):
            chomp = "-"
        elif value == "\n" or value.endswith("\n\n"):
            chomp = "+"
        else:
            chomp = ""
        return f"{style}{hint}{chomp}\n" + _block_body(value, indent, folded=style == ">")
    if value == "" and node.tag == "tag:yaml.org,2002:str":
        return '""'
    return value


def _block_body(value: str, indent: int, *, folded: bool) -> str:
    """The lines of a literal or folded scalar as yaml.v3 writes them (without the last newline,
    which the caller's line join supplies). Folded text gets an extra line break after a text
    line whenever the value does not start with a blank, exactly as yaml.v3 v3.0.1 does (it
    looks for the next line's start from the beginning of the value)."""
    out: list[str] = []
    breaks = leading_spaces = True
    starts_blank = value.lstrip("\n")[:1] in ("", " ", "\t")
    for ch in value:
        if ch == "\n":
            if folded and not breaks and not leading_spaces and not starts_blank:
                out.append("\n")
            out.append("\n")
            breaks = True
            continue
        if breaks:
            out.append(" " * indent)
            leading_spaces = ch in (" ", "\t")
        out.append(ch)
        breaks = False
    text = "".join(out)
    return text[:-1] if text.endswith("\n") else text


def _next(indent: int, in_sequence: bool, width: int = INDENT) -> int:
    """yaml.v3's indentation of a nested node: right after "- " inside a sequence item, else
    the next multiple of the indent width (its emitter's "more regular" indentation)."""
    if indent < 0:
        return 0
    if in_sequence:
        return indent + 2
    return width * ((indent + width) // width)


def _flow(node: Node) -> str:
    if isinstance(node, ScalarNode):
        return _scalar(node, 0)
    if isinstance(node, SequenceNode):
        return "[" + ", ".join(_flow(v) for v in node.value) + "]"
    if isinstance(node, MappingNode):
        return "{" + ", ".join(f"{_flow(k)}: {_flow(v)}" for k, v in node.value) + "}"
    raise DigestError(f"unsupported YAML node {type(node).__name__}")


def _is_block(node: Node) -> bool:
    return isinstance(node, MappingNode | SequenceNode) and bool(node.value) and not node.flow_style


def _emit(
    node: Node, parent: int, in_sequence: bool, out: list[str], line: str, width: int = INDENT
) -> None:
    """Write `node` whose parent has indentation `parent` (-1: the document); `line` is the text
    already on the current line ("" when the node starts on a new line)."""
    if not _is_block(node):
        if isinstance(node, ScalarNode):
            out.append(line + _scalar(node, _next(parent, in_sequence, width), width))
        else:
            out.append(line + _flow(node))
        return
    indent = _next(parent, in_sequence, width)
    first = True
    if isinstance(node, MappingNode):
        for k, v in node.value:
            head = (line if first and line else " " * indent) + _scalar(k, indent, width) + ":"
            first = False
            if _is_block(v):
                out.append(head)
                _emit(v, indent, False, out, "", width)
            elif _is_empty_plain(v):
                out.append(head)  # a null value: nothing after the colon
            else:
                _emit(v, indent, False, out, head + " ", width)
        return
    assert isinstance(node, SequenceNode)
    for v in node.value:
        head = (line if first and line else " " * indent) + "- "
        first = False
        if _is_empty_plain(v):
            out.append(head.rstrip(" "))
        else:
            _emit(v, indent, True, out, head, width)


def _is_empty_plain(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.value == "" and node.style in (None, "")


def canonical_yaml(data: bytes, *, strip_version: bool) -> bytes:
    """The canonical bytes upstream hashes (see the module docstring)."""
    out: list[str] = []
    try:
        _emit(_sort(_compose(data), strip_version), -1, False, out, "")
    except RecursionError as e:
        raise DigestError("recipe is nested too deeply to canonicalize") from e
    return ("\n".join(out) + "\n").encode()


def recipe_digest(recipe_yaml: bytes, predicate_type: str) -> str:
    """Lower-case hex sha256 of the canonical recipe, as upstream stamps into predicate.recipe.digest
    (v3: metadata.version excluded; v1/v2: included)."""
    canon = canonical_yaml(recipe_yaml, strip_version=predicate_type == RECIPE_EVIDENCE_V3)
    return hashlib.sha256(canon).hexdigest()


_STR = "tag:yaml.org,2002:str"
_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9_./@+=-][A-Za-z0-9_./@:+=~?&%#,()-]*$")
_NOT_STRINGS = re.compile(
    r"^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE|[-+]?(?:[0-9][0-9_]*)(?:\.[0-9]*)?"
    r"(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|0x[0-9a-fA-F]+|0o[0-7]+)$"
)


def _node(value: object) -> Node:
    if isinstance(value, dict):
        pairs = [
            (_node(str(k)), _node(v))
            for k, v in sorted(value.items(), key=lambda kv: str(kv[0]).encode())
        ]
        return MappingNode("tag:yaml.org,2002:map", pairs)
    if isinstance(value, list):
        return SequenceNode("tag:yaml.org,2002:seq", [_node(v) for v in value])
    if isinstance(value, bool):
        return ScalarNode("tag:yaml.org,2002:bool", "true" if value else "false")
    if isinstance(value, int):
        return ScalarNode("tag:yaml.org,2002:int", str(value))
    text = str(value)
    plain = bool(_PLAIN_SAFE.fullmatch(text)) and not _NOT_STRINGS.match(text) and " #" not in text
    return ScalarNode(_STR, text, style=None if plain else '"')


def dump_yaml_v3(data: dict[str, object], width: int = 2) -> bytes:
    """`data` (str/int/bool/list/dict) as Go's yaml.v3 writes a struct of it with SetIndent(width)
    and sorted keys (upstream's deterministic serializer): plain scalars where a string stays a
    string, double quotes otherwise."""
    out: list[str] = []
    _emit(_node(data), -1, False, out, "", width)
    return ("\n".join(out) + "\n").encode()
