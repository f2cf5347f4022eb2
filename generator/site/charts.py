"""Plotly figures as plain data, and the HTML that carries them.

Figures are built as dicts (no plotly template, no random ids), so their JSON is small and
byte-stable. Each is placed in a `<template>` element inside a `div` with a stable id derived from
the page and the figure's role; `site_templates/assets/charts.js` draws every such div with the one
plotly.js the site serves. That works on a direct load, on instant navigation and from disk.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from markupsafe import Markup

from generator.core.text import html_text as escape
from generator.evidence.view import EvidenceView, Outcome
from generator.site.jinja import script_json
from generator.site.model import LaneOutcome, LaneVerdict, LaneView, RecipeView

NOT_IN_LADDER = "n/a"
VERDICT_CODE: dict[str, int] = {
    NOT_IN_LADDER: 0,
    LaneVerdict.UNTESTED: 1,
    LaneVerdict.STALE: 2,
    LaneVerdict.CONTESTED: 3,
    LaneVerdict.FAIL: 4,
    LaneVerdict.PASS: 5,
}
VERDICT_COLOURS = (  # light fills: the cell labels are drawn dark on every one
    (0, "#ffffff"),  # n/a: the lane is not on this profile's ladder
    (1, "#d0d7de"),  # untested: grey
    (2, "#f2cc60"),  # stale: amber
    (3, "#ffb77c"),  # contested: orange
    (4, "#ff8182"),  # fail: red
    (5, "#4ac26b"),  # pass: green
)


def lane_verdicts(
    statuses: Sequence[LaneOutcome], ladder: Sequence[str], lanes: Sequence[LaneView]
) -> list[str]:
    """One verdict per lane of the catalog: n/a off the profile's ladder, untested by default."""
    by_lane = {s.lane: s.verdict for s in statuses}
    return [
        by_lane.get(lane.name, LaneVerdict.UNTESTED) if lane.name in ladder else NOT_IN_LADDER
        for lane in lanes
    ]


def plotly_text(value: object) -> str:
    """Text for a plotly string property: plotly reads a subset of HTML (`<a href>`, `<b>`,
    `<br>`, entities) in titles, labels and hover text, so `&`, `<` and `>` are written as
    entities and drawn as the characters themselves."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 13}


def chart_id(*parts: str) -> str:
    """A stable, valid HTML id from the page's identity and the figure's role."""
    text = "-".join(parts).lower()
    return "chart-" + re.sub(r"[^a-z0-9_-]+", "-", text).strip("-")


def _stepped_colourscale() -> list[list[Any]]:
    top = max(code for code, _ in VERDICT_COLOURS)
    scale: list[list[Any]] = []
    for i, (code, colour) in enumerate(VERDICT_COLOURS):
        lo = 0.0 if i == 0 else (code - 0.5) / top
        hi = 1.0 if i == len(VERDICT_COLOURS) - 1 else (code + 0.5) / top
        scale += [[round(lo, 6), colour], [round(hi, 6), colour]]
    return scale


class Column(Protocol):
    """A lane as a column of a heat map: its node count."""

    @property
    def nodes(self) -> int: ...


def verdict_heatmap(
    rows: Sequence[tuple[str, Sequence[str]]], lanes: Sequence[Column], title: str
) -> dict[str, Any]:
    """A rows × lanes heat map of verdicts (pass | fail | stale | untested)."""
    x = [f"{lane.nodes:,}" for lane in lanes]
    # "recipe @ profile" on two lines: the long names fit beside the plot on a phone
    y = [plotly_text(label).replace(" @ ", "<br>@ ") for label, _ in rows]
    z = [[VERDICT_CODE.get(v, 0) for v in verdicts] for _, verdicts in rows]
    text = [list(verdicts) for _, verdicts in rows]
    return {
        "data": [
            {
                "type": "heatmap",
                "x": x,
                "y": y,
                "z": z,
                "text": text,
                "texttemplate": "%{text}",
                "hovertemplate": "%{y}<br>%{x} nodes: %{text}<extra></extra>",
                "colorscale": _stepped_colourscale(),
                "zmin": 0,
                "zmax": max(VERDICT_CODE.values()),
                "showscale": False,
                "xgap": 2,
                "ygap": 2,
            }
        ],
        "layout": {
            "title": {"text": plotly_text(title)},
            "font": {**_FONT, "color": "#1f2328"},
            "height": max(180, 70 + 38 * len(y)),
            "margin": {"l": 10, "r": 10, "t": 40, "b": 50},
            "xaxis": {"title": {"text": "lane (nodes)"}, "type": "category", "automargin": True},
            "yaxis": {"autorange": "reversed", "automargin": True},
            "paper_bgcolor": "rgba(0,0,0,0)",
            "plot_bgcolor": "rgba(0,0,0,0)",
        },
    }


def ladder_figure(
    recipe: RecipeView, lanes: Sequence[LaneView], ladders: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """The recipe's ladder: one row per scale profile, one column per lane."""
    rows = [
        (p.profile, lane_verdicts(p.lanes, ladders.get(p.profile, ()), lanes))
        for p in recipe.profiles
    ]
    return verdict_heatmap(rows, lanes, "Lane verdicts per scale profile")


LOWER_IS_BETTER = ("<=", "<", "le", "lt", "lte")


class _KpiPoint(NamedTuple):
    """One KPI value of a counted run, with its judged outcome (never recomputed here). A
    named tuple, not a dataclass: a recipe page makes one per KPI of every counted run (the
    1,000 x 20,000 synthetic catalog: ~250,000), and a frozen dataclass sets each field
    through `object.__setattr__`. Measured: see `_kpi_points`."""

    nodes: int  # observed
    value: float
    threshold: float
    profile: str
    run: str  # short name
    outcome: Outcome


