"""The site stage: pages, JSON API, badges, charts, determinism, failure handling, escaping.

One site is built per test session (`built_site`) from a copy of the repository's catalog and
sample evidence (demo trust root), with a script-injection string planted in one recipe.
"""

from __future__ import annotations

import hashlib
import html.parser
import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import jsonschema
import plotly.graph_objects as go
import pytest
import referencing
from click.testing import CliRunner

from generator.cli import main
from generator.commands.build import cli_reference
from generator.core.errors import CatalogError, SiteError
from generator.core.outputs import MARKER
from generator.site import charts, islands
from generator.site.apifiles import published_runs
from generator.site.build import BuildOptions, build_site
from generator.site.jinja import md_inline, script_json, url_part
from generator.site.outdir import build_lock
from tests.conftest import CATALOG, REPO, shared_dir_once

EPOCH = 1767225600  # 2026-01-01T00:00:00Z
INJECTED_RECIPE = "h100-aks-ubuntu-training-kubeflow"
SCRIPT = "<script>window.__pwned=1</script>"
IMG = '"><img src=x onerror="window.__pwned=2">'
CHECK = "'><img src=y onerror=window.__pwned=3>"
SCHEMAS = REPO / "catalog" / "schemas" / "api"


@dataclass(frozen=True)
class Inputs:
    catalog: Path
    evidence: Path
    docs: Path


def plant_injection(catalog: Path) -> None:
    """Add a constraint and a check whose text tries to break out of HTML and attributes."""
    path = catalog / "overlays" / f"{INJECTED_RECIPE}.yaml"
    text = path.read_text()
    text = text.replace(
        "        - kubeflow-trainjob-smoke\n",
        f"        - kubeflow-trainjob-smoke\n        - {json.dumps(CHECK)}\n",
    )
    text += (
        "  constraints:\n"
        "    - name: K8s.server.version\n"
        '      value: ">= 1.30"\n'
        f"      remediation: {json.dumps(SCRIPT + IMG)}\n"
    )
    path.write_text(text)


def _copy_inputs(root: Path) -> None:
    shutil.copytree(CATALOG, root / "catalog")
    if (REPO / "evidence").is_dir():
        shutil.copytree(REPO / "evidence", root / "evidence")
    else:
        (root / "evidence").mkdir()
    shutil.copytree(REPO / "docs", root / "docs")
    plant_injection(root / "catalog")


@pytest.fixture(scope="session")
def site_inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    """One copy per test run, shared by the xdist workers (tests copy it before changing it)."""
    root = shared_dir_once(tmp_path_factory, "site-inputs", _copy_inputs)
    return Inputs(root / "catalog", root / "evidence", root / "docs")


