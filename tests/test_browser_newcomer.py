"""Issue 19 in a real browser: a newcomer's question answered from the dashboard, the legend,
the node-count finder, and one test per defect that would have caught it.

Same built site and server as tests/test_browser.py (Debian's Chromium through Playwright).
"""

# ruff: noqa: F811  (pytest fixtures imported from the other browser and site tests)
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.site.apifiles import published_runs
from tests.test_browser import SLURM, Watched, open_dashboard, server, tab, table_rows  # noqa: F401
from tests.test_site import built_site, site_inputs  # noqa: F401

pytestmark = pytest.mark.browser
DCL_TARGET_S = 2.0  # issue 19 item 6, under throttling (make bench)


@dataclass(frozen=True, slots=True)
class Load:
    """One page's load: bytes moved before the first interaction, best DOMContentLoaded (s)."""

    path: str
    moved: int
    dcl: float


def _summary(page: object, key: str) -> str:
    return page.eval_on_selector(  # type: ignore[attr-defined,no-any-return]
        f'#aicr-table tbody tr[data-key="{key}"] td.aicr-sum', "td => td.textContent"
    )


def test_newcomer_answers_the_2304_node_question_in_three_interactions(
    tab: Watched,
    built_site: Path,
) -> None:
    """ "Which recipe for my GB300 EKS Slurm training cluster of 2,304 nodes; is it qualified,
    by whom, with what evidence?" — from the dashboard, reading the row's summary sentence."""
    interactions = 0
    open_dashboard(tab)
    tab.page.fill("#aicr-q", "gb300 eks slurm training")  # type: ignore[attr-defined]
    interactions += 1
    tab.page.fill("#aicr-nodes", "2304")  # type: ignore[attr-defined]
    tab.page.press("#aicr-nodes", "Enter")  # type: ignore[attr-defined]
    interactions += 1
    assert table_rows(tab.page) == [(SLURM, "nvl72-2304")]
    finder = tab.page.inner_text("#aicr-finder-msg")  # type: ignore[attr-defined]
    assert "2,304 nodes is inside the band of scale profile nvl72-2304 (36–2,304 nodes)" in finder
    text = _summary(tab.page, f"{SLURM}@nvl72-2304")
    # is it qualified, how far, by whom (label and class), when
    assert "Qualified up to 2,304 nodes on profile nvl72-2304" in text
    assert "2 independent signers" in text and "first-party" in text and "partner" in text
    assert "latest counted run 2026-" in text and text.startswith("SAMPLE evidence")
    index = json.loads((built_site / "api" / "v1" / "recipes.json").read_text())
    api_text = next(
        p["summary"]["text"]
        for r in index["recipes"]
        if r["name"] == SLURM
        for p in r["profiles"]
        if p["name"] == "nvl72-2304"
    )
    assert text.startswith(api_text)  # the row says what the API says
    # with what evidence: one click to the runs, each with its signer
    tab.page.click(f'#aicr-table tbody tr[data-key="{SLURM}@nvl72-2304"] td.aicr-sum a')  # type: ignore[attr-defined]
    interactions += 1
    tab.page.wait_for_url(f"**/evidence/{SLURM}.html")  # type: ignore[attr-defined]
    signers = tab.page.eval_on_selector_all(  # type: ignore[attr-defined]
        "table .aicr-signer", "s => s.map(x => x.textContent)"
    )
    assert any("partner" in s for s in signers) and any("first-party" in s for s in signers)
    assert interactions <= 3
    assert tab.errors == [] and tab.outside == []


