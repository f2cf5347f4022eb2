"""One name validator (`generator/core/names.py`): whole-string matches, trailing newline refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from generator.catalog import schemas
from generator.catalog.overrides import typed_scalar
from generator.core import names
from generator.publish.release import VERSION_RE
from generator.render.common import _RECIPE_NAME, _TOKEN
from generator.validate import SAFE_VERSION

GENERATOR = Path(__file__).resolve().parent.parent / "generator"
SCHEMAS = Path(__file__).resolve().parent.parent / "catalog" / "schemas"


def test_python_dollar_is_the_trap() -> None:
    # why the module exists: `$` matches before a final newline
    assert re.match(r"^[a-z]+$", "eks\n") is not None
    assert not names.valid(re.compile(r"^[a-z]+$"), "eks\n")
    assert names.valid(re.compile(r"^[a-z]+$"), "eks")
    assert not names.valid(re.compile(r"[a-z]+"), None)


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("^[a-z]+$", "eks", True),
        ("^[a-z]+$", "eks\n", False),
        ("^sha256:[0-9a-f]{4}$", "sha256:abcd\n", False),
        (r"^\^.*\$$", "^a$", True),  # an escaped dollar stays a literal
        (r"^\^.*\$$", "^a$\n", False),
        ("^[$]+$", "$$", True),  # a dollar inside a class stays a literal
        ("^[^$]+$", "ab\n", True),  # \n is in [^$]: the whole string matches
        ("^[]$]+$", "$]", True),
        ("^\\./", "./x\n", True),  # unanchored end: a search, as the keyword says
        ("a$|^b", "a\n", False),
    ],
)
def test_schema_patterns_have_ecma_anchors(pattern: str, value: str, expected: bool) -> None:
    assert names.schema_search(pattern, value) is expected


def test_every_schema_pattern_refuses_a_trailing_newline() -> None:
    """Each anchored `pattern` (`^...$`) of every published schema, through the validator the
    catalog uses, accepts exactly what matches it as a whole (ECMA-262 anchors): a string it
    accepts plus "\n" is refused unless the pattern itself admits a newline."""
    seen = 0
    cls = schemas.validator_class(schemas.jsonschema.Draft202012Validator)
    for path in sorted(SCHEMAS.rglob("*.json")):
        text = path.read_text("utf-8")
        for pattern in set(re.findall(r'"pattern":\s*("(?:[^"\\]|\\.)*")', text)):
            pat = json.loads(pattern)
            if not (pat.startswith("^") and pat.endswith("$") and not pat.endswith("\\$")):
                continue
            seen += 1
            validator = cls({"type": "string", "pattern": pat})
            for probe in (
                "a",
                "abc",
                "1.0.0",
                "sha256:" + "0" * 64,
                "eks",
                "30s",
                "R:1 D:1 P:1 C:1",
            ):
                for value in (probe, probe + "\n"):
                    whole = re.fullmatch(pat, value) is not None
                    assert validator.is_valid(value) is whole, (path.name, pat, value)
    assert seen >= 10


def test_code_validators_refuse_a_trailing_newline() -> None:
    assert not names.valid(_RECIPE_NAME, "h100-eks\n")
    assert not names.valid(_TOKEN, "1.0.0\n")
    assert not names.valid(SAFE_VERSION, "v1.2.3\n")
    assert not names.valid(VERSION_RE, "v1.2.3\n")
    assert typed_scalar("12\n") == "12\n"  # not the integer 12


def test_no_anchored_pattern_is_used_with_match_or_search() -> None:
    """Source guard: a compiled pattern ending in `$` is only ever used through `names.valid`
    (or `fullmatch`), never `.match(` / `.search(`, where `$` accepts a final newline."""
    offenders = []
    for path in sorted(GENERATOR.rglob("*.py")):
        source = path.read_text("utf-8")
        anchored = re.findall(
            r"^(_?[A-Z][A-Z0-9_]*) = re\.compile\(\s*r?[\"'].*\$[\"']", source, re.M
        )
        for name in anchored:
            if re.search(rf"\b{name}\.(match|search)\(", source):
                offenders.append(f"{path.relative_to(GENERATOR)}: {name}")
    assert not offenders, offenders
