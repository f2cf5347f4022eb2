"""Component manifests (`components/<name>/manifests/*`): kept as bytes, classified, checked.

Upstream AICR treats every manifest as a Helm template: it is rendered by Helm with the
component's values at deploy time (`{{ .Values … }}`, `.Release`, `.Chart`). So a manifest is
never parsed as YAML to be understood here. What can be checked without Helm is checked:

- a file without template actions is `plain` and must parse as YAML (a stream of documents);
- a file with actions is a `template`: every `{{` must be closed by `}}`, its control blocks
  (`if`/`range`/`with`/`define`/`block` … `end`) must balance, and once its actions are masked
  it should still parse as YAML (a warning only: a template may build structure Helm alone sees).

Entries: `check_manifest(raw, rel)`, which `load` calls for each manifest (its record, document
and diagnostics), and `read_manifests(catalog, result)`, the one reader of the bytes a recipe's
manifests ship (the CLI, the site, samples and preflight call it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from generator.core import safeio
from generator.core.errors import Diagnostic, LoadError, RenderError, Severity
from generator.core.records import Catalog, Document, ManifestFile, RecipeResult
from generator.core.yamlio import check_syntax, decode, parse_yaml

PLAIN, TEMPLATE = "plain", "template"
_OPENERS = frozenset({"if", "range", "with", "define", "block"})


@dataclass(frozen=True, slots=True)
class _Action:
    start: int  # offset of `{{`
    end: int  # offset just past `}}`
    body: str  # the text between the delimiters, trim markers and spaces removed


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _close(text: str, i: int) -> int:
    """Offset of the `}}` closing the action whose body starts at `i`, or -1. Quoted strings
    ("…", `…`, '…') and comments (/* … */) may hold `}}` without closing the action."""
    n = len(text)
    while i < n:
        ch = text[i]
        if text.startswith("}}", i):
            return i
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                return -1
            i = j + 2
            continue
        if ch in "\"'`":
            j = i + 1
            while j < n and text[j] != ch:
                if ch != "`" and text[j] == "\\":
                    j += 1
                elif ch != "`" and text[j] == "\n":
                    break
                j += 1
            if j >= n or text[j] != ch:
                return -1
            i = j + 1
            continue
        i += 1
    return -1


def _actions(text: str) -> tuple[tuple[_Action, ...], int | None]:
    """The template actions of `text`, and the offset of an unclosed `{{` (None when all close)."""
    out: list[_Action] = []
    i = 0
    while True:
        start = text.find("{{", i)
        if start < 0:
            return tuple(out), None
        body_start = start + 2
        end = _close(text, body_start)
        if end < 0:
            return tuple(out), start
        body = text[body_start:end].strip()
        body = body.removeprefix("-").removesuffix("-").strip()
        out.append(_Action(start, end + 2, body))
        i = end + 2


def template_actions(text: str) -> tuple[tuple[int, str], ...]:
    """(offset of `{{`, body) of every closed action of template `text`, in order; the body has
    its trim markers and outer spaces removed (`chartvalues` reads the values they print)."""
    return tuple((a.start, a.body) for a in _actions(text)[0])


def _keyword(body: str) -> str:
    if body.startswith("/*"):
        return ""
    return body.split(None, 1)[0] if body else ""


def _block_problems(text: str, acts: tuple[_Action, ...]) -> Iterator[tuple[int, str]]:
    """(offset, message) for every unbalanced control block."""
    stack: list[tuple[str, int]] = []
    for a in acts:
        kw = _keyword(a.body)
        if kw in _OPENERS:
            stack.append((kw, a.start))
        elif kw == "else":
            if not stack or stack[-1][0] == "define":
                yield a.start, "'else' outside an if/range/with block"
        elif kw == "end":
            if not stack:
                yield a.start, "'end' without an open if/range/with/define/block"
            else:
                stack.pop()
    for kw, offset in stack:
        yield offset, f"'{kw}' is never closed by an 'end'"


def _masked(text: str, acts: tuple[_Action, ...]) -> str:
    """`text` with its actions masked: a line holding only actions becomes blank, an action among
    other text becomes the scalar `x`; newlines are kept, so lines still match the file's."""
    pieces: list[str] = []
    pos = 0
    for a in acts:
        pieces.append(text[pos : a.start])
        span = text[a.start : a.end]
        pieces.append("\n" * span.count("\n") if "\n" in span else "\x00")
        pos = a.end
    pieces.append(text[pos:])
    out = []
    for line in "".join(pieces).split("\n"):
        if "\x00" in line and not line.replace("\x00", "").strip():
            out.append("")
        else:
            out.append(line.replace("\x00", "x"))
    return "\n".join(out)


