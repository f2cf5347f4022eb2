"""The network door and the registry path's bounds (issue 27, items 4 and 5), through the CLI.

Every registry here is a scripted HTTP server on 127.0.0.1 started by the test (or a real
CNCF registry, tests/oci_fixtures.py). Hostile answers run in a forked child under the memory
and time limits of the hostile I/O tests (`tests.test_cases.run_isolated`); what is judged is
counted (requests a server saw, bytes a client read, the rule of the error), never a tight
wall-clock figure: the time limits are generous bounds that only a hang would cross.
"""

from __future__ import annotations

import io
import json
import tarfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from generator.cli import main
from generator.core import archive, net
from generator.core.yamlio import MAX_EXPANDED_BYTES
from generator.evidence import oci
from generator.evidence.pointer import render_pointer
from generator.evidence.recipedigest import DigestError, recipe_digest
from generator.evidence.store import source_id
from generator.site.apifiles import published_runs
from tests import evidence_fixtures as ef
from tests.oci_fixtures import tar_directory
from tests.test_cases import MEMORY_LIMIT, run_isolated

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "catalog"
V3 = "https://aicr.run/recipe-evidence/v3"
RECIPE = "h100-eks-ubuntu-training"
IDENTITY = (
    "https://github.com/example-lab/aicr-runs/.github/workflows/evidence.yaml@refs/heads/main"
)
REMOTE_TEXT = "REMOTE-SECRET-<script>alert(1)</script>"

Handler = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class Server:
    """A scripted server: `routes` by path prefix; every request path is recorded in `seen`."""

    host: str  # 127.0.0.x:port
    routes: dict[str, Handler]
    seen: list[str] = field(default_factory=list)
    sent: list[int] = field(default_factory=lambda: [0])  # body bytes the handlers wrote

    @property
    def url(self) -> str:
        return f"http://{self.host}"


def _serve(address: str) -> Iterator[Server]:
    routes: dict[str, Handler] = {}
    holder: list[Server] = []

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _any(self) -> None:
            holder[0].seen.append(f"{self.command} {self.path}")
            for prefix, handler in routes.items():
                if self.path.startswith(prefix):
                    handler(self)
                    return
            _answer(404, b"")(self)

        do_GET = do_HEAD = do_PUT = do_POST = _any

    server = ThreadingHTTPServer((address, 0), H)
    server.daemon_threads = True
    holder.append(Server(f"{address}:{server.server_address[1]}", routes))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield holder[0]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    yield from _serve("127.0.0.1")


@pytest.fixture
def other_host() -> Iterator[Server]:
    """A second host (127.0.0.2: another address of the loopback network)."""
    yield from _serve("127.0.0.2")


def _answer(status: int, body: bytes, headers: dict[str, str] | None = None) -> Handler:
    def handle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    return handle


def _trickle(server: Server, phase: str, seconds: float = 30) -> Handler:
    """An answer that never completes: one byte every 50 ms in the status line and headers, in
    the body, or nothing at all after the connection is accepted (for at most `seconds`)."""

    def handle(h: BaseHTTPRequestHandler) -> None:
        end = time.monotonic() + seconds
        try:
            if phase == "silent":
                time.sleep(seconds)
                return
            if phase == "headers":
                h.wfile.write(b"HTTP/1.1 200 OK\r\n")
                while time.monotonic() < end:
                    h.wfile.write(b"X")  # a header line that never ends
                    h.wfile.flush()
                    time.sleep(0.05)
                return
            h.send_response(200)
            h.send_header("Content-Length", "1000")  # under every cap: only time can stop it
            h.end_headers()
            while time.monotonic() < end:
                h.wfile.write(b"{")
                h.wfile.flush()
                server.sent[0] += 1
                time.sleep(0.05)
        except OSError:
            return

    return handle


