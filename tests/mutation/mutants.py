"""The mutants of one Python module: small AST-located changes spliced into its source text.

Each mutant changes one thing inside a function body (module-level constants, defaults,
decorators, annotations, `assert` statements and f-strings are left alone):

- `compare`: a comparison flipped: `==`↔`!=`, `is`↔`is not`, `in`↔`not in`, and the
  boundaries `<`→`<=`, `<=`→`<`, `>`→`>=`, `>=`→`>`;
- `negate`: the condition of an `if`/`elif`/`while`, a conditional expression or a
  comprehension filter negated (not where it is a single flippable comparison: `compare`
  already makes that mutant);
- `exit`: an early exit removed: a `return`, `raise`, `continue` or `break` that is the body of
  an `if`/`else` branch or of an `except` handler becomes `pass`;
- `const`: an integer constant moved by one (n → n+1), `True`↔`False`;
- `anyall`: `any(...)`↔`all(...)`, `.any()`↔`.all()`, and the aggregation names `"any"`↔`"all"`;
- `boolop`: `and`↔`or`, `&`↔`|` (also `&=`↔`|=`).

A mutant is named stably, without line numbers: module, function (qualified name), operator and
the original source snippet (whitespace collapsed), plus `#n` when the same snippet and operator
occur more than once in the function. The equivalent-mutant list (`equivalent.toml`) uses these
names, so it survives edits elsewhere in the module.

The change is spliced into the original text (by the node's UTF-8 byte offsets), so comments,
docstrings and line numbers elsewhere stay as they were.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
from dataclasses import dataclass

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
}
_SYMBOL: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
# comparisons whose flip is the exact negation (so negating them too would be the same mutant)
_NEGATING = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn)
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
SNIPPET_MAX = 96


@dataclass(frozen=True, slots=True)
class Mutant:
    """One change to one module: bytes [start, end) of its source replaced by `replacement`."""

    module: str  # repository-relative path
    function: str  # qualified name of the enclosing function
    operator: str  # e.g. "compare ==->!=", "exit", "const 0->1"
    snippet: str  # the original source of the mutated node, whitespace collapsed
    occurrence: int  # 0 for the first mutant with the same (function, operator, snippet)
    line: int
    end_line: int
    start: int
    end: int
    replacement: str

    @property
    def key(self) -> str:
        """The stable name of the mutant (no line numbers)."""
        tail = f" #{self.occurrence}" if self.occurrence else ""
        return f"{self.module} :: {self.function} :: {self.operator} :: {self.snippet}{tail}"

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement.encode() + source[self.end :]


def _collapse(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= SNIPPET_MAX:
        return flat
    digest = hashlib.sha256(flat.encode()).hexdigest()[:8]
    return f"{flat[: SNIPPET_MAX - 12]}… {digest}"


class _Finder(ast.NodeVisitor):
    def __init__(self, module: str, source: bytes, functions: tuple[str, ...]) -> None:
        self.module = module
        self.source = source
        self.functions = functions
        starts = [0]
        for i, b in enumerate(source):
            if b == 0x0A:
                starts.append(i + 1)
        self.line_starts = starts
        self.scope: list[str] = []
        self.depth = 0  # inside a function body
        self.found: list[tuple[str, str, int, int, int, str]] = []
        self.parents: dict[ast.AST, ast.AST] = {}

    # --- positions -------------------------------------------------------------------------

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.line_starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = self.line_starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return start, end

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.source[start:end].decode()

    def add(self, node: ast.AST, operator: str, replacement: str, snippet: str = "") -> None:
        if not self.depth or not self.selected():
            return
        start, end = self.span(node)
        shown = snippet or self.text(node)
        self.found.append(
            (".".join(self.scope), operator, start, end, node.lineno, replacement)  # type: ignore[attr-defined]
        )
        self.snippets.append(_collapse(shown))

    snippets: list[str]

    def selected(self) -> bool:
        if not self.functions:
            return True
        name = ".".join(self.scope)
        return any(name == f or name.startswith(f + ".") for f in self.functions)

    # --- scopes ----------------------------------------------------------------------------

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self.depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1
        self.scope.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        for stmt in node.body:
            self.visit(stmt)
        self.scope.pop()

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.body)

    # --- left alone ------------------------------------------------------------------------

    def visit_Assert(self, node: ast.Assert) -> None:
        return

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_arguments(self, node: ast.arguments) -> None:
        return

    # --- operators -------------------------------------------------------------------------

    def visit_Compare(self, node: ast.Compare) -> None:
        parts = [self.text(node.left)]
        for op, right in zip(node.ops, node.comparators, strict=True):
            parts.append(_SYMBOL[type(op)])
            parts.append(self.text(right))
        for k, op in enumerate(node.ops):
            new = _FLIP[type(op)]
            mutated = list(parts)
            mutated[1 + 2 * k] = _SYMBOL[new]
            text = " ".join(p if i % 2 else f"({p})" for i, p in enumerate(mutated))
            self.add(node, f"compare {_SYMBOL[type(op)]}->{_SYMBOL[new]}", f"({text})")
        self.generic_visit(node)

    def _negate(self, test: ast.expr) -> None:
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], _NEGATING)
        ):
            return
        self.add(test, "negate", f"(not ({self.text(test)}))")

    def visit_If(self, node: ast.If) -> None:
        self._negate(node.test)
        self._exits(node.body)
        self._exits(node.orelse)
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        for test in node.ifs:
            self._negate(test)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._exits(node.body)
        self.generic_visit(node)

    def _exits(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, _EXITS):
                self.add(stmt, "exit", "pass")

    def visit_Constant(self, node: ast.Constant) -> None:
        v = node.value
        # a bare constant says little: it is named by the expression around it when short
        around = self.parents.get(node)
        call = self.parents.get(around) if isinstance(around, ast.keyword) else None
        if isinstance(around, ast.keyword) and isinstance(call, ast.Call):
            # a keyword argument: named by the function called and the keyword
            context = f"{self.text(call.func)}(… {self.text(around)} …)"
        else:
            context = self.text(around) if isinstance(around, ast.expr) else ""
        snippet = context if 0 < len(" ".join(context.split())) <= SNIPPET_MAX else ""
        if isinstance(v, bool):
            self.add(node, f"const {v}->{not v}", str(not v), snippet)
        elif isinstance(v, int):
            self.add(node, f"const {v}->{v + 1}", f"({v + 1})", snippet)
        elif v in ("any", "all"):
            other = "all" if v == "any" else "any"
            self.add(node, f"anyall {v}->{other}", repr(other), snippet)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("any", "all"):
            other = "all" if f.id == "any" else "any"
            self.add(f, f"anyall {f.id}->{other}", other, snippet=self.text(node))
        elif isinstance(f, ast.Attribute) and f.attr in ("any", "all"):
            other = "all" if f.attr == "any" else "any"
            # the whole attribute, its value's text kept: `x.any` -> `x.all`
            text = f"{self.text(f.value)}.{other}"
            self.add(f, f"anyall .{f.attr}->.{other}", text, snippet=self.text(node))
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        word, other = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        joined = f" {other} ".join(f"({self.text(v)})" for v in node.values)
        self.add(node, f"boolop {word}->{other}", f"({joined})")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.BitAnd | ast.BitOr):
            sym, other = ("&", "|") if isinstance(node.op, ast.BitAnd) else ("|", "&")
            text = f"(({self.text(node.left)}) {other} ({self.text(node.right)}))"
            self.add(node, f"boolop {sym}->{other}", text)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.BitAnd | ast.BitOr):
            sym, other = ("&", "|") if isinstance(node.op, ast.BitAnd) else ("|", "&")
            text = f"{self.text(node.target)} {other}= ({self.text(node.value)})"
            self.add(node, f"boolop {sym}=->{other}=", text)
        self.generic_visit(node)


def mutants(module: str, source: bytes, functions: tuple[str, ...] = ()) -> list[Mutant]:
    """Every mutant of `source` (the text of `module`), in source order; only inside the
    functions named in `functions` (qualified names, a class name covers its methods) when
    given. Each mutant is checked to compile."""
    tree = ast.parse(source)
    finder = _Finder(module, source, functions)
    finder.snippets = []
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            finder.parents[child] = node
    finder.visit(tree)
    out: list[Mutant] = []
    seen: dict[tuple[str, str, str], int] = {}
    rows = sorted(zip(finder.found, finder.snippets, strict=True), key=lambda r: (r[0][2], r[0][3]))
    for (function, operator, start, end, line, replacement), snippet in rows:
        k = (function, operator, snippet)
        n = seen.get(k, 0)
        seen[k] = n + 1
        end_line = bisect.bisect_right(finder.line_starts, end - 1)
        m = Mutant(module, function, operator, snippet, n, line, end_line, start, end, replacement)
        compile(m.apply(source), module, "exec")
        out.append(m)
    return out
