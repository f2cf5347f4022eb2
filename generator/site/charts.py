"""Plotly figures as plain data, and the HTML that carries them.

Figures are built as dicts (no plotly template, no random ids), so their JSON is small and
byte-stable. Each is placed in a `<template>` element inside a `div` with a stable id derived from
the page and the figure's role; `site_templates/assets/charts.js` draws every such div with the one
plotly.js the site serves. That works on a direct load, on instant navigation and from disk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup, escape

from generator.site.jinja import script_json
from generator.site.model import Lane, RecipeView

VERDICT_CODE = {"untested": 0, "stale": 1, "fail": 2, "pass": 3}
VERDICT_COLOURS = (
    (0, "#d0d7de"),  # untested: light grey (labels drawn dark)
    (1, "#f2cc60"),  # stale: amber
    (2, "#ff8182"),  # fail: red
    (3, "#4ac26b"),  # pass: green
)
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
    x = [f"{lane.name} ({lane.nodes})" for lane in lanes]
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
                "hovertemplate": "%{y}<br>%{x}: %{text}<extra></extra>",
                "colorscale": _stepped_colourscale(),
                "zmin": 0,
                "zmax": 3,
                "showscale": False,
                "xgap": 2,
                "ygap": 2,
            }
        ],
        "layout": {
            "title": {"text": title},
            "font": {**_FONT, "color": "#1f2328"},
            "height": max(180, 60 + 34 * len(y)),
            "margin": {"l": 200, "r": 10, "t": 40, "b": 60},
            "xaxis": {"title": {"text": "lane (nodes)"}, "side": "bottom"},
            "yaxis": {"autorange": "reversed", "automargin": True},
            "paper_bgcolor": "rgba(0,0,0,0)",
            "plot_bgcolor": "rgba(0,0,0,0)",
        },
    }


def ladder_figure(recipe: RecipeView, lanes: Sequence[Lane]) -> dict[str, Any]:
    """The recipe's ladder: one row per scale profile, one column per lane."""
    by_name = {lane.name: lane for lane in lanes}
    rows = []
    for p in recipe.profiles:
        verdicts = {s.lane: s.verdict for s in p.lanes}
        rows.append((p.profile, [verdicts.get(lane.name, "untested") for lane in lanes]))
    used = [lane for lane in lanes if lane.name in by_name]
    return verdict_heatmap(rows, used, f"Qualification ladder of {recipe.name}")


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
                "mode": "lines+markers",
                "name": kpi_id,
                "x": [p[0] for p in pts],
                "y": [p[1] for p in pts],
                "text": [p[2] for p in pts],
                "hovertemplate": "%{x} nodes: %{text}<extra>" + kpi_id + "</extra>",
            }
        )
    return {
        "data": data,
        "layout": {
            "title": {"text": "KPI value relative to its threshold, by node count"},
            "font": {**_FONT, "color": "#1f2328"},
            "height": 380,
            "margin": {"l": 60, "r": 10, "t": 40, "b": 60},
            "xaxis": {"title": {"text": "observed nodes"}, "type": "log"},
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
            "legend": {"orientation": "h", "y": -0.3},
            "paper_bgcolor": "rgba(0,0,0,0)",
            "plot_bgcolor": "rgba(0,0,0,0)",
        },
    }


def chart_html(div_id: str, figure: dict[str, Any], caption: str) -> Markup:
    """The figure as one line of HTML: a `<figure>` holding the chart div and its caption."""
    return Markup(
        '<figure class="aicr-figure">'
        f'<div class="aicr-chart" id="{escape(div_id)}" data-chart>'
        f"<template>{script_json(figure)}</template></div>"
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )
