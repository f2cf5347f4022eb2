"""The qualified-at-scale column, read from the status model's document.

`aicr-catalog status --format json` lists, per component and pinned version of the current
recipes, the largest lane at which current, verified evidence qualified a recipe pinning it.
`pins --status FILE` reads that document; without it every pin shows `unknown`. A version the
status lists without a lane shows `none`; evidence verified with the demo trust root is sample
data and its lanes are labelled `(sample)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.core import safeio
from generator.core.errors import CatalogError, UsageError
from generator.core.yamlio import load_json
from generator.pins.model import Qualification

NOT_QUALIFIED = "none"


def qualification_from_status(doc: Any, source: str) -> Qualification:
    """(component, version) -> lane, `none`, or `<lane> (sample)` from a Status document."""
    if not isinstance(doc, dict) or doc.get("kind") != "Status":
        raise UsageError(f"{source}: not a status document (`aicr-catalog status --format json`)")
    rows = doc.get("components")
    if not isinstance(rows, list):
        raise UsageError(f"{source}: the status document has no `components` list")
    sample = doc.get("sample") is True
    out: dict[tuple[str, str], str] = {}
    for i, row in enumerate(rows):
        if not (
            isinstance(row, dict)
            and isinstance(row.get("component"), str)
            and isinstance(row.get("version"), str)
            and (row.get("lane") is None or isinstance(row.get("lane"), str))
        ):
            raise UsageError(f"{source}: $.components[{i}] is not a component qualification")
        lane = row["lane"]
        text = NOT_QUALIFIED if lane is None else f"{lane} (sample)" if sample else lane
        out[(row["component"], row["version"])] = text
    return out


def read_qualification(path: Path) -> Qualification:
    try:
        doc = load_json(path, limit=safeio.OTHER_BYTES)
    except CatalogError as e:
        raise UsageError(f"{path}: cannot read the status document ({e.message})") from e
    return qualification_from_status(doc, path.name)
