"""`aicr-catalog snapshot`: readings from saved kubectl outputs (real object shapes), the snapshot's
upstream shape and provenance, missing readings, `scripts/collect.sh`, and live collection.

No cluster is used: the saved outputs are `tests/fixtures/kubectl/gb300-eks-36/`, written by
`tests/kubectl_fixtures.py`. Live collection is exercised with a runner that answers each kubectl
command from those files, and `collect.sh` with a `kubectl` on PATH that does the same; neither
is an API server, and neither says anything about a real cluster's answers.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from generator.catalog import schemas
from generator.cli import main
from generator.core.errors import LoadError
from generator.scale.collect import (
    SOURCES,
    LiveOptions,
    collect_live,
    how_measured,
    readings_from,
    snapshot_document,
)
from tests import kubectl_fixtures, kubectl_replay
from tests.conftest import CATALOG, REPO

FIXTURE = REPO / "tests" / "fixtures" / "kubectl" / "gb300-eks-36"
SCRIPT = REPO / "scripts" / "collect.sh"
SEED = "gb300-eks-ubuntu-training-slurm"


def test_fixture_files_are_generated_from_kubectl_fixtures(update_goldens: bool) -> None:
    expected = kubectl_fixtures.files()
    if update_goldens:
        if FIXTURE.exists():
            shutil.rmtree(FIXTURE)
        for rel, data in expected.items():
            (FIXTURE / rel).parent.mkdir(parents=True, exist_ok=True)
            (FIXTURE / rel).write_bytes(data)
    actual = {p.relative_to(FIXTURE).as_posix(): p.read_bytes()
              for p in sorted(FIXTURE.rglob("*")) if p.is_file()}  # fmt: skip
    assert sorted(actual) == sorted(expected)
    assert actual == expected, "rerun with --update-goldens and review"


@functools.cache
def _saved_files() -> dict[str, bytes]:
    """kubectl_fixtures.files(), made once (about 0.1 s each; the live-collection replay asks
    for a file ~90 times). Read-only: `_outputs()` hands out copies to change."""
    return kubectl_fixtures.files()


def _outputs() -> dict[str, bytes]:
    return dict(_saved_files())


def test_readings_from_the_saved_outputs() -> None:
    c = readings_from(_outputs())
    r = c.readings
    assert (r["K8s.nodes.total"], r["K8s.nodes.gpu"], r["K8s.nodes.ready-gpu"]) == (39, 36, 36)
    assert r["K8s.nodes.gpus-per-node"] == 4
    assert (r["K8s.cliques.count"], r["K8s.cliques.min-nodes"], r["K8s.cliques.max-nodes"]) == (
        2, 18, 18)  # fmt: skip
    assert r["K8s.server.version"] == "v1.34.2-eks-b3126f4"
    assert r["GPU.smi.driver"] == "580.105.08"
    assert (r["OS.release.ID"], r["OS.release.VERSION_ID"]) == ("ubuntu", "24.04")
    assert r["K8s.daemonset.gpu-operator/nvidia-driver-daemonset.desired"] == 36
    assert r["K8s.daemonset.node-feature-discovery/nfd-worker.ready"] == 39
    assert r["K8s.nodeset.slurm/slurm-worker-slinky.desired"] == 36
    assert r["K8s.dns.replicas"] == 2
    assert r["K8s.kube-proxy.mode"] == "iptables"
    assert r["K8s.cluster.services"] == 140
    assert r["K8s.kubelet.max-pods"] == 110
    assert r["K8s.kubelet.registry-pull-qps"] == 10
    # 14 DaemonSets reach every GPU node; slurmd pods are NodeSet-owned, not counted
    assert r["K8s.kubelet.daemonset-pods-per-gpu-node"] == 14
    assert r["K8s.apf.total-concurrency"] == sum(kubectl_fixtures.APF_SEATS.values()) == 602
    assert r["K8s.apf.rejected-per-minute"] == 0
    assert r["OS.sysctl./proc/sys/net/netfilter/nf_conntrack_max"] == 262144
    assert r["OS.sysctl./proc/sys/net/core/somaxconn"] == 4096
    assert r["K8s.control-plane.tier"] == "standard"
    assert r["K8s.registry.mirror-configured"] is False
    assert c.missing == {}
    assert set(c.how) == set(r) and all(c.how.values())


def test_counts_follow_the_objects_not_the_file() -> None:
    """Change the objects (a NotReady GPU node, a partial rack, a rejection burst, a lower QPS on
    one node, a second driver version) and the readings follow."""
    out = _outputs()
    nodes = json.loads(out["nodes.json"])
    gpu = [n for n in nodes["items"] if n["metadata"]["labels"].get("nvidia.com/gpu.present")]
    ready = next(c for c in gpu[0]["status"]["conditions"] if c["type"] == "Ready")
    ready["status"] = "Unknown"
    del gpu[1]["metadata"]["labels"]["nvidia.com/gpu.clique"]
    gpu[2]["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = "570.195.03"
    gpu[3]["status"]["capacity"]["nvidia.com/gpu"] = "2"
    out["nodes.json"] = json.dumps(nodes).encode()
    out["metrics-end.txt"] = out["metrics-end.txt"].replace(b'queue-full"} 3', b'queue-full"} 33')
    name = gpu[4]["metadata"]["name"]
    conf = json.loads(out[f"configz/{name}.json"])
    del conf["kubeletconfig"]["registryPullQPS"]  # unset: the kubelet default 5
    out[f"configz/{name}.json"] = json.dumps(conf).encode()
    r = readings_from(out).readings
    assert r["K8s.nodes.ready-gpu"] == 35
    assert r["K8s.cliques.min-nodes"] == 0  # a GPU node outside every clique
    assert r["GPU.smi.driver"] == "570.195.03"
    assert r["K8s.nodes.gpus-per-node"] == 2
    assert r["K8s.apf.rejected-per-minute"] == 30
    assert r["K8s.kubelet.registry-pull-qps"] == 5


def test_snapshot_has_upstreams_shape_and_says_how_each_reading_was_measured() -> None:
    doc = snapshot_document(readings_from(_outputs()), {})
    jsonschema.Draft202012Validator(schemas.schema("snapshot")).validate(doc)
    assert (doc["apiVersion"], doc["kind"]) == ("aicr.nvidia.com/v1alpha1", "Snapshot")
    assert all(isinstance(v, str) for v in doc["metadata"].values())
    for m in doc["measurements"]:
        assert set(m) == {"type", "subtypes"}
        for sub in m["subtypes"]:
            assert set(sub) == {"subtype", "data", "context"}
            assert set(sub["context"]) == set(sub["data"])
            assert all(isinstance(v, str) and v for v in sub["context"].values())


def run_cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_snapshot_from_dir_gives_a_snapshot_preflight_finds_complete(tmp_path: Path) -> None:
    """Done-when of issue 18: `snapshot --from` on saved outputs, then preflight has no
    unavailable reading (the seed recipe and its parent, at the standard profile)."""
    out = tmp_path / "snapshot.yaml"
    code, _, err = run_cli("snapshot", "--from", str(FIXTURE), "-o", str(out),
                           "--catalog", str(CATALOG))  # fmt: skip
    assert code == 0, err
    assert "snapshot: 38 of 38 readings the checks and recipe constraints use" in err
    assert "missing" not in err
    for recipe in (SEED, "gb300-eks-ubuntu-training"):
        code, stdout, err = run_cli("preflight", "--catalog", str(CATALOG), "--recipe", recipe,
                                    "--snapshot", str(out), "--format", "json")  # fmt: skip
        doc = json.loads(stdout)
        assert doc["summary"]["unavailable"] == 0, recipe
        assert code == 0, [f for f in doc["findings"] if f["result"] == "fail"]
    again = tmp_path / "again.yaml"
    run_cli("snapshot", "--from", str(FIXTURE), "-o", str(again), "--catalog", str(CATALOG))
    assert again.read_bytes() == out.read_bytes()


def test_missing_outputs_are_listed_and_make_preflight_insufficient(tmp_path: Path) -> None:
    src = tmp_path / "saved"
    shutil.copytree(FIXTURE, src)
    (src / "nodesets.json").unlink()  # no Slinky CRD answered
    (src / "declared.yaml").unlink()  # nothing declared
    shutil.rmtree(src / "sysctl")
    out = tmp_path / "snapshot.yaml"
    code, _, err = run_cli(
        "snapshot", "--from", str(src), "-o", str(out), "--catalog", str(CATALOG)
    )
    assert code == 0
    assert "missing K8s.control-plane.tier: not visible through the Kubernetes API" in err
    assert (
        "missing K8s.nodeset.slurm/slurm-worker-slinky.desired: nodesets.json was not collected"
        in err
    )
    assert "collect: aicr-catalog snapshot (or scripts/collect.sh" in err
    code, stdout, _ = run_cli("preflight", "--catalog", str(CATALOG), "--recipe", SEED,
                              "--snapshot", str(out))  # fmt: skip
    assert code == 4, stdout
    missing = [
        "K8s.nodeset.slurm/slurm-worker-slinky.desired",
        "K8s.nodeset.slurm/slurm-worker-slinky.ready",
        "OS.sysctl./proc/sys/net/core/somaxconn",
        "OS.sysctl./proc/sys/net/ipv4/tcp_max_syn_backlog",
        "OS.sysctl./proc/sys/net/netfilter/nf_conntrack_max",
    ]
    assert f"insufficient data: {len(missing)} readings missing\n" in stdout
    for reading in missing:
        assert f"\n  {reading} (needed by " in stdout
    assert stdout.endswith("exit 4: insufficient data: error-severity checks lack readings "
                           "(nothing failed; nothing is shown to hold either)\n")  # fmt: skip
    # readings only skipped checks use are not asked for (the tier is an nvl72-2304 prerequisite,
    # the registry mirror a check from 288 nodes on)
    assert "K8s.control-plane.tier (needed by" not in stdout
    assert "K8s.registry.mirror-configured (needed by" not in stdout


def test_declare_adds_a_reading_kubectl_cannot_see(tmp_path: Path) -> None:
    src = tmp_path / "saved"
    shutil.copytree(FIXTURE, src)
    (src / "declared.yaml").unlink()
    out = tmp_path / "s.yaml"
    code, _, err = run_cli("snapshot", "--from", str(src), "-o", str(out), "--catalog", str(CATALOG),
                           "--declare", "K8s.control-plane.tier=4xl",
                           "--declare", "K8s.registry.mirror-configured=true",
                           "--declare", "K8s.network.subnet-free-ips=40000")  # fmt: skip
    assert code == 0, err
    doc = yaml.safe_load(out.read_text())
    cp = next(s for m in doc["measurements"] if m["type"] == "K8s" for s in m["subtypes"]
              if s["subtype"] == "control-plane")  # fmt: skip
    assert cp["data"] == {"tier": "4xl"}
    assert cp["context"]["tier"] == "declared by the operator: given with --declare"
    code, _, err = run_cli("snapshot", "--from", str(src), "--declare", "tier=4xl")
    assert code == 2 and "is not {Type}.{Subtype}.{Key}" in err


def test_declare_refuses_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    """A command line's bytes that are not UTF-8 reach the command as lone surrogates (click
    decodes argv with surrogateescape): a usage error naming them, not a traceback."""
    src = tmp_path / "saved"
    shutil.copytree(FIXTURE, src)
    out = tmp_path / "s.yaml"
    code, _, err = run_cli("snapshot", "--from", str(src), "-o", str(out),
                           "--declare", "K8s.control-plane.tier=4x\udcffl")  # fmt: skip
    assert code == 2, err
    assert "--declare" in err and "is not valid UTF-8" in err and "\\udcff" in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("pods.json", b'{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node"}]}',
         "pods.json: expected Pod objects, found kind Node"),
        ("nodes.json", b"not json", "nodes.json: not the JSON `kubectl ... -o json` writes"),
        ("daemonsets.json", b'{"kind": "DaemonSet"}', "daemonsets.json: expected a DaemonSet list"),
        ("metrics-window-seconds.txt", b"soon", "metrics-window-seconds.txt: not a number"),
    ],
)  # fmt: skip
def test_a_saved_output_that_is_not_kubectls_is_an_error(
    tmp_path: Path, file: str, content: bytes, message: str
) -> None:
    src = tmp_path / "saved"
    shutil.copytree(FIXTURE, src)
    (src / file).write_bytes(content)
    code, stdout, err = run_cli("snapshot", "--from", str(src))
    assert code == 1 and stdout == ""
    assert message in err and "Traceback" not in err


def test_usage_errors() -> None:
    assert run_cli("snapshot", "--from", "/nonexistent/dir")[0] == 2
    code, _, err = run_cli("snapshot", "--from", str(FIXTURE), "--context", "prod")
    assert code == 2 and "--from reads saved outputs" in err


def _replay(args: tuple[str, ...]) -> tuple[int, bytes, bytes]:
    """A stand-in for `kubectl ARGS`, answering from the saved outputs (not an API server)."""
    return kubectl_replay.replay(args, _saved_files(), {s.args: s.file for s in SOURCES})


def test_live_collection_runs_the_same_sources_and_reads_the_same() -> None:
    calls: list[tuple[str, ...]] = []

    def run(args: tuple[str, ...]) -> tuple[int, bytes, bytes]:
        calls.append(args)
        return _replay(args)

    slept: list[float] = []
    outputs, failures = collect_live(
        run, LiveOptions(window_seconds=60), slept.append, lambda _: None
    )
    assert failures == {} and slept == [60]
    expected = _saved_files()
    live = readings_from({**outputs, "declared.yaml": expected["declared.yaml"]})
    saved = readings_from(expected)
    assert live.readings == saved.readings
    assert [c for c in calls if c[0] == "run"] and all("--rm" in c for c in calls if c[0] == "run")
    # read-only otherwise: only get/version and the sysctl pods
    assert {c[0] for c in calls} == {"version", "get", "run"}
    no_pods, _ = collect_live(run, LiveOptions(node_pods=False), lambda _: None, lambda _: None)
    assert not any(k.startswith("sysctl/") for k in no_pods)


def test_every_source_is_in_collect_sh_and_every_reading_has_a_how() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    for src in SOURCES:
        assert f"save {src.file} {' '.join(src.args)}" in text, src.file
    for path in readings_from(_outputs()).readings:
        assert how_measured(path), path


def test_collect_sh_is_shellchecked() -> None:
    if shutil.which("shellcheck") is None:
        if os.environ.get("CI"):
            pytest.fail("shellcheck is not installed")
        pytest.skip("shellcheck is not installed")
    res = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


STUB = """#!{python}
# kubectl stand-in for the collect.sh test: answers from saved outputs (not an API server);
# tests/kubectl_replay.py is standard library only, so each command starts in milliseconds
import json, sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from tests.kubectl_replay import jsonpath, read_dir, replay
files = read_dir(Path({answers!r}))
args = tuple(sys.argv[1:])
while args[:1] in (("--context",), ("--kubeconfig",)):
    args = args[2:]
