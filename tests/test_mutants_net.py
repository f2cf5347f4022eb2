"""The network client (`generator/core/net.py`), pinned for `make mutation` (issue 32).

tests/test_net_bounds.py holds the door through the CLI against scripted servers (off unless
asked, trickling and endless answers, caps, redirects). These pin each decision of the client
one by one, mostly without a socket: the redirect rules with a scripted `_once`, the body
reader with a scripted response and a fake clock (so the deadline's edges are exact, not
timed), the classification of failures, the deadline settings; and the request as a scripted
server on 127.0.0.1 sees it (path, headers, body) with the answers it reads or leaves unread.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import types
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import pytest

from generator.core import net
from generator.core.errors import UsageError
from generator.core.net import Client, NetError, NetKind, NetworkOff, Redirects, Response
from tests.test_net_bounds import Server, _answer, _serve

URL = "http://127.0.0.1:9/start"


class Clock:
    """A fake `time` for net.py: `monotonic()` returns `now`, moved by the test."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(net, "time", types.SimpleNamespace(monotonic=c.monotonic))
    return c


# --- errors, loopback, URLs, settings ---------------------------------------------------------


def test_a_net_error_names_its_url_and_kind() -> None:
    e = NetError(NetKind.TIMEOUT, "https://r.example/v2/", "GET https://r.example/v2/: slow")
    assert e.reason == "timeout"
    (d,) = e.diagnostics
    assert (d.path, d.line, d.col, d.json_path, d.rule) == (
        "https://r.example/v2/",
        0,
        0,
        "$",
        "net.timeout",
    )
    assert NetError(NetKind.TLS, "u", "m", "TLS: SSLError").reason == "TLS: SSLError"
    assert NetError(NetKind.URL, "", "m").diagnostics[0].path == "(network)"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.9.9.9", True),
        ("[::1]", True),
        ("::1", True),
        ("example.com", False),
        ("10.0.0.1", False),
        ("[::2]", False),
        ("localhost.example.com", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert net.is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("ftp://example.com/x", "not an http(s) URL with a host"),
        ("https:///x", "not an http(s) URL with a host"),
        ("http://127.0.0.1:99999/x", "not an http(s) URL with a host"),
        ("file:///etc/passwd", "not an http(s) URL with a host"),
        ("http://example.com/x", "plain HTTP only to a loopback host"),
        ("http://10.0.0.1/x", "plain HTTP only to a loopback host"),
    ],
)
def test_checked_refuses_what_is_no_allowed_url(target: str, why: str) -> None:
    with pytest.raises(NetError) as e:
        net._checked("GET", target, "https://asked/")
    assert e.value.kind is NetKind.URL and why in e.value.message
    assert e.value.message.startswith("GET https://asked/: ")


@pytest.mark.parametrize(
    "target", ["https://example.com/x", "http://127.0.0.1:5000/x", "http://localhost/x"]
)
def test_checked_accepts_https_and_loopback_http(target: str) -> None:
    assert net._checked("GET", target, target).geturl() == target


def test_the_connection_matches_the_scheme() -> None:
    secure = net._connection(urlsplit("https://example.com:8443/x"), 5.0)
    plain = net._connection(urlsplit("http://127.0.0.1:8080/x"), 5.0)
    assert isinstance(secure, http.client.HTTPSConnection)
    assert (secure.host, secure.port, secure.timeout) == ("example.com", 8443, 5.0)
    assert type(plain) is http.client.HTTPConnection
    assert (plain.host, plain.port) == ("127.0.0.1", 8080)


def test_one_tls_context_for_every_request() -> None:
    first = net._tls_context()
    assert isinstance(first, ssl.SSLContext) and net._tls_context() is first


