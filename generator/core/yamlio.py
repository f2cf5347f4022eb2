"""Safe YAML parsing with a line index.

PyYAML's safe composer builds a node tree that keeps every node's position; we construct plain data
from it ourselves so that we can (a) record the line of every JSON path, (b) reject duplicate keys,
which PyYAML silently collapses, (c) bound alias expansion and nesting depth, and (d) accept only the
plain JSON-compatible tags. Every problem becomes a located `Diagnostic` inside a `LoadError`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from generator.core import safeio
from generator.core.errors import Diagnostic, LoadError
from generator.core.records import Document

MAX_FILE_BYTES = 1024 * 1024  # 1 MiB: no recipe, values or evidence file comes near it
MAX_NODES = 200_000  # nodes visited while expanding one document (alias bombs end here)
MAX_DEPTH = 64  # nesting depth of collections
# characters of scalars (plus one per node) a document may expand to through its aliases: four
# times the largest file, so no file without aliases comes near it
MAX_EXPANDED_BYTES = 4 * MAX_FILE_BYTES


@dataclass(frozen=True, slots=True)
class Bounds:
    """How large one document may be: its bytes, the nodes its aliases expand to, and the
    characters they expand to. The defaults are the catalog's; a larger kind of document (a
    Helm repository's index) passes larger bounds, never none."""

    file_bytes: int = MAX_FILE_BYTES
    nodes: int = MAX_NODES
    expanded_bytes: int = MAX_EXPANDED_BYTES


CATALOG = Bounds()
INDEX = Bounds(64 * MAX_FILE_BYTES, 8_000_000, 4 * 64 * MAX_FILE_BYTES)  # a Helm index.yaml

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


