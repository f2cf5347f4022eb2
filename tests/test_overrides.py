"""generator.catalog.overrides: `--set` typing and `--set-file` objects."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from generator.catalog.overrides import parse_overrides, parse_set, parse_set_file, typed_scalar
from generator.core.errors import UsageError
from generator.core.records import Override
from generator.core.yamlio import MAX_SAFE_INT


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("false", False),
        ("0", 0),
        ("-12", -12),
        ("+7", 7),
        ("3.5", 3.5),
        ("-.5", -0.5),
        ("1e3", 1000.0),
        ("2.5E-2", 0.025),
        ("True", "True"),  # only the lower-case words are booleans
        ("yes", "yes"),
        ("null", "null"),
        ("007", "007"),  # leading zeros stay text (versions, ids)
        ("1.2.3", "1.2.3"),
        ("nan", "nan"),
        ("inf", "inf"),
        ("1e", "1e"),
        ("5%", "5%"),
        ("", ""),
        ("60s", "60s"),
        ("a=b", "a=b"),
    ],
)
def test_typed_scalar(text: str, value: object) -> None:
    got = typed_scalar(text)
    assert got == value and type(got) is type(value)


@given(st.integers(min_value=-MAX_SAFE_INT, max_value=MAX_SAFE_INT))
def test_integers_round_trip(n: int) -> None:
    assert typed_scalar(str(n)) == n


@given(st.integers(min_value=MAX_SAFE_INT + 1) | st.integers(max_value=-MAX_SAFE_INT - 1))
def test_integers_beyond_json_are_refused(n: int) -> None:
    with pytest.raises(ValueError, match="range JSON represents exactly"):
        typed_scalar(str(n))


@pytest.mark.parametrize(
    "text", ["1e999", "-1e999", "9" * 5000, "-" + "9" * 5000, str(2**70), "9" * 400 + ".0"]
)
def test_set_numbers_no_recipe_can_hold_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_overrides([f"gpu-operator:driver.x={text}"])
    (d,) = e.value.diagnostics
    assert d.rule == "override.number"


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_round_trip(x: float) -> None:
    got = typed_scalar(repr(x))
    assert isinstance(got, float | int)
    assert math.isclose(float(got), x) or got == x


def test_parse_set() -> None:
    assert parse_set("gpu-operator:driver.version=580.65.06") == Override(
        "gpu-operator", "driver.version", "580.65.06", "--set gpu-operator:driver.version=580.65.06"
    )
    # typed as documented: a two-part number is a float (quote-free syntax; use --set-file
    # for a string that looks like a number)
    assert parse_set("gpu-operator:driver.version=580.65").value == 580.65
    # only the first '=' separates: the value may contain more
    assert parse_set("c:a.b=x=y").value == "x=y"
    assert parse_set("c:enabled=false").value is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpu-operator=1", "expected COMPONENT:PATH=VALUE, got 'gpu-operator=1'"),
        ("gpu-operator:driver", "expected COMPONENT:PATH=VALUE, got 'gpu-operator:driver'"),
        ("Bad_Name:a=1", "invalid component name 'Bad_Name'"),
        ("c:=1", "invalid values path '' (dotted keys of letters, digits, '_' and '-')"),
        ("c:a..b=1", "invalid values path 'a..b' (dotted keys of letters, digits, '_' and '-')"),
    ],
)
def test_parse_set_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_set(text)
    assert e.value.message == f"--set {text}: {message}"
    assert e.value.diagnostics[0].message == message


def test_parse_set_file_yaml_and_json(tmp_path: Path) -> None:
    y = tmp_path / "v.yaml"
    y.write_text("driver:\n  enabled: false\n  env: [{name: A, value: '1'}]\n")
    j = tmp_path / "v.json"
    j.write_text(json.dumps({"x": {"y": 1.5}}))
    a = parse_set_file(f"gpu-operator:spec={y}")
    assert a == Override(
        "gpu-operator",
        "spec",
        {"driver": {"enabled": False, "env": [{"name": "A", "value": "1"}]}},
        "--set-file gpu-operator:spec=v.yaml",
    )
    b = parse_set_file(f"nfd={j}")
    assert (b.component, b.path, b.value) == ("nfd", "", {"x": {"y": 1.5}})


def test_parse_set_file_errors(tmp_path: Path) -> None:
    lst = tmp_path / "list.yaml"
    lst.write_text("- a\n- b\n")
    with pytest.raises(UsageError, match="must hold a YAML/JSON object, found list"):
        parse_set_file(f"c:p={lst}")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(UsageError, match="not valid YAML/JSON") as e0:
        parse_set_file(f"c={empty}")
    assert e0.value.diagnostics[0].rule == "yaml.empty"
    null = tmp_path / "null.yaml"
    null.write_text("null\n")
    with pytest.raises(UsageError, match="found empty"):
        parse_set_file(f"c={null}")
    with pytest.raises(UsageError, match="cannot read"):
        parse_set_file(f"c={tmp_path / 'absent.yaml'}")
    dup = tmp_path / "dup.yaml"
    dup.write_text("a: 1\na: 2\n")
    with pytest.raises(UsageError) as e:
        parse_set_file(f"c={dup}")
    assert e.value.diagnostics and e.value.diagnostics[0].path == str(dup)
    with pytest.raises(UsageError, match="no file given"):
        parse_set_file("c:p=")


def test_parse_overrides_orders_and_collects(tmp_path: Path) -> None:
    f = tmp_path / "o.yaml"
    f.write_text("a: 1\n")
    got = parse_overrides(["c:a=2", "c:b=x"], [f"c={f}"])
    assert [o.origin for o in got] == ["--set-file c=o.yaml", "--set c:a=2", "--set c:b=x"]
    with pytest.raises(UsageError) as e:
        parse_overrides(["bad", "c:ok=1", "also-bad"], [])
    assert len(e.value.diagnostics) == 2  # every error, not only the first
