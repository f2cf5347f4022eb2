"""Issue 30 in a real browser (Debian's Chromium through Playwright, the session's built site and
server, as tests/test_browser.py): one judged verdict on rendered pages, the menu at every
width, charts that cannot reach an external service, the contributor path on a phone.
"""

# ruff: noqa: F811  (pytest fixtures imported from the other browser and site tests)
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.site.apifiles import published_runs
from tests.test_browser import SLURM, Watched, server, tab  # noqa: F401
from tests.test_site import built_site, site_inputs  # noqa: F401

pytestmark = pytest.mark.browser

KUBEFLOW = "gb200-eks-ubuntu-training-kubeflow"
# what charts.js allows in a chart's mode bar, by the titles plotly gives the buttons
MODEBAR_TITLES = {"Download plot as a PNG", "Zoom", "Pan", "Zoom in", "Zoom out", "Reset axes"}


@pytest.fixture
def phone(browser: object, server: str) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 390, "height": 844})  # type: ignore[attr-defined]
    page = context.new_page()
    w = Watched(page, server)
    page.on("pageerror", lambda e: w.errors.append(str(e)))
    page.on("request", lambda r: r.url.startswith(server) or w.outside.append(r.url))
    yield w
    context.close()


def test_kpi_rows_read_as_judged_with_their_cause(tab: Watched, built_site: Path) -> None:
    """Item 1: a KPI inside its threshold measured on too few nodes reads "failed" *and* why,
    as the API's judged record says, in the rendered row a reader sees."""
    runs = [
        r
        for r in published_runs(built_site)
        if r["recipe"] == KUBEFLOW and "coverage short" in r["outcome"]["causes"]
    ]
    assert runs
    run = runs[0]
    # the old anchor still leads to the run, whose detail is on its own page (`url`)
    tab.page.goto(tab.base + f"evidence/{KUBEFLOW}.html#run-{run['id']}")  # type: ignore[attr-defined]
    tab.page.click(f"#run-{run['id']} a[href$='runs/{run['id']}.html']")  # type: ignore[attr-defined]
    tab.page.wait_for_url("**/" + run["url"])  # type: ignore[attr-defined]
    for k in run["kpis"]:
        row = tab.page.locator(  # type: ignore[attr-defined]
            f"#run-{run['id']} div[aria-label^='KPIs'] tbody tr", has_text=k["id"]
        ).first
        judged = row.locator(".aicr-outcome")
        assert judged.get_attribute("data-outcome") == k["outcome"]["status"]
        text = row.inner_text()
        for cause in k["outcome"]["causes"]:
            assert cause in text, (k["id"], text)
    summary = tab.page.locator(f"#heading-{run['id']} ~ dl").first.inner_text()  # type: ignore[attr-defined]
    assert re.search(r"Judged outcome\s+fail\s+coverage short", summary), summary
    assert tab.errors == [] and tab.outside == []


def test_menu_reaches_docs_and_contributing_on_a_phone_from_every_kind_of_page(
    phone: Watched, built_site: Path
) -> None:
    """Item 3: below 1220 px the menu drawer holds the whole navigation on every page,
    including the generated ones that hide the sidebar on wide screens."""
    pages = [
        "index.html",
        f"recipes/{SLURM}.html",
        f"evidence/{SLURM}.html",
        "evidence/index.html",
        "components.html",
        "changelog.html",
        "compare.html",
        "legend.html",
    ]
    for rel in pages:
        phone.page.goto(phone.base + rel)  # type: ignore[attr-defined]
        phone.page.locator("label.md-header__button[for='__drawer']").click()  # type: ignore[attr-defined]
        link = phone.page.locator(  # type: ignore[attr-defined]
            ".md-sidebar--primary a.md-nav__link[href$='contributing.html']"
        )
        link.first.wait_for(state="visible", timeout=5000)
        assert link.first.is_visible(), rel
    menu = phone.page.locator(  # type: ignore[attr-defined]
        ".md-sidebar--primary a.md-nav__link[href$='contributing.html']"
    )
    menu.first.click()
    phone.page.wait_for_url("**/contributing.html")  # type: ignore[attr-defined]
    assert phone.errors == [] and phone.outside == []


def test_every_page_has_the_whole_navigation_in_its_menu(built_site: Path) -> None:
    """Item 3, every page: no page renders its navigation sidebar `hidden` (the theme's way,
    which emptied the phone menu on 82 of 98 pages), and each lists the contributing guide."""
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) > 50
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if 'data-md-type="navigation"' not in text:  # 404 and redirects: no navigation
            continue
        nav = re.search(r'<div class="md-sidebar md-sidebar--primary[^"]*"[^>]*>', text)
        assert nav is not None, page
        assert "hidden" not in nav.group(0), page
        assert re.search(r'href="[^"]*contributing\.html"', text), page


def test_generated_pages_keep_their_width_on_wide_screens(tab: Watched) -> None:
    tab.page.goto(tab.base + f"recipes/{SLURM}.html")  # type: ignore[attr-defined]
    assert not tab.page.locator(".md-sidebar--primary").is_visible()  # type: ignore[attr-defined]
    tab.page.goto(tab.base + "contributing.html")  # type: ignore[attr-defined]
    assert tab.page.locator(".md-sidebar--primary").is_visible()  # type: ignore[attr-defined]


def test_chart_mode_bar_holds_only_the_allowed_buttons(tab: Watched) -> None:
    """Item 4: the mode bar of every drawn chart offers exactly the allowlisted, local buttons;
    nothing that shares, uploads or edits the chart elsewhere."""
    tab.page.goto(tab.base + f"recipes/{SLURM}.html")  # type: ignore[attr-defined]
    charts = tab.page.locator("div[data-chart]")  # type: ignore[attr-defined]
    assert charts.count() >= 2
    for i in range(charts.count()):
        charts.nth(i).scroll_into_view_if_needed()
    tab.page.wait_for_function(  # type: ignore[attr-defined]
        "() => [...document.querySelectorAll('div[data-chart]')].every(d => d.querySelector('.main-svg'))"
    )
    # per chart: its buttons (a chart narrower than 600 px has no mode bar at all)
    per_chart = tab.page.eval_on_selector_all(  # type: ignore[attr-defined]
        "div[data-chart]",
        "ds => ds.map(d => [...d.querySelectorAll('.modebar-btn')].map(b => b.dataset.title))",
    )
    with_bar = [set(titles) for titles in per_chart if titles]
    assert with_bar, "no chart shows a mode bar: nothing was tested"
    assert all(titles == MODEBAR_TITLES for titles in with_bar), with_bar
    text = tab.page.eval_on_selector_all(  # type: ignore[attr-defined]
        "div[data-chart] .modebar", "ms => ms.map(m => m.outerHTML).join(' ')"
    )
    assert not re.search(r"share|cloud|studio|plotly\.com", text, re.I)
    assert tab.errors == [] and tab.outside == []


def test_contributor_reaches_signers_and_submission_steps_from_home_on_a_phone(
    phone: Watched,
) -> None:
    """Item 5: home → menu → Signers (the allowlist as a directory) → how to submit evidence,
    whose steps are numbered 1 to 5 with the signing options inside step 4."""
    phone.page.goto(phone.base)  # type: ignore[attr-defined]
    phone.page.locator("label.md-header__button[for='__drawer']").click()  # type: ignore[attr-defined]
    phone.page.locator(".md-sidebar--primary a.md-nav__link[href$='signers.html']").first.click()  # type: ignore[attr-defined]
    phone.page.wait_for_url("**/signers.html")  # type: ignore[attr-defined]
    entries = phone.page.locator("section.aicr-signer-entry h2")  # type: ignore[attr-defined]
    assert entries.count() >= 2
    assert "first-party" in entries.first.inner_text()
    phone.page.locator("article a[href$='contributing.html#submitting-evidence']").first.click()  # type: ignore[attr-defined]
    phone.page.wait_for_url("**/contributing.html#submitting-evidence")  # type: ignore[attr-defined]
    steps = phone.page.locator("#submitting-evidence ~ ol").first.locator(":scope > li")  # type: ignore[attr-defined]
    assert steps.count() == 5
    assert steps.nth(3).locator("ul > li").count() == 2  # sign in CI, or locally
    assert steps.nth(4).inner_text().startswith("aicr-catalog evidence verify")
    width = phone.page.evaluate("document.documentElement.scrollWidth")  # type: ignore[attr-defined]
    assert width <= 390
    assert phone.errors == [] and phone.outside == []


def test_pages_without_evidence_lead_to_contributing(built_site: Path) -> None:
    index = json.loads((built_site / "api/v1/recipes.json").read_text(encoding="utf-8"))
    empty = [r["name"] for r in index["recipes"] if r["evidence"] == 0]
    assert empty
    for name in empty:
        for kind in ("recipes", "evidence"):
            text = (built_site / kind / f"{name}.html").read_text(encoding="utf-8")
            assert 'href="../contributing.html#submitting-evidence"' in text, (kind, name)
            assert 'href="../signers.html"' in text, (kind, name)
