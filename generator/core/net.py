"""The one network client: every HTTP request the tool makes goes through `Client.request`.

What it guarantees, whoever calls it:

- **Off unless asked for.** A `Client` is made by the command: `Client.off()` (the default for
  every command that can work without the network, such as `build`, `status` and `evidence
  verify` without `--online`) refuses every request with `NetworkOff` before a socket is opened;
  `Client.on()` only for a command whose user asked for the network (`--online`, or a command
  that is the network's own, such as `evidence pull/push` and `pins`).
- **Deadlines, not only read timeouts.** Each request has a total deadline (connect, headers,
  body together) and each client a deadline for the whole command; a watchdog shuts the socket
  down when either passes, so a server that trickles one byte at a time cannot stall a command.
  `AICR_CATALOG_NET_DEADLINE` (seconds) sets the command's deadline.
- **Byte caps.** Every body is read with the cap its caller must give (`max_bytes`, no default);
  a declared or actual larger body is `net.too-large`. Error answers are read to
  `ERROR_BODY_BYTES` at most. Headers are bounded by `http.client` (64 KiB a line, 100 lines).
  Bodies are asked for without content encoding (`Accept-Encoding: identity`), so nothing here
  inflates.
- **Redirects** are followed to the same scheme and host only (at most `MAX_REDIRECTS`);
  `Redirects.CONTENT_ADDRESSED` (a blob read by digest, checked by its caller) may also follow
  to another HTTPS host, without the `Authorization` header. Plain HTTP only to a loopback host.
- **No remote text.** A `NetError` says what failed in this module's own words, with a
  classified `kind` (`net.timeout`, `net.unreachable`, ...); no server's reason phrase or error
  body is ever part of a message. `Response` carries status, headers and the capped body only.

The one server is here too: `serve_site` shows a built site (`aicr-catalog serve`) with the
standard library's static file handler on 127.0.0.1 only; no caller can choose another address.
It makes no request and answers a missing page with the site's own 404 page.

tests/test_boundaries_net.py fails when a module outside this one imports a network library.
"""

from __future__ import annotations

import functools
import http.client
import http.server
import ipaddress
import os
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from http import HTTPStatus
from pathlib import Path
from types import TracebackType
from typing import Any

from generator.core import envvars, safeio
from generator.core.errors import CatalogError, Diagnostic, UsageError
from generator.core.urls import SplitResult, urljoin, urlsplit

DEADLINE_ENV = "AICR_CATALOG_NET_DEADLINE"
DEFAULT_REQUEST_SECONDS = 120.0  # one request, connect to last byte
DEFAULT_COMMAND_SECONDS = 900.0  # every request of one command together
DEFAULT_IDLE_SECONDS = 30.0  # one socket operation waiting for the peer
MAX_REDIRECTS = 5
ERROR_BODY_BYTES = 64 << 10  # what is read of an answer that is not 2xx/3xx
CHUNK = 1 << 16
USER_AGENT = "aicr-catalog/1"
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class NetKind(StrEnum):
    """Why a request failed; also the diagnostic's rule."""

    OFF = "net.off"
    URL = "net.url"
    TIMEOUT = "net.timeout"
    DEADLINE = "net.deadline"
    UNREACHABLE = "net.unreachable"
    TLS = "net.tls"
    TOO_LARGE = "net.too-large"
    REDIRECT = "net.redirect"
    PROTOCOL = "net.protocol"


class NetError(CatalogError):
    """A request that produced no usable answer. `message` is this module's own text only."""

    exit_code = 1

    def __init__(self, kind: NetKind, url: str, message: str, reason: str = "") -> None:
        self.kind = kind
        self.url = url
        self.reason = reason or kind.value.removeprefix("net.")  # a short classified phrase
        super().__init__(message, [Diagnostic(url or "(network)", 0, 0, "$", message, kind.value)])


class NetworkOff(NetError):
    """The command was not asked to use the network."""

    exit_code = 2
    hint = "run the command again with --online to allow it to use the network"


class Redirects(Enum):
    SAME_HOST = "same-host"
    CONTENT_ADDRESSED = "content-addressed"  # the caller checks the body against a digest


@dataclass(frozen=True, slots=True)
class Response:
    url: str  # the URL that answered (after redirects)
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes  # at most the cap the request gave (ERROR_BODY_BYTES for an error status)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class NetStats:
    requests: int = 0
    body_bytes: int = 0


