"""End to end: `aicr-catalog pins` against a local HTTP server on 127.0.0.1 (Helm index.yaml and
an OCI tag list behind the anonymous token handshake). Whole transcripts and exit codes."""

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner, Result

from generator.commands.diff import command as diff_command
from generator.commands.pins import command
from generator.evidence.store import evidence_path
from generator.pins import http as pins_http
from tests import evidence_fixtures as ef
from tests.fixtures.pins.server import PinsServer, Reply, Route, helm_index, tag_list

FIXTURE = Path(__file__).parent / "fixtures" / "pins" / "catalog"
SCHEMA = Path(__file__).parent.parent / "catalog" / "schemas" / "pins-report.schema.json"
INDEX = "/charts/index.yaml"
TAGS = "/v2/charts/gamma/tags/list"
TOKEN = "anon-T0K"

HEADER = "COMPONENT  VERSION  STATUS   PATCH  MINOR   MAJOR  QUALIFIED  RECIPES  CHART\n"


@pytest.fixture
def server() -> Iterator[PinsServer]:
    with PinsServer() as s:
        yield s


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff waits, recorded instead of slept."""
    seen: list[float] = []
    monkeypatch.setattr(pins_http, "_sleep", seen.append)
    return seen


@pytest.fixture
def catalog(tmp_path: Path, server: PinsServer) -> Path:
    """A copy of the fixture catalog whose repositories point at the local server."""
    root = tmp_path / "catalog"
    shutil.copytree(FIXTURE, root)
    for path in root.rglob("*.yaml"):
        path.write_text(path.read_text().replace("PINS_SERVER", server.host))
    return root


def healthy(
    server: PinsServer,
    *,
    alpha: tuple[str, ...] = ("1.1.0", "1.2.0"),
    gamma: tuple[str, ...] = ("0.3.1", "latest"),
) -> None:
    index = helm_index({"alpha": list(alpha), "beta": ["v2.0.0", "v2.1.0"]})
    server.routes[INDEX] = Route([Reply(200, index)], etag='"index-1"')
    server.add_token_realm(TOKEN)
    server.routes[TAGS] = Route([Reply(200, tag_list("charts/gamma", list(gamma)))], bearer=TOKEN)


def run(catalog: Path, *args: str, retries: str = "0") -> Result:
    cache = catalog.parent / "cache"
    argv = [
        "--catalog",
        str(catalog),
        "--cache-dir",
        str(cache),
        "--timeout",
        "0.5",
        "--retries",
        retries,
        *args,
    ]
    return CliRunner().invoke(command, argv)


def norm(text: str, server: PinsServer) -> str:
    return text.replace(server.host, "SERVER")


def test_all_pins_present(server: PinsServer, catalog: Path) -> None:
    healthy(server)
    result = run(catalog)
    assert norm(result.stdout, server) == (
        HEADER
        + "alpha      1.2.0    present  -      -       -      unknown    2        http://SERVER/charts/alpha\n"
        "beta       v2.0.0   present  -      v2.1.0  -      unknown    1        http://SERVER/charts/beta\n"
        "beta       v2.1.0   present  -      -       -      unknown    1        http://SERVER/charts/beta\n"
        "gamma      0.3.1    present  -      -       -      unknown    1        oci://SERVER/charts/gamma\n"
        "\n"
        "4 pins: 4 present, 0 missing, 0 unknown; 1 with newer versions\n"
    )
    assert result.exit_code == 0
    # One index request for the three Helm pins of the same repository.
    assert len(server.requests_to(INDEX)) == 1


def test_oci_token_handshake(server: PinsServer, catalog: Path) -> None:
    healthy(server)
    result = run(catalog)
    assert result.exit_code == 0
    assert [s.headers.get("Authorization") for s in server.requests_to(TAGS)] == [
        None,
        f"Bearer {TOKEN}",
    ]
    (token_request,) = server.requests_to("/token")
    assert token_request.query == "scope=repository%3Acharts%2Fgamma%3Apull&service=pins-test"
    assert norm(result.stderr, server).splitlines()[1:] == [
        "GET http://SERVER/v2/charts/gamma/tags/list: HTTP 401, 36 bytes",
        "GET http://SERVER/token?scope=repository%3Acharts%2Fgamma%3Apull&service=pins-test:"
        " HTTP 200, 21 bytes",
        "GET http://SERVER/v2/charts/gamma/tags/list: HTTP 200, 53 bytes",
    ]


def test_missing_version_and_missing_chart(server: PinsServer, catalog: Path) -> None:
    healthy(server, alpha=("1.1.0", "1.3.0"))
    server.routes[TAGS] = Route([Reply(404, b'{"errors":[{"code":"NAME_UNKNOWN"}]}')])
    result = run(catalog)
    assert norm(result.stdout, server) == (
        "COMPONENT  VERSION  STATUS   PATCH  MINOR   MAJOR  QUALIFIED  RECIPES  CHART\n"
        "alpha      1.2.0    missing  -      1.3.0   -      unknown    2        http://SERVER/charts/alpha\n"
        "beta       v2.0.0   present  -      v2.1.0  -      unknown    1        http://SERVER/charts/beta\n"
        "beta       v2.1.0   present  -      -       -      unknown    1        http://SERVER/charts/beta\n"
        "gamma      0.3.1    missing  -      -       -      unknown    1        oci://SERVER/charts/gamma\n"
        "\n"
        "registry.yaml:12:7: $.components[0].helm.defaultVersion: alpha 1.2.0: version 1.2.0 is not"
        " published for chart alpha in http://SERVER/charts (newest: 1.3.0, 1.1.0)"
        " [pins.version-not-found]\n"
        "registry.yaml:29:7: $.components[2].helm.defaultVersion: gamma 0.3.1: repository"
        " charts/gamma is not in the registry (http://SERVER/v2/charts/gamma/tags/list: HTTP 404)"
        " [pins.chart-not-found]\n"
        "\n"
        "4 pins: 2 present, 2 missing, 0 unknown; 2 with newer versions\n"
    )
    assert result.exit_code == 1


def test_chart_not_in_index(server: PinsServer, catalog: Path) -> None:
    healthy(server)
    server.routes[INDEX] = Route([Reply(200, helm_index({"alpha": ["1.2.0"]}))])
    result = run(catalog, "--format", "json")
    doc = json.loads(result.stdout)
    beta = [p for p in doc["pins"] if p["component"] == "beta"]
    assert [(p["status"], p["problem"]["kind"]) for p in beta] == [
        ("missing", "chart-not-found"),
        ("missing", "chart-not-found"),
    ]
    assert norm(beta[0]["problem"]["message"], server) == (
        "chart beta is not in http://SERVER/charts/index.yaml"
    )
    assert result.exit_code == 1


def test_newer_versions_available(server: PinsServer, catalog: Path) -> None:
    healthy(
        server,
        alpha=("1.2.0", "1.2.1", "1.2.10", "1.3.0", "1.4.2", "2.0.0", "3.1.0", "3.2.0rc1", "junk"),
        gamma=("0.3.1", "0.3.2", "v0.4.0", "1.0.0-rc.1"),
    )
    result = run(catalog, "--format", "json")
    assert result.exit_code == 0
    newer = {(p["component"], p["version"]): p["newer"] for p in json.loads(result.stdout)["pins"]}
    assert newer == {
        ("alpha", "1.2.0"): {"patch": "1.2.10", "minor": "1.4.2", "major": "3.1.0"},
        ("beta", "v2.0.0"): {"patch": None, "minor": "v2.1.0", "major": None},
        ("beta", "v2.1.0"): {"patch": None, "minor": None, "major": None},
        ("gamma", "0.3.1"): {"patch": "0.3.2", "minor": "v0.4.0", "major": None},
    }
    text = norm(run(catalog).stdout, server)
    assert "alpha      1.2.0    present  1.2.10  1.4.2   3.1.0  unknown    2" in text
    assert text.endswith("4 pins: 4 present, 0 missing, 0 unknown; 3 with newer versions\n")


def test_slow_server_times_out(server: PinsServer, catalog: Path) -> None:
    healthy(server)
    server.routes[INDEX] = Route([Reply(200, helm_index({}), delay=1.0)])
    result = run(catalog)
    lines = norm(result.stdout, server).splitlines()
    assert lines[1:4] == [
        "alpha      1.2.0    unknown  -      -      -      unknown    2        http://SERVER/charts/alpha",
        "beta       v2.0.0   unknown  -      -      -      unknown    1        http://SERVER/charts/beta",
        "beta       v2.1.0   unknown  -      -      -      unknown    1        http://SERVER/charts/beta",
    ]
    assert lines[6:] == [
        "overlays/h100-eks-training.yaml:17:7: $.spec.componentRefs[0].version: beta v2.1.0:"
        " GET http://SERVER/charts/index.yaml: timed out after 0.5 s [pins.timeout]",
        "registry.yaml:12:7: $.components[0].helm.defaultVersion: alpha 1.2.0:"
        " GET http://SERVER/charts/index.yaml: timed out after 0.5 s [pins.timeout]",
        "registry.yaml:20:7: $.components[1].helm.defaultVersion: beta v2.0.0:"
        " GET http://SERVER/charts/index.yaml: timed out after 0.5 s [pins.timeout]",
        "",
        "4 pins: 1 present, 0 missing, 3 unknown; 0 with newer versions",
    ]
    assert result.exit_code == 4
    assert len(server.requests_to(INDEX)) == 1  # no retries asked for, one index for 3 pins


def test_timeouts_are_retried_with_backoff(
    server: PinsServer, catalog: Path, sleeps: list[float]
) -> None:
    healthy(server)
    server.routes[INDEX] = Route([Reply(200, helm_index({}), delay=1.0)])
    result = run(catalog, "--format", "json", retries="2")
    assert result.exit_code == 4
    problem = json.loads(result.stdout)["pins"][0]["problem"]
    assert norm(problem["message"], server) == (
        "GET http://SERVER/charts/index.yaml: timed out after 0.5 s (after 3 attempts)"
    )
    assert problem["kind"] == "timeout"
    assert sleeps == [0.5, 1.0]
    assert len(server.requests_to(INDEX)) == 3


def test_500_then_success_is_retried(
    server: PinsServer, catalog: Path, sleeps: list[float]
) -> None:
    healthy(server)
    index = helm_index({"alpha": ["1.2.0"], "beta": ["v2.0.0", "v2.1.0"]})
    server.routes[INDEX] = Route(
        [Reply(500, b"boom"), Reply(503, b"", {"Retry-After": "3"}), Reply(200, index)]
    )
    result = run(catalog, retries="3")
    assert result.exit_code == 0
    assert "4 pins: 4 present, 0 missing, 0 unknown" in result.stdout
    assert len(server.requests_to(INDEX)) == 3
    assert sleeps == [0.5, 3.0]  # exponential backoff, then the server's Retry-After
    assert norm(result.stderr, server).splitlines()[:3] == [
        "GET http://SERVER/charts/index.yaml: HTTP 500 Internal Server Error; retry 1/3 in 0.5 s",
        "GET http://SERVER/charts/index.yaml: HTTP 503 Service Unavailable; retry 2/3 in 3 s",
        f"GET http://SERVER/charts/index.yaml: HTTP 200, {len(index)} bytes",
    ]


def test_http_error_is_reported_with_status(
    server: PinsServer, catalog: Path, sleeps: list[float]
) -> None:
    healthy(server)
    server.routes[INDEX] = Route([Reply(500, b"boom")])
    result = run(catalog, "--format", "json", retries="1")
    assert result.exit_code == 4
    alpha = json.loads(result.stdout)["pins"][0]
    assert alpha["status"] == "unknown"
    assert alpha["problem"]["kind"] == "http-error"
    assert alpha["problem"]["httpStatus"] == 500
    assert norm(alpha["problem"]["message"], server) == (
        "GET http://SERVER/charts/index.yaml: HTTP 500 Internal Server Error (after 2 attempts)"
    )
    server.routes[INDEX] = Route([Reply(403, b"no")])  # not retried: a client error
    result = run(catalog, "--format", "json", retries="3")
    assert json.loads(result.stdout)["pins"][0]["problem"]["httpStatus"] == 403
    assert len(server.requests_to(INDEX)) == 3  # 2 + 1


def test_304_on_rerun(server: PinsServer, catalog: Path) -> None:
    healthy(server)
    first = run(catalog)
    second = run(catalog)
    assert first.exit_code == second.exit_code == 0
    assert second.stdout == first.stdout
    assert [s.headers.get("If-None-Match") for s in server.requests_to(INDEX)] == [
        None,
        '"index-1"',
    ]
    assert norm(second.stderr, server).splitlines()[0] == (
        "GET http://SERVER/charts/index.yaml: HTTP 304, cached copy reused"
    )
    third = run(catalog, "--no-cache")
    assert third.stdout == first.stdout
    assert server.requests_to(INDEX)[-1].headers.get("If-None-Match") is None


BETA = b"  beta:\n  - version: v2.0.0\n  - version: v2.1.0\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b"entries: [unclosed",
            "malformed index http://SERVER/charts/index.yaml: not YAML (line 2)",
        ),
        (b"- just\n- a list\n", "malformed index http://SERVER/charts/index.yaml: not a mapping"),
        (
            b"apiVersion: v1\n",
            "malformed index http://SERVER/charts/index.yaml: no `entries` mapping",
        ),
        (
            b"entries:\n  alpha: 3\n" + BETA,
            "malformed index http://SERVER/charts/index.yaml: entries.alpha is not a list",
        ),
        (
            b"entries:\n  alpha:\n  - name: alpha\n" + BETA,
            "malformed index http://SERVER/charts/index.yaml: entries.alpha[0] has no version",
        ),
    ],
)
def test_malformed_index(server: PinsServer, catalog: Path, body: bytes, message: str) -> None:
    healthy(server)
    server.routes[INDEX] = Route([Reply(200, body)])
    result = run(catalog, "--format", "json")
    alpha = json.loads(result.stdout)["pins"][0]
    assert (alpha["status"], alpha["problem"]["kind"]) == ("unknown", "malformed")
    assert norm(alpha["problem"]["message"], server) == message
    assert result.exit_code == 4


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            Reply(200, b"<html>"),
            "malformed tag list http://SERVER/v2/charts/gamma/tags/list: not JSON",
        ),
        (
            Reply(200, b'{"tags": [1, 2]}'),
            "malformed tag list http://SERVER/v2/charts/gamma/tags/list: no `tags` list of strings",
        ),
    ],
)
def test_malformed_tag_list(server: PinsServer, catalog: Path, reply: Reply, message: str) -> None:
    healthy(server)
    server.routes[TAGS] = Route([reply], bearer=TOKEN)
    result = run(catalog, "--format", "json")
    gamma = json.loads(result.stdout)["pins"][3]
    assert (gamma["component"], gamma["problem"]["kind"]) == ("gamma", "malformed")
    assert norm(gamma["problem"]["message"], server) == message
    assert result.exit_code == 4


def test_malformed_token_response(server: PinsServer, catalog: Path) -> None:
    healthy(server)
    server.routes["/token"] = Route([Reply(200, b'{"nope": 1}')])
    result = run(catalog, "--format", "json")
    gamma = json.loads(result.stdout)["pins"][3]
    assert norm(gamma["problem"]["message"], server) == (
        # the token realm is the registry's text: the message names the tag list's URL
        "malformed token response for http://SERVER/v2/charts/gamma/tags/list: no `token`"
    )
    assert result.exit_code == 4


def test_unreachable_repository(server: PinsServer, catalog: Path, tmp_path: Path) -> None:
    healthy(server)
    server.__exit__()  # nothing listens on the port any more
    result = run(catalog)
    assert result.exit_code == 4
    assert (
        "registry.yaml:12:7: $.components[0].helm.defaultVersion: alpha 1.2.0: GET "
        "http://SERVER/charts/index.yaml: unreachable (connection refused) [pins.unreachable]"
    ) in norm(result.stdout, server)


def test_missing_outranks_incomplete(server: PinsServer, catalog: Path) -> None:
    healthy(server, alpha=("1.0.0",))
    server.routes[TAGS] = Route([Reply(500, b"")], bearer=TOKEN)
    result = run(catalog)
    assert "4 pins: 2 present, 1 missing, 1 unknown" in result.stdout
    assert result.exit_code == 1


def test_json_report_matches_schema(server: PinsServer, catalog: Path) -> None:
    healthy(server, alpha=("1.0.0",))
    result = run(catalog, "--format", "json")
    doc = json.loads(result.stdout)
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(doc)
    assert doc["summary"] == {
        "pins": 4,
        "present": 3,
        "missing": 1,
        "unknown": 0,
        "withNewer": 1,
        "exitCode": 1,
    }
    alpha = doc["pins"][0]
    assert alpha["definedAt"] == [
        {
            "path": "registry.yaml",
            "line": 12,
            "col": 7,
            "jsonPath": "$.components[0].helm.defaultVersion",
        }
    ]
    assert alpha["recipes"] == ["gke-inference", "h100-eks-training"]
    assert alpha["qualifiedAtScale"] == "unknown"
    assert result.stdout == run(catalog, "--format", "json").stdout  # deterministic


def test_markdown_and_summary_file(server: PinsServer, catalog: Path) -> None:
    healthy(server)
    summary = catalog.parent / "summary.md"
    summary.write_text("# earlier step\n")
    result = run(catalog, "--format", "markdown", "--summary", str(summary))
    expected = (
        "## Component pins\n"
        "\n"
        "4 pins: 4 present, 0 missing, 0 unknown; 1 with newer versions\n"
        "\n"
        "| Component | Version | Status | Newest patch | Newest minor | Newest major"
        " | Qualified at scale | Recipes | Chart |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
        "| alpha | 1.2.0 | ✅ present | - | - | - | unknown | gke-inference, h100-eks-training"
        " | http://SERVER/charts/alpha |\n"
        "| beta | v2.0.0 | ✅ present | - | v2.1.0 | - | unknown | gke-inference"
        " | http://SERVER/charts/beta |\n"
        "| beta | v2.1.0 | ✅ present | - | - | - | unknown | h100-eks-training"
        " | http://SERVER/charts/beta |\n"
        "| gamma | 0.3.1 | ✅ present | - | - | - | unknown | h100-eks-training"
        " | oci://SERVER/charts/gamma |\n"
        "\n"
        "Qualified at scale is `unknown`: no status document was given"
        " (`aicr-catalog status --format json` > FILE, then `pins --status FILE`).\n"
        "\n"
        "Exit code 0: every pin exists upstream.\n"
    )
    assert norm(result.stdout, server) == expected
    assert norm(summary.read_text(), server) == "# earlier step\n" + expected
    assert result.exit_code == 0


def status_doc(path: Path, *, sample: bool, rows: list[dict[str, object]]) -> Path:
    path.write_text(
        json.dumps(
            {"apiVersion": "aicr.run/v1", "kind": "Status", "sample": sample, "components": rows}
        )
    )
    return path


def test_qualified_at_scale_from_the_status_document(
    server: PinsServer, catalog: Path, tmp_path: Path
) -> None:
    healthy(server)
    rows: list[dict[str, object]] = [
        {"component": "alpha", "version": "1.2.0", "lane": "lane-288", "nodes": 288},
        {"component": "beta", "version": "v2.1.0", "lane": None, "nodes": 0},
    ]
    result = run(catalog, "--status", str(status_doc(tmp_path / "s.json", sample=False, rows=rows)))
    assert [line.split()[6] for line in result.stdout.splitlines()[1:5]] == [
        "lane-288",  # alpha 1.2.0
        "unknown",  # beta v2.0.0: not in the status document
        "none",  # beta v2.1.0: deployed, qualified at no lane
        "unknown",  # gamma
    ]
    assert result.exit_code == 0
    result = run(
        catalog,
        "--format",
        "json",
        "--status",
        str(status_doc(tmp_path / "d.json", sample=True, rows=rows)),
    )
    assert json.loads(result.stdout)["pins"][0]["qualifiedAtScale"] == "lane-288 (sample)"


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        '{"kind": "Other"}',
        '{"kind": "Status"}',
        '{"kind": "Status", "components": [{"component": "a"}]}',
    ],
)
def test_unusable_status_document_is_a_usage_error(
    catalog: Path, tmp_path: Path, content: str
) -> None:
    bad = tmp_path / "status.json"
    bad.write_text(content)
    result = run(catalog, "--status", str(bad))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert result.stdout == ""


def test_help_names_network_and_exit_codes() -> None:
    result = CliRunner().invoke(command, ["--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert (
        "this command and `evidence sign` are the only parts of the project that use the network"
        in text
    )
    assert '"none" when no lane is, "(sample)" for demo evidence; without it "unknown"' in text
    for line in (
        "0 every pin exists upstream",
        "1 a pin is missing upstream",
        "2 usage error",
        "4 the check could not complete",
    ):
        assert line in text


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(command, ["--catalog", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "catalog directory" in result.stderr
    result = CliRunner().invoke(command, ["--catalog", str(FIXTURE), "--dry-run"])
    assert result.exit_code == 2
    assert result.stderr == "error: --dry-run and --no-check only apply with --write\n"
    result = CliRunner().invoke(command, ["--timeout", "0"])
    assert result.exit_code == 2


# ---------------------------------------------------------------- --write


def snapshot(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.yaml"))}


def digests(root: Path) -> dict[str, str]:
    from generator.catalog.load import load_catalog
    from generator.catalog.resolve import resolve

    cat, _ = load_catalog(root)
    return {leaf: resolve(cat, leaf).digest for leaf in cat.leaves()}


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def signed_evidence(evidence_root: Path, recipe: str, digest: str) -> str:
    """A signed scale-qualification statement for `recipe` at `digest`; its path under the root."""
    pred = ef.predicate(
        recipe={"name": recipe, "digest": digest},
        scaleProfile={"name": "standard", "version": "0.0.0"},
    )
    payload = ef.statement(pred)
    rel = evidence_path(recipe, ef.ISSUER, ef.IDENTITY, payload)
    target = evidence_root.parent / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(ef.sign(ef.make_authority(), payload))
    return rel


def test_write_bumps_one_pin_and_reports_the_impact(
    server: PinsServer, catalog: Path, tmp_path: Path
) -> None:
    healthy(server, alpha=("1.2.0", "1.3.0"))
    before, old = snapshot(catalog), digests(catalog)
    evidence = tmp_path / "evidence"
    stale = signed_evidence(evidence, "gke-inference", old["gke-inference"])
    signed_evidence(evidence, "h100-eks-training", "sha256:" + "0" * 64)  # already stale
    result = run(catalog, "--write", "alpha=1.3.0", "--evidence", str(evidence))
    after, new = snapshot(catalog), digests(catalog)
    # Exactly one line of one file changed, its quoting and comment kept.
    assert [k for k in before if before[k] != after[k]] == ["registry.yaml"]
    assert changed_lines(before["registry.yaml"], after["registry.yaml"]) == [
        '-      defaultVersion: "1.2.0"  # keep this comment',
        '+      defaultVersion: "1.3.0"  # keep this comment',
    ]
    # The impact printed is what resolving before and after says.
    assert sorted(leaf for leaf in old if old[leaf] != new[leaf]) == [
        "gke-inference",
        "h100-eks-training",
    ]
    assert result.stdout == (
        "bumped alpha 1.2.0 -> 1.3.0 at registry.yaml:12:7: $.components[0].helm.defaultVersion\n"
        "recipes whose digest changes: 2\n"
        f"  gke-inference@standard: {old['gke-inference']} -> {new['gke-inference']}\n"
        f"  h100-eks-training@standard: {old['h100-eks-training']} -> {new['h100-eks-training']}\n"
        "evidence made stale: 1\n"
        f"  {stale}\n"
    )
    assert result.exit_code == 0
    # The new version was confirmed upstream before writing.
    assert len(server.requests_to(INDEX)) == 1


def test_write_impact_matches_diff(
    server: PinsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pins --write` on a copy, then `aicr-catalog diff HEAD`: the same recipes and evidence."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo / "catalog")
    for path in (repo / "catalog").rglob("*.yaml"):
        path.write_text(path.read_text().replace("PINS_SERVER", server.host))
    old = digests(repo / "catalog")
    stale = signed_evidence(repo / "evidence", "gke-inference", old["gke-inference"])
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )
    result = run(
        repo / "catalog",
        "--write",
        "registry.yaml:beta=v2.2.0",
        "--no-check",
        "--format",
        "json",
        "--evidence",
        str(repo / "evidence"),
    )
    assert result.exit_code == 0
    ours = json.loads(result.stdout)
    monkeypatch.chdir(repo)
    theirs = CliRunner().invoke(diff_command, ["HEAD", "--format", "json", "--no-bundles"])
    assert theirs.exit_code == 0, theirs.output
    reported = json.loads(theirs.stdout)
    assert [
        (r["recipe"], r["scaleProfile"], r["baseDigest"], r["headDigest"], r["reasons"])
        for r in ours["recipes"]
    ] == [
        (r["recipe"], r["scaleProfile"], r["baseDigest"], r["headDigest"], r["reasons"])
        for r in reported["recipes"]
    ]
    assert [r["recipe"] for r in ours["recipes"]] == ["gke-inference"]  # h100 re-pins beta
    assert ours["evidenceMadeStale"] == reported["evidence"]["madeStale"] == [stale]
    assert reported["pins"] == [
        {
            "component": "beta",
            "change": "bumped",
            "base": ["v2.0.0", "v2.1.0"],
            "head": ["v2.1.0", "v2.2.0"],
        }
    ]


def test_write_ambiguous_pin_names_the_places(server: PinsServer, catalog: Path) -> None:
    before = snapshot(catalog)
    result = run(catalog, "--write", "beta=v2.2.0", "--no-check")
    assert result.exit_code == 2
    assert result.stderr == (
        "overlays/h100-eks-training.yaml:17:7: $.spec.componentRefs[0].version:"
        " beta is pinned to v2.1.0 here [pins.ambiguous-write]\n"
        "registry.yaml:20:7: $.components[1].helm.defaultVersion:"
        " beta is pinned to v2.0.0 here [pins.ambiguous-write]\n"
        "error: --write: component 'beta' is pinned in 2 places;"
        " name one as FILE:beta=VERSION\n"
    )
    assert snapshot(catalog) == before
    assert server.seen == []


def test_write_in_a_named_file_offline(server: PinsServer, catalog: Path) -> None:
    old = digests(catalog)
    before = snapshot(catalog)
    result = run(catalog, "--write", "registry.yaml:beta=v2.2.0", "--no-check", "--format", "json")
    new = digests(catalog)
    assert result.exit_code == 0
    assert changed_lines(before["registry.yaml"], snapshot(catalog)["registry.yaml"]) == [
        "-      defaultVersion: v2.0.0",
        "+      defaultVersion: v2.2.0",
    ]
    doc = json.loads(result.stdout)
    assert [(r["recipe"], r["baseDigest"], r["headDigest"]) for r in doc["recipes"]] == [
        (leaf, old[leaf], new[leaf]) for leaf in sorted(old) if old[leaf] != new[leaf]
    ]
    assert (doc["component"], doc["from"], doc["to"], doc["written"]) == (
        "beta",
        "v2.0.0",
        "v2.2.0",
        True,
    )
    assert doc["evidenceMadeStale"] == []
    assert server.seen == []  # --no-check: offline


def test_write_dry_run_writes_nothing(server: PinsServer, catalog: Path) -> None:
    healthy(server, alpha=("1.2.0", "1.3.0"))
    before = snapshot(catalog)
    result = run(catalog, "--write", "alpha=1.3.0", "--dry-run")
    assert result.exit_code == 0
    assert result.stdout.startswith(
        "would bump alpha 1.2.0 -> 1.3.0 at registry.yaml:12:7:"
        " $.components[0].helm.defaultVersion\nrecipes whose digest changes: 2\n"
    )
    assert snapshot(catalog) == before


def test_write_refuses_an_unpublished_version(server: PinsServer, catalog: Path) -> None:
    healthy(server)
    before = snapshot(catalog)
    result = run(catalog, "--write", "gamma=0.9.0")
    assert result.exit_code == 1
    assert norm(result.stderr, server).splitlines()[-2:] == [
        "registry.yaml:29:7: $.components[2].helm.defaultVersion: gamma 0.9.0: version 0.9.0 is"
        " not published for chart gamma in oci://SERVER/charts (newest: 0.3.1)"
        " [pins.version-not-found]",
        "error: --write: gamma 0.9.0 is not confirmed upstream; nothing was written",
    ]
    assert snapshot(catalog) == before
    server.routes[TAGS] = Route([Reply(502, b"")], bearer=TOKEN)
    result = run(catalog, "--write", "gamma=0.3.2")
    assert result.exit_code == 4
    assert snapshot(catalog) == before


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("alpha", "error: --write expects COMPONENT=VERSION, got 'alpha'\n"),
        (
            "alpha=1.0 beta",
            "error: --write: '1.0 beta' is not a version (letters, digits, . _ + -)\n",
        ),
        ("nope=1.0.0", "error: --write: no pin of component 'nope'\n"),
        (
            "overlays/gke-inference.yaml:alpha=1.0.0",
            "error: --write: no pin of component 'alpha' in overlays/gke-inference.yaml\n",
        ),
    ],
)
def test_write_usage_errors(server: PinsServer, catalog: Path, spec: str, message: str) -> None:
    result = run(catalog, "--write", spec, "--no-check")
    assert (result.exit_code, result.stderr) == (2, message)