def test_node_finder_says_which_profile_and_why_and_never_selects_silently(
    tab: Watched,
) -> None:
    open_dashboard(tab)
    tab.page.fill("#aicr-nodes", "5000")  # type: ignore[attr-defined]
    tab.page.press("#aicr-nodes", "Enter")  # type: ignore[attr-defined]
    msg = tab.page.inner_text("#aicr-finder-msg")  # type: ignore[attr-defined]
    assert "No scale profile covers 5,000 nodes" in msg and "unchanged" in msg
    assert tab.page.input_value("#aicr-f-profile") == ""  # type: ignore[attr-defined]
    tab.page.fill("#aicr-nodes", "20")  # type: ignore[attr-defined]
    tab.page.press("#aicr-nodes", "Enter")  # type: ignore[attr-defined]
    msg = tab.page.inner_text("#aicr-finder-msg")  # type: ignore[attr-defined]
    assert "20 nodes is inside the band of scale profile standard (1–36 nodes)" in msg
    assert "filtered to profile standard" in msg
    assert tab.page.input_value("#aicr-f-profile") == "standard"  # type: ignore[attr-defined]
    assert {p for _, p in table_rows(tab.page)} == {"standard"}
    assert "nodes=20" in tab.page.url and "profile=standard" in tab.page.url  # type: ignore[attr-defined]
    # changed by hand afterwards: the message says the filter no longer follows the count
    tab.page.select_option("#aicr-f-profile", "nvl72-2304")  # type: ignore[attr-defined]
    msg = tab.page.inner_text("#aicr-finder-msg")  # type: ignore[attr-defined]
    assert "by hand" in msg and "not to standard" in msg
    assert tab.errors == []


def test_every_status_chip_leads_to_its_legend_entry(tab: Watched) -> None:
    open_dashboard(tab)
    panel = tab.page.locator("#how-to-read")  # type: ignore[attr-defined]
    assert panel.count() == 1 and "CONFIRMED" in (panel.text_content() or "")
    chips = tab.page.eval_on_selector_all(  # type: ignore[attr-defined]
        "#aicr-table .aicr-chip", "cs => cs.map(c => c.getAttribute('href'))"
    )
    assert chips and all(h and h.startswith("legend.html#") for h in chips)
    tab.page.click(  # type: ignore[attr-defined]
        "#aicr-table tbody tr td .aicr-chip.aicr-confirmed >> nth=0"
    )
    tab.page.wait_for_url("**/legend.html#consensus-confirmed")  # type: ignore[attr-defined]
    entry = tab.page.locator("#consensus-confirmed")  # type: ignore[attr-defined]
    assert entry.is_visible() and "two independent signers" in entry.inner_text()
    # every chip on a recipe page and an evidence page has an entry to land on
    for path in (f"recipes/{SLURM}.html", f"evidence/{SLURM}.html"):
        tab.page.goto(tab.base + path)  # type: ignore[attr-defined]
        hrefs = set(
            tab.page.eval_on_selector_all(  # type: ignore[attr-defined]
                "a.aicr-chip", "cs => cs.map(c => c.getAttribute('href'))"
            )
        )
        assert hrefs
        tab.page.goto(tab.base + "legend.html")  # type: ignore[attr-defined]
        missing = [
            h
            for h in hrefs
            if not tab.page.locator("#" + h.split("#", 1)[1]).count()  # type: ignore[attr-defined]
        ]
        assert missing == [], (path, missing)


def test_no_dead_show_more_button(tab: Watched) -> None:
    """The theme's .md-button display overrode [hidden]: "Show 0 more of 0" was on screen."""
    open_dashboard(tab)
    assert not tab.page.is_visible("#aicr-more")  # type: ignore[attr-defined]
    assert "0 more" not in tab.page.inner_text("article")  # type: ignore[attr-defined]


def test_empty_state_names_the_filter_to_relax_and_keeps_zero_count_options(
    tab: Watched,
) -> None:
    tab.page.goto(tab.base + "index.html?accelerator=gb300&platform=dynamo&consensus=CONFIRMED")  # type: ignore[attr-defined]
    tab.page.wait_for_selector("#aicr-empty:not([hidden])")  # type: ignore[attr-defined]
    text = tab.page.inner_text("#aicr-empty")  # type: ignore[attr-defined]
    assert "No recipe × profile row matches" in text
    assert "set Consensus back to all" in text and "without “CONFIRMED”" in text
    options = tab.page.eval_on_selector(  # type: ignore[attr-defined]
        "#aicr-f-platform", "s => Array.from(s.options).map(o => o.textContent)"
    )
    assert any(o.startswith("kubeflow (") for o in options)  # other values stay listed
    # a URL value no recipe has says so
    tab.page.goto(tab.base + "index.html?accelerator=zz9")  # type: ignore[attr-defined]
    tab.page.wait_for_selector("#aicr-empty:not([hidden])")  # type: ignore[attr-defined]
    assert "Not a value of any recipe: Accelerator “zz9”" in tab.page.inner_text("#aicr-empty")  # type: ignore[attr-defined]
    assert tab.errors == []