def _endless(server: Server) -> Handler:
    """A 200 with a chunked body that never ends (until the client goes away)."""

    def handle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        chunk = b'{"token": "' + b"A" * 65536
        try:
            for _ in range(100_000):  # 6.5 GB at most; the client stops long before
                h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                server.sent[0] += len(chunk)
        except OSError:
            return

    return handle


def _cli(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = CliRunner().invoke(main, list(args), env=env or {})
    return {"code": result.exit_code, "out": result.output}


def _isolated(fn: Callable[[], dict[str, Any]], seconds: float = 15) -> dict[str, Any]:
    out = run_isolated(fn, seconds=seconds, memory=MEMORY_LIMIT)
    assert out.died is None, f"the child {out.died}"
    assert out.error is None, out.error
    return out.payload


def _pointer_tree(tmp: Path, oci_ref: str, digest: str) -> Path:
    """An evidence directory holding one upstream pointer file that names `oci_ref`@`digest`."""
    evidence = tmp / "evidence"
    rel = f"{RECIPE}/{source_id(ef.ISSUER, IDENTITY)}/{digest.replace(':', '-')}.yaml"
    path = evidence / rel
    path.parent.mkdir(parents=True)
    path.write_bytes(
        render_pointer(
            recipe=RECIPE,
            profile=None,
            oci=oci_ref,
            digest=digest,
            predicate_type=V3,
            identity=IDENTITY,
            issuer=ef.ISSUER,
            rekor_log_index=1,
            attested_at="2026-11-30T10:00:00Z",
        )
    )
    return evidence


DIGEST = "sha256:" + "5" * 64


# ---------------------------------------------------------------- off unless asked for (item 4)


def test_build_with_a_pointer_file_makes_no_request(server: Server, tmp_path: Path) -> None:
    """A pointer in evidence/ naming a registry: `build` (no --online) sends it nothing, and the
    run is shown unavailable with the reason, not pulled."""
    evidence = _pointer_tree(tmp_path, f"{server.host}/aicr/evidence", DIGEST)
    out = tmp_path / "site"
    env = {"AICR_CATALOG_OCI_CACHE": str(tmp_path / "cache")}
    got = _cli(
        "build",
        "--catalog",
        str(CATALOG),
        "--evidence",
        str(evidence),
        "--out",
        str(out),
        "--no-bundles",
        "--no-cache",
        env=env,
    )
    assert got["code"] == 0, got["out"][-3000:]
    assert server.seen == []
    api = json.dumps(list(published_runs(out)))
    assert "[oci.offline]" in api and "--online" in api


@pytest.mark.parametrize("command", ["status", "evidence-verify"])
def test_other_commands_reading_pointers_stay_offline(
    server: Server, tmp_path: Path, command: str
) -> None:
    evidence = _pointer_tree(tmp_path, f"{server.host}/aicr/evidence", DIGEST)
    env = {"AICR_CATALOG_OCI_CACHE": str(tmp_path / "cache")}
    if command == "status":
        args = ["status", RECIPE, "--evidence", str(evidence), "--format", "json"]
    else:
        args = ["evidence", "verify", str(evidence), "--format", "json"]
    got = _cli(*args, "--catalog", str(CATALOG), env=env)
    assert server.seen == [] and "[oci.offline]" in got["out"], got["out"][-2000:]
    # asked for, the same command does reach the registry
    _cli(*args, "--online", "--catalog", str(CATALOG), env=env)
    assert server.seen and server.seen[0].startswith("GET /v2/aicr/evidence/manifests/")


def test_a_client_that_is_off_opens_no_socket() -> None:
    with pytest.raises(net.NetworkOff) as e:
        net.Client.off().request("GET", "http://127.0.0.1:1/", max_bytes=1)
    assert e.value.kind is net.NetKind.OFF and e.value.exit_code == 2


# ---------------------------------------------------------------- redirects, remote text (item 4)


def test_build_online_redirect_elsewhere_is_refused_and_no_remote_text_is_published(
    server: Server, other_host: Server, tmp_path: Path
) -> None:
    """`build --online`: the registry redirects to another host, whose error text would land on
    the evidence page and in the API; the redirect is not followed, and what is published is
    the classified reason only."""
    server.routes["/v2/"] = _answer(302, b"", {"Location": f"{other_host.url}/v2/x"})
    other_host.routes["/"] = _answer(500, REMOTE_TEXT.encode())
    evidence = _pointer_tree(tmp_path, f"{server.host}/aicr/evidence", DIGEST)
    out = tmp_path / "site"
    got = _cli(
        "build",
        "--catalog",
        str(CATALOG),
        "--evidence",
        str(evidence),
        "--out",
        str(out),
        "--no-bundles",
        "--no-cache",
        "--online",
        env={"AICR_CATALOG_OCI_CACHE": str(tmp_path / "cache")},
    )
    assert got["code"] == 0, got["out"][-3000:]
    assert server.seen and other_host.seen == []
    published = "".join(
        p.read_text(errors="replace") for p in out.rglob("*") if p.suffix in (".html", ".json")
    )
    assert "REMOTE-SECRET" not in published and "[oci.protocol]" in published
    assert "only same-host redirects are followed" in published


@pytest.mark.parametrize("status", [401, 403, 404, 418, 500, 503])
@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"errors": [{"code": "DENIED", "message": REMOTE_TEXT}]}),
        json.dumps({"errors": [{"code": REMOTE_TEXT, "message": "x"}]}),
        REMOTE_TEXT,
    ],
    ids=["spec-code", "hostile-code", "text"],
)
def test_a_registry_error_is_published_classified(
    server: Server, tmp_path: Path, status: int, body: str
) -> None:
    """Whatever a registry says in an error, a command shows its status and, at most, a
    distribution-spec error code: never the registry's text."""
    server.routes["/v2/"] = _answer(status, body.encode(), {"X-Reason": REMOTE_TEXT})
    evidence = _pointer_tree(tmp_path, f"{server.host}/aicr/evidence", DIGEST)
    got = _cli(
        "evidence",
        "verify",
        str(evidence),
        "--online",
        "--format",
        "json",
        "--catalog",
        str(CATALOG),
        env={"AICR_CATALOG_OCI_CACHE": str(tmp_path / "cache")},
    )
    assert got["code"] == 1 and f"answered {status}" in got["out"], got["out"]
    assert "REMOTE-SECRET" not in got["out"] and "<script>" not in got["out"]


