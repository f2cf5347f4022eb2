"""The status in plain Python is the status the pandas tables gave (the reference).

`generator.aggregate.aggregate` (what every build runs) against
`generator.aggregate_tables.aggregate_reference` (`status_records(status_tables(...))`, which
tests/test_aggregate.py's model-level tests read), on random catalogs and evidence: several
recipes and profiles (a profile without a ladder, a recipe given twice, one that does not
resolve), every consensus state, lanes on, off and beyond the ladder, unknown lanes, stale,
stale-criteria, unverified, unallowlisted, sample runs under and outside demo roots,
unreadable statements, upstream recipe evidence, runs without a log time, attested after it,
ties of log time and digest, zero-target and duplicated checks. Equal as records, and of the
same type in every field (a str where the reference gave a str, not an enum: the stages after
this one store and print them).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.aggregate import _attested_after, aggregate, recipe_parts
from generator.aggregate_tables import aggregate_reference
from generator.core.records import Criteria, RecipeResult
from generator.evidence.model import (
    CheckResult,
    Evidence,
    FailureClass,
    RejectedEvidence,
    Statement,
    VerifiedEvidence,
)
from tests.test_aggregate import LADDERS, LANES, LARGE, STANDARD, recipe, run

LANE_NAMES = [ln.name for ln in LANES.lanes]
PROFILES = [LARGE, STANDARD, "unladdered"]
STATUSES = ["passed", "failed", "skipped", "pending", "proposed", "other"]
ROOTS = ["test", "demo", "public-good"]


@st.composite
def recipes(draw: st.DrawFn) -> list[RecipeResult]:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        r = recipe(
            draw(st.sampled_from(["r1", "r2", "r3"])),
            draw(st.sampled_from(PROFILES)),
            gpu_operator=draw(st.sampled_from(["v26.7.0", "v26.9.0", None])),
            checks=draw(st.integers(0, 3)),
        )
        platform = draw(st.sampled_from(["kubeflow", "slurm", None]))
        out.append(
            dataclasses.replace(r, criteria=Criteria("eks", "gb300", "ubuntu", None, platform))
        )
    return out


def _time(draw: st.DrawFn, day: int) -> str:
    """An RFC 3339 attestedAt as statements sign it (upper-case T and Z, or an offset)."""
    digits = draw(st.sampled_from(["", "0", "5", "000001", "1234567", "000000128", "999999999"]))
    zone = draw(st.sampled_from(["Z", "Z", "+00:00", "-05:30", "+01:00"]))
    second = draw(st.sampled_from(["00", "59"]))
    return (
        f"2026-11-{day:02d}T08:{draw(st.sampled_from(['00', '05', '04']))}:{second}"
        + (f".{digits}" if digits else "")
        + zone
    )


@st.composite
def scale_run(draw: st.DrawFn, rs: list[RecipeResult]) -> Evidence:
    r = draw(st.sampled_from(rs))
    lane = draw(st.sampled_from(["lane-36", "lane-36", "lane-72", *LANE_NAMES]))
    signer = draw(st.sampled_from("abc"))
    day = draw(st.integers(1, 3))
    if draw(st.booleans()):  # an honest run, as verify gives it
        return run(r, lane, signer, day=day, sample=draw(st.booleans()))
    spec = LANES.lane(lane)
    assert spec is not None
    ids = [s.id for s in LANES.required_scenarios(spec, r.criteria)]
    some = st.lists(st.sampled_from(ids), max_size=3) if ids else st.just([])
    kpis = [k.id for k, _ in LANES.required_kpis(spec, r.criteria)]
    e = run(
        r,
        lane,
        signer,
        verdict=draw(st.sampled_from([None, None, "pass", "fail"])),
        day=day,
        statuses={i: draw(st.sampled_from(STATUSES)) for i in draw(some)},
        targets={i: 0 for i in draw(some)},
        observed=draw(st.sampled_from([None, None, 1])),
        digest=draw(st.sampled_from([None, None, None, "sha256:" + "9" * 64])),
        criteria_version=draw(st.sampled_from(["1.0.0", "1.0.0", "0.9.0"])),
        sample=draw(st.booleans()),
        kpi_status={
            k: draw(st.sampled_from(STATUSES)) for k in kpis if draw(st.integers(0, 4)) == 0
        },
    )
    return draw(_varied(e))


@st.composite
def _varied(draw: st.DrawFn, e: VerifiedEvidence) -> Evidence:
    """`e` with what verify would not give it as often: another lane name, a duplicated check,
    no log time, a log time before it attested, another root, a stale flag, a shared digest."""
    stmt = e.statement
    day = int(stmt.attested_at[8:10]) if stmt.attested_at else 1
    changes: dict[str, Any] = {"attested_at": _time(draw, day)}
    if draw(st.integers(0, 9)) == 0:
        changes["lane"] = draw(st.sampled_from(["lane-9", ""]))
    if draw(st.integers(0, 5)) == 0 and stmt.phases:
        phase = draw(st.sampled_from(sorted(stmt.phases)))
        cs = stmt.phases[phase]
        extra = CheckResult(cs[0].name if cs else "extra", draw(st.sampled_from(STATUSES)), 1)
        changes["phases"] = {**stmt.phases, phase: (*cs, extra)}
    e = dataclasses.replace(e, statement=dataclasses.replace(stmt, **changes))
    logged = e.integrated_time
    assert logged is not None
    return dataclasses.replace(
        e,
        integrated_time=draw(st.sampled_from([logged, logged, None, logged - 600, logged - 300])),
        trust_root=draw(st.sampled_from(ROOTS)),
        stale=draw(st.integers(0, 9)) == 0,
        statement_digest=draw(st.sampled_from([e.statement_digest, "sha256:" + "0" * 64])),
    )


@st.composite
def upstream_run(draw: st.DrawFn, rs: list[RecipeResult]) -> Evidence:
    r = draw(st.sampled_from(rs))
    base = run(r, "lane-36", draw(st.sampled_from("abc")), day=draw(st.integers(1, 3)))
    checks = tuple(
        CheckResult(draw(st.sampled_from(["x", "y"])), draw(st.sampled_from(STATUSES)))
        for _ in range(draw(st.integers(0, 3)))
    )
    stmt = Statement(
        predicate_type="https://aicr.run/recipe-evidence/v3",
        recipe=r.name,
        recipe_digest=r.digest,
        subjects=(),
        predicate={},
        scale_profile=draw(st.sampled_from([None, r.scale_profile])),
        lane=draw(st.sampled_from([None, "lane-36"])),
        phases={"deployment": checks},
        verdict=draw(st.sampled_from(["pass", "fail"])),
        attested_at="2026-11-01T00:00:00Z",
        sample=draw(st.booleans()),
    )
    return dataclasses.replace(base, statement=stmt, trust_root=draw(st.sampled_from(ROOTS)))


@st.composite
def rejected(draw: st.DrawFn, rs: list[RecipeResult]) -> Evidence:
    r = draw(st.sampled_from(rs))
    statement = draw(st.sampled_from([None, run(r, "lane-36").statement]))
    n = draw(st.integers(0, 3))
    return RejectedEvidence(
        path=f"evidence/{r.name}/{'1' * 32}/{n:064x}.sigstore.json",
        klass=draw(st.sampled_from(list(FailureClass))),
        message="rejected",
        statement=statement,
        trust_root=draw(st.sampled_from([None, *ROOTS])),
    )


@st.composite
def catalogs(draw: st.DrawFn) -> tuple[list[RecipeResult], list[Evidence], dict[str, Any]]:
    rs = draw(recipes())
    kinds = st.one_of(scale_run(rs), scale_run(rs), upstream_run(rs), rejected(rs))
    evidence = draw(st.lists(kinds, max_size=14))
    if evidence and draw(st.booleans()):  # two records at one path
        evidence.append(evidence[draw(st.integers(0, len(evidence) - 1))])
    if draw(st.booleans()):  # two signers agreeing on a lane of a recipe
        r = draw(st.sampled_from(rs))
        lane = draw(st.sampled_from(["lane-36", "lane-72"]))
        evidence += [run(r, lane, "a"), run(r, lane, "b")]
    options = {
        "demo": draw(st.booleans()),
        "demo_roots": draw(st.sets(st.sampled_from(ROOTS), max_size=2)),
        "failures": draw(st.sampled_from([{}, {"r9": "boom"}, {"r1": "boom"}])),
    }
    return rs, evidence, options


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs())
def test_the_plain_status_is_the_tables_status(
    catalog: tuple[list[RecipeResult], list[Evidence], dict[str, Any]],
) -> None:
    rs, evidence, options = catalog
    got = aggregate(rs, evidence, LANES, LADDERS, **options)
    want = aggregate_reference(rs, evidence, LANES, LADDERS, **options)
    assert _first_difference(got, want) is None


def _first_difference(a: Any, b: Any, at: str = "status") -> str | None:
    """Where two records first differ, in value or in type (None: nowhere)."""
    if type(a) is not type(b):
        return f"{at}: {type(a).__name__} {a!r} != {type(b).__name__} {b!r}"
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            found = _first_difference(getattr(a, f.name), getattr(b, f.name), f"{at}.{f.name}")
            if found:
                return found
        return None
    if isinstance(a, tuple) and not hasattr(a, "_fields"):
        if len(a) != len(b):
            return f"{at}: {len(a)} items != {len(b)}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, f"{at}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, tuple):  # a named tuple: field by field, each of its own type
        return (
            _first_difference(tuple(a), tuple(b), at)
            if a != b or any(type(x) is not type(y) for x, y in zip(a, b, strict=True))
            else None
        )
    return None if a == b else f"{at}: {a!r} != {b!r}"


def test_the_generated_catalogs_reach_every_state_and_exclusion() -> None:
    """The strategy above is not idle: over a fixed sample of its catalogs, every consensus
    state, every exclusion but the foreign ones, a ceiling and a blocked rung occur."""
    from hypothesis import find
    from hypothesis.errors import NoSuchExample

    seen: set[str] = set()

    def note(catalog: tuple[list[RecipeResult], list[Evidence], dict[str, Any]]) -> bool:
        rs, evidence, options = catalog
        s = aggregate(rs, evidence, LANES, LADDERS, **options)
        seen.update(str(x.consensus) for x in s.recipes)
        seen.update(str(c.state) for x in s.recipes for c in x.checks)
        seen.update(f"x:{r.exclusion}" for r in s.runs if r.exclusion is not None)
        seen.update("ceiling" for x in s.recipes if x.ceiling_lane)
        seen.update("blocked" for x in s.recipes if x.blocked_lane)
        return False

    try:
        find(catalogs(), note, settings=settings(max_examples=300, database=None, derandomize=True))
    except NoSuchExample:  # no catalog satisfies `note`: every one was looked at
        pass
    wanted = {"CONFIRMED", "SINGLE", "CONTESTED", "FAILING", "UNTESTED", "PARTIAL"}
    wanted |= {f"x:{x}" for x in ("stale", "stale-criteria", "unverified", "unallowlisted")}
    wanted |= {f"x:{x}" for x in ("sample-outside-demo", "unknown-lane", "verdict-mismatch")}
    wanted |= {"x:attested-after-logged", "x:invalid", "ceiling", "blocked"}
    assert wanted <= seen, wanted - seen


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogs())
def test_the_parts_are_the_reference_split_by_recipe(
    catalog: tuple[list[RecipeResult], list[Evidence], dict[str, Any]],
) -> None:
    """`recipe_parts` (the aggregate stage's computation) over the plain status: the status of
    each recipe alone is its share of the reference over all of them."""
    from generator.aggregate import RecipeInput, record_recipe

    rs, evidence, options = catalog
    names = sorted({r.name for r in rs} | {record_recipe(e) for e in evidence})
    inputs = [
        RecipeInput(
            n, [r for r in rs if r.name == n], [e for e in evidence if record_recipe(e) == n]
        )
        for n in names
    ]
    roots = options["demo_roots"]
    for part, given_ in zip(
        recipe_parts(inputs, LANES, LADDERS, demo_roots=roots), inputs, strict=True
    ):
        want = aggregate_reference(
            given_.results, given_.evidence, LANES, LADDERS, demo_roots=roots
        )
        assert (part.health, part.recipes, part.runs) == (want.health, want.recipes, want.runs)


def test_attested_after_is_the_references_comparison() -> None:
    """Nanoseconds and offsets, compared with a whole second as pandas' datetime arithmetic
    compared them (exactly: a sub-second part is never rounded onto the second)."""
    import pandas as pd

    texts = [
        "2026-11-01T08:00:00Z",
        "2026-11-01T08:00:00.000000001Z",
        "2026-11-01T08:05:00.000000128Z",
        "2026-11-01T08:05:00.000000127Z",
        "2026-11-01T08:04:59.999999999Z",
        "2026-11-01T08:00:00.999999999+05:30",
        "2026-11-01T08:00:00.1-00:00",
        "1999-12-31T23:59:59.5Z",
    ]
    for text in texts:
        when = pd.to_datetime(pd.Series([text]), utc=True, format="ISO8601")
        seconds = (when - pd.Timestamp(0, tz="UTC")).dt.total_seconds()[0]
        for limit in (int(seconds) - 1, int(seconds), int(seconds) + 1):
            assert _attested_after(text, limit) == bool(seconds > limit), (text, limit)
    for text in ("", "junk", "2026-02-30T08:00:00Z", "2026-11-01T08:00:60Z"):
        assert not _attested_after(text, 0)
