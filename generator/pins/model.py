"""Records of the pins check: what is pinned, where, and what upstream says about it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum

# What the qualified-at-scale column shows when no status is known for a pin.
UNKNOWN_QUALIFICATION = "unknown"

# (component, version) -> the largest qualified lane. The status model does not exist yet; until it
# does, callers pass nothing and every pin shows `unknown`.
Qualification = Mapping[tuple[str, str], str]


class ExitCode(IntEnum):
    """The `pins` exit-code contract."""

    OK = 0  # every pin exists upstream
    MISSING = 1  # at least one pin is missing upstream (chart or version)
    USAGE = 2  # bad arguments or an unreadable catalog
    INCOMPLETE = 4  # the check could not complete for some pin (network, HTTP, malformed)


class SourceKind(StrEnum):
    HELM = "helm"  # an HTTP(S) Helm repository with index.yaml
    OCI = "oci"  # an OCI registry (oci://host/path)


class PinStatus(StrEnum):
    PRESENT = "present"
    MISSING = "missing"
    UNKNOWN = "unknown"  # the check could not complete


class ProblemKind(StrEnum):
    UNREACHABLE = "unreachable"  # connection refused, DNS, TLS
    TIMEOUT = "timeout"
    HTTP_ERROR = "http-error"  # an unexpected HTTP status
    MALFORMED = "malformed"  # the index or tag list could not be understood
    CHART_NOT_FOUND = "chart-not-found"
    VERSION_NOT_FOUND = "version-not-found"

    @property
    def status(self) -> PinStatus:
        if self in (ProblemKind.CHART_NOT_FOUND, ProblemKind.VERSION_NOT_FOUND):
            return PinStatus.MISSING
        return PinStatus.UNKNOWN


@dataclass(frozen=True, slots=True, order=True)
class PinLocation:
    """Where a pin is written: catalog-relative file, 1-based line/col, JSON path of the value."""

    path: str
    line: int
    col: int
    json_path: str

    def format(self) -> str:
        where = f"{self.path}:{self.line}:{self.col}" if self.line else self.path
        return f"{where}: {self.json_path}"

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "col": self.col, "jsonPath": self.json_path}


@dataclass(frozen=True, slots=True)
class Pin:
    """One (component, repository, chart, version) the catalog deploys somewhere."""

    component: str
    repository: str  # https://… Helm repository or oci://host/path
    chart: str  # the chart's name upstream (a Helm repo alias prefix such as `nvidia/` removed)
    version: str
    locations: tuple[PinLocation, ...]  # every place that sets it, sorted
    recipes: tuple[str, ...] = ()  # leaf recipes whose resolved recipe deploys it, sorted

    @property
    def kind(self) -> SourceKind:
        return SourceKind.OCI if self.repository.startswith("oci://") else SourceKind.HELM

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.component, self.version, self.repository, self.chart)


@dataclass(frozen=True, slots=True)
class Problem:
    kind: ProblemKind
    message: str
    http_status: int | None = None

    def to_json(self) -> dict[str, object]:
        return {"kind": str(self.kind), "message": self.message, "httpStatus": self.http_status}


@dataclass(frozen=True, slots=True)
class Newer:
    """The newest available version that is a newer patch, minor or major than the pin."""

    patch: str | None = None
    minor: str | None = None
    major: str | None = None

    def any(self) -> bool:
        return any((self.patch, self.minor, self.major))

    def to_json(self) -> dict[str, str | None]:
        return {"patch": self.patch, "minor": self.minor, "major": self.major}


@dataclass(frozen=True, slots=True)
class PinResult:
    pin: Pin
    status: PinStatus
    problem: Problem | None
    newer: Newer
    qualified: str = UNKNOWN_QUALIFICATION


@dataclass(frozen=True, slots=True)
class PinsReport:
    results: tuple[PinResult, ...]  # sorted by component, version, repository, chart

    def count(self, status: PinStatus) -> int:
        return sum(1 for r in self.results if r.status is status)

    @property
    def exit_code(self) -> ExitCode:
        """A definite missing pin outranks an incomplete check: the answer is already "no"."""
        if self.count(PinStatus.MISSING):
            return ExitCode.MISSING
        if self.count(PinStatus.UNKNOWN):
            return ExitCode.INCOMPLETE
        return ExitCode.OK