def test_redirects_same_host_only_and_bounded(server: Server, other_host: Server) -> None:
    server.routes["/first"] = _answer(302, b"", {"Location": "/second"})
    server.routes["/second"] = _answer(200, b"here")
    server.routes["/loop"] = _answer(302, b"", {"Location": "/loop"})
    server.routes["/away"] = _answer(307, b"", {"Location": f"{other_host.url}/x"})
    client = net.Client.on()
    assert client.request("GET", f"{server.url}/first", max_bytes=10).body == b"here"
    with pytest.raises(net.NetError) as e:
        client.request("GET", f"{server.url}/loop", max_bytes=10)
    assert e.value.kind is net.NetKind.REDIRECT
    for redirects in net.Redirects:  # content-addressed reads may leave only for HTTPS
        with pytest.raises(net.NetError) as e:
            client.request("GET", f"{server.url}/away", max_bytes=10, redirects=redirects)
        assert e.value.kind is net.NetKind.REDIRECT and other_host.url not in e.value.message
    assert other_host.seen == []


def test_plain_http_only_to_loopback() -> None:
    with pytest.raises(net.NetError) as e:
        net.Client.on().request("GET", "http://registry.example/v2/", max_bytes=1)
    assert e.value.kind is net.NetKind.URL


# ---------------------------------------------------------------- deadlines (items 4 and 5)


