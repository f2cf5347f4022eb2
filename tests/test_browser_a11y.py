"""Issue 30 item 7 in a real browser: what a newcomer meets on the rendered pages (compare,
keyboard, text and target sizes, the lazy search index, print, status words). Each test fails if
its defect comes back.

Same built site and server as tests/test_browser.py (Debian's Chromium through Playwright).
"""

# ruff: noqa: F811  (pytest fixtures imported from the other browser and site tests)
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_browser import SLURM, Watched, open_dashboard, server, tab  # noqa: F401
from tests.test_site import built_site, site_inputs  # noqa: F401

pytestmark = pytest.mark.browser


def _flat(v: Any, path: str, out: dict[str, str]) -> dict[str, str]:
    if isinstance(v, dict) and v:
        for k in sorted(v):
            _flat(v[k], f"{path}.{k}" if path else k, out)
    else:
        out[path] = json.dumps(v)
    return out


def _expected_changes(site: Path, left: str, right: str) -> set[str]:
    """What the compare page must list for left → right, computed from the API files."""
    refs = []
    for key in (left, right):
        name, prof = key.rsplit("@", 1)
        d = json.loads((site / "api" / "v1" / "recipes" / f"{name}.json").read_text())
        p = next(x for x in d["profiles"] if x["name"] == prof)
        refs.append({c["name"]: c for c in p["recipe"]["spec"]["componentRefs"]})
    a, b = refs
    out = set()
    for n in sorted(set(a) | set(b)):
        if n not in a or n not in b:
            out.add(n)
            continue
        if a[n].get("version") != b[n].get("version"):
            out.add(f"{n} version")
        va, vb = _flat(a[n].get("values") or {}, "", {}), _flat(b[n].get("values") or {}, "", {})
        out |= {f"{n} {k}" for k in set(va) | set(vb) if va.get(k) != vb.get(k)}
    return out


def _open_compare_from_row(tab: Watched, key: str) -> None:
    name = key.rsplit("@", 1)[0]
    open_dashboard(tab, f"?search={name}")
    tab.page.click(f'#aicr-table tr[data-key="{key}"] a.aicr-rowlink')  # type: ignore[attr-defined]
    tab.page.wait_for_url("**/compare.html?a=*")  # type: ignore[attr-defined]
    tab.page.wait_for_selector("#aicr-cmp-changes")  # type: ignore[attr-defined]


def test_compare_opens_against_the_nearest_counterpart_and_says_why(tab: Watched) -> None:
    # a recipe with two profiles: its other profile, every difference coming from the profile
    _open_compare_from_row(tab, f"{SLURM}@standard")
    assert tab.page.input_value("#aicr-cmp-b") == f"{SLURM}@nvl72-2304"  # type: ignore[attr-defined]
    why = tab.page.inner_text("#aicr-cmp-why")  # type: ignore[attr-defined]
    assert "nearest counterpart" in why and "other scale profile, nvl72-2304" in why
    # a recipe with one profile: same service, accelerator and intent, one criterion apart
    _open_compare_from_row(tab, "h100-aks-ubuntu-training-slurm@standard")
    right = tab.page.input_value("#aicr-cmp-b")  # type: ignore[attr-defined]
    assert right == "h100-aks-ubuntu-training-kubeflow@standard"
    why = tab.page.inner_text("#aicr-cmp-why")  # type: ignore[attr-defined]
    assert "same service, accelerator and intent (aks, h100, training)" in why
    assert "only in platform (slurm → kubeflow)" in why
    # a pair given by the link is kept, and the page says so
    tab.page.goto(tab.base + f"compare.html?a={SLURM}@standard&b={SLURM}@standard")  # type: ignore[attr-defined]
    tab.page.wait_for_selector("#aicr-cmp-changes")  # type: ignore[attr-defined]
    assert "as the link asked" in tab.page.inner_text("#aicr-cmp-why")  # type: ignore[attr-defined]
    assert "Nothing:" in tab.page.inner_text("#aicr-cmp-changes")  # type: ignore[attr-defined]
    # the bare page (the menu's link) never opens a row against itself: the first row with a
    # counterpart, both sides said
    tab.page.goto(tab.base + "compare.html")  # type: ignore[attr-defined]
    tab.page.wait_for_selector("#aicr-cmp-changes")  # type: ignore[attr-defined]
    left, right = (tab.page.input_value(f"#aicr-cmp-{k}") for k in "ab")  # type: ignore[attr-defined]
    why = tab.page.inner_text("#aicr-cmp-why")  # type: ignore[attr-defined]
    assert left != right and "the link named none" in why and "nearest counterpart" in why
    assert "Nothing:" not in tab.page.inner_text("#aicr-cmp-changes")  # type: ignore[attr-defined]
    assert tab.errors == [] and tab.outside == []