def status_phrase(status: int) -> str:
    """The standard phrase of an HTTP status (`404` -> `Not Found`), "" for one the standard
    does not name: never the server's own reason text."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def is_loopback(host: str) -> bool:
    """`localhost`, 127.0.0.0/8 or ::1 (a host name without port; brackets allowed)."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _same_origin(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.scheme, pa.netloc) == (pb.scheme, pb.netloc)


def _checked(method: str, target: str, url: str) -> SplitResult:
    """`target` split, when it is an http(s) URL with a host (plain HTTP: a loopback host)."""
    parts = urlsplit(target)
    try:
        parts.port  # noqa: B018 - a bad port raises here
        host = parts.hostname or ""
    except ValueError:
        host = ""
    if parts.scheme not in ("http", "https") or not host:
        raise NetError(NetKind.URL, url, f"{method} {url}: not an http(s) URL with a host")
    if parts.scheme == "http" and not is_loopback(host):
        raise NetError(
            NetKind.URL, url, f"{method} {url}: plain HTTP only to a loopback host; use https"
        )
    return parts


def _connection(parts: SplitResult, timeout: float) -> http.client.HTTPConnection:
    host, port = parts.hostname or "", parts.port
    if parts.scheme == "https":
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=_tls_context())
    return http.client.HTTPConnection(host, port, timeout=timeout)


def _shut(conn: http.client.HTTPConnection, expired: threading.Event) -> None:
    """The watchdog: the deadline passed; wake whatever waits on the socket."""
    expired.set()
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _env_seconds(default: float) -> float:
    """$AICR_CATALOG_NET_DEADLINE in seconds (`default` when unset); anything but a positive
    number is a usage error, not a silent default."""
    raw = envvars.get(DEADLINE_ENV) or ""
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        message = f"{DEADLINE_ENV}={raw!r} is not a positive number of seconds"
        raise UsageError(message, [Diagnostic(DEADLINE_ENV, 0, 0, "$", message, "net.deadline")])
    return value


_tls: ssl.SSLContext | None = None


def _tls_context() -> ssl.SSLContext:
    global _tls
    if _tls is None:
        try:
            import certifi

            _tls = ssl.create_default_context(cafile=certifi.where())
        except ImportError:  # pragma: no cover - certifi comes with the dependencies
            _tls = ssl.create_default_context()
    return _tls


@dataclass
class Client:
    """The network, on or off, with its deadlines. Made once per command (see the module)."""

    online: bool
    command_seconds: float = DEFAULT_COMMAND_SECONDS
    request_seconds: float = DEFAULT_REQUEST_SECONDS
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    purpose: str = ""  # what the network would be for, in NetworkOff's message
    stats: NetStats = field(default_factory=NetStats)
    _started: float = field(default_factory=time.monotonic)

    @classmethod
    def off(cls, purpose: str = "") -> Client:
        return cls(online=False, purpose=purpose)

    @classmethod
    def on(
        cls,
        *,
        command_seconds: float | None = None,
        request_seconds: float = DEFAULT_REQUEST_SECONDS,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
    ) -> Client:
        total = (
            command_seconds
            if command_seconds is not None
            else _env_seconds(DEFAULT_COMMAND_SECONDS)
        )
        return cls(
            online=True,
            command_seconds=total,
            request_seconds=min(request_seconds, total),
            idle_seconds=min(idle_seconds, total),
        )

    def remaining(self) -> float:
        return self.command_seconds - (time.monotonic() - self._started)

    def request(
        self,
        method: str,
        url: str,
        *,
        max_bytes: int,
        headers: Mapping[str, str] | None = None,
        data: bytes | None = None,
        redirects: Redirects = Redirects.SAME_HOST,
        follow: bool = True,
    ) -> Response:
        """One request and its capped body (see the module for every guarantee)."""
        deadline = self._deadline(method, url)
        sent = dict(headers or {})
        current = url
        for hop in range(MAX_REDIRECTS + 1):
            resp = self._once(method, current, url, sent, data, max_bytes, deadline)
            location = resp.header("location")
            if not follow or resp.status not in _REDIRECT_STATUSES or not location:
                return resp
            if hop == MAX_REDIRECTS:
                break
            target = urljoin(current, location)
            if not _same_origin(target, current) and not _same_origin(target, url):
                if (
                    redirects is not Redirects.CONTENT_ADDRESSED
                    or urlsplit(target).scheme != "https"
                ):
                    raise NetError(
                        NetKind.REDIRECT,
                        url,
                        f"{method} {url}: redirected to another host; "
                        "only same-host redirects are followed",
                    )
                sent = {k: v for k, v in sent.items() if k.lower() != "authorization"}
            if resp.status == 303 or (resp.status in (301, 302) and method == "POST"):
                method, data = "GET", None
            current = target
        raise NetError(
            NetKind.REDIRECT, url, f"{method} {url}: more than {MAX_REDIRECTS} redirects"
        )

    def _deadline(self, method: str, url: str) -> float:
        """When this request must be over; NetworkOff or a passed command deadline raise."""
        if not self.online:
            why = f" ({self.purpose})" if self.purpose else ""
            raise NetworkOff(
                NetKind.OFF,
                url,
                f"{method} {url}: the network is off for this command{why}; "
                "pass --online to allow it",
            )
        left = self.remaining()
        if left <= 0:
            raise NetError(
                NetKind.DEADLINE,
                url,
                f"{method} {url}: the command's network deadline of "
                f"{self.command_seconds:g} s has passed",
            )
        return time.monotonic() + min(self.request_seconds, left)

    def _once(
        self,
        method: str,
        target: str,
        url: str,
        headers: Mapping[str, str],
        data: bytes | None,
        max_bytes: int,
        deadline: float,
    ) -> Response:
        """One exchange with `target`; messages name `url`, the URL the caller asked for (a
        redirect's Location is the server's text and is never shown)."""
        parts = _checked(method, target, url)
        left = deadline - time.monotonic()
        if left <= 0:
            raise self._expired(method, url)
        conn = _connection(parts, min(self.idle_seconds, left))
        expired = threading.Event()
        timer = threading.Timer(left, _shut, (conn, expired))
        timer.daemon = True
        timer.start()
        self.stats.requests += 1
        try:
            return self._exchange(conn, method, parts, headers, data, max_bytes, url, deadline)
        except NetError:
            raise
        except (OSError, http.client.HTTPException) as e:
            late = expired.is_set() or time.monotonic() >= deadline - 0.001
            raise self._classified(e, late, conn.sock is None, method, url) from e
        finally:
            timer.cancel()
            conn.close()

    def _exchange(
        self,
        conn: http.client.HTTPConnection,
        method: str,
        parts: SplitResult,
        headers: Mapping[str, str],
        data: bytes | None,
        max_bytes: int,
        url: str,
        deadline: float,
    ) -> Response:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.putrequest(method, path, skip_accept_encoding=True)
        conn.putheader("Accept-Encoding", "identity")
        if not any(k.lower() == "user-agent" for k in headers):
            conn.putheader("User-Agent", USER_AGENT)
        for k, v in headers.items():
            conn.putheader(k, v)
        if data is not None:
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        resp = conn.getresponse()
        status = resp.status
        names: dict[str, str] = {}
        for k, v in resp.getheaders():
            key = k.lower()
            names[key] = f"{names[key]}, {v}" if key in names else v
        cap = max_bytes if status < 400 else min(max_bytes, ERROR_BODY_BYTES)
        body = b""
        if method != "HEAD" and status not in (204, 304) and not 100 <= status < 200:
            body = self._body(conn, resp, names, cap, status >= 400, method, url, deadline)
        return Response(parts.geturl(), status, names, body)

    def _classified(
        self, e: BaseException, late: bool, unconnected: bool, method: str, url: str
    ) -> NetError:
        """The NetError of a failed exchange, in this module's words."""
        if late:
            return self._expired(method, url)
        if isinstance(e, TimeoutError):
            why = f"timed out after {self.idle_seconds:g} s"
            return NetError(
                NetKind.TIMEOUT,
                url,
                f"{method} {url}: no answer within {self.idle_seconds:g} s",
                why,
            )
        if isinstance(e, ssl.SSLError):
            why = f"TLS: {type(e).__name__}"
            return NetError(NetKind.TLS, url, f"{method} {url}: unreachable ({why})", why)
        if isinstance(e, socket.gaierror):
            return NetError(
                NetKind.UNREACHABLE, url, f"{method} {url}: host not found", "host not found"
            )
        if isinstance(e, ConnectionRefusedError):
            why = "connection refused"
            return NetError(NetKind.UNREACHABLE, url, f"{method} {url}: {why}", why)
        kind = NetKind.UNREACHABLE if unconnected else NetKind.PROTOCOL
        what = "cannot connect" if kind is NetKind.UNREACHABLE else "the answer broke off"
        why = f"{what} ({type(e).__name__})"
        return NetError(kind, url, f"{method} {url}: {why}", why)

    def _body(
        self,
        conn: http.client.HTTPConnection,
        resp: http.client.HTTPResponse,
        headers: Mapping[str, str],
        cap: int,
        truncate: bool,
        method: str,
        url: str,
        deadline: float,
    ) -> bytes:
        """The body, at most `cap` bytes (more is an error, or cut off for an error answer)."""
        declared = headers.get("content-length", "")
        if not truncate and declared.isdigit() and int(declared) > cap:
            raise NetError(
                NetKind.TOO_LARGE,
                url,
                f"{method} {url}: the answer declares {declared} bytes, more than the limit of {cap}",
            )
        chunks: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._expired(method, url)
            if conn.sock is not None:
                conn.sock.settimeout(min(self.idle_seconds, left))
            chunk = resp.read1(CHUNK)
            if not chunk:
                break
            size += len(chunk)
            self.stats.body_bytes += len(chunk)
            if size > cap:
                if truncate:
                    chunks.append(chunk[: cap - (size - len(chunk))])
                    break
                raise NetError(
                    NetKind.TOO_LARGE,
                    url,
                    f"{method} {url}: the answer is larger than the limit of {cap} bytes",
                )
            chunks.append(chunk)
        if time.monotonic() >= deadline - 0.001:  # the watchdog ended the body: not an answer
            raise self._expired(method, url)
        if not truncate and declared.isdigit() and size != int(declared):
            raise NetError(
                NetKind.PROTOCOL,
                url,
                f"{method} {url}: the answer broke off ({size} of {declared} bytes)",
                "the answer broke off",
            )
        return b"".join(chunks)

    def _expired(self, method: str, url: str) -> NetError:
        return NetError(
            NetKind.DEADLINE,
            url,
            f"{method} {url}: no complete answer within the deadline "
            f"({min(self.request_seconds, self.command_seconds):g} s a request, "
            f"{self.command_seconds:g} s the command)",
        )


