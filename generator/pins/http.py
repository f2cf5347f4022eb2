"""What `pins` asks of the network: GETs through the one network client (generator.core.net),
with bounded retries with exponential backoff, and conditional requests against an on-disk
ETag cache.

Every failure leaves this module as a `FetchError` carrying a `Problem` (unreachable, timeout,
HTTP error with its status, malformed); callers never see a raw network exception.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from generator.core import net, safeio
from generator.core.atomic import make_dirs, write_atomic
from generator.core.errors import CatalogError
from generator.core.net import Client, NetError, NetKind
from generator.core.yamlio import load_json
from generator.pins.model import Problem, ProblemKind

DEFAULT_TIMEOUT = 10.0
DEFAULT_RETRIES = 3
BACKOFF_BASE = 0.5  # seconds; attempt n waits BACKOFF_BASE * 2**n
BACKOFF_MAX = 30.0  # cap for exponential backoff and for a server's Retry-After
MAX_BODY = 256 * 1024 * 1024  # an index larger than this is refused as malformed
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

# Indirection so tests can observe backoff without waiting (never patch time.sleep globally).
_sleep: Callable[[float], None] = time.sleep


class FetchError(Exception):
    """A request that could not produce a usable response."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Response:
    url: str
    status: int  # the server's status (304 when the cached body was reused)
    body: bytes
    headers: Mapping[str, str]
    from_cache: bool = False


@dataclass(frozen=True, slots=True)
class CacheEntry:
    etag: str
    body: bytes