def decode(raw: bytes, rel: str, bounds: Bounds = CATALOG) -> str:
    """UTF-8 text of a file, rejecting other encodings and a byte-order mark."""
    if len(raw) > bounds.file_bytes:
        raise LoadError(
            f"{rel}: file too large",
            [
                Diagnostic(
                    rel,
                    0,
                    0,
                    "$",
                    f"file is {len(raw)} bytes; the limit is {bounds.file_bytes} bytes",
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

    def __init__(self, rel: str, bounds: Bounds = CATALOG, strings: bool = False) -> None:
        self.rel = rel
        self.bounds = bounds
        self.strings = strings  # every scalar as its text (YAML's base loader)
        self.lines: dict[str, tuple[int, int]] = {}
        self.visited = 0
        self.constructor = SafeConstructor()

    def fail(self, node: Node, message: str, rule: str, path: str) -> LoadError:
        return LoadError(
            f"{self.rel}: {message}", [_diag(self.rel, node.start_mark, message, rule, path)]
        )

    def build(self, node: Node, path: str, depth: int, at: yaml.Mark) -> Any:
        self.visited += 1
        if self.visited > self.bounds.nodes:
            raise self.fail(
                node,
                f"document expands to more than {self.bounds.nodes} nodes (alias expansion bomb?)",
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
                    first = self.lines[child][0]  # indexed when its first value was built
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
        if self.strings:
            return str(node.value)
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


_OPEN = frozenset({yaml.SequenceStartEvent, yaml.MappingStartEvent})
_CLOSE = frozenset({yaml.SequenceEndEvent, yaml.MappingEndEvent})
_NODE = frozenset({yaml.ScalarEvent, yaml.AliasEvent, *_OPEN})


def _check_depth(text: str, rel: str, multi: bool = False) -> None:
    """Refuse nesting deeper than the builder accepts *before* composing.

    libyaml's composer (and PyYAML's) recurses once per nesting level, in C: 50,000 levels
    overflow the C stack, a segmentation fault no handler catches. The event parser underneath
    is iterative (a state machine with its own stack), so counting collection start and end
    events is exact, whatever the nesting looks like in the text (block, compact `- - -`, flow,
    keys, quoted or plain scalars holding brackets and quotes), and cannot crash. The root
    collection is depth 1 here and 0 in the builder, so MAX_DEPTH + 1 levels are accepted.
    """
    limit = MAX_DEPTH + 1
    # a collection needs an indicator character: a text with fewer of them cannot be too deep
    if sum(text.count(c) for c in "[{-:?") <= limit:
        return
    depth = 0
    for event in yaml.parse(text, Loader=_LOADER):
        kind = type(event)
        if kind in _OPEN:
            depth += 1
            if depth > limit:
                raise _too_deep(text, rel, multi)
        elif kind in _CLOSE:
            depth -= 1


def _too_deep(text: str, rel: str, multi: bool = False) -> LoadError:
    """The located error for the first collection nested deeper than allowed: a second, slower
    pass over the events that tracks the JSON path (taken only on this error path)."""
    # per open collection: [is mapping, next index | expecting a key, last key, its path]
    frames: list[list[Any]] = []
    path = root = "$"
    documents = 0
    mark_: Any = None
    for event in yaml.parse(text, Loader=_LOADER):
        kind = type(event)
        if kind is yaml.DocumentStartEvent:
            frames, documents = [], documents + 1
            root = f"$[{documents - 1}]" if multi else "$"
            continue
        if kind in _CLOSE:
            frames.pop()
            continue
        if kind not in _NODE:
            continue
        if not frames:
            path = root
        elif frames[-1][0]:  # a mapping: a key, then its value
            frame = frames[-1]
            if frame[1]:
                frame[1], frame[2] = False, getattr(event, "value", "?")
                path = frame[3]
            else:
                frame[1] = True
                path = f"{frame[3]}.{frame[2]}"
        else:
            frame = frames[-1]
            path = f"{frame[3]}[{frame[1]}]"
            frame[1] += 1
        if kind in _OPEN:
            if len(frames) > MAX_DEPTH:
                mark_ = event.start_mark
                break
            is_map = kind is yaml.MappingStartEvent
            frames.append([is_map, True if is_map else 0, "", path])
    msg = f"nesting deeper than {MAX_DEPTH} levels"
    return LoadError(f"{rel}: nesting too deep", [_diag(rel, mark_, msg, "yaml.too-deep", path)])


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, SequenceNode) else []


def _node_sizes(roots: list[Node], rel: str) -> dict[int, int]:
    """The expanded size of every node under `roots`, by id (see `_expanded_size`); a
    recursive alias raises LoadError."""
    size: dict[int, int] = {}
    for root in roots:
        stack: list[tuple[Node, bool]] = [(root, False)]
        open_: set[int] = set()
        while stack:
            node, done = stack.pop()
            key = id(node)
            if key in size:
                continue
            if isinstance(node, ScalarNode):
                size[key] = len(node.value) + 1
                continue
            children = _children(node)
            if done:
                open_.discard(key)
                size[key] = 1 + sum(size[id(c)] for c in children)
                continue
            open_.add(key)
            stack.append((node, True))
            for child in children:
                if id(child) in open_:
                    msg = "an alias refers to a collection that contains it (recursive alias)"
                    raise LoadError(
                        f"{rel}: recursive alias",
                        [_diag(rel, child.start_mark, msg, "yaml.alias-bomb")],
                    )
                if id(child) not in size:
                    stack.append((child, False))
    return size


def _too_large(
    roots: list[Node], size: dict[int, int], multi: bool, limit: int
) -> tuple[str, Node]:
    """The smallest node too large alone and its path in the first expansion (the last root
    when only the roots together are too large)."""
    big = [(i, r) for i, r in enumerate(roots) if size[id(r)] > limit]
    index, node = big[0] if big else (len(roots) - 1, roots[-1])
    path = f"$[{index}]" if multi else "$"
    while big:
        step = None
        if isinstance(node, MappingNode):
            for k, v in node.value:
                if size[id(v)] > limit:
                    step = (f"{path}.{k.value if isinstance(k, ScalarNode) else '?'}", v)
                    break
        elif isinstance(node, SequenceNode):
            for i, v in enumerate(node.value):
                if size[id(v)] > limit:
                    step = (f"{path}[{i}]", v)
                    break
        if step is None:
            break
        path, node = step
    return path, node


def _expanded_size(roots: list[Node], rel: str, multi: bool, bounds: Bounds = CATALOG) -> None:
    """Refuse a document whose aliases expand it beyond MAX_EXPANDED_BYTES.

    An alias is a reference: one 600 KB scalar aliased 100,000 times is 100,000 nodes but
    60 GB once anything serialises it (`query`, the bundles, the site). The size of a node is
    the length of its scalars plus one per node, counted once per *expansion*; sizes are
    memoised per node, so the walk visits each composed node once (iteratively: an alias chain
    can be deeper than the nesting). A recursive alias (`&a [*a]`) has no finite expansion.
    """
    size = _node_sizes(roots, rel)
    limit = bounds.expanded_bytes
    if sum(size[id(r)] for r in roots) <= limit:
        return
    path, node = _too_large(roots, size, multi, limit)
    msg = (
        f"aliases expand this to {size[id(node)]} bytes; the limit is {limit} "
        "(alias expansion bomb?)"
    )
    raise LoadError(f"{rel}: {msg}", [_diag(rel, node.start_mark, msg, "yaml.alias-bomb", path)])


def _compose(text: str, rel: str, multi: bool) -> list[Any]:
    """The YAML node trees of `text` (None for an empty document); a syntax error, a control
    character or nesting past MAX_DEPTH raises LoadError located at the problem. (PyYAML's
    parser and composer, libyaml's or its own, raise only a ReaderError or a MarkedYAMLError.)"""
    try:
        _check_depth(text, rel, multi)
        return list(yaml.compose_all(text, Loader=_LOADER))
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


def _single(builder: _Builder, nodes: list[Any], rel: str) -> Any:
    """The data of the one document `nodes` must hold (LoadError if none or several)."""
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
    # no RecursionError to catch: the builder refuses a level past MAX_DEPTH before recursing
    return builder.build(nodes[0], "$", 0, yaml.Mark(rel, 0, 0, 0, "", 0))


def compose_first(raw: bytes, rel: str) -> Node | None:
    """The node tree of the first YAML document of `raw` (None when it holds none), under every
    bound `parse_yaml` keeps (file size, encoding, nesting depth, alias expansion of the whole
    stream): for readers that need YAML's nodes rather than data, such as upstream's recipe
    digest of a recipe.yaml pulled from a registry. Raises LoadError, located."""
    text = decode(raw, rel)
    nodes = [n for n in _compose(text, rel, True) if n is not None]
    if "*" in text:
        _expanded_size(nodes, rel, True)
    return nodes[0] if nodes else None


def parse_yaml(
    raw: bytes | str,
    rel: str,
    *,
    multi: bool = False,
    allow_empty: bool = False,
    bounds: Bounds = CATALOG,
    strings: bool = False,
) -> Document:
    """Parse one YAML document (or, with `multi`, a stream whose documents become a list).

    `allow_empty`: a file with no document (empty, or only comments) gives `data` None instead of
    a `yaml.empty` error (Helm values files: "the chart defaults are fine"). `bounds`: how large
    the document may be (the catalog's by default). `strings`: every scalar as its text, as
    YAML's base loader gives it (a Helm index's `version: 1.10` stays "1.10").
    """
    if isinstance(raw, bytes):
        sha = hashlib.sha256(raw).hexdigest()
        text = decode(raw, rel, bounds)
    else:
        sha = hashlib.sha256(raw.encode("utf-8")).hexdigest()
        text = raw
    nodes = [n for n in _compose(text, rel, multi) if n is not None]
    if "*" in text:  # an alias needs one: without, the expansion is the text itself
        _expanded_size(nodes, rel, multi, bounds)
    builder = _Builder(rel, bounds, strings)
    if multi:
        data: Any = [builder.build(n, f"$[{i}]", 1, n.start_mark) for i, n in enumerate(nodes)]
        builder.lines.setdefault("$", (1, 1))
    else:
        if not nodes and allow_empty:
            return Document(rel=rel, data=None, lines={"$": (1, 1)}, sha256=sha)
        data = _single(builder, nodes, rel)
    return Document(rel=rel, data=data, lines=dict(builder.lines), sha256=sha)


JSON_DEPTH = MAX_DEPTH  # nesting a JSON document may have


def _json_depth(text: str) -> int:
    """The deepest nesting of brackets outside strings (linear, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


def parse_json(raw: bytes | str, rel: str, *, limit: int = safeio.OTHER_BYTES) -> Any:
    """One JSON document, bounded: at most `limit` bytes, nesting at most JSON_DEPTH levels
    (checked before parsing, so a deep document cannot exhaust the stack), no NaN or
    Infinity. A problem raises LoadError located at its line and column."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8")
    if len(data) > limit:
        msg = f"file is {len(data)} bytes; the limit is {limit} bytes"
        raise LoadError(f"{rel}: {msg}", [Diagnostic(rel, 0, 0, "$", msg, "json.too-large")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        msg = f"file is not valid UTF-8 (byte offset {e.start})"
        raise LoadError(f"{rel}: {msg}", [Diagnostic(rel, 0, 0, "$", msg, "json.encoding")]) from e
    # fewer brackets than the limit cannot nest deeper than it (the common case, at C speed)
    if text.count("[") + text.count("{") > JSON_DEPTH and _json_depth(text) > JSON_DEPTH:
        msg = f"nesting deeper than {JSON_DEPTH} levels"
        raise LoadError(f"{rel}: {msg}", [Diagnostic(rel, 0, 0, "$", msg, "json.too-deep")])
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        msg = f"not JSON: {e.msg}"
        raise LoadError(
            f"{rel}: {msg}", [Diagnostic(rel, e.lineno, e.colno, "$", msg, "json.parse")]
        ) from e
    except (ValueError, RecursionError) as e:
        msg = f"not JSON: {e}"
        raise LoadError(f"{rel}: {msg}", [Diagnostic(rel, 0, 0, "$", msg, "json.parse")]) from e


def load_json(
    path: Path | str,
    *,
    root: Path | str | None = None,
    where: str = "its directory",
    limit: int = safeio.OTHER_BYTES,
    rel: str | None = None,
) -> Any:
    """A JSON file read through `safeio.read` and parsed by `parse_json` (LoadError/Refusal)."""
    raw = safeio.read(path, root=root, where=where, limit=limit)
    return parse_json(raw, rel or os.fspath(path), limit=limit)


def load_yaml(
    path: Path | str,
    *,
    root: Path | str | None = None,
    where: str = "its directory",
    rel: str | None = None,
    allow_empty: bool = False,
    bounds: Bounds = CATALOG,
) -> Document:
    """A YAML file read through `safeio.read` and parsed by `parse_yaml` (LoadError/Refusal)."""
    raw = safeio.read(path, root=root, where=where, limit=bounds.file_bytes)
    return parse_yaml(raw, rel or os.fspath(path), allow_empty=allow_empty, bounds=bounds)


def check_syntax(text: str, rel: str) -> None:
    """Raise the `yaml.YAMLError` of a YAML stream that does not parse (a Helm template with
    its actions masked), or LoadError when it nests deeper than MAX_DEPTH (checked first:
    composing 50,000 levels overflows libyaml's C stack). Builds no data."""
    _check_depth(text, rel, multi=True)
    for _ in yaml.load_all(text, Loader=_LOADER):
        pass


def compose(text: str, rel: str) -> list[Node]:
    """The node trees of a YAML stream, bounded as `parse_yaml` bounds it (nesting, alias
    expansion), for a caller that needs the nodes themselves (upstream's recipe digest sorts
    and re-serialises them). Raises LoadError, located."""
    nodes = [n for n in _compose(text, rel, True) if n is not None]
    if "*" in text:
        _expanded_size(nodes, rel, True)
    return nodes