@pytest.mark.parametrize("phase", ["headers", "body", "silent"])
@pytest.mark.parametrize("where", ["manifest", "token"])
def test_a_trickling_registry_cannot_stall_evidence_pull(
    server: Server, tmp_path: Path, phase: str, where: str
) -> None:
    """One byte every 50 ms (or none) in the headers or the body of a manifest or a token
    answer: `evidence pull` ends at the command's deadline (2 s here) with a timeout, while each
    single read would have been answered within the per-read timeout."""
    if where == "token":
        challenge = f'Bearer realm="{server.url}/token",service="s"'
        server.routes["/v2/"] = _answer(401, b"", {"WWW-Authenticate": challenge})
        server.routes["/token"] = _trickle(server, phase)
    else:
        server.routes["/v2/"] = _trickle(server, phase)
    ref = f"{server.host}/aicr/evidence@{DIGEST}"
    env = {net.DEADLINE_ENV: "2"}

    def pull() -> dict[str, Any]:
        started = time.monotonic()
        got = _cli("evidence", "pull", ref, "--cache", str(tmp_path / "cache"), env=env)
        return {**got, "seconds": time.monotonic() - started}

    got = _isolated(pull, seconds=10)
    # a token service that stalls is a timeout too (not an anonymous 401)
    assert got["code"] == 1 and "[oci.timeout]" in got["out"], got["out"]
    assert got["seconds"] < 20  # the deadline (2 s) and no hang; a generous bound
    assert server.sent[0] < 2 * 20 * 10  # what was sent before the client gave up


def test_the_command_deadline_spans_requests(server: Server) -> None:
    """Many requests that each finish in time still end at the command's deadline."""

    def slow(h: BaseHTTPRequestHandler) -> None:
        time.sleep(0.3)
        _answer(200, b"ok")(h)

    server.routes["/"] = slow
    client = net.Client.on(command_seconds=1.0)
    done = 0
    with pytest.raises(net.NetError) as e:
        for _ in range(50):
            client.request("GET", f"{server.url}/x", max_bytes=10)
            done += 1
    assert e.value.kind is net.NetKind.DEADLINE and done < 10


# ---------------------------------------------------------------- byte caps (item 5)


def test_an_endless_token_answer_is_read_to_its_cap(server: Server) -> None:
    challenge = f'Bearer realm="{server.url}/token",service="s"'
    server.routes["/v2/"] = _answer(401, b"", {"WWW-Authenticate": challenge})
    server.routes["/token"] = _endless(server)
    client = net.Client.on()
    reg = oci.Registry(server.host, client, plain_http=True)

    def attempt() -> dict[str, Any]:
        try:
            reg.get_manifest("aicr/evidence", DIGEST)
        except oci.RegistryError as e:
            return {"rule": e.rule, "read": client.stats.body_bytes}
        return {"rule": None, "read": client.stats.body_bytes}

    got = _isolated(attempt)
    assert got["rule"] == "oci.unauthorized"  # the 401 stands: no token within the cap
    assert got["read"] <= oci.TOKEN_BYTES + net.CHUNK


@pytest.mark.parametrize("declared", [True, False])
def test_every_body_has_a_cap(server: Server, declared: bool) -> None:
    body = b"x" * 5000
    if declared:
        server.routes["/"] = _answer(200, body)
    else:
        server.routes["/"] = _endless(server)
    client = net.Client.on()
    with pytest.raises(net.NetError) as e:
        client.request("GET", f"{server.url}/", max_bytes=1000)
    assert e.value.kind is net.NetKind.TOO_LARGE
    assert client.stats.body_bytes <= 1000 + net.CHUNK


def _manifest(layers: list[dict[str, Any]]) -> bytes:
    doc = {
        "schemaVersion": 2,
        "mediaType": oci.MANIFEST_V1,
        "artifactType": oci.AICR_ARTIFACT_TYPE,
        "config": {
            "mediaType": oci.EMPTY_MEDIA_TYPE,
            "digest": oci.sha256_digest(b"{}"),
            "size": 2,
        },
        "layers": layers,
    }
    return json.dumps(doc).encode()