def test_the_watchdog_wakes_the_socket() -> None:
    a, b = socket.socketpair()
    try:
        conn = http.client.HTTPConnection("127.0.0.1")
        conn.sock = a
        expired = threading.Event()
        net._shut(conn, expired)
        assert expired.is_set()
        b.settimeout(5)
        assert b.recv(1) == b""  # shut down: the peer sees the end
        conn.sock = None
        again = threading.Event()
        net._shut(conn, again)  # no socket yet: only the flag
        assert again.is_set()
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(("raw", "seconds"), [("", 900.0), ("5", 5.0), ("0.5", 0.5), ("1e3", 1e3)])
def test_the_deadline_variable(raw: str, seconds: float, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(net.DEADLINE_ENV, raw)
    assert net._env_seconds(900.0) == seconds
    client = Client.on()
    assert client.online and client.command_seconds == seconds
    assert client.request_seconds == min(120.0, seconds)


@pytest.mark.parametrize("raw", ["0", "-1", "abc", "inf", "nan", "0.0"])
def test_a_bad_deadline_variable_is_a_usage_error(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(net.DEADLINE_ENV, raw)
    with pytest.raises(UsageError) as e:
        net._env_seconds(900.0)
    (d,) = e.value.diagnostics
    assert (d.path, d.line, d.col, d.rule) == (net.DEADLINE_ENV, 0, 0, "net.deadline")
    assert "is not a positive number of seconds" in e.value.message


def test_the_client_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(net.DEADLINE_ENV, raising=False)
    assert Client.off().online is False
    assert Client.on().command_seconds == net.DEFAULT_COMMAND_SECONDS
    monkeypatch.setenv(net.DEADLINE_ENV, "50")
    given = Client.on(command_seconds=7, request_seconds=3, idle_seconds=10)
    assert (given.online, given.command_seconds, given.request_seconds, given.idle_seconds) == (
        True,
        7,
        3,
        7,
    )


# --- off and the deadlines ---------------------------------------------------------------------


def test_an_off_client_says_what_the_network_was_for() -> None:
    with pytest.raises(NetworkOff) as e:
        Client.off("pulling evidence").request("GET", URL, max_bytes=10)
    assert e.value.message == (
        f"GET {URL}: the network is off for this command (pulling evidence); "
        "pass --online to allow it"
    )
    with pytest.raises(NetworkOff) as e:
        Client.off().request("GET", URL, max_bytes=10)
    assert "for this command; pass --online" in e.value.message


def test_the_request_deadline_is_the_smaller_of_request_and_command(clock: Clock) -> None:
    client = Client(online=True, command_seconds=10, request_seconds=4, _started=clock.now)
    assert client._deadline("GET", URL) == clock.now + 4
    clock.now += 9.5  # half a second left of the command
    assert client._deadline("GET", URL) == clock.now + 0.5
    clock.now += 0.5  # none left
    with pytest.raises(NetError) as e:
        client._deadline("GET", URL)
    assert e.value.kind is NetKind.DEADLINE
    assert "the command's network deadline of 10 s has passed" in e.value.message


def test_an_exchange_starts_only_before_its_deadline(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def exchange(self: Client, conn: Any, method: str, parts: Any, *rest: Any) -> Response:
        calls.append(method)
        return Response(parts.geturl(), 200, {}, b"ok")

    monkeypatch.setattr(Client, "_exchange", exchange)
    client = Client(online=True, _started=clock.now)
    for deadline in (clock.now, clock.now - 1):
        with pytest.raises(NetError) as e:
            client._once("GET", URL, URL, {}, None, 10, deadline)
        assert e.value.kind is NetKind.DEADLINE
        assert "no complete answer within the deadline (120 s a request, 900 s" in e.value.message
    assert calls == [] and client.stats.requests == 0
    assert client._once("GET", URL, URL, {}, None, 10, clock.now + 0.5).body == b"ok"
    assert client._once("GET", URL, URL, {}, None, 10, clock.now + 0.5).status == 200
    assert calls == ["GET", "GET"] and client.stats.requests == 2


@pytest.mark.parametrize(
    ("error", "connected", "at_deadline", "kind", "reason"),
    [
        (ConnectionResetError(), False, False, NetKind.UNREACHABLE, "cannot connect"),
        (ConnectionResetError(), True, False, NetKind.PROTOCOL, "the answer broke off"),
        (ConnectionResetError(), True, True, NetKind.DEADLINE, "deadline"),
        (
            http.client.RemoteDisconnected("closed"),
            True,
            False,
            NetKind.PROTOCOL,
            "the answer broke",
        ),
    ],
)
def test_a_failed_exchange_is_classified(
    error: Exception,
    connected: bool,
    at_deadline: bool,
    kind: NetKind,
    reason: str,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deadline = clock.now + 30
    a, b = socket.socketpair()

    def exchange(self: Client, conn: Any, *rest: Any) -> Response:
        if connected:
            conn.sock = a
        if at_deadline:
            clock.now = deadline - 0.001  # the watchdog has not fired yet: the clock says late
        raise error

    monkeypatch.setattr(Client, "_exchange", exchange)
    try:
        with pytest.raises(NetError) as e:
            Client(online=True, _started=clock.now)._once("GET", URL, URL, {}, None, 10, deadline)
    finally:
        a.close()
        b.close()
    assert e.value.kind is kind and reason in e.value.reason


def test_a_net_error_of_the_exchange_passes_unchanged(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = NetError(NetKind.TOO_LARGE, URL, "too large")

    def exchange(self: Client, *rest: Any) -> Response:
        raise mine

    monkeypatch.setattr(Client, "_exchange", exchange)
    with pytest.raises(NetError) as e:
        Client(online=True, _started=clock.now)._once("GET", URL, URL, {}, None, 10, clock.now + 5)
    assert e.value is mine


@pytest.mark.parametrize(
    ("error", "late", "unconnected", "kind", "reason"),
    [
        (TimeoutError(), True, False, NetKind.DEADLINE, "deadline"),
        (TimeoutError(), False, False, NetKind.TIMEOUT, "timed out after 30 s"),
        (ssl.SSLError(), False, False, NetKind.TLS, "TLS: SSLError"),
        (ssl.SSLCertVerificationError(), False, True, NetKind.TLS, "TLS: SSLCertVerification"),
        (socket.gaierror(), False, True, NetKind.UNREACHABLE, "host not found"),
        (ConnectionRefusedError(), False, True, NetKind.UNREACHABLE, "connection refused"),
        (OSError(), False, True, NetKind.UNREACHABLE, "cannot connect (OSError)"),
        (OSError(), False, False, NetKind.PROTOCOL, "the answer broke off (OSError)"),
        (
            http.client.BadStatusLine("x"),
            False,
            False,
            NetKind.PROTOCOL,
            "the answer broke off (BadStatus",
        ),
    ],
)
def test_classified(
    error: BaseException, late: bool, unconnected: bool, kind: NetKind, reason: str
) -> None:
    got = Client(online=True)._classified(error, late, unconnected, "GET", URL)
    assert got.kind is kind and got.reason.startswith(reason)
    assert got.message.startswith(f"GET {URL}: ")


# --- redirects, with a scripted _once ---------------------------------------------------------


def _script(
    monkeypatch: pytest.MonkeyPatch, answers: dict[str, Response]
) -> list[tuple[str, str, dict[str, str], bytes | None]]:
    """Client._once answers from `answers` by URL; returns the requests made."""
    made: list[tuple[str, str, dict[str, str], bytes | None]] = []

    def once(
        self: Client,
        method: str,
        target: str,
        url: str,
        headers: Mapping[str, str],
        data: bytes | None,
        max_bytes: int,
        deadline: float,
    ) -> Response:
        made.append((method, target, dict(headers), data))
        return answers[target]

    monkeypatch.setattr(Client, "_once", once)
    return made


def _moved(status: int, location: str | None) -> Response:
    return Response("x", status, {"location": location} if location else {}, b"")


OK = Response("x", 200, {}, b"done")


def test_same_host_redirects_are_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _script(
        monkeypatch,
        {
            "https://a.example/1": _moved(302, "/2"),
            "https://a.example/2": _moved(301, "https://a.example/3?q=1"),
            "https://a.example/3?q=1": OK,
        },
    )
    got = Client.on().request(
        "GET", "https://a.example/1", max_bytes=10, headers={"Authorization": "Bearer t"}
    )
    assert got is OK
    assert [m[1] for m in made] == [
        "https://a.example/1",
        "https://a.example/2",
        "https://a.example/3?q=1",
    ]
    assert all(m[2] == {"Authorization": "Bearer t"} for m in made)


@pytest.mark.parametrize(
    "answer",
    [_moved(302, None), Response("x", 200, {"location": "/2"}, b""), _moved(304, "/2")],
)
def test_what_is_not_a_redirect_is_the_answer(
    answer: Response, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _script(monkeypatch, {"https://a.example/1": answer})
    assert Client.on().request("GET", "https://a.example/1", max_bytes=10) is answer
    assert len(made) == 1


def test_follow_false_returns_the_redirect(monkeypatch: pytest.MonkeyPatch) -> None:
    moved = _moved(307, "/2")
    _script(monkeypatch, {"https://a.example/1": moved})
    assert Client.on().request("GET", "https://a.example/1", max_bytes=10, follow=False) is moved


@pytest.mark.parametrize("redirects", [Redirects.SAME_HOST, Redirects.CONTENT_ADDRESSED])
def test_another_host_is_refused_unless_content_addressed_over_https(
    redirects: Redirects, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _script(
        monkeypatch,
        {
            "https://a.example/1": _moved(302, "https://b.example/blob"),
            "https://b.example/blob": OK,
            "http://127.0.0.1:5/1": _moved(302, "http://127.0.0.2:5/blob"),
        },
    )
    headers = {"Authorization": "Bearer t", "Accept": "*/*"}
    client = Client.on()
    if redirects is Redirects.SAME_HOST:
        with pytest.raises(NetError) as e:
            client.request("GET", "https://a.example/1", max_bytes=9, headers=headers)
        assert e.value.kind is NetKind.REDIRECT and "redirected to another host" in e.value.message
        assert len(made) == 1
    else:
        got = client.request(
            "GET", "https://a.example/1", max_bytes=9, headers=headers, redirects=redirects
        )
        assert got is OK
        assert made[1][2] == {"Accept": "*/*"}  # the token stays with its host
    with pytest.raises(NetError, match="redirected to another host"):  # plain HTTP: never
        client.request("GET", "http://127.0.0.1:5/1", max_bytes=9, redirects=redirects)


def test_back_to_the_asked_host_after_a_content_addressed_hop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The asked host is trusted again whatever its scheme (a loopback registry in the tests)."""
    made = _script(
        monkeypatch,
        {
            "http://127.0.0.1:5/1": _moved(302, "https://b.example/blob"),
            "https://b.example/blob": _moved(302, "http://127.0.0.1:5/2"),
            "http://127.0.0.1:5/2": OK,
        },
    )
    got = Client.on().request(
        "GET", "http://127.0.0.1:5/1", max_bytes=9, redirects=Redirects.CONTENT_ADDRESSED
    )
    assert got is OK and len(made) == 3


def test_at_most_five_redirects(monkeypatch: pytest.MonkeyPatch) -> None:
    hops = {f"https://a.example/{i}": _moved(302, f"/{i + 1}") for i in range(7)}
    made = _script(monkeypatch, hops)
    with pytest.raises(NetError, match="more than 5 redirects") as e:
        Client.on().request("GET", "https://a.example/0", max_bytes=9)
    assert e.value.kind is NetKind.REDIRECT and len(made) == 6
    # the sixth redirect is not followed, wherever it points
    made = _script(monkeypatch, {**hops, "https://a.example/5": _moved(302, "https://b.example/")})
    with pytest.raises(NetError, match="more than 5 redirects"):
        Client.on().request("GET", "https://a.example/0", max_bytes=9)
    assert len(made) == 6


@pytest.mark.parametrize(
    ("status", "method", "after"),
    [
        (303, "POST", "GET"),
        (303, "PUT", "GET"),
        (301, "POST", "GET"),
        (302, "POST", "GET"),
        (307, "POST", "POST"),
        (308, "POST", "POST"),
        (301, "PUT", "PUT"),
        (302, "PUT", "PUT"),
        (302, "GET", "GET"),
    ],
)
def test_the_method_after_a_redirect(
    status: int, method: str, after: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _script(
        monkeypatch, {"https://a.example/1": _moved(status, "/2"), "https://a.example/2": OK}
    )
    Client.on().request(method, "https://a.example/1", max_bytes=9, data=b"body")
    assert made[1][0] == after
    assert made[1][3] == (b"body" if after == method else None)


# --- the body reader, with a scripted response and the fake clock -------------------------------


class Sock:
    def __init__(self) -> None:
        self.timeouts: list[float] = []

    def settimeout(self, seconds: float) -> None:
        self.timeouts.append(seconds)


class Scripted:
    """A response whose read1 gives `chunks`, each read taking `step` seconds of the clock (the
    end of the body, an empty read, takes `end_step`)."""

    def __init__(self, clock: Clock, chunks: list[bytes], step: float, end_step: float) -> None:
        self.clock, self.chunks, self.step, self.end_step = clock, list(chunks), step, end_step
        self.ends = 0

    def read1(self, n: int) -> bytes:
        if not self.chunks:
            self.ends += 1
            assert self.ends < 3, "read on past the end of the body"  # never spin on b""
            self.clock.now += self.end_step
            return b""
        self.clock.now += self.step
        return self.chunks.pop(0)


def _body(
    clock: Clock,
    chunks: list[bytes],
    *,
    cap: int,
    truncate: bool = False,
    declared: str | None = None,
    deadline: float = 100.0,
    sock: Sock | None = None,
    step: float = 1.0,
    end_step: float = 0.0,
) -> bytes:
    client = Client(online=True, idle_seconds=30, _started=clock.now)
    conn = types.SimpleNamespace(sock=sock)
    headers = {"content-length": declared} if declared is not None else {}
    resp = Scripted(clock, chunks, step, end_step)
    return client._body(
        conn,  # type: ignore[arg-type]
        resp,  # type: ignore[arg-type]
        headers,
        cap,
        truncate,
        "GET",
        URL,
        clock.now + deadline,
    )


def test_a_body_of_exactly_the_cap_is_read(clock: Clock) -> None:
    assert _body(clock, [b"12345", b"67890"], cap=10, declared="10") == b"1234567890"
    assert _body(clock, [b"12345", b"67890"], cap=10) == b"1234567890"
    assert _body(clock, [], cap=10) == b""


def test_a_declared_size_over_the_cap_is_refused_unread(clock: Clock) -> None:
    with pytest.raises(NetError, match="declares 11 bytes, more than the limit of 10") as e:
        _body(clock, [b"x" * 11], cap=10, declared="11")
    assert e.value.kind is NetKind.TOO_LARGE


def test_a_body_over_the_cap_is_refused(clock: Clock) -> None:
    with pytest.raises(NetError, match="larger than the limit of 10 bytes") as e:
        _body(clock, [b"123456", b"789012", b"345"], cap=10)
    assert e.value.kind is NetKind.TOO_LARGE


def test_an_error_answer_is_cut_at_its_cap(clock: Clock) -> None:
    chunks = [b"0123456789", b"abcdefghij", b"ABCDEFGHIJ"]
    assert _body(clock, chunks, cap=15, truncate=True, declared="30") == b"0123456789abcde"
    chunks = [b"0123456789", b"abcdefghij", b"ABCDEFGHIJ"]
    assert _body(clock, chunks, cap=15, truncate=True) == b"0123456789abcde"
    assert _body(clock, [b"short"], cap=15, truncate=True, declared="30") == b"short"


def test_a_body_cut_short_of_its_declared_size_is_no_answer(clock: Clock) -> None:
    with pytest.raises(NetError, match=r"broke off \(5 of 10 bytes\)") as e:
        _body(clock, [b"12345"], cap=100, declared="10")
    assert e.value.kind is NetKind.PROTOCOL


def test_the_body_stops_at_the_deadline(clock: Clock) -> None:
    # one second a read: the second read would start at the deadline, and is not made
    with pytest.raises(NetError) as e:
        _body(clock, [b"x", b"yyyy"], cap=3, deadline=1.0)
    assert e.value.kind is NetKind.DEADLINE
    # half a second left when the end of the body is read: in time
    assert _body(clock, [b"ab", b"cd"], cap=100, deadline=2.5) == b"abcd"


def test_a_body_ended_at_the_deadline_is_no_answer(clock: Clock) -> None:
    """The watchdog shuts the socket at the deadline, which reads as the end of the body: a body
    whose end came at the deadline (less a millisecond) is not an answer."""
    start = clock.now
    assert (start + 1.001) - 0.001 == start + 1  # exact in binary: the edge itself is tested
    with pytest.raises(NetError) as e:
        _body(clock, [b"ab"], cap=100, deadline=1.001)
    assert e.value.kind is NetKind.DEADLINE
    assert _body(clock, [b"ab"], cap=100, deadline=1.5) == b"ab"


def test_each_read_waits_at_most_the_idle_time_or_what_is_left(clock: Clock) -> None:
    sock = Sock()
    assert _body(clock, [b"ab", b"cd"], cap=100, deadline=31.0, sock=sock) == b"abcd"
    assert sock.timeouts == [30, 30, 29]
    assert _body(clock, [b"ab"], cap=100, sock=None) == b"ab"  # no socket: nothing to set


# --- the exchange, against a scripted server on 127.0.0.1 --------------------------------------


@pytest.fixture
def server() -> Iterator[Server]:
    yield from _serve("127.0.0.1")


def _record(seen: list[dict[str, Any]], status: int = 200, body: bytes = b"ok") -> Any:
    def handle(h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        seen.append(
            {
                "method": h.command,
                "path": h.path,
                "agent": h.headers.get_all("User-Agent"),
                "encoding": h.headers.get_all("Accept-Encoding"),
                "length": h.headers.get("Content-Length"),
                "body": h.rfile.read(length) if length else b"",
            }
        )
        _answer(status, body)(h)

    return handle


def test_the_request_the_server_sees(server: Server) -> None:
    seen: list[dict[str, Any]] = []
    server.routes["/"] = _record(seen)
    client = Client.on()
    client.request("GET", server.url, max_bytes=10)
    client.request("GET", f"{server.url}/a/b?c=d", max_bytes=10, headers={"Accept": "x"})
    client.request("POST", f"{server.url}/p", max_bytes=10, data=b"12345")
    client.request("GET", f"{server.url}/u", max_bytes=10, headers={"user-agent": "me/2"})
    assert [(s["method"], s["path"], s["body"], s["length"]) for s in seen] == [
        ("GET", "/", b"", None),
        ("GET", "/a/b?c=d", b"", None),
        ("POST", "/p", b"12345", "5"),
        ("GET", "/u", b"", None),
    ]
    assert [s["agent"] for s in seen] == [["aicr-catalog/1"]] * 3 + [["me/2"]]
    assert all(s["encoding"] == ["identity"] for s in seen)
    assert client.stats.requests == 4 and client.stats.body_bytes == 8


def test_repeated_headers_are_joined(server: Server) -> None:
    def handle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("X-Part", "1")
        h.send_header("x-part", "2")
        h.send_header("Content-Length", "0")
        h.end_headers()

    server.routes["/"] = handle
    got = Client.on().request("GET", server.url, max_bytes=10)
    assert got.header("X-Part") == "1, 2" and got.headers["x-part"] == "1, 2"


def test_an_error_answer_is_read_to_its_own_cap(server: Server) -> None:
    big = b"e" * (net.ERROR_BODY_BYTES + 100)
    server.routes["/400"] = _answer(400, big)
    server.routes["/399"] = _answer(299, big)
    client = Client.on()
    got = client.request("GET", f"{server.url}/400", max_bytes=1 << 20)
    assert got.status == 400 and got.body == big[: net.ERROR_BODY_BYTES]
    assert client.request("GET", f"{server.url}/399", max_bytes=1 << 20).body == big
    small = client.request("GET", f"{server.url}/400", max_bytes=10)
    assert small.body == b"e" * 10


def _declared(status: int, length: int) -> Any:
    """An answer with a Content-Length and no body (as a HEAD, 204, 304 or 1xx answer has)."""

    def handle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Length", str(length))
        h.end_headers()

    return handle


@pytest.mark.parametrize(("status", "method"), [(200, "HEAD"), (204, "GET"), (304, "GET")])
def test_answers_without_a_body_are_not_read(server: Server, status: int, method: str) -> None:
    server.routes["/"] = _declared(status, 1000)
    got = Client.on().request(method, server.url, max_bytes=10)
    assert (got.status, got.body, got.header("content-length")) == (status, b"", "1000")


def test_a_get_reads_its_body(server: Server) -> None:
    server.routes["/"] = _answer(200, b"hello")
    assert Client.on().request("GET", server.url, max_bytes=5).body == b"hello"
    server.routes["/"] = _answer(201, b"made")
    assert Client.on().request("GET", server.url, max_bytes=5).body == b"made"