def test_search_matches_every_field_several_words_any_case(
    tab: Watched,
    built_site: Path,
) -> None:
    index = json.loads((built_site / "api" / "v1" / "recipes.json").read_text())
    warn = {
        (r["name"], p["name"])
        for r in index["recipes"]
        if r["health"] == "warn"
        for p in r["profiles"]
    }
    assert warn
    open_dashboard(tab, "?search=PRE-RELEASE+Grove")  # a health reason, in another case
    assert set(table_rows(tab.page)) == warn
    tab.page.fill("#aicr-q", "partner confirmed")  # type: ignore[attr-defined]
    rows = table_rows(tab.page)
    assert rows and (SLURM, "nvl72-2304") in rows
    tab.page.fill("#aicr-q", f"recipes/{SLURM}.html standard")  # type: ignore[attr-defined]
    assert table_rows(tab.page) == [(SLURM, "standard")]
    assert "search=" in tab.page.url  # type: ignore[attr-defined]
    tab.page.reload()  # type: ignore[attr-defined]
    tab.page.wait_for_selector("#aicr-table tbody tr")  # type: ignore[attr-defined]
    assert table_rows(tab.page) == [(SLURM, "standard")]


def test_warn_health_is_explained_on_the_row_and_the_recipe_page(tab: Watched) -> None:
    name = "gb300-eks-ubuntu-inference-dynamo"
    open_dashboard(tab, "?health=warn")
    cell = tab.page.inner_text(f'#aicr-table tbody tr[data-key="{name}@standard"] td:nth-child(4)')  # type: ignore[attr-defined]
    assert "warn" in cell and "pre-release" in cell
    tab.page.goto(tab.base + f"recipes/{name}.html")  # type: ignore[attr-defined]
    assert "pre-release" in tab.page.inner_text(".aicr-health")  # type: ignore[attr-defined]


def test_consensus_sorts_by_strength_and_empty_values_sort_last(tab: Watched) -> None:
    open_dashboard(tab)
    tab.page.click("#aicr-table th button[data-sort=consensus]")  # type: ignore[attr-defined]
    seen = tab.page.eval_on_selector_all(  # type: ignore[attr-defined]
        "#aicr-table tbody tr td:nth-child(5) .aicr-chip:not(.aicr-sample)",
        "cs => cs.map(c => c.textContent)",
    )
    order = ["CONFIRMED", "SINGLE", "PARTIAL", "UNTESTED", "CONTESTED", "FAILING"]
    ranks = [order.index(c) for c in seen]
    assert ranks == sorted(ranks) and seen[0] == "CONFIRMED"
    for direction in ("asc", "desc"):
        open_dashboard(tab, f"?sort=last&dir={direction}")
        last = tab.page.eval_on_selector_all(  # type: ignore[attr-defined]
            "#aicr-table tbody tr td:nth-child(8)", "cs => cs.map(c => c.textContent)"
        )
        dated = [x for x in last if x != "—"]
        assert dated and last[: len(dated)] == dated, direction  # every "—" after every date


def test_recipe_page_opens_on_its_summary(tab: Watched) -> None:
    tab.page.goto(tab.base + f"recipes/{SLURM}.html")  # type: ignore[attr-defined]
    box = tab.page.locator("#summary-nvl72-2304").bounding_box()  # type: ignore[attr-defined]
    assert box is not None and box["y"] + box["height"] <= 900  # in the first screen
    text = tab.page.inner_text("#summary-nvl72-2304")  # type: ignore[attr-defined]
    assert "Qualified up to 2,304 nodes" in text and "SAMPLE" in text
    # the status table starts with what matters on a phone: consensus before the digest
    heads = tab.page.eval_on_selector_all(  # type: ignore[attr-defined]
        "table:has(#profile-standard) thead th",
        "hs => hs.map(h => h.textContent)",
    )
    assert heads.index("Consensus") < heads.index("Recipe digest")