def _serve_artifact(server: Server, blobs: dict[str, bytes], manifest: bytes) -> str:
    digest = oci.sha256_digest(manifest)
    server.routes[f"/v2/aicr/a/manifests/{digest}"] = _answer(
        200, manifest, {"Content-Type": oci.MANIFEST_V1}
    )
    for d, data in blobs.items():
        server.routes[f"/v2/aicr/a/blobs/{d}"] = _answer(200, data)
    return f"{server.host}/aicr/a@{digest}"


@pytest.mark.parametrize("layers", [2, 100, 1000])
def test_one_blob_named_by_many_layers_is_refused_before_download(
    server: Server, tmp_path: Path, layers: int
) -> None:
    blob = archive.gzip_bytes(tar_directory({"recipe.yaml": b"a: 1\n"}))
    d = oci.sha256_digest(blob)
    desc = {"mediaType": oci.LAYER_TAR_GZIP, "digest": d, "size": len(blob)}
    ref = _serve_artifact(server, {d: blob}, _manifest([desc] * layers))
    got = _isolated(lambda: _cli("evidence", "pull", ref, "--cache", str(tmp_path / "c")))
    assert got["code"] == 1, got["out"]
    assert "[oci.unsafe-artifact]" in got["out"] or "[oci.protocol]" in got["out"]
    assert [s for s in server.seen if "/blobs/" in s] == []


def test_many_distinct_layers_are_refused_before_download(server: Server, tmp_path: Path) -> None:
    descs = [
        {"mediaType": oci.LAYER_TAR_GZIP, "digest": "sha256:" + f"{i:064x}", "size": 10}
        for i in range(oci.MAX_LAYERS + 1)
    ]
    ref = _serve_artifact(server, {}, _manifest(descs))
    got = _cli("evidence", "pull", ref, "--cache", str(tmp_path / "c"))
    assert got["code"] == 1 and f"more than {oci.MAX_LAYERS} layers" in got["out"]
    assert [s for s in server.seen if "/blobs/" in s] == []


def _gzip_bomb(name: str, size: int) -> bytes:
    """A tar.gz layer holding one file of `size` zero bytes, compressed without holding it."""
    header = tarfile.TarInfo(name)
    header.size, header.mode, header.mtime = size, 0o644, 0
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [z.compress(header.tobuf(format=tarfile.PAX_FORMAT))]
    zeros = bytes(1 << 20)
    for _ in range(size >> 20):
        out.append(z.compress(zeros))
    # the rest, the padding to a 512-byte block, and the end-of-archive blocks
    out.append(z.compress(bytes((size & ((1 << 20) - 1)) + (-size % 512) + 1024)))
    out.append(z.flush())
    return b"".join(out)


def test_small_gzip_layers_that_unpack_to_400_mib_each(server: Server, tmp_path: Path) -> None:
    """Two layers of ~400 KB that unpack to 400 MiB each: refused at the artifact's total cap,
    in a child whose address space may grow by MEMORY_LIMIT only."""
    blobs = {}
    descs = []
    for name in ("a.bin", "b.bin"):
        blob = _gzip_bomb(name, 400 << 20)
        assert len(blob) < 1 << 20
        d = oci.sha256_digest(blob)
        blobs[d] = blob
        descs.append({"mediaType": oci.LAYER_TAR_GZIP, "digest": d, "size": len(blob)})
    ref = _serve_artifact(server, blobs, _manifest(descs))

    def pull() -> dict[str, Any]:
        return _cli("evidence", "pull", ref, "--cache", str(tmp_path / "c"))

    got = _isolated(pull, seconds=30)
    assert got["code"] == 1 and "[oci.unsafe-artifact]" in got["out"], got["out"]
    assert f"unpack to more than {oci.MAX_UNPACKED_BYTES} bytes" in got["out"], got["out"]


def test_layers_share_one_unpacked_budget() -> None:
    """Layers each under the cap whose sum is over it: the second is refused."""
    half = oci.MAX_UNPACKED_BYTES // 2 + 4096
    first = _gzip_bomb("a.bin", half)
    files = oci.untar_layer(first, "layer a", oci.MAX_UNPACKED_BYTES)
    left = oci.MAX_UNPACKED_BYTES - sum(len(v) for v in files.values())
    del files
    with pytest.raises(oci.UnsafeArtifact):
        oci.untar_layer(_gzip_bomb("b.bin", half), "layer b", left)


# ---------------------------------------------------------------- YAML bombs in a signed bundle (item 5)

BOMB = b"""apiVersion: aicr.run/v1alpha3
kind: RecipeResult
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_alias_bomb_in_a_signed_summary_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 500-byte billion-laughs recipe.yaml inside a correctly signed upstream summary bundle,
    pulled through `evidence verify --online` from a real registry: the one bounded YAML reader
    refuses it (bundle-invalid, located), within the memory and time limits."""
    from tests import oci_fixtures
    from tests.test_evidence_oci import FIRST_PARTY

    assert len(BOMB) < 600
    (tmp_path / "registry").mkdir()
    registry = oci_fixtures.start_registry(tmp_path / "registry")
    try:
        authority = ef.make_authority()
        root = ef.write_root(authority, tmp_path)
        # the signed predicate names some digest: the bomb must be reached, not skipped
        monkeypatch.setattr(oci_fixtures, "recipe_digest", lambda *a: "0" * 64)
        files, predicate = oci_fixtures.summary_bundle(BOMB)
        published = oci_fixtures.publish_upstream(
            registry.client(), "aicr/bomb", authority, files, predicate
        )
        evidence = tmp_path / "recipes" / "evidence"
        (evidence / published.pointer_rel).parent.mkdir(parents=True)
        (evidence / published.pointer_rel).write_bytes(published.pointer)
        (evidence / "allowlist.yaml").write_text(FIRST_PARTY)

        def verify() -> dict[str, Any]:
            return _cli(
                "evidence",
                "verify",
                str(evidence),
                "--online",
                "--trust-root",
                str(root),
                "--cache",
                str(tmp_path / "cache"),
                "--format",
                "json",
                "--catalog",
                str(CATALOG),
            )

        got = _isolated(verify, seconds=30)
    finally:
        registry.process.terminate()
        registry.process.wait(timeout=10)
    assert got["code"] == 1, got["out"][-2000:]
    (result,) = json.loads(got["out"])["results"]
    assert result["class"] == "bundle-invalid", result
    assert "alias" in result["reason"] and "recipe.yaml" in result["reason"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    depth=st.integers(min_value=3, max_value=12),
    width=st.integers(min_value=2, max_value=12),
    flow=st.booleans(),
)
def test_recipe_digest_of_any_alias_bomb_is_refused_bounded(
    depth: int, width: int, flow: bool
) -> None:
    """Billion-laughs of every depth and width, flow or block style: the digest is either
    computed (a small expansion) or refused as DigestError, never a hang or an allocation past
    the limit."""
    lines = ["kind: RecipeResult", "l0: &l0 " + ("[" + ", ".join(['"x"'] * width) + "]")]
    for i in range(1, depth):
        refs = [f"*l{i - 1}"] * width
        if flow:
            lines.append(f"l{i}: &l{i} [" + ", ".join(refs) + "]")
        else:
            lines.append(f"l{i}: &l{i}\n" + "".join(f"  - {r}\n" for r in refs).rstrip("\n"))
    doc = ("\n".join(lines) + "\n").encode()

    def digest() -> dict[str, Any]:
        try:
            return {"digest": recipe_digest(doc, V3), "error": None}
        except DigestError as e:
            return {"digest": None, "error": str(e)}

    expanded = width**depth  # scalars of the expansion, each at least 2 bytes counted
    assume(expanded < 10**4 or expanded > MAX_EXPANDED_BYTES)
    got = _isolated(digest, seconds=10)
    if expanded > MAX_EXPANDED_BYTES:
        assert got["error"] and "alias" in got["error"], got
    else:
        assert got["digest"], got