# --- the one server: a built site shown on loopback -----------------------------------------------

LOOPBACK = "127.0.0.1"  # the only address `serve_site` binds


class _SiteHandler(http.server.SimpleHTTPRequestHandler):
    """The standard static handler, except that a missing page is answered with the site's own
    `404.html` (status 404), as GitHub Pages does, not with Python's bare error page, and that
    no symbolic link in the served tree is followed: a built site holds none (`publish` writes
    regular files), so a link there was planted, and following it could hand any file the user
    can read (a key, the shell history) to whatever runs in their browser. A path with a link
    on the way is answered as missing, and the refusal is logged."""

    not_found: bytes | None = None  # the site's 404.html, read once when serving starts

    def send_head(self) -> Any:
        path = self.translate_path(self.path)  # under the served directory, ".." dropped
        if safeio.real_path(path) != os.path.normpath(path):  # a link on the way
            self.log_error("refused %s: a symbolic link in the served tree", self.path)
            self.send_error(404, "File not found")
            return None
        return super().send_head()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        body = self.not_found
        if code != 404 or body is None or self.command not in ("GET", "HEAD"):
            super().send_error(code, message, explain)
            return
        self.log_error("code %d, message %s", code, message)
        self.send_response(code, message)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)


class SiteServer:
    """A static HTTP server of one directory, bound to 127.0.0.1 (`serve_site`): `host` and
    `port` are where it listens, `serve_forever()` answers until interrupted, `close()` (or leaving a
    `with` block) stops listening."""

    def __init__(self, httpd: http.server.ThreadingHTTPServer) -> None:
        self._httpd = httpd

    @property
    def host(self) -> str:
        """The address it listens on: always `LOOPBACK`."""
        return str(self._httpd.server_address[0])

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def shutdown(self) -> None:
        """Make `serve_forever` return (called from another thread)."""
        self._httpd.shutdown()

    def close(self) -> None:
        self._httpd.server_close()

    def __enter__(self) -> SiteServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def serve_site(root: Path, port: int, *, not_found: bytes | None = None) -> SiteServer:
    """A server of the files under `root` on http://127.0.0.1:`port`/ (0: a free port; see
    `SiteServer.port`), the standard library's static handler, a missing page answered with
    `not_found` (the site's 404.html, status 404) when given. Only the loopback address is
    bound: the tool never listens where another machine could reach it. `OSError` when the port
    cannot be bound (in use, not allowed): the caller says what to do."""
    handler = type("Handler", (_SiteHandler,), {"not_found": not_found})
    bound = functools.partial(handler, directory=str(safeio.resolve(root)))
    return SiteServer(http.server.ThreadingHTTPServer((LOOPBACK, port), bound))