def test_compare_lists_every_changed_component_and_value_old_to_new(
    tab: Watched, built_site: Path
) -> None:
    left, right = f"{SLURM}@standard", f"{SLURM}@nvl72-2304"
    _open_compare_from_row(tab, left)
    rows = tab.page.eval_on_selector_all(  # type: ignore[attr-defined]
        "#aicr-cmp-changes tbody tr",
        "rs => rs.map(r => [r.cells[0].textContent, r.cells[1].textContent,"
        " (r.querySelector('.aicr-old') || {}).textContent, (r.querySelector('.aicr-new') || {}).textContent])",
    )
    shown = {r[0] for r in rows}
    expected = _expected_changes(built_site, left, right)
    assert expected and expected <= shown, sorted(expected - shown)
    assert shown - expected <= {"consensus", "scale ceiling", "node band", "health"}
    by = {r[0]: r for r in rows}
    # an owned value of the big profile, old → new, both sides named
    key = "gpu-operator driver.upgradePolicy.maxUnavailable"
    assert key in by and by[key][2] != by[key][3] and " → " in by[key][1]
    assert by["scale ceiling"][2].startswith("lane-36") and by["scale ceiling"][3] == "lane-2304"
    assert tab.errors == []


_FOCUSED = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const s = getComputedStyle(e), r = e.getBoundingClientRect();
  const x = Math.min(Math.max(r.left + r.width / 2, 0), innerWidth - 1);
  const y = Math.min(Math.max(r.top + r.height / 2, 0), innerHeight - 1);
  const hit = document.elementFromPoint(x, y);
  const ring = (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== "none";
  return {what: e.tagName + (e.id ? "#" + e.id : "") + " " + (e.textContent || "").trim().slice(0, 40),
    id: e.id, sort: !!e.closest("#aicr-table thead button"), ring,
    seen: r.width > 0 && r.height > 0 && !!hit && (hit === e || e.contains(hit) || hit.contains(e))};
}"""


def _tab_through(tab: Watched, path: str, width: int, presses: int) -> list[dict[str, Any]]:
    """Press Tab `presses` times from the top of the page; what had focus after each press."""
    tab.page.set_viewport_size({"width": width, "height": 900})  # type: ignore[attr-defined]
    tab.page.goto(tab.base + path)  # type: ignore[attr-defined]
    tab.page.wait_for_load_state("networkidle")  # type: ignore[attr-defined]
    seen: list[dict[str, Any]] = []
    for _ in range(presses):
        tab.page.keyboard.press("Tab")  # type: ignore[attr-defined]
        if seen and "md-search__input" in (seen[-1].get("cls") or ""):
            tab.page.wait_for_timeout(400)  # type: ignore[attr-defined]  # the search overlay fades out
        f = tab.page.evaluate(_FOCUSED)  # type: ignore[attr-defined]
        if f is not None:
            f["cls"] = tab.page.evaluate("document.activeElement.className")  # type: ignore[attr-defined]
            seen.append(f)
    return seen


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("path", ["index.html", f"recipes/{SLURM}.html", "running-a-lane.html"])
def test_every_focused_element_shows_a_focus_ring_and_is_visible(
    tab: Watched, path: str, width: int
) -> None:
    focused = _tab_through(tab, path, width, 45)
    assert len(focused) > 20
    no_ring = [f["what"] for f in focused if not f["ring"]]
    hidden = [f["what"] for f in focused if not f["seen"]]
    assert no_ring == [], no_ring
    assert hidden == [], hidden  # off-screen drawer links, clipped sort buttons, under the header
    if path == "index.html":
        assert any(f["id"] == "aicr-nodes" for f in focused)  # the node-count input, with its ring
        assert sum(f["sort"] for f in focused) >= 5  # the sort buttons, seen at both widths


@pytest.mark.parametrize(
    "path", [f"recipes/{SLURM}.html", "running-a-lane.html", "contributing.html"]
)
def test_every_overflowing_scroll_container_scrolls_by_keyboard(tab: Watched, path: str) -> None:
    tab.page.set_viewport_size({"width": 390, "height": 900})  # type: ignore[attr-defined]
    tab.page.goto(tab.base + path)  # type: ignore[attr-defined]
    tab.page.wait_for_load_state("load")  # type: ignore[attr-defined]
    sel = ".md-typeset pre > code, .md-typeset__scrollwrap, .aicr-table-wrap"
    boxes = tab.page.eval_on_selector_all(  # type: ignore[attr-defined]
        sel,
        "bs => bs.map((b, i) => [i, b.scrollWidth > b.clientWidth + 1, b.tabIndex,"
        " b.tagName === 'CODE' || (b.getAttribute('role') === 'region' && !!b.getAttribute('aria-label'))])",
    )
    wide = [b for b in boxes if b[1]]
    assert wide, "the page has no overflowing block at 390 px: the test checks nothing"
    assert [b[0] for b in wide if b[2] < 0 or not b[3]] == []  # focusable, and named when a region
    for i, *_ in wide[:4]:
        box = tab.page.locator(sel).nth(i)  # type: ignore[attr-defined]
        box.focus()
        for _ in range(4):
            tab.page.keyboard.press("ArrowRight")  # type: ignore[attr-defined]
        # the scroll may be animated (smooth scrolling): wait for it to move, up to 10 s
        box.evaluate(
            "b => new Promise(ok => { const t0 = Date.now(); (function look() {"
            " if (b.scrollLeft > 0 || Date.now() - t0 > 10000) ok(); else setTimeout(look, 50); })(); })"
        )
        assert box.evaluate("b => b.scrollLeft") > 0, i


@pytest.mark.parametrize("width", [1280, 390])
def test_search_index_is_requested_only_when_the_search_box_is_used(
    tab: Watched, width: int
) -> None:
    asked: list[str] = []

    def note(r: Any) -> None:
        if "search_index" in r.url:
            asked.append(r.url)

    tab.page.on("request", note)  # type: ignore[attr-defined]
    tab.page.set_viewport_size({"width": width, "height": 900})  # type: ignore[attr-defined]
    open_dashboard(tab)
    tab.page.wait_for_load_state("networkidle")  # type: ignore[attr-defined]
    tab.page.wait_for_timeout(500)  # type: ignore[attr-defined]
    tab.page.fill("#aicr-q", "slurm")  # type: ignore[attr-defined]  # the dashboard's own search
    tab.page.mouse.wheel(0, 600)  # type: ignore[attr-defined]
    assert asked == []
    if width == 1280:
        tab.page.focus(".md-search__input")  # type: ignore[attr-defined]
    else:  # on a phone the search box opens from the header's search button
        tab.page.click('label.md-header__button[for="__search"]')  # type: ignore[attr-defined]
    tab.page.keyboard.type(SLURM)  # type: ignore[attr-defined]
    # the site search works: the recipe's page is among the results
    tab.page.wait_for_selector(f'.md-search-result__item a[href*="recipes/{SLURM}.html?"]')  # type: ignore[attr-defined]
    assert [u.rsplit("/", 2)[-2:] for u in asked] == [["search", "search_index.json"]]
    assert tab.errors == [] and tab.outside == []


_SIZES = """() => {
  const small = {}, w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let n;
  while ((n = w.nextNode())) {
    const e = n.parentElement;
    if (!n.textContent.trim() || e.closest("svg") || !e.checkVisibility()) continue;
    if (!e.getBoundingClientRect().width) continue;
    const fs = parseFloat(getComputedStyle(e).fontSize);
    if (fs < 14) { const k = e.tagName + "." + e.className + " " + fs.toFixed(1); small[k] = (small[k] || 0) + 1; }
  }
  const targets = [...document.querySelectorAll("a.aicr-chip, a.aicr-rowlink, .aicr-copy, #aicr-table thead button")]
    .filter(t => t.checkVisibility()).map(t => t.getBoundingClientRect())
    .filter(r => r.width > 0);
  const size = s => parseFloat(getComputedStyle(document.querySelector(s)).fontSize);
  const sum = document.querySelector("#aicr-table td.aicr-sum");
  return {small, targets: targets.length, under: targets.filter(r => r.width < 24 || r.height < 24).length,
    sum: sum ? [size("#aicr-table td.aicr-sum"), size("#aicr-table td:not(.aicr-sum)")] : null};
}"""


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize(
    "path", ["index.html", f"recipes/{SLURM}.html", f"evidence/{SLURM}.html", "scale.html"]
)
def test_no_text_under_14px_and_chips_are_24px_targets(tab: Watched, path: str, width: int) -> None:
    tab.page.set_viewport_size({"width": width, "height": 900})  # type: ignore[attr-defined]
    tab.page.goto(tab.base + path)  # type: ignore[attr-defined]
    tab.page.wait_for_load_state("networkidle")  # type: ignore[attr-defined]
    if path == "index.html":
        tab.page.wait_for_selector("#aicr-table tbody tr")  # type: ignore[attr-defined]
    got = tab.page.evaluate(_SIZES)  # type: ignore[attr-defined]
    assert got["small"] == {}, got["small"]
    if path != "scale.html":
        assert got["targets"] > 5 and got["under"] == 0, got
    if got["sum"]:  # the qualification summary is not the smallest text of its row
        assert got["sum"][0] >= got["sum"][1], got["sum"]


_CLIPPED = """() => {
  const edge = document.querySelector(".md-content__inner").getBoundingClientRect().right;
  return [...document.querySelectorAll(".md-content table, .md-content pre > code")]
    .filter(t => t.checkVisibility())
    .filter(t => t.getBoundingClientRect().right > edge + 1 || t.scrollWidth > t.clientWidth + 1)
    .map(t => (t.caption || {}).textContent || t.textContent.slice(0, 60));
}"""
_FIGURES = """() => [...document.querySelectorAll("figure.aicr-figure")].map(f => ({
  chart: f.querySelector(".aicr-chart").checkVisibility(),
  table: !!f.querySelector(".aicr-print-only table") && f.querySelector(".aicr-print-only").checkVisibility(),
  rows: [...f.querySelectorAll(".aicr-print-only tbody tr")].map(r => r.cells[0].textContent),
}))"""


@pytest.mark.parametrize(
    "path",
    [
        "index.html",
        f"recipes/{SLURM}.html",
        f"evidence/{SLURM}.html",
        "scale.html",
        "components.html",
    ],
)
def test_print_wraps_tables_and_prints_each_chart_as_its_data(
    tab: Watched, path: str, built_site: Path
) -> None:
    tab.page.goto(tab.base + path)  # type: ignore[attr-defined]
    tab.page.wait_for_load_state("load")  # type: ignore[attr-defined]
    if path == "index.html":
        tab.page.wait_for_selector("#aicr-table tbody tr")  # type: ignore[attr-defined]
    tab.page.emulate_media(media="print")  # type: ignore[attr-defined]
    tab.page.set_viewport_size({"width": 720, "height": 1000})  # type: ignore[attr-defined]  # A4's width
    tab.page.evaluate("window.dispatchEvent(new Event('beforeprint'))")  # type: ignore[attr-defined]
    assert tab.page.evaluate(_CLIPPED) == []  # type: ignore[attr-defined]
    figures = tab.page.evaluate(_FIGURES)  # type: ignore[attr-defined]
    assert all(not f["chart"] and f["table"] and f["rows"] for f in figures), figures
    if path.startswith("recipes/"):
        assert len(figures) > 1
        d = json.loads((built_site / "api" / "v1" / "recipes" / f"{SLURM}.json").read_text())
        assert figures[0]["rows"] == [p["name"] for p in d["profiles"]]  # the ladder, per profile
    pdf = tab.page.pdf(format="A4")  # type: ignore[attr-defined]
    assert pdf.startswith(b"%PDF") and len(pdf) > 10_000
    assert tab.errors == []


def test_owned_value_status_comes_from_the_judged_record(tab: Watched, built_site: Path) -> None:
    d = json.loads((built_site / "api" / "v1" / "recipes" / f"{SLURM}.json").read_text())
    judged = {p["name"]: p for p in d["profiles"]}
    tab.page.goto(tab.base + f"recipes/{SLURM}.html")  # type: ignore[attr-defined]
    rows = tab.page.eval_on_selector_all(  # type: ignore[attr-defined]
        "h3[id^=owned-] + p + .aicr-table-wrap tbody tr",
        "rs => rs.map(r => [r.closest('.aicr-table-wrap').previousElementSibling"
        ".previousElementSibling.id.slice(6), r.cells[3].textContent])",
    )
    assert rows
    for profile, status in rows:
        p = judged[profile]
        assert status.startswith(p["consensus"])  # the chip is the row's consensus
        if p["ceilingNodes"]:  # nvl72-2304: confirmed to 2,304 nodes is never "proposed"
            assert f"qualified up to {p['ceilingNodes']:,} nodes" in status, status
            assert not status.split(" ", 1)[1].startswith("proposed")
        else:
            assert "proposed" in status and "qualified up to" not in status
        assert ("SAMPLE" in status) == p["summary"]["sample"]
    assert any(judged[p]["ceilingNodes"] == 2304 for p, _ in rows)
    # compare reads the same judged record
    tab.page.goto(tab.base + f"compare.html?a={SLURM}@standard")  # type: ignore[attr-defined]
    tab.page.wait_for_selector("#aicr-cmp-out table")  # type: ignore[attr-defined]
    owned = tab.page.inner_text("table:has(caption:text-is('Values the profiles own'))")  # type: ignore[attr-defined]
    assert "qualified up to 2,304 nodes" in owned and "(proposed)" not in owned


def test_node_finder_says_which_accelerators_and_services_have_the_profile(
    tab: Watched, built_site: Path
) -> None:
    index = json.loads((built_site / "api" / "v1" / "recipes.json").read_text())
    pairs = {
        f"{r['criteria']['accelerator']} on {r['criteria']['service']}": {
            p["name"] for p in r["profiles"]
        }
        for r in index["recipes"]
    }
    has = sorted(k for k, v in pairs.items() if "nvl72-2304" in v)
    lacking = sorted(k for k, v in pairs.items() if "nvl72-2304" not in v)
    assert has and lacking
    open_dashboard(tab, "?nodes=2304")
    msg = tab.page.inner_text("#aicr-finder-msg")  # type: ignore[attr-defined]
    assert f"nvl72-2304 exists only for {', '.join(has)} (" in msg, msg
    assert f"{', '.join(lacking)} have no recipe at this profile" in msg
    open_dashboard(tab, "?nodes=20")
    msg = tab.page.inner_text("#aicr-finder-msg")  # type: ignore[attr-defined]
    assert "Every accelerator and service of the catalog has a recipe at standard." in msg