def test_a_body_cut_short_is_no_answer(server: Server) -> None:
    """A body shorter than its Content-Length (the server closed early) is an error, not a
    short answer that a caller would take as complete."""

    def short(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "100")
        h.end_headers()
        h.wfile.write(b"x" * 10)
        h.close_connection = True

    server.routes["/"] = short
    with pytest.raises(net.NetError) as e:
        net.Client.on().request("GET", f"{server.url}/", max_bytes=1000)
    assert e.value.kind is net.NetKind.PROTOCOL and "10 of 100" in e.value.message


@pytest.mark.parametrize("kind", ["leaves", "link", "twice"])
def test_a_hostile_layer_entry_is_refused_without_its_name(
    server: Server, tmp_path: Path, kind: str
) -> None:
    """A tar entry's name is the artifact's text: the refusal names its position only."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for _ in range(2 if kind == "twice" else 1):
            info = tarfile.TarInfo(("../" if kind == "leaves" else "") + REMOTE_TEXT)
            if kind == "link":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            else:
                info.size = 1
            tar.addfile(info, io.BytesIO(b"x") if kind != "link" else None)
    blob = archive.gzip_bytes(buf.getvalue())
    d = oci.sha256_digest(blob)
    ref = _serve_artifact(
        server,
        {d: blob},
        _manifest([{"mediaType": oci.LAYER_TAR_GZIP, "digest": d, "size": len(blob)}]),
    )
    got = _cli("evidence", "pull", ref, "--cache", str(tmp_path / "c"))
    assert got["code"] == 1 and "[oci.unsafe-artifact]" in got["out"], got["out"]
    assert "layer entry #" in got["out"] and "REMOTE-SECRET" not in got["out"]


@pytest.mark.parametrize("opening", [b"[", b"{a: ", b"- "])
def test_a_deeply_nested_chart_index_is_malformed_not_a_crash(opening: bytes) -> None:
    """A chart repository's index.yaml (read by `pins`, too large for parse_yaml) nested 100,000
    levels deep crashed libyaml's recursive composer (a segmentation fault); the nesting is now
    counted on the event parser first (parse_yaml's depth check, before composing), and the
    problem says why."""
    from generator.pins.helm_index import parse_index
    from generator.pins.http import FetchError

    body = (
        opening * 100_000 + b"x\n"  # compact `- - - x` nests at the document's root
        if opening == b"- "
        else b"entries:\n  x: " + opening * 100_000 + b"\n"
    )

    def parse() -> dict[str, Any]:
        try:
            parse_index(body, "https://charts.example/index.yaml")
        except FetchError as e:
            return {"kind": str(e.problem.kind), "message": e.problem.message}
        return {"kind": None, "message": ""}

    got = _isolated(parse, seconds=20)
    assert got["kind"] == "malformed" and "nesting deeper than" in got["message"], got


@pytest.mark.parametrize("value", ["soon", "0", "-1", "inf", "nan"])
def test_a_bad_deadline_is_a_usage_error(tmp_path: Path, value: str) -> None:
    got = _cli(
        "evidence",
        "pull",
        f"127.0.0.1:1/aicr/a@{DIGEST}",
        "--cache",
        str(tmp_path / "c"),
        env={net.DEADLINE_ENV: value},
    )
    assert got["code"] == 2 and net.DEADLINE_ENV in got["out"], got["out"]
