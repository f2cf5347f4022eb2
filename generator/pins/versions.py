"""Version arithmetic for pins: is a version published, and which newer ones wait.

Versions are compared with `packaging.version`, tolerant of a leading `v` (`v26.7.0`). Tags that
are not versions (`latest`, `sha256-…`) are ignored. Pre-releases are only offered as newer when
the pin itself is a pre-release.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

from generator.pins.model import Newer


def parse_version(text: str) -> Version | None:
    """`v1.2.3` and `1.2.3` are the same version; anything unparsable is `None`."""
    raw = text[1:] if text[:1] in ("v", "V") else text
    try:
        return Version(raw)
    except InvalidVersion:
        return None


def _strip_v(text: str) -> str:
    return text[1:] if text[:1] in ("v", "V") else text


def is_published(pinned: str, available: Iterable[str]) -> bool:
    """Exactly the pinned string, or the same string with/without a leading `v`."""
    wanted = _strip_v(pinned)
    return any(a == pinned or _strip_v(a) == wanted for a in available)


def _triple(v: Version) -> tuple[int, int, int]:
    release = (*v.release, 0, 0)
    return release[0], release[1], release[2]


def newer_versions(pinned: str, available: Iterable[str]) -> Newer:
    """The newest newer patch (same major.minor), minor (same major) and major available."""
    base = parse_version(pinned)
    if base is None:
        return Newer()
    allow_pre = base.is_prerelease
    candidates: list[tuple[Version, str]] = []
    for text in set(available):
        v = parse_version(text)
        if v is None or v <= base or (v.is_prerelease and not allow_pre):
            continue
        candidates.append((v, text))
    major, minor, _ = _triple(base)

    def newest(keep: list[tuple[Version, str]]) -> str | None:
        return max(keep)[1] if keep else None

    return Newer(
        patch=newest([c for c in candidates if _triple(c[0])[:2] == (major, minor)]),
        minor=newest(
            [c for c in candidates if _triple(c[0])[0] == major and _triple(c[0])[1] > minor]
        ),
        major=newest([c for c in candidates if _triple(c[0])[0] > major]),
    )
