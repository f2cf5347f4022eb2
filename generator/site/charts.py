"""Plotly figures as plain data, and the HTML that carries them.

Figures are built as dicts (no plotly template, no random ids), so their JSON is small and
byte-stable. Each is placed in a `<template>` element inside a `div` with a stable id derived from
the page and the figure's role; `site_templates/assets/charts.js` draws every such div with the one
plotly.js the site serves. That works on a direct load, on instant navigation and from disk.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from generator.site.jinja import script_json
from generator.site.model import Lane, LaneStatus, RecipeView

NOT_IN_LADDER = "n/a"
VERDICT_CODE = {NOT_IN_LADDER: 0, "untested": 1, "stale": 2, "contested": 3, "fail": 4, "pass": 5}
VERDICT_COLOURS = (  # light fills: the cell labels are drawn dark on every one
    (0, "#ffffff"),  # n/a: the lane is not on this profile's ladder
    (1, "#d0d7de"),  # untested: grey
    (2, "#f2cc60"),  # stale: amber
    (3, "#ffb77c"),  # contested: orange
    (4, "#ff8182"),  # fail: red
    (5, "#4ac26b"),  # pass: green
)


def lane_verdicts(
    statuses: Sequence[LaneStatus], ladder: Sequence[str], lanes: Sequence[Lane]
) -> list[str]:
    """One verdict per lane of the catalog: n/a off the profile's ladder, untested by default."""
    by_lane = {s.lane: s.verdict for s in statuses}
    return [
        by_lane.get(lane.name, "untested") if lane.name in ladder else NOT_IN_LADDER
        for lane in lanes
    ]


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


def verdict_heatmap(
    rows: Sequence[tuple[str, Sequence[str]]], lanes: Sequence[Lane], title: str
) -> dict[str, Any]:
    """A rows × lanes heat map of verdicts (pass | fail | stale | untested)."""
    x = [f"{lane.nodes:,}" for lane in lanes]
    y = [label for label, _ in rows]
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
            "title": {"text": title},
            "font": {**_FONT, "color": "#1f2328"},
            "height": max(180, 60 + 34 * len(y)),
            "margin": {"l": 10, "r": 10, "t": 40, "b": 50},
            "xaxis": {"title": {"text": "lane (nodes)"}, "type": "category", "automargin": True},
            "yaxis": {"autorange": "reversed", "automargin": True},
            "paper_bgcolor": "rgba(0,0,0,0)",
            "plot_bgcolor": "rgba(0,0,0,0)",
        },
    }


def ladder_figure(
    recipe: RecipeView, lanes: Sequence[Lane], ladders: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """The recipe's ladder: one row per scale profile, one column per lane."""
    rows = [
        (p.profile, lane_verdicts(p.lanes, ladders.get(p.profile, ()), lanes))
        for p in recipe.profiles
    ]
    return verdict_heatmap(rows, lanes, "Lane verdicts per scale profile")


def kpi_figure(recipe: RecipeView) -> dict[str, Any] | None:
    """KPI value / threshold against observed node count, one trace per KPI, counted runs only.

    A ratio keeps KPIs of different units on one axis; the dashed line at 1 is the threshold
    (for `<=` KPIs lower is better, for `>=` higher is better), the hover shows the real values.
    """
    points: dict[str, list[tuple[int, float, str]]] = {}
    for run in recipe.evidence:
        if not run.counted or run.observed_nodes is None:
            continue
        for k in run.kpis:
            if not k.threshold:
                continue
            label = f"{k.value:g} {k.unit} (threshold {k.operator} {k.threshold:g}) {run.profile}"
            points.setdefault(k.id, []).append(
                (run.observed_nodes, round(k.value / k.threshold, 6), label)
            )
    if not points:
        return None
    data: list[dict[str, Any]] = []
    for kpi_id in sorted(points):
        pts = sorted(points[kpi_id])
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "marker": {"size": 8, "opacity": 0.8},
                "name": kpi_id,
                "x": [p[0] for p in pts],
                "y": [p[1] for p in pts],
                "text": [p[2] for p in pts],
                "hovertemplate": "%{x} nodes: %{text}<extra>" + kpi_id + "</extra>",
            }
        )
    ticks = sorted({x for trace in data for x in trace["x"]})
    return {
        "data": data,
        "layout": {
            "title": {"text": "KPI value relative to its threshold, by node count"},
            "font": {**_FONT, "color": "#1f2328"},
            "height": 460,
            "margin": {"l": 60, "r": 10, "t": 40, "b": 40},
            "xaxis": {
                "title": {"text": "observed nodes"},
                "type": "log",
                "tickvals": ticks,
                "ticktext": [f"{t:,}" for t in ticks],
            },
            "yaxis": {"title": {"text": "value / threshold"}},
            "shapes": [
                {
                    "type": "line",
                    "xref": "paper",
                    "x0": 0,
                    "x1": 1,
                    "y0": 1,
                    "y1": 1,
                    "line": {"dash": "dash", "color": "#57606a"},
                }
            ],
            "legend": {"orientation": "h", "y": -0.25, "yanchor": "top"},
            "paper_bgcolor": "rgba(0,0,0,0)",
            "plot_bgcolor": "rgba(0,0,0,0)",
        },
    }


def chart_html(div_id: str, figure: dict[str, Any], caption: str) -> Markup:
    """The figure as one line of HTML: a `<figure>` holding the chart div and its caption."""
    return Markup(
        '<figure class="aicr-figure" data-search-exclude>'
        f'<div class="aicr-chart" id="{escape(div_id)}" data-chart>'
        f"<template>{script_json(figure)}</template></div>"
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )
