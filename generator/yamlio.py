"""Safe YAML parsing with a line index.

PyYAML's safe composer builds a node tree that keeps every node's position; we construct plain data
from it ourselves so that we can (a) record the line of every JSON path, (b) reject duplicate keys,
which PyYAML silently collapses, (c) bound alias expansion and nesting depth, and (d) accept only the
plain JSON-compatible tags. Every problem becomes a located `Diagnostic` inside a `LoadError`.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from generator.errors import Diagnostic, LoadError
from generator.records import Document

MAX_FILE_BYTES = 1024 * 1024  # 1 MiB: no recipe, values or evidence file comes near it
MAX_NODES = 200_000  # nodes visited while expanding one document (alias bombs end here)
MAX_DEPTH = 64  # nesting depth of collections
MAX_INT_DIGITS = 4300  # Python's own int-from-string limit
MAX_SAFE_INT = (
    2**53 - 1
)  # beyond this JSON (and RFC 8785 digests) cannot represent an integer exactly

# libyaml's composer when PyYAML was built with it (same nodes and marks, several times faster)
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_T = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_T + t for t in ("null", "bool", "int", "float", "str", "timestamp")}


def _diag(
    rel: str, mark: yaml.Mark | None, message: str, rule: str, json_path: str = "$"
) -> Diagnostic:
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    return Diagnostic(rel, line, col, json_path, message, rule)


def decode(raw: bytes, rel: str) -> str:
    """UTF-8 text of a file, rejecting other encodings and a byte-order mark."""
    if len(raw) > MAX_FILE_BYTES:
        raise LoadError(
            f"{rel}: file too large",
            [
                Diagnostic(
                    rel,
                    0,
                    0,
                    "$",
                    f"file is {len(raw)} bytes; the limit is {MAX_FILE_BYTES} bytes",
                    "yaml.too-large",
                )
            ],
        )
    if raw.startswith(b"\xef\xbb\xbf"):
        raise LoadError(
            f"{rel}: byte-order mark",
            [
                Diagnostic(
                    rel,
                    1,
                    1,
                    "$",
                    "file starts with a UTF-8 byte-order mark; remove it",
                    "yaml.bom",
                )
            ],
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise LoadError(
            f"{rel}: not UTF-8",
            [
                Diagnostic(
                    rel,
                    line,
                    col,
                    "$",
                    f"file is not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})",
                    "yaml.encoding",
                )
            ],
        ) from e


class _Builder:
    """Turns a composed node tree into plain data plus a JSON-path line index."""

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.lines: dict[str, tuple[int, int]] = {}
        self.visited = 0
        self.constructor = SafeConstructor()

    def fail(self, node: Node, message: str, rule: str, path: str) -> LoadError:
        return LoadError(
            f"{self.rel}: {message}", [_diag(self.rel, node.start_mark, message, rule, path)]
        )

    def build(self, node: Node, path: str, depth: int, at: yaml.Mark) -> Any:
        self.visited += 1
        if self.visited > MAX_NODES:
            raise self.fail(
                node,
                f"document expands to more than {MAX_NODES} nodes (alias expansion bomb?)",
                "yaml.alias-bomb",
                path,
            )
        if depth > MAX_DEPTH:
            raise self.fail(node, f"nesting deeper than {MAX_DEPTH} levels", "yaml.too-deep", path)
        self.lines.setdefault(path, (at.line + 1, at.column + 1))
        if isinstance(node, ScalarNode):
            return self.scalar(node, path)
        if isinstance(node, SequenceNode):
            if node.tag != _T + "seq":
                raise self.fail(node, f"tag {node.tag} is not allowed", "yaml.tag", path)
            return [
                self.build(item, f"{path}[{i}]", depth + 1, item.start_mark)
                for i, item in enumerate(node.value)
            ]
        if isinstance(node, MappingNode):
            if node.tag != _T + "map":
                raise self.fail(node, f"tag {node.tag} is not allowed", "yaml.tag", path)
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _T + "merge":
                    raise self.fail(
                        key_node, "YAML merge keys (<<) are not supported", "yaml.tag", path
                    )
                if not isinstance(key_node, ScalarNode):
                    raise self.fail(key_node, "mapping keys must be scalars", "yaml.key", path)
                key = self.scalar(key_node, path)
                if not isinstance(key, str):
                    key = str(key).lower() if isinstance(key, bool) else str(key)
                child = f"{path}.{key}"
                if key in out:
                    first = self.lines.get(child, (0, 0))[0]
                    raise self.fail(
                        key_node,
                        f"duplicate key '{key}' (first defined on line {first})",
                        "yaml.duplicate-key",
                        child,
                    )
                out[key] = self.build(value_node, child, depth + 1, key_node.start_mark)
            return out
        raise self.fail(node, "unsupported YAML node", "yaml.tag", path)  # pragma: no cover

    def scalar(self, node: ScalarNode, path: str) -> Any:
        if node.tag not in _SCALAR_TAGS:
            raise self.fail(node, f"tag {node.tag} is not allowed", "yaml.tag", path)
        if node.tag == _T + "timestamp":
            return str(node.value)
        if node.tag == _T + "int":
            digits = sum(c.isdigit() for c in node.value)
            if digits > MAX_INT_DIGITS:
                raise self.fail(
                    node,
                    f"integer of {digits} digits; the limit is {MAX_INT_DIGITS}",
                    "yaml.number",
                    path,
                )
        value = self.constructor.construct_object(node)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INT:
            raise self.fail(
                node,
                f"integer {value} is outside the range JSON represents exactly (±{MAX_SAFE_INT})",
                "yaml.number",
                path,
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(node, f"non-finite number {node.value!r}", "yaml.non-finite", path)
        return value


def _position(text: str, index: int) -> tuple[int, int]:
    """1-based (line, column) of a character index."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _flow_depth_exceeded(text: str) -> tuple[int, int] | None:
    """Where flow-collection nesting first exceeds MAX_DEPTH (outside quotes and comments), if it does.

    A cheap over-approximation is enough: it only chooses the composer; the depth limit itself is
    enforced on the composed nodes.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    depth, quote, i, n = 0, "", 0, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t\n"):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return _position(text, i)
        elif ch in "]}":
            depth = max(0, depth - 1)
        i += 1
    return None


def parse_yaml(
    raw: bytes | str, rel: str, *, multi: bool = False, allow_empty: bool = False
) -> Document:
    """Parse one YAML document (or, with `multi`, a stream whose documents become a list).

    `allow_empty`: a file with no document (empty, or only comments) gives `data` None instead of
    a `yaml.empty` error (Helm values files: "the chart defaults are fine").
    """
    if isinstance(raw, bytes):
        sha = hashlib.sha256(raw).hexdigest()
        text = decode(raw, rel)
    else:
        sha = hashlib.sha256(raw.encode("utf-8")).hexdigest()
        text = raw
    deep_at = _flow_depth_exceeded(text)
    # libyaml's composer recurses in C: a deeply nested flow collection would overflow the C stack
    # (a segfault no handler catches), so such text goes to the pure-Python composer, whose
    # recursion ends in a catchable RecursionError.
    loader = yaml.SafeLoader if deep_at is not None else _LOADER
    try:
        nodes = list(yaml.compose_all(text, Loader=loader))
    except yaml.reader.ReaderError as e:
        line, col = _position(text, e.position)
        msg = f"unacceptable character #x{e.character:04x}: control characters are not allowed"
        raise LoadError(
            f"{rel}: {msg}", [Diagnostic(rel, line, col, "$", msg, "yaml.parse")]
        ) from e
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        msg = " ".join(p for p in (e.context, e.problem) if p) or "invalid YAML"
        if mark is not None:
            line_text = text.splitlines()[mark.line] if mark.line < len(text.splitlines()) else ""
            if "\t" in line_text[: mark.column + 1]:
                msg += " (a tab character: YAML indentation must use spaces)"
        raise LoadError(f"{rel}: {msg}", [_diag(rel, mark, msg, "yaml.parse")]) from e
    except yaml.YAMLError as e:
        msg = " ".join(str(e).split())
        raise LoadError(f"{rel}: {msg}", [Diagnostic(rel, 0, 0, "$", msg, "yaml.parse")]) from e
    except RecursionError as e:
        line, col = deep_at if deep_at is not None else (0, 0)
        raise LoadError(
            f"{rel}: nesting too deep",
            [
                Diagnostic(
                    rel, line, col, "$", f"nesting deeper than {MAX_DEPTH} levels", "yaml.too-deep"
                )
            ],
        ) from e
    nodes = [n for n in nodes if n is not None]
    builder = _Builder(rel)
    start = yaml.Mark(rel, 0, 0, 0, "", 0)
    if multi:
        data: Any = [builder.build(n, f"$[{i}]", 1, n.start_mark) for i, n in enumerate(nodes)]
        builder.lines.setdefault("$", (1, 1))
    else:
        if not nodes and allow_empty:
            return Document(rel=rel, data=None, lines={"$": (1, 1)}, sha256=sha)
        if not nodes:
            raise LoadError(
                f"{rel}: empty",
                [Diagnostic(rel, 1, 1, "$", "file has no YAML document", "yaml.empty")],
            )
        if len(nodes) > 1:
            second = nodes[1].start_mark
            raise LoadError(
                f"{rel}: several documents",
                [
                    _diag(
                        rel,
                        second,
                        f"expected one YAML document, found {len(nodes)}",
                        "yaml.multi-document",
                    )
                ],
            )
        try:
            data = builder.build(nodes[0], "$", 0, start)
        except RecursionError as e:
            raise LoadError(
                f"{rel}: nesting too deep",
                [
                    Diagnostic(
                        rel, 0, 0, "$", f"nesting deeper than {MAX_DEPTH} levels", "yaml.too-deep"
                    )
                ],
            ) from e
    return Document(rel=rel, data=data, lines=dict(builder.lines), sha256=sha)