def test_stale_run_digest_is_never_called_current(tab: Watched, built_site: Path) -> None:
    runs = list(published_runs(built_site))
    stale = [e for e in runs if e["state"] == "stale" and e["recipe"] == SLURM]
    assert stale
    for e in stale:  # each run's detail is on its own page
        tab.page.goto(tab.base + e["url"])  # type: ignore[attr-defined]
        section = tab.page.inner_text(f"#run-{e['id']}")  # type: ignore[attr-defined]
        assert "not the current digest" in section and "Current recipe digest" in section
        assert "the current digest of" not in section
    verified = [e for e in runs if e["state"] == "verified" and e["recipe"] == SLURM]
    tab.page.goto(tab.base + verified[0]["url"])  # type: ignore[attr-defined]
    section = tab.page.inner_text(f"#run-{verified[0]['id']}")  # type: ignore[attr-defined]
    assert "the current digest of" in section
    assert "not any download of this site" in section or "download of this site" in section


def test_kpi_charts_are_one_per_kpi_with_a_threshold_line(tab: Watched) -> None:
    tab.page.goto(tab.base + f"recipes/{SLURM}.html")  # type: ignore[attr-defined]
    charts = tab.page.locator(".aicr-kpi-grid div[data-chart]")  # type: ignore[attr-defined]
    n = charts.count()
    assert n >= 5
    first = charts.nth(0)
    first.scroll_into_view_if_needed()
    tab.page.wait_for_selector(".aicr-kpi-grid div[data-chart] .main-svg")  # type: ignore[attr-defined]
    traces = first.evaluate("d => d.data.map(t => [t.name, t.mode])")
    assert traces == [["threshold", "lines"], ["value", "markers"]]
    title = first.evaluate("d => d.layout.title.text")
    assert "is better" in title
    assert tab.errors == [] and tab.outside == []


def test_markup_in_a_kpi_id_is_drawn_as_text_by_plotly(tab: Watched) -> None:
    """Issue 16 item 7: a signed KPI id `<a href=…>OFFICIAL RESULTS</a>` became a live link in
    the chart (the CSP stops scripts, not links). Draw the figure the site makes for it with
    the site's own plotly and look for the link."""
    from dataclasses import replace

    from generator.evidence.view import KpiRow as Kpi
    from generator.site.charts import kpi_figures
    from generator.site.jinja import script_json
    from tests.test_site_pages import site

    s = site()
    r = s.recipes[0]
    link = '<a href="https://x">OFFICIAL RESULTS</a>'
    run0 = replace(r.evidence[0], kpis=(Kpi(link, 1.0, "s", "<=", 2.0, "passed"),))
    (_, figure, _), *_ = kpi_figures(replace(r, evidence=(run0,)))
    tab.page.goto(tab.base + "legend.html")  # type: ignore[attr-defined]
    tab.page.add_script_tag(url=tab.base + "assets/plotly.min.js")  # type: ignore[attr-defined]
    tab.page.evaluate(  # type: ignore[attr-defined]
        "f => { const d = document.createElement('div'); d.id = 'probe';"
        " document.body.prepend(d); return Plotly.newPlot(d, f.data, f.layout); }",
        json.loads(str(script_json(figure))),
    )
    svg = tab.page.locator("#probe .main-svg")  # type: ignore[attr-defined]
    assert svg.count() >= 1
    # no link drawn from the text (the mode bar's own buttons are <a> elements outside the SVG)
    assert tab.page.locator("#probe svg a").count() == 0  # type: ignore[attr-defined]
    assert tab.page.locator('#probe a[href="https://x"]').count() == 0  # type: ignore[attr-defined]
    title = tab.page.text_content("#probe .gtitle") or ""  # type: ignore[attr-defined]
    assert '<a href="https://x">OFFICIAL RESULTS</a>' in title


# the pages of issue 19 item 6, and the largest run page (tests/test_page_budget.py holds every
# page to its DOM budget, counted from the built HTML)
WEIGHED = ("index.html", f"recipes/{SLURM}.html", f"evidence/{SLURM}.html", "scale.html")


def _largest_run_page(built_site: Path) -> str:
    runs = sorted((built_site / "evidence" / "runs").glob("*.html"), key=lambda p: p.stat().st_size)
    return runs[-1].relative_to(built_site).as_posix()


