"""`audit.vouched_statement` against its reference `audit.signed_statement`: for every bundle the
reference accepts, the same payload (the site publishes it as the run's signed statement, made
with the vouched one for a run whose `RawFile.statement` says the reference accepted its bytes).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from generator.site.audit import signed_statement, vouched_statement

REPO = Path(__file__).resolve().parent.parent

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


def _payload(value: object | bytes) -> str:
    data = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.b64encode(data).decode()


_ENVELOPE = st.one_of(
    st.builds(lambda v: {"payload": _payload(v)}, _JSON | st.binary(max_size=24)),
    st.builds(lambda s: {"payload": s}, st.text(max_size=12)),  # not base64, or not a string
    st.builds(lambda v: {"payload": v}, _JSON),
    _JSON,
)
_BUNDLE = st.builds(
    lambda env, extra: json.dumps({**extra, "dsseEnvelope": env}).encode(),
    _ENVELOPE,
    st.dictionaries(st.sampled_from(["mediaType", "payload", "x"]), _JSON, max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(raw=_BUNDLE | st.binary(max_size=40) | _JSON.map(lambda v: json.dumps(v).encode()))
def test_the_vouched_statement_is_the_signed_one(raw: bytes) -> None:
    reference = signed_statement(raw)
    if reference is not None:  # the bytes the reference accepted: what a RawFile vouches for
        assert vouched_statement(raw) == reference
    if vouched_statement(raw) is None:  # it refuses no more than the reference does
        assert reference is None


def test_the_repositorys_bundles_give_one_statement_both_ways() -> None:
    bundles = sorted((REPO / "evidence").rglob("*.sigstore.json"))
    assert bundles
    for path in bundles:
        raw = path.read_bytes()
        reference = signed_statement(raw)
        assert reference is not None, path
        assert vouched_statement(raw) == reference


def test_a_payload_that_is_not_json_is_only_refused_by_the_reference() -> None:
    raw = json.dumps({"dsseEnvelope": {"payload": _payload(b"\xff not json")}}).encode()
    assert signed_statement(raw) is None
    assert vouched_statement(raw) == b"\xff not json"  # never asked: no RawFile vouches for it