def options(inputs: Inputs, out: Path, **kw: object) -> BuildOptions:
    given: dict[str, object] = {
        "catalog": inputs.catalog,
        "evidence": inputs.evidence,
        "docs": inputs.docs,
        "out": out,
        "trust_root": "demo",
        "source_date_epoch": EPOCH,
        "cli_reference": cli_reference(main),
    }
    return BuildOptions(**{**given, **kw})  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def built_site(site_inputs: Inputs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once per test run, shared read-only by the xdist workers (tests/conftest.py)."""
    built = shared_dir_once(
        tmp_path_factory, "built-site", lambda d: build_site(options(site_inputs, d / "site"))
    )
    return built / "site"


def tree_digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def load(site: Path, rel: str) -> dict:
    return json.loads((site / rel).read_text(encoding="utf-8"))


def registry() -> referencing.Registry:
    resources = []
    for p in SCHEMAS.glob("*.schema.json"):
        schema = json.loads(p.read_text())
        resources.append((schema["$id"], referencing.Resource.from_contents(schema)))
    return referencing.Registry().with_resources(resources)


def validate(instance: object, schema_file: str) -> None:
    schema = json.loads((SCHEMAS / schema_file).read_text())
    jsonschema.Draft202012Validator(schema, registry=registry()).validate(instance)


# --- the one Jinja environment's filters --------------------------------------------------------


def test_md_filter_escapes_html_and_markdown() -> None:
    assert str(md_inline("<b>*x*</b> [a](b)")) == ("&lt;b&gt;\\*x\\*&lt;/b&gt; \\[a\\]\\(b\\)")


def test_script_json_cannot_close_its_element() -> None:
    text = str(script_json({"k": "</script><!-- & \u2028 '"}))
    assert "<" not in text and ">" not in text and "&" not in text and "'" not in text
    assert json.loads(text) == {"k": "</script><!-- & \u2028 '"}


def test_url_part_encodes_every_reserved_character() -> None:
    assert url_part('a/b?c#d"e') == "a%2Fb%3Fc%23d%22e"


# --- charts ------------------------------------------------------------------------------------


def test_heatmap_is_a_valid_plotly_figure_with_stable_id() -> None:
    from generator.site.model import LaneView as Lane

    lanes = (Lane("lane-36", 36, 144, "1.0.0", {}), Lane("lane-72", 72, 288, "1.0.0", {}))
    fig = charts.verdict_heatmap([("r @ p", ["pass", "fail"])], lanes, "t")
    go.Figure(fig)  # raises on an invalid property
    assert fig["data"][0]["z"] == [[5, 4]]
    assert charts.chart_id("My Recipe", "ladder") == "chart-my-recipe-ladder"
    html = str(charts.chart_html("chart-x", fig, "<cap>"))
    assert html.count("<template>") == 1 and "&lt;cap&gt;" in html


# --- the built site ----------------------------------------------------------------------------


def test_every_api_file_matches_its_published_schema(built_site: Path) -> None:
    api = built_site / "api" / "v1"
    validate(load(built_site, "api/v1/recipes.json"), "recipes.schema.json")
    validate(load(built_site, "api/v1/lanes.json"), "lanes.schema.json")
    validate(load(built_site, "api/v1/profiles.json"), "profiles.schema.json")
    details = sorted((api / "recipes").glob("*.json"))
    assert len(details) == len(load(built_site, "api/v1/recipes.json")["recipes"])
    for p in details:
        validate(json.loads(p.read_text()), "recipe.schema.json")
    index = load(built_site, "api/v1/evidence/index.json")
    validate(index, "recipe-evidence-index.schema.json")
    per_recipe = sorted(p for p in (api / "evidence").glob("*.json") if p.name != "index.json")
    paths = [e["path"] for e in index["recipes"]]
    assert sorted(paths) == [p.relative_to(built_site).as_posix() for p in per_recipe]
    ids = []
    for entry in index["recipes"]:
        data = (built_site / entry["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        doc = json.loads(data)
        validate(doc, "recipe-evidence.schema.json")
        assert doc["recipe"] == entry["recipe"] and doc["runs"] == len(doc["evidence"])
        ids += [run["id"] for run in doc["evidence"]]
    # the per-recipe files hold every run the site shows (a page each, beside the runs' index)
    pages = {p.stem for p in (built_site / "evidence" / "runs").glob("*.html")} - {"index"}
    assert len(ids) == len(set(ids)) == index["runs"] and set(ids) == pages
    assert not (api / "evidence.json").exists()  # retired (issue 29, docs/api.md)
    published = {p.name for p in (api / "schemas").iterdir()}
    assert {f.name for f in SCHEMAS.glob("*.schema.json")} == published


def test_every_leaf_has_a_page_and_a_row_per_profile(built_site: Path) -> None:
    index = load(built_site, "api/v1/recipes.json")
    names = [r["name"] for r in index["recipes"]]
    assert names == sorted(names) and "gb300-eks-ubuntu-training-slurm" in names
    for r in index["recipes"]:
        assert (built_site / r["url"]).is_file()
        assert (built_site / r["evidenceUrl"]).is_file()
        assert r["profiles"][0]["name"] == "standard"
    slurm = next(r for r in index["recipes"] if r["name"] == "gb300-eks-ubuntu-training-slurm")
    assert [p["name"] for p in slurm["profiles"]] == ["standard", "nvl72-2304"]


def test_status_shown_is_the_status_stage_result(built_site: Path, site_inputs: Inputs) -> None:
    """Consensus, ceiling and lane verdicts on the site are exactly what `aggregate` computes."""
    from generator.aggregate import aggregate
    from generator.catalog.load import load_catalog
    from generator.catalog.resolve import profile_applies, resolve
    from generator.evidence.model import digest_key
    from generator.evidence.stage import verify_stage
    from generator.scale.qualify import parse_lanes

    # computed here stage by stage, apart from the pipeline the build runs
    catalog, _ = load_catalog(site_inputs.catalog)
    results = [
        resolve(catalog, leaf, profile=p.name)
        for leaf in catalog.leaves()
        for p in sorted(catalog.profiles.values(), key=lambda p: p.name)
        if profile_applies(p, catalog.overlays[leaf].criteria)
    ]
    run = verify_stage(
        [site_inputs.evidence],
        catalog_dir=site_inputs.catalog,
        trust_roots=("demo",),
        current={digest_key(r.name, r.scale_profile): r.digest for r in results},
        base=site_inputs.evidence.parent,
    )
    assert run.records, "the repository's sample evidence is missing"
    status = aggregate(
        results,
        run.records,
        parse_lanes(catalog.documents["scale/lanes.yaml"]),
        {n: p.ladder for n, p in catalog.profiles.items()},
        demo=True,
    )
    expected = {
        (row.recipe, row.profile): (row.consensus, row.ceiling_lane, int(row.ceiling_nodes))
        for row in status.recipes
    }
    shown = {
        (r["name"], p["name"]): (p["consensus"], p["ceiling"], p["ceilingNodes"])
        for r in load(built_site, "api/v1/recipes.json")["recipes"]
        for p in r["profiles"]
    }
    assert shown == expected
    counted = {e.path for e in run.records if getattr(e, "counted", False)}
    published = list(published_runs(built_site))
    assert {e["repositoryPath"] for e in published} == {e.path for e in run.records}
    assert {e["repositoryPath"] for e in published if e["counted"]} <= counted


# the sample banner's title as a page writes it (its dash an entity: `jinja.EM_DASH`)
BANNER = "Sample evidence &mdash; not a real qualification"


def test_run_pages_are_ascii(built_site: Path) -> None:
    """Every run's page is ASCII text when its run's own text is (the sample runs' is): the
    dash the generated HTML writes is an entity (`jinja.EM_DASH`), so the page is a one-byte-
    per-character string while it is rendered, held and finished (at 1,000 x 20,000 a cold
    build's peak, PSS over its processes, fell from 1,668 to 1,421 MB with it)."""
    pages = sorted((built_site / "evidence" / "runs").glob("*.html"))
    assert len(pages) > 10
    assert [p.name for p in pages if not p.read_text(encoding="utf-8").isascii()] == []


def test_sample_evidence_is_marked_sample_wherever_shown(built_site: Path) -> None:
    runs = list(published_runs(built_site))
    sample = [e for e in runs if e["sample"]]
    assert sample, "the repository's sample evidence is missing"
    assert load(built_site, "api/v1/recipes.json")["sample"] is True
    index_page = (built_site / "evidence" / "index.html").read_text()
    chip = 'title="sample evidence: demo data, qualifies nothing">SAMPLE<'
    assert index_page.count(chip) == len({e["recipe"] for e in sample})  # a row per recipe
    for recipe in {e["recipe"] for e in sample}:
        page = (built_site / "evidence" / f"{recipe}.html").read_text()
        assert BANNER in page
        for e in sample:
            if e["recipe"] == recipe:  # its row on the recipe's evidence page, then its page
                row = page.split(f'<tr id="run-{e["id"]}">', 1)[1].split("</tr>", 1)[0]
                assert chip in row
                run_page = (built_site / e["url"]).read_text()
                assert BANNER in run_page
                section = run_page.split(f'id="run-{e["id"]}"', 1)[1].split("</section>", 1)[0]
                assert chip in section and "demo root (sample)" in section
    # badges (embedded elsewhere, without the page around them) and the components page too
    for r in load(built_site, "api/v1/recipes.json")["recipes"]:
        for p in r["profiles"]:
            svg = (built_site / p["badge"]).read_text()
            assert ("SAMPLE" in svg) is p["summary"]["sample"], p["badge"]
    components = (built_site / "components.html").read_text()
    assert BANNER in components and chip in components


def test_recipe_without_evidence_is_untested(built_site: Path) -> None:
    detail = load(built_site, f"api/v1/recipes/{INJECTED_RECIPE}.json")
    assert detail["evidence"] == []
    assert {p["consensus"] for p in detail["profiles"]} == {"UNTESTED"}
    assert all(p["ceiling"] is None for p in detail["profiles"])


def test_public_good_root_counts_no_sample_evidence(site_inputs: Inputs, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(
        BuildOptions(
            catalog=site_inputs.catalog,
            evidence=site_inputs.evidence,
            out=out,
            trust_root="public-good",
            source_date_epoch=EPOCH,
            bundles=False,
        )
    )
    index = load(out, "api/v1/recipes.json")
    assert {p["consensus"] for r in index["recipes"] for p in r["profiles"]} == {"UNTESTED"}
    runs = list(published_runs(out))
    assert runs and all(not e["counted"] for e in runs)
    scale = (out / "scale.html").read_text()
    assert '<span class="aicr-chip aicr-untested">UNTESTED</span> None of the' in scale
    assert "data-chart" not in scale and "plotly.min.js" not in scale


def test_downloads_exist_with_the_published_sha256(built_site: Path) -> None:
    detail = load(built_site, "api/v1/recipes/gb300-eks-ubuntu-training-slurm.json")
    downloads = [d for p in detail["profiles"] for d in p["downloads"]]
    assert {(d["deployer"]) for d in downloads} == {"helm", "helmfile", "argocd", "flux"}
    assert len(downloads) == 8
    page = (built_site / "recipes" / "gb300-eks-ubuntu-training-slurm.html").read_text()
    for d in downloads:
        data = (built_site / d["url"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == d["sha256"] and len(data) == d["size"]
        assert d["sha256"] in page


def test_badges_agree_with_the_api(built_site: Path) -> None:
    index = load(built_site, "api/v1/recipes.json")
    for r in index["recipes"]:
        for p in r["profiles"]:
            svg = built_site / p["badge"]
            root = ET.fromstring(svg.read_bytes())
            assert root.tag.endswith("svg") and p["consensus"] in root.attrib["aria-label"]
            sidecar = json.loads(svg.with_suffix(".json").read_text())
            validate(sidecar, "badge.schema.json")
            assert sidecar["consensus"] == p["consensus"]
            assert sidecar["generatedAt"] == index["generatedAt"] == "2026-01-01T00:00:00Z"


class _Refs(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.refs.append((tag, name, value))


def html_refs(site: Path) -> Iterator[tuple[Path, str, str, str]]:
    for page in sorted(site.rglob("*.html")):
        parser = _Refs()
        parser.feed(page.read_text(encoding="utf-8"))
        for tag, attr, value in parser.refs:
            yield page, tag, attr, value


def test_internal_links_resolve_and_no_asset_is_external(built_site: Path) -> None:
    broken, external = [], []
    for page, tag, _attr, value in html_refs(built_site):
        parts = urlsplit(value)
        if parts.scheme in ("http", "https") or value.startswith("//"):
            if tag != "a":
                external.append((page.name, value))
            continue
        if parts.scheme or not parts.path:
            continue
        base = built_site if parts.path.startswith("/") else page.parent  # 404.html: absolute
        target = (base / unquote(parts.path.lstrip("/"))).resolve()
        if not target.exists():
            broken.append((page.relative_to(built_site).as_posix(), value))
    assert external == []
    assert broken == [], broken[:10]


def test_plotly_is_loaded_only_on_pages_with_charts(built_site: Path) -> None:
    assert (built_site / "assets" / "plotly.min.js").stat().st_size > 1_000_000
    # charts.js is the only script a chart page adds; it loads plotly (named by data-plotly)
    # when a chart comes into view, never as a <script> of the page itself
    with_plotly = {
        p.relative_to(built_site).as_posix()
        for p in built_site.rglob("*.html")
        if re.search(
            r'<script src="[^"]*charts\.js" data-plotly="[^"]*plotly\.min\.js"', p.read_text()
        )
    }
    assert not any(
        re.search(r'<script src="[^"]*plotly\.min\.js"', p.read_text())
        for p in built_site.rglob("*.html")
    )
    with_charts = {
        p.relative_to(built_site).as_posix()
        for p in built_site.rglob("*.html")
        if "data-chart" in p.read_text()
    }
    assert with_plotly == with_charts
    assert "recipes/gb300-eks-ubuntu-training-slurm.html" in with_charts
    assert "index.html" not in with_plotly and "scale.html" in with_charts
    page = (built_site / "recipes" / "gb300-eks-ubuntu-training-slurm.html").read_text()
    assert 'id="chart-gb300-eks-ubuntu-training-slurm-ladder"' in page


def test_planted_injection_is_escaped_text_everywhere(built_site: Path) -> None:
    page = (built_site / "recipes" / f"{INJECTED_RECIPE}.html").read_text()
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=" in page and "&lt;img src=y onerror=" in page
    for p in built_site.rglob("*.html"):
        text = p.read_text()
        assert "<script>window.__pwned" not in text, p
        assert not re.search(r"<img[^>]*onerror", text), p
    detail = load(built_site, f"api/v1/recipes/{INJECTED_RECIPE}.json")
    assert SCRIPT + IMG in strings(detail)  # the JSON keeps the text as it was written


def strings(obj: object) -> set[str]:
    if isinstance(obj, dict):
        return set().union(*(strings(v) for v in obj.values())) if obj else set()
    if isinstance(obj, list):
        return set().union(*(strings(v) for v in obj)) if obj else set()
    return {obj} if isinstance(obj, str) else set()


def test_cli_reference_is_generated_from_the_cli(built_site: Path) -> None:
    page = (built_site / "cli.html").read_text()
    paths = [c.path for c in cli_reference(main)]
    assert "aicr-catalog evidence verify" in paths and "aicr-catalog build" in paths
    for name in main.list_commands(None):  # type: ignore[arg-type]
        assert f"aicr-catalog {name}" in paths
    for path in paths:
        assert f">{path}</h2>" in page or f">{path}<a" in page, path
    assert "Build the static site into OUT" in page


def test_scale_page_has_ladder_heatmap_prerequisites_and_contract(
    built_site: Path, site_inputs: Inputs
) -> None:
    page = (built_site / "scale.html").read_text()
    assert 'id="chart-scale-heatmap"' in page
    for lane in load(built_site, "api/v1/lanes.json")["lanes"]:
        assert f'id="lane-{lane["name"]}"' in page
    assert 'id="owner-infrastructure"' in page
    assert "&lt;span" not in page and "&amp;lt;" not in page and "&amp;#" not in page
    contract = site_inputs.docs / "scale-contract.md"
    if contract.is_file():
        first = next(
            line
            for line in contract.read_text().splitlines()[1:]
            if line.strip() and line[0].isalpha()
        )
        assert html_text_contains(page, re.sub(r"[*_`]", "", first)[:40])
    else:
        assert "is not in this build" in page


def html_text_contains(page: str, text: str) -> bool:
    plain = re.sub(r"<[^>]+>", "", page)
    import html as html_mod

    return text in html_mod.unescape(plain).replace("\n", " ") or text in html_mod.unescape(plain)


def test_two_builds_are_byte_identical(site_inputs: Inputs, tmp_path: Path) -> None:
    # both builds made here, in this worker: the shared `built_site` may come from the other
    # xdist worker, whose earlier tests are not this one's
    once, again = tmp_path / "once", tmp_path / "again"
    build_site(options(site_inputs, once))
    build_site(options(site_inputs, again, cache_dir=tmp_path / "cache"))  # through the cache
    from generator.core.cache import Cache
    from generator.render.cache import ARCHIVE_STAGE

    stored = Cache(tmp_path).keys(ARCHIVE_STAGE)  # the build cache beside `cache_dir`
    assert len(stored) == len(list(again.rglob("*.tar.gz"))) > 0
    first, second = tree_digests(once), tree_digests(again)
    assert first.keys() == second.keys()
    assert [k for k in first if first[k] != second[k]] == []


def test_broken_recipe_fails_with_located_error_and_keeps_previous_site(
    site_inputs: Inputs, tmp_path: Path
) -> None:
    catalog = tmp_path / "catalog"
    shutil.copytree(site_inputs.catalog, catalog)
    leaf = catalog / "overlays" / "gb300-eks-ubuntu-training-slurm.yaml"
    leaf.write_text(re.sub(r"base: \S+", "base: no-such-overlay", leaf.read_text(), count=1))
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("previous site")
    (out / MARKER).write_text("site\n")  # a previous build's output (generator/core/outputs.py)
    result = CliRunner().invoke(
        main,
        [
            "build",
            "--catalog",
            str(catalog),
            "--evidence",
            str(site_inputs.evidence),
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 1, result.output
    assert re.search(
        r"overlays/gb300-eks-ubuntu-training-slurm\.yaml:\d+:\d+: \$\.spec\.base: .*no-such-overlay",
        result.stderr,
    ), result.stderr
    assert "left unchanged" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "index.html"]
    assert (out / "index.html").read_text() == "previous site"


def test_a_second_concurrent_build_is_refused(site_inputs: Inputs, tmp_path: Path) -> None:
    out = tmp_path / "site"
    with build_lock(out.resolve()), pytest.raises(SiteError, match="another build"):
        build_site(options(site_inputs, out, bundles=False))
    assert not out.exists()


def test_serve_refuses_a_missing_site(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["serve", "--dir", str(tmp_path / "none")])
    assert result.exit_code == 2
    assert "run `aicr-catalog build` first" in result.stderr


def test_printed_bundle_command_reproduces_the_download(
    built_site: Path, site_inputs: Inputs, tmp_path: Path
) -> None:
    import html as html_mod
    import shlex

    page = html_mod.unescape(
        (built_site / "recipes" / "gb300-eks-ubuntu-training-slurm.html").read_text()
    )
    line = next(
        ln
        for ln in page.splitlines()
        if ln.startswith("SOURCE_DATE_EPOCH=")  # the Reproduce block (the table cells too)
        and "aicr-catalog bundle" in ln
        and "nvl72-2304" in ln
        and "--deployer helm " in ln
    )
    env_part, _, command = line.partition(" aicr-catalog ")
    assert env_part == f"SOURCE_DATE_EPOCH={EPOCH}"
    args = shlex.split(command)
    out = tmp_path / "out"
    args[args.index("-o") + 1] = str(out)
    result = CliRunner().invoke(
        main, [*args, "--catalog", str(site_inputs.catalog)], env={"SOURCE_DATE_EPOCH": str(EPOCH)}
    )
    assert result.exit_code == 0, result.output
    (archive,) = out.glob("*.tar.gz")
    detail = load(built_site, "api/v1/recipes/gb300-eks-ubuntu-training-slurm.json")
    published = {
        d["url"].rsplit("/", 1)[-1]: d["sha256"] for p in detail["profiles"] for d in p["downloads"]
    }
    assert hashlib.sha256(archive.read_bytes()).hexdigest() == published[archive.name]


def test_search_index_holds_pages_not_data(built_site: Path) -> None:
    index = json.loads((built_site / "search" / "search_index.json").read_text())
    locations = {d["location"].split("#", 1)[0] for d in index["docs"]}
    assert f"recipes/{INJECTED_RECIPE}.html" in locations and "cli.html" in locations
    assert not any(
        loc.startswith("evidence/") and loc != "evidence/index.html" for loc in locations
    )
    text = json.dumps(index)
    detail = load(built_site, "api/v1/recipes/gb300-eks-ubuntu-training-slurm.json")
    assert detail["profiles"][0]["downloads"][0]["sha256"] not in text  # tables stay out


def test_data_blocks_are_back_in_place_in_every_page(built_site: Path) -> None:
    """The tables lifted out of the Markdown (generator.site.islands) are in the built pages,
    inside the article, and no placeholder is left anywhere."""
    for page in built_site.rglob("*.html"):
        assert "aicr:island" not in page.read_text(encoding="utf-8"), page
    recipe = (built_site / "recipes" / "gb300-eks-ubuntu-training-slurm.html").read_text()
    article = recipe[recipe.index("<article") : recipe.index("</article>")]
    detail = load(built_site, "api/v1/recipes/gb300-eks-ubuntu-training-slurm.json")
    assert detail["profiles"][0]["downloads"][0]["sha256"] in article
    order = [article.index(f'id="{h}"') for h in ("scale-profiles-and-status", "components")]
    assert order[0] < article.index("Consensus and scale ceiling") < order[1]
    runs = (built_site / "evidence" / "index.html").read_text()
    assert runs.count('<tr><td><a href="../evidence/') >= 1
    for page in (built_site / "evidence" / "runs").glob("*.html"):  # stamped: title and block
        text = page.read_text(encoding="utf-8")
        assert islands.STAMP_TITLE not in text and text.count('class="aicr-run"') == (
            page.name != "index.html"
        )


def test_serve_serves_the_built_site_on_loopback(built_site: Path) -> None:
    import subprocess
    import sys
    import urllib.request

    proc = subprocess.Popen(
        [sys.executable, "-m", "generator.cli", "serve", "--dir", str(built_site), "--port", "0"],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line
        with urllib.request.urlopen(f"http://127.0.0.1:{match.group(1)}/index.html") as resp:
            assert resp.read() == (built_site / "index.html").read_bytes()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


def test_api_documentation_names_every_published_schema() -> None:
    doc = (REPO / "docs" / "api.md").read_text()
    for schema in sorted(SCHEMAS.glob("*.schema.json")):
        assert f"`{schema.name}`" in doc, schema.name


def test_health_and_coverage_match_the_list_command(built_site: Path, site_inputs: Inputs) -> None:
    result = CliRunner().invoke(
        main, ["list", "--catalog", str(site_inputs.catalog), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    listed = {
        r["name"]: (r["health"], r["coverageText"]) for r in json.loads(result.stdout)["recipes"]
    }
    shown = {
        r["name"]: (r["health"], r["coverage"])
        for r in load(built_site, "api/v1/recipes.json")["recipes"]
    }
    assert shown == listed


def test_a_strict_mkdocs_warning_fails_the_build_and_keeps_the_site(
    site_inputs: Inputs, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(site_inputs.docs, docs)
    (docs / "releasing.md").write_text("# Releasing\n\nSee [the guide](no-such-page.md).\n")
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("previous site")
    (out / MARKER).write_text("site\n")  # a previous build's output (generator/core/outputs.py)
    with pytest.raises(SiteError) as info:
        build_site(options(site_inputs, out, docs=docs, bundles=False))
    text = info.value.diagnostics_text()
    assert re.search(r"^docs/releasing\.md: \$: .*no-such-page\.md", text, re.M), text
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "index.html"]
    assert not list(tmp_path.glob(".site-build-*"))  # the temporary tree is gone too


def test_the_built_site_is_marked_and_recognised_as_a_site(built_site: Path) -> None:
    """The mark is what lets the next build replace this directory (generator/core/outputs.py)."""
    from generator.core.outputs import OutputKind, check_output_dir, marked_kind

    assert marked_kind(built_site) is OutputKind.SITE
    check_output_dir(built_site, OutputKind.SITE)  # a rebuild may replace it
    with pytest.raises(CatalogError, match="site output"):
        check_output_dir(built_site, OutputKind.BUNDLE)  # a bundle may not


def test_the_bundles_are_rendered_before_the_evidence_is_verified(
    site_inputs: Inputs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundles depend on the catalog alone: the build renders them between the pipeline's
    catalog stage and its evidence stages (`pipeline.run`'s `after_catalog`), so their workers
    fork from a small process, not from one holding every verification record (a cold build's
    process tree peaked at 2,289 MB PSS when they forked after verification). A catalog that
    does not validate stops the build before either."""
    import generator.pipeline as pipeline
    import generator.site.build as site_build

    order: list[str] = []
    real_verify, real_render = pipeline.verify, site_build.render_step
    monkeypatch.setattr(
        pipeline, "verify", lambda *a, **k: order.append("verify") or real_verify(*a, **k)
    )
    monkeypatch.setattr(
        site_build, "render_step", lambda *a, **k: order.append("render") or real_render(*a, **k)
    )
    build_site(options(site_inputs, tmp_path / "site"))
    assert order == ["render", "verify"]

    order.clear()
    catalog = tmp_path / "catalog"
    shutil.copytree(site_inputs.catalog, catalog)
    leaf = catalog / "overlays" / "gb300-eks-ubuntu-training-slurm.yaml"
    leaf.write_text(re.sub(r"base: \S+", "base: no-such-overlay", leaf.read_text(), count=1))
    broken = Inputs(catalog, site_inputs.evidence, site_inputs.docs)
    with pytest.raises(CatalogError, match="the catalog has 1 problem"):
        build_site(options(broken, tmp_path / "broken"))
    assert order == []