if "-o" in args and args[args.index("-o") + 1].startswith("jsonpath"):
    sys.stdout.write(jsonpath(args, files)); sys.exit(0)
by_args = {{tuple(a): f for a, f in json.loads(Path({sources!r}).read_text())}}
rc, out, err = replay(args, files, by_args)
sys.stdout.buffer.write(out); sys.stderr.buffer.write(err); sys.exit(rc)
"""


def test_collect_sh_writes_what_snapshot_from_reads(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # the stub's answers: kubectl_fixtures.files() written out once, and SOURCES as JSON
    answers = tmp_path / "answers"
    for rel, data in _saved_files().items():
        (answers / rel).parent.mkdir(parents=True, exist_ok=True)
        (answers / rel).write_bytes(data)
    sources = bindir / "sources.json"
    sources.write_text(json.dumps([[list(s.args), s.file] for s in SOURCES]))
    stub = bindir / "kubectl"
    stub.write_text(
        STUB.format(
            python=sys.executable, repo=str(REPO), answers=str(answers), sources=str(sources)
        )
    )
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "saved"
    env = {
        **os.environ,
        "PATH": f"{bindir}:{os.environ['PATH']}",
        "WINDOW": "1",
        "CONFIGZ_JOBS": "4",
    }
    res = subprocess.run(["bash", str(SCRIPT), str(out), "--context", "lab"], env=env,
                         capture_output=True, text=True, check=False, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    expected = sorted(_saved_files())
    assert written == expected
    assert "value: FILL-IN" in (out / "declared.yaml").read_text()
    (out / "declared.yaml").write_bytes(_saved_files()["declared.yaml"])
    saved = readings_from(_saved_files())
    collected = readings_from({p: (out / p).read_bytes() for p in written})
    assert collected.readings == saved.readings


def test_a_declared_value_left_as_fill_in_is_not_a_reading() -> None:
    c = readings_from({"declared.yaml": b"K8s.control-plane.tier:\n  value: FILL-IN\n"})
    assert "K8s.control-plane.tier" not in c.readings
    assert (
        c.missing["K8s.control-plane.tier"] == "declared.yaml still says FILL-IN; declare the value"
    )
    with pytest.raises(LoadError, match="must be a string, number or boolean"):
        readings_from({"declared.yaml": b"K8s.control-plane.tier:\n  value: [a]\n"})


def test_live_collection_stops_when_the_cluster_does_not_answer() -> None:
    calls: list[tuple[str, ...]] = []

    def refused(args: tuple[str, ...]) -> tuple[int, bytes, bytes]:
        calls.append(args)
        return 1, b"", b"The connection to the server localhost:8080 was refused"

    outputs, failures = collect_live(refused, LiveOptions(), lambda _: None, lambda _: None)
    assert outputs == {} and set(failures) == {"version.json", "nodes.json"}
    assert len(calls) == 2  # no /metrics wait, no per-node requests