def _loads(browser: object, server: str, paths: Sequence[str], throttle: bool) -> list[Load]:
    """Each page loaded three times with the cache off: the most bytes any load moved before the
    first interaction (load, then 500 ms), and the best DOMContentLoaded (as a benchmark reports
    it: the machine is shared). `throttle`: 40 ms latency, 9 Mbit/s and a 4x slower CPU."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    if throttle:
        conditions = {"offline": False, "latency": 40, "downloadThroughput": 9_000_000 / 8}
        cdp.send("Network.emulateNetworkConditions", {**conditions, "uploadThroughput": 9e6 / 8})
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})  # every load moves every byte
    received: dict[str, int] = {}
    cdp.on(
        "Network.loadingFinished",
        lambda e: received.__setitem__(e["requestId"], int(e["encodedDataLength"])),
    )
    report = []
    for path in paths:
        moved, dcl = 0, float("inf")
        for _ in range(3):
            received.clear()
            page.goto(server + path, wait_until="load")
            page.wait_for_timeout(500)  # what arrives right after load, before anyone can click
            dcl = min(
                dcl,
                page.evaluate(
                    "(() => { const n = performance.getEntriesByType('navigation')[0];"
                    " return n.domContentLoadedEventEnd - n.startTime; })()"
                ),
            )
            moved = max(moved, sum(received.values()))
        report.append(Load(path, moved, dcl / 1000))
    context.close()
    return report


@pytest.mark.perf
def test_page_weight_before_the_first_interaction(
    browser: object, server: str, built_site: Path
) -> None:
    """Issue 19 item 6, its counted half: at most 1 MB moved before the first interaction on
    each page (bytes, not time: they do not depend on the machine's load). The DOMContentLoaded
    target (2 s under throttling) is measured by `make bench`:
    test_throttled_dom_content_loaded_bench below."""
    report = _loads(browser, server, (*WEIGHED, _largest_run_page(built_site)), throttle=False)
    for load in report:
        print(f"\n{load.path}: {load.moved / 1e6:.2f} MB before the first interaction")
    for load in report:
        assert load.moved <= 1_000_000, load


@pytest.mark.bench
def test_throttled_dom_content_loaded_bench(browser: object, server: str, built_site: Path) -> None:
    """Issue 19 item 6, its wall-clock half (`make bench`): DOMContentLoaded under 40 ms
    latency, 9 Mbit/s and a 4x slower CPU, reported against the 2 s target. A wall-clock figure
    on a shared machine, so reported (met or not) rather than asserted, as bench targets are
    (tests/test_bench_build.py)."""
    report = _loads(browser, server, (*WEIGHED, _largest_run_page(built_site)), throttle=True)
    for load in report:
        met = "met" if load.dcl <= DCL_TARGET_S else "MISSED"
        print(
            f"\n{load.path}: DOMContentLoaded {load.dcl:.2f} s under throttling "
            f"(target {DCL_TARGET_S:.0f} s: {met}), {load.moved / 1e6:.2f} MB moved"
        )
    assert len(report) == len(WEIGHED) + 1 and all(0 < x.dcl < float("inf") for x in report)


def test_cli_reference_is_filled_by_the_real_build(
    browser: object,
    site_inputs: object,
    tmp_path: Path,
) -> None:
    """`make site` runs `aicr-catalog build`: its CLI reference page must hold every command's
    help (the build used to get none; the tests injected them)."""
    inputs = site_inputs
    out = tmp_path / "site"
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(
            main,
            [
                "build",
                "--catalog",
                str(inputs.catalog),  # type: ignore[attr-defined]
                "--evidence",
                str(inputs.evidence),  # type: ignore[attr-defined]
                "--trust-root",
                "demo",
                "--no-bundles",
                "-o",
                str(out),
            ],
        )
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    context = browser.new_context()  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto((out / "cli.html").as_uri())
    headings = page.eval_on_selector_all("article h2", "hs => hs.map(h => h.textContent)")
    assert "aicr-catalog build" in headings and len(headings) >= 10, headings
    assert "not given the CLI's help texts" not in page.inner_text("article")
    assert "--trust-root" in page.inner_text("article")
    context.close()


def test_404_works_under_a_sub_path_and_the_sitemap_lists_pages(
    browser: object,
    site_inputs: object,
    tmp_path: Path,
) -> None:
    """GitHub Pages serves a project site under /<repo>/ and answers every missing path with
    404.html: its stylesheets and scripts must load at any depth, and the sitemap is not empty."""
    import functools
    import http.server
    import threading

    from generator.site.build import build_site
    from tests.test_site import options

    out = tmp_path / "site"

    class Pages(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def send_head(self):  # type: ignore[no-untyped-def]
            if not self.path.startswith("/sub/"):
                self.send_error(404)
                return None
            self.path = self.path[len("/sub") :]
            target = Path(self.translate_path(self.path))
            if target.is_file() or (target / "index.html").is_file():
                return super().send_head()
            body = (out / "404.html").read_bytes()
            self.send_response(404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            import io

            return io.BytesIO(body)

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Pages, directory=str(out))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/sub/"
    try:
        build_site(options(site_inputs, out, site_url=url, bundles=False))  # type: ignore[arg-type]
        sitemap = (out / "sitemap.xml").read_text()
        assert sitemap.count("<loc>") >= 10 and f"<loc>{url}index.html</loc>" in sitemap
        context = browser.new_context()  # type: ignore[attr-defined]
        page = context.new_page()
        failed: list[str] = []
        page.on("response", lambda r: r.status >= 400 and failed.append(r.url))
        response = page.goto(url + "no/such/deep/page.html")
        assert response is not None and response.status == 404
        page.wait_for_load_state("networkidle")
        assert failed == [url + "no/such/deep/page.html"], failed  # every asset loaded
        assert page.evaluate("getComputedStyle(document.querySelector('.md-header')).position") in (
            "sticky",
            "fixed",
        )
        home = page.get_attribute("a.md-header__button.md-logo", "href") or ""
        assert home.startswith("/sub/") or home.startswith(url), home
        context.close()
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_every_address_in_evidence_json_resolves_on_the_site(
    tab: Watched,
    built_site: Path,
) -> None:
    """`path` used to sit next to `raw` and 404 on the site: it is `repositoryPath` now (where
    the file is in the repository), and every site address in the file answers."""
    runs = list(published_runs(built_site))
    assert runs and all(
        "path" not in e and e["repositoryPath"].startswith("evidence/") for e in runs
    )
    for e in runs[:5] + runs[-3:]:
        for address in (e["raw"], e["url"].split("#", 1)[0]):
            if address:
                response = tab.page.request.get(tab.base + address)  # type: ignore[attr-defined]
                assert response.ok, address


def test_commands_have_copy_buttons_and_every_page_says_source_install_and_date(
    tab: Watched,
) -> None:
    tab.page.context.grant_permissions(["clipboard-read", "clipboard-write"])  # type: ignore[attr-defined]
    tab.page.goto(tab.base + f"recipes/{SLURM}.html")  # type: ignore[attr-defined]
    # the reproduce block (the page's last block is the badge embed snippet)
    pre = tab.page.locator("pre:has(code)").filter(has_text="# standard: resolve")  # type: ignore[attr-defined]
    button = pre.locator("button.aicr-copy")
    assert button.count() == 1
    button.click()
    copied = tab.page.evaluate("navigator.clipboard.readText()")  # type: ignore[attr-defined]
    assert copied.startswith("# standard: resolve") and "aicr-catalog status" in copied
    assert "Copy" not in copied
    for path in ("index.html", f"recipes/{SLURM}.html", f"evidence/{SLURM}.html", "cli.html"):
        tab.page.goto(tab.base + path)  # type: ignore[attr-defined]
        meta = tab.page.inner_text(".aicr-meta")  # type: ignore[attr-defined]
        assert "Catalog as of 20" in meta and "Install the CLI" in meta, path
        assert tab.page.locator(".aicr-meta code.aicr-cmd + button.aicr-copy").count() == 1  # type: ignore[attr-defined]
    tab.page.goto(tab.base + f"evidence/{SLURM}.html")  # type: ignore[attr-defined]
    assert "evidence last changed 2026-" in tab.page.inner_text(".aicr-updated")  # type: ignore[attr-defined]
    assert tab.errors == [] and tab.outside == []


def test_changelog_page_and_atom_feed(tab: Watched, built_site: Path) -> None:
    import xml.etree.ElementTree as ET

    feed = ET.fromstring((built_site / "changelog.xml").read_bytes())
    ns = {"a": "http://www.w3.org/2005/Atom"}
    entries = feed.findall("a:entry", ns)
    titles = [e.findtext("a:title", namespaces=ns) or "" for e in entries]
    assert any(t.startswith("SAMPLE ceiling: " + SLURM + " × nvl72-2304") for t in titles)
    assert any("evidence:" in t and "stale" in t for t in titles)
    dates = [e.findtext("a:updated", namespaces=ns) or "" for e in entries]
    assert dates == sorted(dates, reverse=True)
    asked: list[str] = []
    tab.page.on("request", lambda r: asked.append(r.url))  # type: ignore[attr-defined]
    tab.page.goto(tab.base + "index.html", wait_until="load")  # type: ignore[attr-defined]
    tab.page.wait_for_timeout(500)  # type: ignore[attr-defined]
    # feed readers find the feed (rel holds the token "alternate"); the theme, which fetches
    # sitemap.xml for every link whose rel is exactly "alternate", does not (no request, no 404)
    href = tab.page.get_attribute('link[rel~=alternate][type="application/atom+xml"]', "href")  # type: ignore[attr-defined]
    assert href and tab.page.request.get(tab.base + href).ok  # type: ignore[attr-defined]
    assert not [u for u in asked if u.endswith("sitemap.xml")], asked
    tab.page.goto(tab.base + "changelog.html")  # type: ignore[attr-defined]
    first = tab.page.locator("table.aicr-t tbody tr a").first  # type: ignore[attr-defined]
    assert first.inner_text() == titles[0]
    first.click()
    tab.page.wait_for_url("**/evidence/runs/*.html")  # type: ignore[attr-defined]
    assert tab.errors == []


def test_compare_two_profiles_side_by_side(tab: Watched) -> None:
    open_dashboard(tab, f"?search={SLURM}")
    tab.page.click(f'#aicr-table tr[data-key="{SLURM}@standard"] a.aicr-rowlink')  # type: ignore[attr-defined]
    tab.page.wait_for_url("**/compare.html?a=*")  # type: ignore[attr-defined]
    tab.page.wait_for_selector("#aicr-cmp-out table")  # type: ignore[attr-defined]
    assert tab.page.input_value("#aicr-cmp-a") == f"{SLURM}@standard"  # type: ignore[attr-defined]
    tab.page.select_option("#aicr-cmp-b", f"{SLURM}@nvl72-2304")  # type: ignore[attr-defined]
    tab.page.wait_for_selector("#aicr-cmp-out th:text-is('scale ceiling')")  # type: ignore[attr-defined]
    ceiling = tab.page.eval_on_selector(  # type: ignore[attr-defined]
        "#aicr-cmp-out table:not(#aicr-cmp-changes) tr:has(th:text-is('scale ceiling'))",
        "tr => [tr.className, tr.cells[1].textContent, tr.cells[2].textContent]",
    )
    assert (
        ceiling[0] == "aicr-diff"
        and ceiling[1].startswith("lane-36")
        and ceiling[2].startswith("lane-2304")
    )
    owned = tab.page.inner_text("#aicr-cmp-out")  # type: ignore[attr-defined]
    assert "not owned" in owned  # the big profile owns values the standard one does not
    assert "b=" in tab.page.url  # type: ignore[attr-defined]
    assert tab.errors == [] and tab.outside == []


def test_csv_export_of_the_current_view(tab: Watched) -> None:
    import csv
    import io
    import warnings

    open_dashboard(tab, "?accelerator=gb300&platform=slurm")
    # The click makes the file and clicks a download link (the dashboard's part); the browser then
    # starts the download and fires the event (its part), and `path()` waits for the file to be
    # saved, with no deadline: that is disk work, which took over the 30-s default when other
    # builds loaded the machine's disk. The event is polled for 120 s. Twice in full runs under
    # load, a page-side flag set by the link's click was waited for 120 s in vain (cause not
    # found; it never failed alone or in its file under four busy loops): the test now waits for
    # the download itself, and a failure says what the page had done by then. A third time
    # (a full run on a loaded machine, 6 December) the page showed no click on the link at all:
    # the pointer's click had not reached the button (Playwright clicks at coordinates, checked
    # just before). The page now records every click's target: a click the button never got is
    # made again (at most three times, each reported); a click the button got that makes no
    # download fails the test, as it would fail a user.
    tab.page.evaluate(  # type: ignore[attr-defined]
        """() => document.addEventListener("click", e => {
             const t = e.target;
             if (t instanceof HTMLAnchorElement && t.download) window.aicrAskedDownload = t.download;
             if (t instanceof Element && t.closest("#aicr-csv")) window.aicrButtonClicked = true;
             window.aicrClicks = (window.aicrClicks || []).concat(
               t instanceof Element ? t.outerHTML.slice(0, 80) : String(t));
           }, true)"""
    )
    downloads: list[object] = []
    tab.page.on("download", lambda d: downloads.append(d))  # type: ignore[attr-defined]
    lost: list[object] = []
    for _ in range(3):
        tab.page.click("#aicr-csv")  # type: ignore[attr-defined]
        reached = tab.page.evaluate("() => window.aicrButtonClicked === true")  # type: ignore[attr-defined]
        if reached:
            break
        lost.append(tab.page.evaluate("() => window.aicrClicks || []"))  # type: ignore[attr-defined]
    assert len(lost) < 3, f"three clicks never reached the button: {lost}"
    if lost:
        warnings.warn(f"{len(lost)} click(s) never reached the CSV button: {lost}", stacklevel=1)
    for _ in range(480):  # polls of 250 ms: 120 s
        if downloads:
            break
        tab.page.wait_for_timeout(250)  # type: ignore[attr-defined]
    else:
        seen = tab.page.evaluate(  # type: ignore[attr-defined]
            """() => ({asked: window.aicrAskedDownload || null, url: location.href,
                       disabled: document.getElementById("aicr-csv").disabled,
                       clicks: window.aicrClicks || [],
                       rows: document.querySelectorAll("#aicr-table tbody tr").length})"""
        )
        pytest.fail(
            f"no download 120 s after the click; the page: {seen}; clicks lost before: {lost};"
            f" errors: {tab.errors}"
        )
    download = downloads[0]
    assert download.suggested_filename == "aicr-recipes.csv"  # type: ignore[attr-defined]
    raw = Path(download.path()).read_bytes()  # type: ignore[attr-defined]
    assert raw.startswith(b"\xef\xbb\xbf")  # UTF-8 BOM first: Excel reads the file as UTF-8
    rows = list(csv.DictReader(io.StringIO(raw[3:].decode("utf-8"))))
    assert sorted((r["name"], r["profile"]) for r in rows) == table_rows(tab.page)
    assert all(r["accelerator"] == "gb300" and r["platform"] == "slurm" for r in rows)
    assert any(r["summary"].startswith("SAMPLE evidence") for r in rows)
    # absolute links, each to the row's own pages on the site the CSV came from
    for r in rows:
        assert r["url"] == f"{tab.base}recipes/{r['name']}.html", r["url"]
        assert r["evidenceUrl"] == f"{tab.base}evidence/{r['name']}.html", r["evidenceUrl"]


def test_site_search_snippets_keep_labels_apart_from_values(tab: Watched) -> None:
    """The theme's search showed "serviceeks acceleratorgb300": labels ran into values."""
    tab.page.goto(tab.base + "legend.html")  # type: ignore[attr-defined]
    tab.page.wait_for_load_state("networkidle")  # type: ignore[attr-defined]
    tab.page.keyboard.press("/")  # type: ignore[attr-defined]  # the theme's search shortcut
    tab.page.keyboard.type(SLURM)  # type: ignore[attr-defined]
    tab.page.wait_for_selector(".md-search-result__item")  # type: ignore[attr-defined]
    text = tab.page.inner_text(".md-search-result")  # type: ignore[attr-defined]
    assert "service: eks" in text and "platform: slurm" in text, text[:300]
    assert "serviceeks" not in text