def _d(
    rel: str, text: str, offset: int, message: str, rule: str, sev: Severity = Severity.ERROR
) -> Diagnostic:
    line, col = _position(text, offset)
    return Diagnostic(rel, line, col, "$", message, rule, sev)


def check_manifest(raw: bytes, rel: str) -> tuple[ManifestFile, Document, tuple[Diagnostic, ...]]:
    """Classify one manifest and check what can be checked without Helm."""
    sha = hashlib.sha256(raw).hexdigest()
    doc = Document(rel=rel, data=None, lines={"$": (1, 1)}, sha256=sha)
    try:
        text = decode(raw, rel)
    except LoadError as e:
        return ManifestFile(rel, PLAIN, sha), doc, e.diagnostics
    if "{{" not in text:
        try:
            parse_yaml(raw, rel, multi=True, allow_empty=True)
        except LoadError as e:
            return ManifestFile(rel, PLAIN, sha), doc, e.diagnostics
        return ManifestFile(rel, PLAIN, sha), doc, ()
    acts, unclosed = _actions(text)
    diags: list[Diagnostic] = []
    if unclosed is not None:
        diags.append(
            _d(
                rel,
                text,
                unclosed,
                "template action '{{' is never closed by '}}' (Helm cannot render this file)",
                "manifest.template-unclosed",
            )
        )
    for offset, message in _block_problems(text, acts):
        diags.append(
            _d(
                rel,
                text,
                offset,
                f"{message} (Helm cannot render this file)",
                "manifest.template-blocks",
            )
        )
    if not diags:
        try:
            check_syntax(_masked(text, acts), rel)
        except LoadError as e:
            diags.extend(e.diagnostics)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line, col = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            diags.append(
                Diagnostic(
                    rel,
                    line,
                    col,
                    "$",
                    f"Helm template: with its actions masked it does not parse as YAML "
                    f"({problem}); upstream renders it with Helm, check it with `helm template`",
                    "manifest.template-yaml",
                    Severity.WARNING,
                )
            )
    return ManifestFile(rel, TEMPLATE, sha), doc, tuple(diags)


def read_manifests(catalog: Catalog, result: RecipeResult) -> dict[str, bytes]:
    """Raw bytes of every manifest the recipe names, read from the catalog root through the one
    reader (`safeio`); what the renderer ships (the CLI, the site, samples and preflight call
    this one function). RenderError names every manifest that cannot be read."""
    root = Path(catalog.root)
    out: dict[str, bytes] = {}
    diags: list[Diagnostic] = []
    for c in result.components:
        for rel in (*c.pre_manifest_files, *c.manifest_files):
            if rel in out:
                continue
            parts = rel.split("/")
            if rel.startswith("/") or ".." in parts:
                diags.append(
                    Diagnostic(rel, 0, 0, "$", "manifest path leaves the catalog", "render.path")
                )
                continue
            try:
                out[rel] = safeio.read(root / rel, root=root, where="the catalog")
            except safeio.Refusal as e:
                diags.append(
                    Diagnostic(
                        rel,
                        0,
                        0,
                        "$",
                        f"cannot read manifest: {e.message}",
                        "render.missing-manifest",
                    )
                )
    if diags:
        raise RenderError(f"recipe {result.name}: manifests could not be read", diags)
    return out
