"""generator.core.archive: the hand-built tar.gz is byte for byte what `tarfile` + `gzip` write,
and the named gzip what `gzip.GzipFile` writes.

Also: `render.archive_bytes` (which orders the members and adds the directories) over the
reference writer gives the bytes it gives over the fast one.
"""

from __future__ import annotations

import gzip
import io
import tarfile

from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core.archive import Member, gzip_bytes, gzip_named, tar_gz, tar_gz_reference
from generator.render import BundleFile, archive_bytes
from generator.render import archive as archive_mod
from generator.render.archive import archive_members, archive_members_reference

# segments long enough to push paths past the 100-byte ustar name field, non-ASCII included
_segment = st.from_regex(r"[a-zé0-9][a-zé0-9._-]{0,60}", fullmatch=True).filter(
    lambda s: s not in (".", "..")
)
_names = st.lists(_segment, min_size=1, max_size=4).map("/".join)
_data = st.one_of(
    st.none(), st.binary(max_size=1100), st.sampled_from([b"", b"x" * 512, b"y" * 1024])
)
_members = st.lists(
    st.tuples(_names, _data, st.sampled_from([0o644, 0o755, 0o600, 0o700, 0o4755])), max_size=8
)
_mtimes = st.one_of(
    st.sampled_from([0, 1, 1700000000, 8**11 - 1, 8**11, 2**40]), st.integers(0, 2**34)
)


@settings(max_examples=200, deadline=None)
@given(_members, _mtimes)
def test_tar_gz_is_what_tarfile_and_gzip_write(members: list[Member], mtime: int) -> None:
    assert tar_gz(members, mtime) == tar_gz_reference(members, mtime)


def test_a_large_file_and_long_names() -> None:
    members: list[Member] = [
        ("t", None, 0o755),
        ("t/big.bin", bytes(range(256)) * 5000, 0o644),
        ("t/" + "n" * 120, b"#!", 0o755),
        ("t/" + "d" * 150, None, 0o755),
    ]
    blob = tar_gz(members, 3)
    assert blob == tar_gz_reference(members, 3)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        assert [m.name for m in tar.getmembers()] == [n for n, _, _ in members]


_trees = st.dictionaries(
    _names,
    st.tuples(st.binary(max_size=600), st.sampled_from([0o644, 0o755, 0o600, 0o700])),
    min_size=1,
    max_size=8,
).filter(lambda t: not any(a != b and b.startswith(a + "/") for a in t for b in t))


@settings(max_examples=100, deadline=None)
@given(_trees, st.sampled_from(["top", "a" * 99, "c" * 101]), _mtimes)
def test_archive_bytes_over_either_writer(
    raw: dict[str, tuple[bytes, int]], top: str, mtime: int
) -> None:
    tree = {p: BundleFile(data, mode) for p, (data, mode) in raw.items()}
    fast = archive_bytes(tree, top, mtime=mtime)
    original = archive_mod.tar_gz
    archive_mod.tar_gz = tar_gz_reference
    try:
        assert archive_bytes(tree, top, mtime=mtime) == fast
    finally:
        archive_mod.tar_gz = original


def test_headers_at_the_checksum_s_largest_sums() -> None:
    """The template headers sum their name and size digits with adler32 (exact below 65,521):
    names of 100 bytes 0xff (surrogate-escaped), a size of eleven 7s, every mode bit."""
    high = "\udcff" * 100
    members: list[Member] = [
        (high, b"z" * 3, 0o7777),
        (high[:99], None, 0o7777),
        ("d" * 99, None, 0o755),  # a directory's name reaches 100 bytes with its "/"
        ("d" * 100, None, 0o755),  # and 101 with it: the long-name record
        ("e" * 100, b"", 0o644),
        ("%s%%", b"%", 0o644),  # the templates' own `%` never read from a name
    ]
    for mtime in (0, 8**11 - 1, 8**11):
        assert tar_gz(members, mtime) == tar_gz_reference(members, mtime)


_any_trees = st.dictionaries(  # no filter: a file and a directory of the same name too
    _names,
    st.tuples(st.binary(max_size=40), st.sampled_from([0o644, 0o755, 0o600, 0o700])),
    min_size=1,
    max_size=10,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_any_trees, min_size=1, max_size=4), st.sampled_from(["top", "a-b", "z" * 101]))
def test_archive_members_are_the_reference_s(
    raw: list[dict[str, tuple[bytes, int]]], top: str
) -> None:
    """The layout found again (the same paths, another tree or top) gives the members the
    reference lists afresh."""
    for one in raw + raw[::-1]:
        tree = {p: BundleFile(data, mode) for p, (data, mode) in one.items()}
        assert archive_members(tree, top) == archive_members_reference(tree, top)
        again = {p: BundleFile(data + b"!", mode ^ 0o111) for p, (data, mode) in one.items()}
        assert archive_members(again, "o") == archive_members_reference(again, "o")


# a file name as GzipFile stores it: latin-1 text without a directory (`.gz` dropped once)
_gzip_names = st.text(st.characters(min_codepoint=1, max_codepoint=255, exclude_characters="/"))


@settings(max_examples=100, deadline=None)
@given(
    st.binary(max_size=20000),
    st.one_of(st.sampled_from(["sitemap.xml", "", "a.gz", "é.txt"]), _gzip_names),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_gzip_named_is_what_gzipfile_writes(data: bytes, name: str, mtime: int) -> None:
    """`gzip_named` composes from zlib the bytes `gzip.GzipFile` writes for `name + ".gz"`."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, filename=name + ".gz", mode="wb", mtime=mtime) as gz:
        gz.write(data)
    assert gzip_named(data, name=name, mtime=mtime) == buf.getvalue()


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=20000), st.integers(min_value=0, max_value=9))
def test_gzip_bytes_reads_back_with_no_name_and_time_zero(data: bytes, level: int) -> None:
    blob = gzip_bytes(data, level)
    assert gzip.decompress(blob) == data
    assert blob[3] == 0 and blob[4:8] == bytes(4)  # no FNAME, mtime 0
    assert blob == gzip_bytes(data, level)
