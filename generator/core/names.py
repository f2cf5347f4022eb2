"""The one name validator: a name is valid when the *whole* string matches its pattern.

Python's `$` also matches before a final newline, so `re.match(r"^[a-z]+$", "eks\\n")`
succeeds: a recipe name or a profile version ending in a newline would pass every check, then
become a file name with a newline, a `deploy.sh` that fails `bash -n`, an invalid `recipe.yaml`.
Every name, version and token check therefore goes through `valid` (`fullmatch`), and every JSON
Schema `pattern` through `schema_regex`, which gives `$` its JSON Schema (ECMA-262) meaning: the
end of the string, never before a final newline.
"""

from __future__ import annotations

import functools
import re

# what reaches file paths, YAML keys, shell words and comments of a bundle (the renderer refuses
# anything else; `validate` checks the registry's strings with the same patterns)
TOKEN = re.compile(r"[A-Za-z0-9._+:/@~-]+")  # chart, version, repository
DNS_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")  # component name, namespace


def valid(pattern: re.Pattern[str], value: object) -> bool:
    """True when `value` is a string that `pattern` matches entirely (`fullmatch`)."""
    return isinstance(value, str) and pattern.fullmatch(value) is not None


@functools.cache
def schema_regex(pattern: str) -> re.Pattern[str]:
    """A JSON Schema `pattern` compiled with ECMA-262 anchors: every unescaped `$` outside a
    character class becomes `\\Z` (the end of the string only). Search it, as the keyword says
    (`pattern` is not implicitly anchored)."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":  # a negated class: `]` right after is literal
                out.append("[^")
                i += 2
                if pattern[i : i + 1] == "]":
                    out.append("]")
                    i += 1
                continue
            if pattern[i + 1 : i + 2] == "]":
                out.append("[]")
                i += 2
                continue
        elif ch == "$":
            out.append(r"\Z")
            i += 1
            continue
        out.append(ch)
        i += 1
    return re.compile("".join(out))


def schema_search(pattern: str, value: str) -> bool:
    """The JSON Schema `pattern` keyword: does `pattern` (ECMA anchors) match inside `value`?"""
    return schema_regex(pattern).search(value) is not None


__all__ = ["DNS_LABEL", "TOKEN", "schema_regex", "schema_search", "valid"]
