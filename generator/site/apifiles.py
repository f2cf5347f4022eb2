"""The files of the JSON API under `api/v1/` (and the badges), declared in one place.

Every path `generator.site.api` and `generator.site.badges` publish is made from one of
`API_FILES` (`ApiFile.path`), and `iter_api_files` refuses a path that matches none, so the
declaration is the set of files a build publishes for tools and embeds. `aicr-catalog compat` compares that set with its baseline
(`catalog/schemas/baselines/api-files.json`): a file that is no longer published, or whose
`kind` or schema changed, is a breaking change of the API (generator/publish/compat.py).

`published_runs` reads the evidence records back from a built site the way a v1 reader does:
`api/v1/evidence/index.json`, then each recipe's file, checked against the `sha256` the index
gives for it.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.core import safeio
from generator.core.errors import SiteError
from generator.core.yamlio import load_json, parse_json

_FIELD = re.compile(r"<([a-z]+)>")
# what a `<field>` of a pattern stands for: one path segment (a slug, a schema's file name)
_SEGMENT = r"[^/]+"

INDEX_BYTES = 16 * 1024 * 1024  # evidence/index.json: under 500 bytes a name (docs/api.md)
FILE_BYTES = 64 * 1024 * 1024  # one recipe's evidence file: its own runs


@dataclass(frozen=True, slots=True)
class ApiFile:
    """One published file (or family of files, one per `<field>` value) of the JSON API."""

    pattern: str  # site-relative path; `<name>` stands for one path segment
    kind: str  # the document's `kind` ("" for the schema copies)
    schema: str  # its schema under catalog/schemas/api/ ("" for the schema copies)
    optional: bool = False  # published only with a build option (--timeline)

    def path(self, **fields: str) -> str:
        """The path of one file: each `<field>` replaced by its value (one path segment)."""
        out = self.pattern
        for name in _FIELD.findall(self.pattern):
            value = fields.pop(name)
            if not value or "/" in value or value in (".", ".."):
                raise SiteError(f"{self.pattern}: {name} {value!r} is not one path segment")
            out = out.replace(f"<{name}>", value)
        if fields:
            raise SiteError(f"{self.pattern}: no field {', '.join(sorted(fields))}")
        return out

    def matches(self, rel: str) -> bool:
        return _regex(self.pattern).fullmatch(rel) is not None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "schema": self.schema, "optional": self.optional}


@functools.cache
def _regex(path_template: str) -> re.Pattern[str]:
    """The paths an API path template stands for (each `<field>` one segment), compiled once."""
    return re.compile(_FIELD.sub(_SEGMENT, re.escape(path_template)))  # `<`, `>` not escaped


API_FILES: tuple[ApiFile, ...] = (
    ApiFile("api/v1/recipes.json", "RecipeIndex", "recipes.schema.json"),
    ApiFile("api/v1/recipes/<name>.json", "RecipeDetail", "recipe.schema.json"),
    ApiFile(
        "api/v1/evidence/index.json", "RecipeEvidenceIndex", "recipe-evidence-index.schema.json"
    ),
    ApiFile("api/v1/evidence/<recipe>.json", "RecipeEvidence", "recipe-evidence.schema.json"),
    ApiFile("api/v1/lanes.json", "LaneIndex", "lanes.schema.json"),
    ApiFile("api/v1/profiles.json", "ScaleProfileIndex", "profiles.schema.json"),
    ApiFile("api/v1/timeline.json", "Timeline", "timeline.schema.json", optional=True),
    ApiFile("api/v1/schemas/<schema>", "", ""),
    # a recipe × profile's badge: what READMEs embed (the SVG) and what it shows (the JSON)
    ApiFile("badges/<name>/<profile>.svg", "", ""),
    ApiFile("badges/<name>/<profile>.json", "", "badge.schema.json"),
)
_BY_PATTERN = {f.pattern: f for f in API_FILES}

RECIPES = _BY_PATTERN["api/v1/recipes.json"]
RECIPE = _BY_PATTERN["api/v1/recipes/<name>.json"]
EVIDENCE_INDEX = _BY_PATTERN["api/v1/evidence/index.json"]
RECIPE_EVIDENCE = _BY_PATTERN["api/v1/evidence/<recipe>.json"]
LANES = _BY_PATTERN["api/v1/lanes.json"]
PROFILES = _BY_PATTERN["api/v1/profiles.json"]
TIMELINE = _BY_PATTERN["api/v1/timeline.json"]
SCHEMA_COPY = _BY_PATTERN["api/v1/schemas/<schema>"]
BADGE_SVG = _BY_PATTERN["badges/<name>/<profile>.svg"]
BADGE_JSON = _BY_PATTERN["badges/<name>/<profile>.json"]


def declared(rel: str) -> ApiFile:
    """The declaration `rel` is published under; SiteError when none declares it. An exact
    pattern wins over one with fields (`evidence/index.json` is not a recipe's file)."""
    if rel in _BY_PATTERN:
        return _BY_PATTERN[rel]
    for f in API_FILES:
        if f.matches(rel):
            return f
    raise SiteError(
        f"{rel}: not a declared file of the JSON API (generator/site/apifiles.py API_FILES); "
        "declare it, and let `aicr-catalog compat --baseline-new` record it"
    )


def surface() -> dict[str, dict[str, Any]]:
    """The published files as `aicr-catalog compat` records them: pattern -> kind, schema."""
    return {f.pattern: f.to_json() for f in sorted(API_FILES, key=lambda f: f.pattern)}


def published_runs(site: Path) -> Iterator[dict[str, Any]]:
    """Every evidence record of a built site, in the order of its index: each recipe's file
    (`api/v1/evidence/<recipe>.json`) as `api/v1/evidence/index.json` lists it, refused
    (SiteError) when its bytes are not those the index's `sha256` names."""
    index = load_json(
        site / EVIDENCE_INDEX.pattern, root=site, where="the built site", limit=INDEX_BYTES
    )
    for entry in index["recipes"]:
        rel = entry["path"]
        if declared(rel) is not RECIPE_EVIDENCE:
            raise SiteError(f"{EVIDENCE_INDEX.pattern}: {rel!r} is not a recipe's evidence file")
        raw = safeio.read(site / rel, root=site, where="the built site", limit=FILE_BYTES)
        if hashlib.sha256(raw).hexdigest() != entry["sha256"]:
            raise SiteError(
                f"{rel}: its sha256 is not the one {EVIDENCE_INDEX.pattern} gives for it"
            )
        yield from parse_json(raw, rel, limit=FILE_BYTES)["evidence"]