class ETagCache:
    """`<dir>/<sha256(url)>.json` (url, etag) beside `<sha256(url)>.body` (the last 200 body)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _paths(self, url: str) -> tuple[Path, Path]:
        key = hashlib.sha256(url.encode()).hexdigest()
        return self.directory / f"{key}.json", self.directory / f"{key}.body"

    def get(self, url: str) -> CacheEntry | None:
        meta_path, body_path = self._paths(url)
        try:
            meta = load_json(meta_path, root=self.directory, limit=safeio.YAML_BYTES)
            body = safeio.read(body_path, root=self.directory, limit=safeio.OTHER_BYTES)
        except CatalogError:
            return None
        if not isinstance(meta, dict) or meta.get("url") != url:
            return None
        etag = meta.get("etag")
        if not isinstance(etag, str) or hashlib.sha256(body).hexdigest() != meta.get("sha256"):
            return None
        return CacheEntry(etag=etag, body=body)

    def put(self, url: str, etag: str, body: bytes) -> None:
        meta_path, body_path = self._paths(url)
        make_dirs(self.directory)
        meta = {"url": url, "etag": etag, "sha256": hashlib.sha256(body).hexdigest()}
        _atomic_write(body_path, body, root=self.directory)
        meta_bytes = json.dumps(meta, sort_keys=True, allow_nan=False).encode()
        _atomic_write(meta_path, meta_bytes, root=self.directory)


_atomic_write = write_atomic


@dataclass
class FetchStats:
    requests: int = 0
    not_modified: int = 0
    retries: int = 0


class Fetcher:
    """GET with timeouts, bounded retries and ETag revalidation, through one network client
    (generator.core.net: deadlines, byte caps, same-host redirects, classified errors). Only
    the `pins` command makes one, and only when it checks upstream (it is the network's own
    command; `--no-check` makes none)."""

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        cache: ETagCache | None = None,
        client: Client | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.timeout = timeout
        self.retries = retries
        self.cache = cache
        self.client = client or Client.on(idle_seconds=timeout)
        self.progress = progress or (lambda _msg: None)
        self.stats = FetchStats()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def get(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        conditional: bool = True,
        accept: frozenset[int] = frozenset({200}),
        max_bytes: int | None = None,
    ) -> Response:
        """The response to GET `url`. A status in `accept` (or a 304 served from the cache) is
        returned; 429/5xx, timeouts and connection errors are retried; anything else raises.
        `max_bytes`: the body's cap (default MAX_BODY)."""
        sent = dict(headers or {})
        cached = self.cache.get(url) if (conditional and self.cache) else None
        if cached is not None:
            sent["If-None-Match"] = cached.etag
        raw = self._send(url, sent, max_bytes or MAX_BODY)
        if raw.status == 304 and cached is not None:
            self.stats.not_modified += 1
            self.progress(f"GET {url}: HTTP 304, cached copy reused")
            return Response(url, 304, cached.body, raw.headers, from_cache=True)
        if raw.status not in accept:
            message = f"GET {url}: HTTP {raw.status}{_why(raw.status)}"
            raise FetchError(Problem(ProblemKind.HTTP_ERROR, message, raw.status))
        self.progress(f"GET {url}: HTTP {raw.status}, {len(raw.body)} bytes")
        etag = header(raw.headers, "ETag")
        if conditional and self.cache and etag and raw.status == 200:
            try:
                self.cache.put(url, etag, raw.body)
            except safeio.Refusal as e:  # a cache that cannot be written only costs the next run
                self.progress(f"warning: ETag cache not written ({e.message})")
            except OSError as e:
                self.progress(f"warning: ETag cache not written ({e.strerror or e})")
        return Response(url, raw.status, raw.body, raw.headers)

    def _send(self, url: str, headers: Mapping[str, str], max_bytes: int) -> net.Response:
        problem: Problem | None = None
        retry_after: float | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                self.stats.retries += 1
                wait = _backoff(attempt - 1, retry_after)
                msg = problem.message if problem else ""
                self.progress(f"{msg}; retry {attempt}/{self.retries} in {wait:g} s")
                _sleep(wait)
            self.stats.requests += 1
            retry_after = None
            try:
                raw = self.client.request("GET", url, headers=headers, max_bytes=max_bytes)
            except NetError as e:
                if e.kind is NetKind.TIMEOUT:
                    message = f"GET {url}: timed out after {self.timeout:g} s"
                    problem = Problem(ProblemKind.TIMEOUT, message)
                    continue
                if e.kind in (NetKind.UNREACHABLE, NetKind.TLS):
                    problem = Problem(
                        ProblemKind.UNREACHABLE, f"GET {url}: unreachable ({e.reason})"
                    )
                    continue
                if e.kind is NetKind.DEADLINE:
                    raise FetchError(Problem(ProblemKind.TIMEOUT, e.message)) from e
                if e.kind is NetKind.TOO_LARGE:
                    message = f"GET {url}: response larger than {max_bytes} bytes"
                    raise FetchError(Problem(ProblemKind.MALFORMED, message)) from e
                # a URL, redirect or protocol problem: retrying cannot help
                raise FetchError(Problem(ProblemKind.UNREACHABLE, e.message)) from e
            if raw.status in RETRY_STATUSES:
                problem = Problem(
                    ProblemKind.HTTP_ERROR,
                    f"GET {url}: HTTP {raw.status}{_why(raw.status)}",
                    raw.status,
                )
                retry_after = _retry_after(raw.headers)
                continue
            return raw
        assert problem is not None
        if self.retries:
            problem = Problem(
                problem.kind,
                f"{problem.message} (after {self.retries + 1} attempts)",
                problem.http_status,
            )
        raise FetchError(problem)


def _why(status: int) -> str:
    """The standard phrase of a status (never the server's own reason text)."""
    phrase = net.status_phrase(status)
    return f" {phrase}" if phrase else ""


def _backoff(attempt: int, retry_after: float | None) -> float:
    wait = BACKOFF_BASE * float(2**attempt)
    if retry_after is not None:
        wait = max(wait, retry_after)
    return min(wait, BACKOFF_MAX)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = header(headers, "Retry-After") or ""
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def header(headers: Mapping[str, str], name: str) -> str | None:
    wanted = name.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), None)
