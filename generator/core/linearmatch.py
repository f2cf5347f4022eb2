"""Identity patterns matched in linear time: the one matcher of a regular expression that
untrusted text (a certificate identity, a branch name in it) is matched against.

A signer policy's `identityPattern` is written by a pull request; the identity it is matched
against comes from a certificate anyone can obtain. Python's `re` backtracks: a pattern with
nested or overlapping quantifiers (`(a+)+$`, `(a|a)*$`) takes time exponential in the length of
a non-matching identity, so a 40-character branch name hangs `evidence verify`. This module
matches with RE2 (`google-re2`, pinned in pyproject.toml), whose automaton runs in time linear
in the text whatever the pattern:

- `problem(pattern)`: why RE2 cannot take the pattern (backreferences, lookaround: features
  that need backtracking), or None; `validate` refuses such a pattern, located.
- `fullmatch(pattern, text)`: whether the whole `text` matches (compiled once per pattern).

RE2's `\\d`, `\\w` and `\\s` are ASCII only (Python's are Unicode): a pattern can only match
fewer identities here, never more. tests/test_untrusted_text.py bounds the CPU a hostile
pattern takes (a counted-step property test) and fails when code outside this module matches
an identity pattern with `re`.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

_OPTIONS: Any = re2.Options()
_OPTIONS.log_errors = False  # the error is returned as a diagnostic, not logged to stderr
_OPTIONS.max_mem = 8 << 20  # a pattern whose automaton needs more is refused, not slow


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern, _OPTIONS)


def problem(pattern: str) -> str | None:
    """Why the linear-time engine cannot match `pattern`, or None."""
    try:
        _compiled(pattern)
    except re2.error as e:
        detail = (
            e.args[0].decode("utf-8", "replace")
            if e.args and isinstance(e.args[0], bytes)
            else str(e)
        )
        return (
            f"identityPattern needs a backtracking feature the linear-time matcher refuses "
            f"(backreferences, lookaround): {detail}"
        )
    except (TypeError, ValueError) as e:
        return f"identityPattern cannot be compiled: {e}"
    return None


def fullmatch(pattern: str, text: str) -> bool:
    """Whether all of `text` matches `pattern`, in time linear in `len(text)`."""
    return _compiled(pattern).fullmatch(text) is not None
