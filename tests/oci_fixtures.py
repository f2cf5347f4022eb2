"""A real OCI registry for tests (CNCF distribution, Debian package `docker-registry`), a scripted
fake registry for the answers a healthy one never gives, and upstream AICR's summary bundle built
the way its documentation describes (`aicr validate --emit-attestation`, then `aicr evidence
publish --push`), signed with this project's test root.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from generator.core import archive
from generator.core.net import Client
from generator.evidence import oci
from generator.evidence.pointer import render_pointer
from generator.evidence.recipedigest import recipe_digest
from generator.evidence.store import source_id
from tests import evidence_fixtures as ef

REGISTRY_BIN = "/usr/bin/docker-registry"
V3 = "https://aicr.run/recipe-evidence/v3"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RealRegistry:
    host: str  # 127.0.0.1:<port>
    process: subprocess.Popen[bytes]

    def client(self) -> oci.Registry:
        return oci.Registry(self.host, Client.on(), plain_http=True)


def start_registry(tmp: Path) -> RealRegistry:
    binary = shutil.which("docker-registry") or (
        REGISTRY_BIN if os.path.exists(REGISTRY_BIN) else None
    )
    if binary is None:
        message = "docker-registry (Debian package docker-registry) is not installed"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; the registry tests must run under CI (.ci/run installs it)")
        pytest.skip(f"{message}; CI is unset, so the registry tests are skipped")
    port = free_port()
    config = tmp / "registry.yml"
    config.write_text(
        "version: 0.1\n"
        "log:\n  level: error\n  accesslog:\n    disabled: true\n"
        f"storage:\n  filesystem:\n    rootdirectory: {tmp / 'data'}\n  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
    )
    with (tmp / "registry.log").open("wb") as log:
        process = subprocess.Popen(
            [binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/v2/", timeout=1).status_code == 200:
                return RealRegistry(f"127.0.0.1:{port}", process)
        except requests.RequestException:
            pass
        if process.poll() is not None:
            break
        time.sleep(0.1)
    process.kill()
    pytest.fail(f"docker-registry did not start: {(tmp / 'registry.log').read_text()[-2000:]}")


def running_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealRegistry]:
    """For a fixture: a registry process for the module, stopped afterwards."""
    reg = start_registry(tmp_path_factory.mktemp("registry"))
    try:
        yield reg
    finally:
        reg.process.terminate()
        try:
            reg.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            reg.process.kill()


# --- a scripted registry: chosen status codes, slow answers, wrong content ---------------------

Handler = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class FakeRegistry:
    host: str
    routes: dict[str, Handler]
    server: ThreadingHTTPServer


def running_fake_registry() -> Iterator[FakeRegistry]:
    """For a fixture: a scripted HTTP server on 127.0.0.1 (set `routes` by path prefix)."""
    routes: dict[str, Handler] = {}

    class H(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _any(self) -> None:
            for prefix, handler in routes.items():
                if self.path.startswith(prefix):
                    handler(self)
                    return
            self.send_response(404)
            self.end_headers()

        do_GET = do_HEAD = do_PUT = do_POST = _any

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FakeRegistry(f"127.0.0.1:{server.server_address[1]}", routes, server)
    finally:
        server.shutdown()
        server.server_close()


def answer(
    status: int, body: bytes = b"", headers: Mapping[str, str] | None = None, delay: float = 0
) -> Handler:
    def handle(h: BaseHTTPRequestHandler) -> None:
        if delay:
            time.sleep(delay)
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    return handle


# --- upstream's summary bundle ----------------------------------------------------------------

UPSTREAM_RECIPE = "h100-eks-ubuntu-training"
UPSTREAM_IDENTITY = (
    "https://github.com/example-lab/aicr-runs/.github/workflows/evidence.yaml@refs/heads/main"
)
RECIPE_YAML = b"""apiVersion: aicr.run/v1alpha3
kind: RecipeResult
metadata:
  name: h100-eks-ubuntu-training
  version: v0.12.0
criteria:
  accelerator: h100
  intent: training
  os: ubuntu
  service: eks
componentRefs:
  - name: gpu-operator
    namespace: gpu-operator
    version: v25.10.0
  - name: network-operator
    version: v25.7.0
