"""Page and JSON generation from hand-made records (no catalog, no mkdocs): golden files.

`tests/golden/site/` holds the generated Markdown and JSON of a small `SiteData` built here;
refresh with `pytest tests/test_site_pages.py --update-goldens` and review the diff.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.cli import main
from generator.commands.build import cli_reference
from generator.core.records import (
    Constraint,
    Criteria,
    OwnedValue,
    RecipeResult,
    ResolvedComponent,
    ScaleProfile,
)
from generator.evidence.view import CheckRow as Check
from generator.evidence.view import KpiRow as Kpi
from generator.evidence.view import Outcome, RawFile
from generator.site import api, badges, pages
from generator.site.model import (
    ComponentUse,
    Download,
    EvidenceView,
    ProfileView,
    RecipeView,
    ResultSource,
    SiteData,
)
from generator.site.model import LaneOutcome as LaneStatus
from generator.site.model import LaneView as Lane
from tests.conftest import REPO

GOLDEN = REPO / "tests" / "golden" / "site"
DIGEST = "sha256:" + "ab" * 32
# a run's raw file by reference (the bytes `{}`, which hold no signed statement)
RAW = RawFile("/evidence/x.sigstore.json", "/evidence", hashlib.sha256(b"{}").hexdigest(), 2, False)


def component(name: str, order: int, deps: tuple[str, ...] = ()) -> ResolvedComponent:
    return ResolvedComponent(
        name=name,
        type="Helm",
        repository="https://charts.example.invalid",
        chart=name,
        version="1.2.3",
        namespace=f"{name}-ns",
        values={"replicas": 1},
        manifest_files=(),
        pre_manifest_files=(),
        dependency_refs=deps,
        order=order,
        depth=len(deps),
        values_files=(),
    )


def result(profile: str) -> RecipeResult:
    return RecipeResult(
        name="demo-recipe",
        criteria=Criteria("eks", "gb300", "ubuntu", "training", "slurm"),
        applied_overlays=("base", "eks", "demo-recipe"),
        mixins=("os-ubuntu",),
        constraints=(
            Constraint("K8s.server.version", ">= 1.33", "error", "Upgrade <now> & retry"),
        ),
        components=(component("cert-manager", 0), component("gpu-operator", 1, ("cert-manager",))),
        validation={"deployment": {"checks": ["operator-health"], "timeout": "10m"}},
        scale_profile=profile,
        scale_profile_version="1.0.0",
        overrides=(),
        digest=DIGEST,
    )


def run(lane: str, nodes: int, signer: str, verdict: str) -> EvidenceView:
    return EvidenceView(
        id=f"{nodes:016x}-{len(signer):08x}",
        statement_digest="sha256:" + f"{nodes:x}".ljust(64, "0"),
        path=f"evidence/demo-recipe/{'1' * 32}/{nodes:04d}{signer}.sigstore.json",
        recipe="demo-recipe",
        state="verified",
        reason="",
        failure_class="",
        sample=True,
        predicate_type="https://aicr.run/scale-qualification/v1",
        profile="big",
        profile_version="1.0.0",
        lane=lane,
        lane_nodes=nodes,
        observed_nodes=nodes,
        observed_gpus=nodes * 4,
        verdict=verdict,
        reasons=() if verdict == "pass" else ("install too slow",),
        recipe_digest=DIGEST,
        bundle_digest="sha256:" + "cd" * 32,
        attested_at=f"2026-11-{nodes // 36:02d}T00:00:00Z",
        signer_identity=f"{signer}@demo.invalid",
        signer_issuer="https://oidc.demo.invalid",
        signer_class="first-party",
        signer_label=f"Lab {signer}",
        trust_root="demo",
        tlog_index=nodes,
        integrated_time="2026-11-01T00:00:00Z",
        checks=(Check("deployment", "initial-deploy", "passed", nodes, "", Outcome("passed")),),
        kpis=(Kpi("install-to-gpu-ready", 900.0, "s", "<=", 1800.0, "passed", Outcome("passed")),),
        component_versions={"gpu-operator": "1.2.3"},
        raw=RAW,
        # as judged (RunStatus.judged): a failing run fails for its KPI
        outcome=Outcome(verdict, () if verdict == "pass" else ("threshold missed",)),
    )


def site() -> SiteData:
    lanes = (
        Lane("lane-36", 36, 144, "1.0.0", {"kpis": [], "scenarios": ["initial-deploy"]}),
        Lane("lane-72", 72, 288, "1.0.0", {"kpis": [], "scenarios": ["initial-deploy"]}),
    )
    profiles = (
        ScaleProfile(
            "big",
            "1.0.0",
            37,
            2304,
            "Large.",
            (),
            (OwnedValue("gpu-operator", "a.b", 3, "why <3>"),),
            ({"id": "k8s-version", "owner": "infrastructure", "expected": ">= 1.33"},),
            ("lane-36", "lane-72"),
            None,
        ),
        ScaleProfile("standard", "1.0.0", 1, 36, "As written.", (), (), (), ("lane-36",), None),
    )
    runs = (run("lane-36", 36, "a", "pass"), run("lane-72", 72, "a", "fail"))
    views = []
    for name in ("standard", "big"):
        r = result(name)
        status = (
            (LaneStatus("lane-36", 36, "pass", 1), LaneStatus("lane-72", 72, "fail", 1))
            if name == "big"
            else ()
        )
        views.append(
            ProfileView(
                profile=name,
                profile_version="1.0.0",
                source=ResultSource.held(r, {"apiVersion": "aicr.run/v1", "kind": "RecipeResult"}),
                consensus="FAILING" if name == "big" else "UNTESTED",
                ceiling="lane-36" if name == "big" else "",
                ceiling_nodes=36 if name == "big" else 0,
                lanes=status,
                last_evidence="2026-11-02" if name == "big" else "",
                downloads=(
                    Download(
                        "helm",
                        name,
                        f"downloads/demo-recipe/demo-recipe-{name}-helm.tar.gz",
                        "ef" * 32,
                        10,
                        b"0123456789",
                    ),
                ),
            )
        )
    recipe = RecipeView(
        name="demo-recipe",
        criteria=result("standard").criteria,
        health="pass",
        coverage="R:0 D:1 P:0 C:0",
        chain=("base", "eks", "demo-recipe"),
        profiles=tuple(views),
        evidence=runs,
    )
    return SiteData(
        recipes=(recipe,),
        evidence=runs,
        lanes=lanes,
        profiles=profiles,
        components=(
            ComponentUse(
                "gpu-operator",
                "gpu-operator",
                "https://charts.example.invalid",
                "1.2.3",
                ("demo-recipe",),
                "lane-36",
                "big",
            ),
        ),
        deployers=("helm",),
        generated_at="2026-01-01T00:00:00Z",
        source_date_epoch=1767225600,
        generator_version="0.1.0",
        notes=(),
        trust_root="demo",
    )


def outputs() -> dict[str, str]:
    s = site()
    generated = pages.all_pages(s, "# Contract\n\n## Why\n\nBecause.\n", cli_reference(main)[:1])
    out = {k: v for k, v in generated.items() if k != "cli.md"}
    for rel, data in {**api.api_files(s), **badges.badge_files(s)}.items():
        if not rel.startswith("api/v1/schemas/"):
            out[rel] = data.decode()
    return out


def test_generated_pages_and_json_match_the_goldens(update_goldens: bool) -> None:
    got = outputs()
    if update_goldens:
        for rel, text in got.items():
            path = GOLDEN / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    want = {
        p.relative_to(GOLDEN).as_posix(): p.read_text(encoding="utf-8")
        for p in GOLDEN.rglob("*")
        if p.is_file()
    }
    assert sorted(got) == sorted(want)
    for rel in sorted(got):
        assert got[rel] == want[rel], (
            f"{rel} differs from tests/golden/site/{rel} (--update-goldens)"
        )


def test_generation_is_a_pure_function() -> None:
    assert outputs() == outputs()


def test_html_special_characters_from_records_are_escaped() -> None:
    page = pages.recipe_page(site().recipes[0], site())
    assert "Upgrade &lt;now&gt; &amp; retry" in page and "<now>" not in page
    assert "why &lt;3&gt;" in page


def test_badge_json_carries_the_dates() -> None:
    s = site()
    record = json.loads(badges.badge_files(s)["badges/demo-recipe/big.json"])
    assert record["generatedAt"] == "2026-01-01T00:00:00Z"
    assert record["attestedAt"] == "2026-11-02T00:00:00Z"
    assert record["consensus"] == "FAILING" and record["ceilingNodes"] == 36
    assert record["sample"] is True


@pytest.mark.parametrize("name, expected", [("ok-name.1", "ok-name.1"), ("Bad/Name", None)])
def test_slug_keeps_safe_names_and_hashes_others(name: str, expected: str | None) -> None:
    got = pages.slug(name)
    if expected is not None:
        assert got == expected
    else:
        assert got.startswith("r-") and len(got) == 18 and "/" not in got


def test_front_matter_title_is_html_escaped_for_the_theme() -> None:
    import yaml

    s = site()
    hostile = replace(s.recipes[0], name='<img src=x onerror="alert(1)">')
    page = pages.recipe_page(hostile, s)
    front = yaml.safe_load(page.split("---\n", 2)[1])
    assert front["title"] == "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;"
    assert "<img src=x" not in page


def test_copies_of_one_statement_get_distinct_ids_and_anchors() -> None:
    from generator.evidence.model import FailureClass, RejectedEvidence
    from generator.evidence.view import evidence_view

    digest = "sha256:" + "12" * 32
    a, b = (
        evidence_view(
            RejectedEvidence(
                path=p, klass=FailureClass.SIGNER_NOT_ALLOWED, message="m", statement_digest=digest
            ),
            trust_root="demo",
            raw=RAW,
        )
        for p in (
            f"evidence/r/{'a' * 32}/{'12' * 32}.sigstore.json",
            f"evidence/r/{'b' * 32}/{'12' * 32}.sigstore.json",
        )
    )
    assert a.id != b.id and a.id.startswith("1212121212121212-") and a.short == "121212121212"
    unreadable = evidence_view(
        RejectedEvidence(
            path="evidence/r/x/y.sigstore.json", klass=FailureClass.MALFORMED_BUNDLE, message="m"
        ),
        trust_root="demo",
    )
    assert unreadable.id.startswith("file-")


def test_a_linked_evidence_file_is_not_published(tmp_path: Path) -> None:
    from generator.site.stages import _stays_inside

    evidence = tmp_path / "evidence"
    (evidence / "r" / "s").mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    (evidence / "r" / "s" / "ok.sigstore.json").write_text("{}")
    (evidence / "r" / "s" / "leak.sigstore.json").symlink_to(secret)
    inside = evidence.resolve()
    assert _stays_inside(evidence / "r" / "s" / "ok.sigstore.json", inside)
    assert not _stays_inside(evidence / "r" / "s" / "leak.sigstore.json", inside)
    assert not _stays_inside(evidence / "r" / "s" / "missing.sigstore.json", inside)


# --- the qualification summary, chart text ----------------------------------------------------


def test_summary_says_how_far_by_whom_when_and_what_next() -> None:
    from generator.site.summary import summaries

    s = site()
    r = s.recipes[0]
    sums = summaries(r, {p.name: p for p in s.profiles}, s.lanes)
    big = sums["big"]
    assert big.qualified and big.text.startswith("SAMPLE evidence, qualifies nothing: ")
    assert "Qualified up to 36 nodes on profile big (37–2,304 nodes) by 1 signer, Lab a, " in (
        big.text
    )
    assert "first-party" in big.text and "latest counted run 2026-11-02" in big.text
    assert "second independent signer" in big.text
    assert "next rung: lane-72 (72 nodes) is failing" in big.text
    assert [(x.label, x.cls) for x in big.signers] == [("Lab a", "first-party")]
    std = sums["standard"]
    assert not std.qualified and std.text.startswith("Not qualified on profile standard")
    assert "first rung: lane-36 (36 nodes) needs a passing run" in std.text
    # the API publishes the same text for the same row
    index = api.recipes_index(s)
    published = {p["name"]: p["summary"] for p in index["recipes"][0]["profiles"]}
    assert published["big"]["text"] == big.text and published["standard"]["text"] == std.text


def test_summary_counts_signers_by_allowlist_entry_and_proposed_thresholds() -> None:
    from generator.site.summary import summarise

    s = site()
    r = s.recipes[0]
    lanes = (
        replace(
            s.lanes[0],
            raw={
                "kpis": [
                    {"id": "k1", "status": "proposed"},
                    {"id": "k2", "status": "adopted"},
                ]
            },
        ),
        replace(s.lanes[1], raw={"kpis": [{"id": "k1", "status": "proposed"}]}),
    )
    # two runs of one allowlist entry (two identities) and one of another, all passing lane-36
    runs = (
        replace(r.evidence[0], signer_identity="x@a", signer_label="Lab a"),
        replace(r.evidence[0], id="r2", signer_identity="y@a", signer_label="Lab a"),
        replace(r.evidence[0], id="r3", signer_label="Lab b", signer_class="partner"),
    )
    recipe = replace(r, evidence=runs)
    big = next(p for p in recipe.profiles if p.profile == "big")
    out = summarise(recipe, big, s.profiles[0], lanes)
    assert [x.label for x in out.signers] == ["Lab a", "Lab b"]
    assert "by 2 independent signers: Lab a, first-party; Lab b, partner" in out.text
    assert out.proposed == 1 and "1 threshold still proposed" in out.text


def test_proposed_thresholds_read_once_per_ladder_are_the_reference() -> None:
    """`_proposed` reads each lane's KPIs once for a ladder (the same tuple) and counts what
    its reference, reading them on every call, counts; another ladder is read again."""
    from generator.site.summary import _proposed, _proposed_reference

    s = site()
    kpis = (
        [{"id": "k1", "status": "proposed"}, {"id": "k2", "status": "adopted"}],
        [{"id": "k1", "status": "proposed"}, {"id": "k3", "status": "proposed"}, "odd"],
    )
    lanes = tuple(replace(ln, raw={"kpis": k}) for ln, k in zip(s.lanes, kpis, strict=False))
    other = (replace(lanes[0], raw={"kpis": [{"id": "k9", "status": "proposed"}]}), *lanes[1:])
    names = [ln.name for ln in lanes]
    for ladder in (lanes, other, lanes):
        for wanted in ([], names[:1], names[1:], names, ["none"]):
            assert _proposed(ladder, wanted) == _proposed_reference(ladder, wanted)
    assert _proposed(lanes, names) == 2 and _proposed(other, names[:1]) == 1


def test_kpi_chart_text_from_evidence_is_escaped_for_plotly() -> None:
    from generator.site.charts import kpi_figures

    s = site()
    r = s.recipes[0]
    link = '<a href="https://x">OFFICIAL RESULTS</a>'
    run0 = replace(
        r.evidence[0],
        observed_nodes=36,
        kpis=(Kpi(link, 1.0, "<b>s</b>", "<=", 2.0, "passed"),),
    )
    figures = kpi_figures(replace(r, evidence=(run0,)))
    assert len(figures) == 1
    kpi_id, figure, _caption = figures[0]
    assert kpi_id == link  # the caption is HTML-escaped by the page, the figure by us

    def strings(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, dict):
            return [x for v in node.values() for x in strings(v)]
        if isinstance(node, list):
            return [x for v in node for x in strings(v)]
        return []

    texts = strings(figure)
    assert any("OFFICIAL RESULTS" in t for t in texts)
    assert not any("<a" in t or "<b>s" in t for t in texts), texts
    assert figure["layout"]["title"]["text"].startswith("&lt;a href=")
    assert "lower is better" in figure["layout"]["title"]["text"]
    html = str(pages.recipe_page(replace(r, evidence=(run0,)), s))
    assert '<a href="https://x">' not in html


def test_changelog_lists_new_recipes_from_git_history_and_evidence(tmp_path: Path) -> None:
    import os
    import subprocess

    from generator.site import changelog, stages

    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_AUTHOR_DATE": "2026-10-05T12:00:00Z",
        "GIT_COMMITTER_DATE": "2026-10-05T12:00:00Z",
    }
    (tmp_path / "overlays").mkdir()
    (tmp_path / "overlays" / "demo-recipe.yaml").write_text("kind: RecipeMetadata\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "add"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, env=env)
    from generator.site.audit import head_commit

    head = head_commit(tmp_path)
    assert len(head) == 40
    added = stages.recipes_added(tmp_path, {"demo-recipe": "overlays/demo-recipe.yaml"}, head)
    assert added == (("demo-recipe", "2026-10-05"),)
    assert stages.recipes_added(tmp_path, {"demo-recipe": "overlays/demo-recipe.yaml"}, "") == ()
    assert stages.recipes_added(tmp_path / "overlays" / "missing", {}, head) == ()
    s = replace(site(), recipes_added=added)
    kinds = {(e.kind, e.date[:10]) for e in changelog.entries(s)}
    assert ("recipe", "2026-10-05") in kinds and any(k == "evidence" for k, _ in kinds)
    assert ("ceiling", "2026-11-01") in kinds
    feed = changelog.atom(s, "https://example.invalid/cat")
    assert b"<title>new recipe: demo-recipe</title>" in feed
    assert b'<link href="https://example.invalid/cat/recipes/demo-recipe.html"/>' in feed
    assert changelog.atom(s) == changelog.atom(s)
    # made once for a site (the page and the feed ask in turn), as the reference makes them
    first = changelog.entries(s)
    first.clear()  # each caller has its own list
    assert changelog.entries(s) == changelog.entries_reference(s) != []
    other = replace(s, recipes_added=())
    assert changelog.entries(other) == changelog.entries_reference(other) != changelog.entries(s)
    # the newest n, made from the n newest runs' entries alone, are the reference's first n
    for site_ in (s, other):
        every = changelog.entries_reference(site_)
        for n in (0, 1, 2, 3, len(every) - 1, len(every), changelog.FEED_ENTRIES):
            assert changelog.newest(site_, n) == (every[:n], len(every)), n


def test_a_run_page_title_is_escaped_when_stamped_into_the_built_page() -> None:
    """A run's page is the engine's build of the stamp page with its title put in: the title
    (from evidence data) arrives HTML-escaped, and a stamp without the placeholder is an error."""
    from generator.core.errors import SiteError
    from generator.site import islands

    s = site()
    run = replace(s.evidence[0], recipe='<img src=x onerror="alert(1)">')
    skeleton, blocks = islands.lift(pages.run_page(run, s, None))
    title = pages.stamped_title(skeleton)
    assert title == "Run 240000000000 of &lt;img src=x onerror=&#34;alert(1)&#34;&gt;"
    assert len(blocks) == 1 and "# " not in skeleton.split("---", 2)[2]  # its h1 is the title's
    built = f"<title>{islands.STAMP_TITLE} - x</title><h1>{islands.STAMP_TITLE}</h1>"
    page = islands.stamp(built + islands.placeholder(0), title, "evidence/runs/x.html")
    page = islands.sink(page, blocks, "evidence/runs/x.html")
    assert "<img" not in page and page.count(title) == 2 and 'class="aicr-run"' in page
    with pytest.raises(SiteError, match="no title placeholder"):
        islands.stamp("<title>x</title>", title, "evidence/runs/x.html")
    stamp = islands.lift(pages.run_stamp_page())[0]
    assert pages.stamped_title(stamp) == "Evidence runs"


def test_a_re_signed_evidence_file_is_added_by_the_commit_that_renamed_it(tmp_path: Path) -> None:
    """Re-signing gives a run file a new name and nearly the same bytes: git's rename detection
    calls that a rename, never an addition, so its run page said "not in the catalog's git
    history" for the evidence a fresh clone of this repository holds."""
    import os
    import subprocess

    from generator.site.audit import evidence_added, head_commit

    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }

    def git(*args: str, date: str) -> None:
        dated = {**env, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, env=dated)

    run_dir = tmp_path / "evidence" / "r"
    run_dir.mkdir(parents=True)
    body = "".join(f'{{"line": {i}, "text": "the same signed bytes"}}\n' for i in range(200))
    (run_dir / "old.sigstore.json").write_text(body + "signature one\n")
    git("init", "-q", date="2026-10-01T00:00:00Z")
    git("add", ".", date="2026-10-01T00:00:00Z")
    git("commit", "-q", "-m", "first", date="2026-10-01T00:00:00Z")
    (run_dir / "old.sigstore.json").unlink()
    (run_dir / "new.sigstore.json").write_text(body + "signature two\n")
    git("add", "-A", date="2026-10-05T00:00:00Z")
    git("commit", "-q", "-m", "re-signed", date="2026-10-05T00:00:00Z")
    head = head_commit(tmp_path / "evidence")
    added = evidence_added(tmp_path / "evidence", head)
    assert added["evidence/r/new.sigstore.json"] == (head, "2026-10-05")


@functools.cache
def _site_once() -> SiteData:
    return site()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z"]),
            st.integers(0, 30),
        ),
        max_size=40,
        unique_by=lambda t: t[1],
    ),
    st.integers(0, 45),
)
def test_the_newest_changes_are_the_references_first(dated: list[tuple[str, int]], n: int) -> None:
    """`changelog.newest` (the entries of the n newest runs alone, with the ceilings and
    recipes) is the reference's first n, however the runs' dates tie, and counts them all."""
    from generator.site import changelog

    s = _site_once()
    run0 = s.evidence[0]
    runs = tuple(replace(run0, id=f"{i:04d}-r", attested_at=d) for d, i in dated)
    s = replace(s, evidence=runs, recipes_added=(("demo-recipe", "2026-11-01"),))
    every = changelog.entries_reference(s)
    assert changelog.newest(s, n) == (every[:n], len(every))
