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