"""


def _hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def ctrf(tests: list[tuple[str, str]]) -> bytes:
    counts = {
        s: sum(1 for _, st in tests if st == s)
        for s in ("passed", "failed", "skipped", "pending", "other")
    }
    doc = {
        "results": {
            "tool": {"name": "aicr-validator"},
            "summary": {"tests": len(tests), **counts, "start": 0, "stop": 0},
            "tests": [{"name": n, "status": s, "duration": 1} for n, s in tests],
        }
    }
    return (json.dumps(doc, indent=2) + "\n").encode()


PHASE_TESTS: dict[str, list[tuple[str, str]]] = {
    "deployment": [("gpu-operator-ready", "passed"), ("network-operator-ready", "passed")],
    "performance": [("nccl-all-reduce-bw", "passed"), ("nccl-all-gather-bw", "skipped")],
    "conformance": [("dra-support", "passed"), ("gang-scheduling", "failed")],
}


def manifest_json(files: Mapping[str, bytes]) -> bytes:
    entries = [
        {"path": p, "size": len(d), "sha256": "sha256:" + _hex(d), "mediaType": "application/json"}
        for p, d in sorted(files.items())
    ]
    return (json.dumps({"schemaVersion": "1.0.0", "files": entries}, indent=2) + "\n").encode()


def summary_bundle(recipe_yaml: bytes = RECIPE_YAML) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The summary-bundle/ directory `aicr validate --emit-attestation` writes (unsigned), and its
    predicate."""
    files: dict[str, bytes] = {
        "recipe.yaml": recipe_yaml,
        "snapshot.yaml": b"kind: Snapshot\nmeasurements: []\n",
        "bom.cdx.json": b'{"bomFormat":"CycloneDX","specVersion":"1.6","components":[]}\n',
    }
    phases = {}
    for phase, tests in PHASE_TESTS.items():
        body = ctrf(tests)
        files[f"ctrf/{phase}.json"] = body
        phases[phase] = {
            "passed": sum(s == "passed" for _, s in tests),
            "failed": sum(s == "failed" for _, s in tests),
            "skipped": sum(s == "skipped" for _, s in tests),
            "ctrfDigest": "sha256:" + _hex(body),
        }
    manifest = manifest_json(files)
    predicate = {
        "schemaVersion": "1.0.0",
        "attestedAt": "2026-11-30T10:00:00Z",
        "aicrVersion": "v0.12.0",
        "validatorCatalogVersion": "1",
        "validatorImages": [],
        "recipe": {"name": UPSTREAM_RECIPE, "digest": recipe_digest(recipe_yaml, V3)},
        "fingerprint": {"service": "eks", "accelerator": "h100", "os": "ubuntu"},
        "criteriaMatch": {"matched": True},
        "phases": phases,
        "bom": {
            "format": "CycloneDX",
            "version": "1.6",
            "digest": "sha256:" + _hex(files["bom.cdx.json"]),
            "imageCount": 0,
        },
        "manifest": {"digest": "sha256:" + _hex(manifest), "fileCount": len(files)},
    }
    files["manifest.json"] = manifest
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [
            {
                "name": f"recipe:{UPSTREAM_RECIPE}",
                "digest": {"sha256": predicate["recipe"]["digest"]},
            }
        ],
        "predicateType": V3,
        "predicate": predicate,
    }
    files["statement.intoto.json"] = json.dumps(statement, indent=2).encode()
    return files, predicate


def tar_directory(files: Mapping[str, bytes]) -> bytes:
    """A deterministic tar of `files` (POSIX relative paths): sorted, mode 0644/0755, owner 0, mtime 0.

    Entries are named as ORAS names a directory added as `.`: the directories, then the files,
    relative to the directory itself. (It was `evidence/oci.tar_directory` until December 2026;
    the tool pushes no directory, only the tests' upstream publisher does.)
    """
    buf = io.BytesIO()
    dirs = sorted(
        {str(Path(p).parent) for p in files} - {"."}
        | {"/".join(Path(p).parts[:i]) for p in files for i in range(1, len(Path(p).parts))}
    )
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for p in sorted(files):
            info = tarfile.TarInfo(p)
            info.size, info.mode, info.mtime = len(files[p]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[p]))
    return buf.getvalue()


@dataclass
class Published:
    pointer: bytes
    pointer_rel: str  # <recipe>/<source>/sha256-<hex>.yaml
    pushed: oci.Pushed
    files: dict[str, bytes]


def publish_upstream(
    reg: oci.Registry,
    repo: str,
    authority: Any,
    files: dict[str, bytes],
    predicate: dict[str, Any],
    *,
    identity: str = UPSTREAM_IDENTITY,
    issuer: str = ef.ISSUER,
) -> Published:
    """`aicr evidence publish --push REGISTRY/REPO`: push the directory as one ORAS tar layer,
    sign the artifact statement (subject: the artifact digest), attach it as a referrer, write
    the pointer."""
    ref = oci.parse_reference(f"{reg.host}/{repo}:{predicate['recipe']['digest'][:12]}")
    layer = archive.gzip_bytes(tar_directory(files))
    unpacked = hashlib.sha256(tar_directory(files)).hexdigest()
    pushed = oci.push_artifact(
        reg,
        ref,
        artifact_type=oci.AICR_ARTIFACT_TYPE,
        layers=[
            (
                oci.LAYER_TAR_GZIP,
                layer,
                {oci.TITLE: ".", oci.ORAS_UNPACK: "true", oci.ORAS_DIGEST: f"sha256:{unpacked}"},
            )
        ],
        annotations={"org.opencontainers.image.title": "AICR Recipe Evidence"},
    )
    statement = json.dumps(
        {
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [
                {
                    "name": str(ref).split("@")[0],
                    "digest": {"sha256": pushed.digest.removeprefix("sha256:")},
                }
            ],
            "predicateType": V3,
            "predicate": predicate,
        }
    ).encode()
    bundle = ef.sign(authority, statement, identity=identity, issuer=issuer)
    oci.push_artifact(
        reg,
        oci.Reference(ref.registry, ref.repository),
        artifact_type=oci.SIGSTORE_BUNDLE_MEDIA_TYPE,
        layers=[(oci.SIGSTORE_BUNDLE_MEDIA_TYPE, bundle, {})],
        subject=pushed,
    )
    log_index = json.loads(bundle)["verificationMaterial"]["tlogEntries"][0]["logIndex"]
    pointer = render_pointer(
        recipe=UPSTREAM_RECIPE,
        profile=None,
        oci=f"{ref.registry}/{ref.repository}:{ref.tag}",
        digest=pushed.digest,
        predicate_type=V3,
        identity=identity,
        issuer=issuer,
        rekor_log_index=int(log_index),
        attested_at=predicate["attestedAt"],
    )
    rel = f"{UPSTREAM_RECIPE}/{source_id(issuer, identity)}/{pushed.digest.replace(':', '-')}.yaml"
    return Published(pointer, rel, pushed, files)