def kpi_figures(recipe: RecipeView) -> list[tuple[str, dict[str, Any], str]]:
    """One small chart per KPI of the counted runs: its value against observed node count, in
    its own unit, with the threshold as a dashed line and the direction in the title; each
    marker is the KPI's judged outcome (a value inside its threshold measured on too few nodes
    is a failure, and says why).

    Returns (KPI id, figure, caption) sorted by KPI id. Every string that came from evidence is
    escaped for plotly's HTML subset (`plotly_text`), so a KPI id that looks like markup is
    drawn as text, never as a link or a style."""
    points, units, ops = _kpi_points(recipe.evidence)
    out = []
    for kpi_id in sorted(points):
        pts = sorted(points[kpi_id], key=_POINT_ORDER)
        figure, caption = _kpi_figure(kpi_id, pts, units[kpi_id], ops[kpi_id])
        out.append((kpi_id, figure, caption))
    return out


_POINT_ORDER = operator.itemgetter(0, 1, 3, 4)  # a `_KpiPoint`'s nodes, value, profile, run


def _kpi_points(
    runs: Sequence[EvidenceView],
) -> tuple[dict[str, list[_KpiPoint]], dict[str, str], dict[str, str]]:
    """(points, unit, operator) per KPI id of the counted runs that observed a node count; the
    unit and operator of the first run that reported the KPI. Measured (one process, CPU, the
    1,000 x 20,000 synthetic SiteData, three pairs interleaved with the dataclass points and a
    `setdefault` per point): its 1,000 recipes' points 0.28/0.29/0.29 -> 0.11/0.11/0.11 s,
    their charts (`pages._recipe_charts`) 1.52/1.58/1.57 -> 1.50/1.41/1.39 s."""
    points: dict[str, list[_KpiPoint]] = {}
    units: dict[str, str] = {}
    ops: dict[str, str] = {}
    for run in runs:
        if not run.counted or run.observed_nodes is None:
            continue
        nodes, profile, short = run.observed_nodes, run.profile, run.short
        for k in run.kpis:
            kpi = points.get(k.id)
            if kpi is None:  # the first run that reported it: its unit and operator
                kpi = points[k.id] = []
                units[k.id] = k.unit
                ops[k.id] = k.operator
            kpi.append(_KpiPoint(nodes, k.value, k.threshold, profile, short, k.outcome))
    return points, units, ops


def _point_label(p: _KpiPoint, unit: str, op: str) -> str:
    judged = p.outcome.status + (f" ({p.outcome.cause})" if p.outcome.causes else "")
    return plotly_text(
        f"{p.value:g} {unit} (threshold {op} {p.threshold:g}): {judged}, "
        f"profile {p.profile}, run {p.run}"
    )


def _kpi_figure(
    kpi_id: str, pts: Sequence[_KpiPoint], unit: str, op: str
) -> tuple[dict[str, Any], str]:
    """One KPI's figure (threshold line, value markers) and its caption."""
    lower = op in LOWER_IS_BETTER
    direction = "lower is better" if lower else "higher is better"
    ok = [p.outcome.status == "passed" for p in pts]
    thresholds = sorted({(p.nodes, p.threshold) for p in pts})
    xs = sorted({p.nodes for p in pts})
    threshold_line = {
        "type": "scatter",
        "mode": "lines",
        "name": "threshold",
        "x": [n for n, _ in thresholds],
        "y": [t for _, t in thresholds],
        "line": {"dash": "dash", "color": "#57606a", "shape": "hv"},
        "hoverinfo": "skip",
    }
    values = {
        "type": "scatter",
        "mode": "markers",
        "name": "value",
        "x": [p.nodes for p in pts],
        "y": [p.value for p in pts],
        "text": [_point_label(p, unit, op) for p in pts],
        "customdata": [p.outcome.status for p in pts],
        "marker": {
            "size": 9,
            "color": ["#1a7f37" if good else "#cf222e" for good in ok],
            "symbol": ["circle" if good else "x" for good in ok],
        },
        "hovertemplate": "%{x:,} nodes: %{text}<extra></extra>",
    }
    figure = {"data": [threshold_line, values], "layout": _kpi_layout(kpi_id, direction, unit, xs)}
    caption = (
        f"{kpi_id} in {unit or 'its unit'} by observed node count ({direction}); dashed: "
        f"the threshold ({op}); green circles passed as judged, red crosses failed (a value "
        "inside the threshold fails when measured on fewer targets than the lane needs: "
        "hover for the cause)."
    )
    return figure, caption


def _kpi_layout(kpi_id: str, direction: str, unit: str, xs: Sequence[int]) -> dict[str, Any]:
    return {
        "title": {
            "text": plotly_text(kpi_id) + "<br><sub>" + plotly_text(direction) + "</sub>",
            "font": {"size": 13},
        },
        "font": {**_FONT, "size": 11, "color": "#1f2328"},
        "height": 240,
        "showlegend": False,
        "margin": {"l": 50, "r": 10, "t": 48, "b": 40},
        "xaxis": {
            "title": {"text": "observed nodes"},
            "type": "log",
            "tickvals": list(xs),
            "ticktext": [f"{t:,}" for t in xs],
            "automargin": True,
        },
        "yaxis": {"title": {"text": plotly_text(unit)}, "automargin": True},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
    }


def chart_html(div_id: str, figure: dict[str, Any], caption: str) -> Markup:
    """The figure as one line of HTML: a `<figure>` holding the chart div and its caption."""
    return Markup(
        '<figure class="aicr-figure" data-search-exclude>'
        f'<div class="aicr-chart" id="{escape(div_id)}" data-chart>'
        f"<template>{script_json(figure)}</template></div>"
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )
