"""The fast paths of the render stage write exactly what the plain library calls would.

`archive_bytes` builds tar headers and the gzip frame itself; it is compared here with the
`tarfile` + `gzip` writer it replaced. `to_yaml` memoizes dumps and represents plain data with a
lean representer; both are compared with a plain `yaml.dump`.
"""

from __future__ import annotations

import datetime
import gzip
import io
import tarfile
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.render import BundleFile, archive_bytes, common
from generator.render.common import MODE_EXEC, MODE_FILE, BundleTree, to_yaml

# --- archive ------------------------------------------------------------------------------------


def _reference_archive(tree: BundleTree, top: str, mtime: int) -> bytes:
    """The archive as `tarfile` and `gzip` write it (the writer `archive_bytes` replaced)."""
    dirs = {top}
    for rel in tree:
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add(f"{top}/{'/'.join(parts[:i])}")
    entries: list[tuple[str, str | None]] = [(d, None) for d in dirs]
    entries += [(f"{top}/{p}", p) for p in tree]
    entries.sort(key=lambda e: e[0])

    def info(name: str, directory: bool, mode: int, size: int = 0) -> tarfile.TarInfo:
        ti = tarfile.TarInfo(name)
        ti.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
        ti.mode, ti.size, ti.mtime = mode, size, mtime
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        return ti

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, member in entries:
            if member is None:
                tar.addfile(info(name, True, 0o755))
                continue
            f = tree[member]
            mode = MODE_EXEC if f.mode & 0o111 else MODE_FILE
            tar.addfile(info(name, False, mode, len(f.data)), io.BytesIO(f.data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=6) as gz:
        gz.write(raw.getvalue())
    data = bytearray(out.getvalue())
    data[9] = 255
    return bytes(data)


# segments long enough to push paths past the 100-byte ustar name field, non-ASCII included
_segment = st.from_regex(r"[a-zé0-9][a-zé0-9._-]{0,60}", fullmatch=True).filter(
    lambda s: s not in (".", "..")
)
_trees = st.dictionaries(
    st.lists(_segment, min_size=1, max_size=4).map("/".join),
    st.tuples(
        st.one_of(st.binary(max_size=1100), st.sampled_from([b"", b"x" * 512, b"y" * 1024])),
        st.sampled_from([0o644, 0o755, 0o600, 0o700]),
    ),
    min_size=1,
    max_size=8,
).filter(lambda t: not any(a != b and b.startswith(a + "/") for a in t for b in t))


@settings(max_examples=150, deadline=None)
@given(
    _trees,
    st.sampled_from(["top", "a" * 99, "b" * 100, "c" * 101, "d" * 180]),
    st.one_of(st.sampled_from([0, 1, 1700000000, 8**11 - 1, 8**11, 2**40]), st.integers(0, 2**34)),
)
def test_archive_is_what_tarfile_and_gzip_write(
    raw: dict[str, tuple[bytes, int]], top: str, mtime: int
) -> None:
    tree = {p: BundleFile(data, mode) for p, (data, mode) in raw.items()}
    assert archive_bytes(tree, top, mtime=mtime) == _reference_archive(tree, top, mtime)


def test_archive_of_a_large_file_is_what_tarfile_writes() -> None:
    tree = {"big.bin": BundleFile(bytes(range(256)) * 5000), "run.sh": BundleFile(b"#!", 0o755)}
    assert archive_bytes(tree, "t", mtime=3) == _reference_archive(tree, "t", 3)


# --- YAML ---------------------------------------------------------------------------------------


class _StockDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """The dumper as it was before the fast paths: PyYAML's own representer and resolver."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_StockDumper.add_representer(str, common._represent_str)


def _plain_dump(obj: Any, sort_keys: bool) -> str:
    text: str = yaml.dump(
        obj,
        Dumper=_StockDumper,
        sort_keys=sort_keys,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
        indent=2,
    )
    return text


@pytest.fixture(autouse=True)
def _empty_memo() -> None:
    common._MEMO.clear()


def test_memo_hits_only_for_equal_typed_values() -> None:
    # equal under ==, different YAML: the memo must tell them apart
    variants: list[Any] = [
        {"a": 1},
        {"a": 1.0},
        {"a": True},
        {"a": "1"},
        {1: "a"},
        {"1": "a"},
        {True: "a"},
        {"a": [1]},
        {"a": (1,)},
        {"a": None},
        {"a": ""},
        {"b": 1, "a": 2},
        {"a": 2, "b": 1},
    ]
    for _ in range(2):  # the second round is served from the memo
        for v in variants:
            for sort_keys in (False, True):
                assert to_yaml(v, sort_keys=sort_keys) == _plain_dump(v, sort_keys), v
    assert len(common._MEMO) > 0


class _Str(str):
    pass


def test_memo_does_not_serve_values_yaml_refuses() -> None:
    assert to_yaml({"a": "x"}) == "a: x\n"
    with pytest.raises(yaml.representer.RepresenterError):
        to_yaml({"a": _Str("x")})  # a str subclass is not plain data for the safe dumper
    with pytest.raises(yaml.representer.RepresenterError):
        to_yaml({"a": object()})  # cannot even be pickled: dumped uncached, and refused
    assert to_yaml({"a": "x"}) == "a: x\n"


def test_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "_MEMO_LIMIT", 100)
    for i in range(50):
        assert to_yaml({"key": f"value {i}"}) == f"key: value {i}\n"
    assert sum(len(t) for t in common._MEMO.values()) <= 100


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(
        [
            "",
            " ",
            "yes",
            "No",
            "on",
            "null",
            "~",
            "1.0",
            "0x1F",
            "1e3",
            ".inf",
            "2024-01-01",
            "<<",
            "=",
            "a: b",
            "- x",
            "#c",
            "line\nline",
            "line\nend ",
            "tab\there",
            "é",
            "\u2028",
            "'q'",
            '"d"',
        ]
    ),
    st.binary(max_size=8),
    st.dates(),
    st.datetimes(),
)
_keys = st.one_of(st.text(max_size=10), st.integers(-5, 5), st.booleans(), st.none())
_data = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
        st.frozensets(st.integers(0, 9), max_size=3).map(set),
    ),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(_data, st.booleans())
def test_to_yaml_is_what_yaml_dump_writes(obj: Any, sort_keys: bool) -> None:
    expected = _plain_dump(obj, sort_keys)
    assert to_yaml(obj, sort_keys=sort_keys) == expected
    assert to_yaml(obj, sort_keys=sort_keys) == expected  # from the memo


def test_to_yaml_of_dates_and_mixed_keys() -> None:
    obj = {
        "when": datetime.date(2024, 1, 2),
        "at": datetime.datetime(2024, 1, 2, 3, 4, 5),
        2: "two",
        "b": {"z": 1, "a": [1, 2.5, None, "x\ny"]},
    }
    for sort_keys in (False, True):
        assert to_yaml(obj, sort_keys=sort_keys) == _plain_dump(obj, sort_keys)


def test_resolver_memo_keeps_quoting_what_would_read_back_as_another_type() -> None:
    common._Dumper._implicit_tags.clear()
    tricky = ["yes", "1", "1.5", "null", "~", "", "2024-01-01", "true", "<<", "=", "plain"]
    obj = {t: [t, {t: t}] for t in tricky}
    first = to_yaml(obj)
    common._MEMO.clear()  # dump again, now with every tag from the resolver memo
    assert to_yaml(obj) == first == _plain_dump(obj, False)
    assert yaml.safe_load(first) == obj
    assert set(common._Dumper._implicit_tags) >= set(tricky) - {""}
