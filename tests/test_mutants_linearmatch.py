"""The linear-time matcher (`generator/core/linearmatch.py`), pinned for `make mutation` (#32).

`problem` says why RE2 refuses a pattern in RE2's own words (decoded text, never a `b'...'`
repr), and refuses a value that is no pattern at all; `fullmatch` is whole-text matching.
"""

from __future__ import annotations

from typing import Any

import pytest
import re2

from generator.core import linearmatch


@pytest.mark.parametrize(
    ("pattern", "detail"),
    [
        (r"(a)\1", r"invalid escape sequence: \1"),
        ("(?=a)b", "invalid perl operator: (?="),
        ("(a", "missing ): (a"),
    ],
)
def test_a_refused_pattern_says_why_in_re2s_words(pattern: str, detail: str) -> None:
    problem = linearmatch.problem(pattern)
    assert problem is not None
    assert problem.startswith("identityPattern needs a backtracking feature")
    assert problem.endswith(": " + detail)
    assert "b'" not in problem


def test_an_error_given_as_text_is_shown_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """RE2's errors carry bytes; one carrying text (or nothing) is shown with str()."""

    def refuse(pattern: str, options: Any) -> Any:
        raise re2.error(*args)

    monkeypatch.setattr(re2, "compile", refuse)
    linearmatch._compiled.cache_clear()
    try:
        args: tuple[object, ...] = ("bad repetition",)
        assert str(linearmatch.problem("x{2}")).endswith("lookaround): bad repetition")
        args = ()
        assert str(linearmatch.problem("y{2}")).endswith("lookaround): ")
    finally:
        linearmatch._compiled.cache_clear()


@pytest.mark.parametrize("value", [None, 12])
def test_a_value_that_is_no_pattern_is_refused(value: object) -> None:
    problem = linearmatch.problem(value)  # type: ignore[arg-type]
    assert problem is not None and problem.startswith("identityPattern cannot be compiled: ")


def test_fullmatch_matches_the_whole_text() -> None:
    assert linearmatch.problem("a+b") is None
    assert linearmatch.fullmatch("a+b", "aaab")
    assert not linearmatch.fullmatch("a+b", "aaabc")
    assert not linearmatch.fullmatch("a+b", "xaab")
