"""Collect: the readings preflight's checks use, from `kubectl` outputs, as an AICR Snapshot.

Two halves, so that a live cluster and a directory of saved outputs go through the same code:

- **Sources** (`SOURCES`, `node_sources`): the `kubectl` commands whose outputs hold the readings,
  each saved under a fixed file name. `scripts/collect.sh` runs the same commands on a bastion
  and writes the same files; `aicr-catalog snapshot` runs them itself through the real `kubectl`
  (`--kubeconfig`, `--context`) or reads them back with `--from DIR`.
- **Readings** (`readings_from(outputs)`): pure functions from those outputs (real Kubernetes
  object shapes: Node, DaemonSet, Slinky NodeSet, Deployment, ConfigMap, Service, Pod, the API
  server's /metrics text, the kubelet's /configz) to `{Type}.{Subtype}.{Key}` readings, each with
  a sentence saying how it was measured. A reading its outputs cannot give is *missing*, with the
  reason; it is never guessed.

Three readings are not visible through the Kubernetes API (the managed control-plane tier, a
registry mirror on the nodes, free IPs in the node subnets): the operator declares them
(`declared.yaml` in the directory, or `--declare PATH=VALUE`), and the snapshot says so.

The snapshot keeps upstream's shape (`pkg/snapshotter`: header, measurements of subtypes with
`data` and a string `context`); the sentence of each reading is its key's entry in `context`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from generator.core.errors import Diagnostic, LoadError
from generator.core.yamlio import parse_yaml
from generator.scale.snapshot import Reading, split_path

SNAPSHOT_API_VERSION = "aicr.nvidia.com/v1alpha1"  # what upstream's own snapshotter writes
GPU_LABEL = "nvidia.com/gpu.present"
CLIQUE_LABEL = "nvidia.com/gpu.clique"
GPU_RESOURCE = "nvidia.com/gpu"
DRIVER_LABEL = "nvidia.com/cuda.driver-version.full"
DRIVER_PARTS = ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor",
                "nvidia.com/cuda.driver.rev")  # fmt: skip
NFD_OS_LABEL = "feature.node.kubernetes.io/system-os_release"
SLURMCTLD_LABEL = ("app.kubernetes.io/name", "slurmctld")
DEFAULT_PULL_QPS = 5  # the kubelet's registryPullQPS when its configuration leaves it unset
SYSCTLS = (
    "/proc/sys/net/netfilter/nf_conntrack_max",
    "/proc/sys/net/core/somaxconn",
    "/proc/sys/net/ipv4/tcp_max_syn_backlog",
)
DECLARED_FILE = "declared.yaml"
FILL_IN = "FILL-IN"  # collect.sh's placeholder in declared.yaml: not a value
WINDOW_FILE = "metrics-window-seconds.txt"
COLLECTED_AT_FILE = "collected-at.txt"


@dataclass(frozen=True, slots=True)
class Source:
    """One saved `kubectl` output: its file name in the directory and the command that makes it."""

    file: str
    args: tuple[str, ...]  # after `kubectl [--kubeconfig K] [--context C]`
    optional: bool = False  # absent on clusters without the component (its readings go missing)


SOURCES: tuple[Source, ...] = (
    Source("version.json", ("version", "-o", "json")),
    Source("nodes.json", ("get", "nodes", "-o", "json")),
    Source("daemonsets.json", ("get", "daemonsets", "--all-namespaces", "-o", "json")),
    Source(
        "nodesets.json",
        ("get", "nodesets.slinky.slurm.net", "--all-namespaces", "-o", "json"),
        optional=True,
    ),
    Source(
        "deployments-kube-system.json",
        ("get", "deployments", "--namespace", "kube-system", "-o", "json"),
    ),
    Source(
        "configmaps-kube-system.json",
        ("get", "configmaps", "--namespace", "kube-system", "-o", "json"),
    ),
    Source("services.json", ("get", "services", "--all-namespaces", "-o", "json")),
    Source("pods.json", ("get", "pods", "--all-namespaces", "-o", "json")),
    Source("metrics-start.txt", ("get", "--raw", "/metrics")),
    Source("metrics-end.txt", ("get", "--raw", "/metrics")),
)
CONFIGZ_DIR = "configz"  # configz/<node>.json: kubectl get --raw /api/v1/nodes/<node>/proxy/configz
SYSCTL_DIR = "sysctl"  # sysctl/<node>.txt: `path=value` lines read by a pod on that node


def configz_args(node: str) -> tuple[str, ...]:
    return ("get", "--raw", f"/api/v1/nodes/{node}/proxy/configz")


def sysctl_pod_args(node: str, image: str) -> tuple[str, ...]:
    """A short-lived pod in the host network namespace of `node` that prints the sysctls."""
    overrides = {
        "apiVersion": "v1",
        "spec": {
            "nodeName": node,
            "hostNetwork": True,
            "tolerations": [{"operator": "Exists"}],
            "automountServiceAccountToken": False,
        },
    }
    script = "for f in " + " ".join(SYSCTLS) + '; do [ -r "$f" ] && echo "$f=$(cat "$f")"; done'
    name = "aicr-sysctl-" + re.sub(r"[^a-z0-9-]", "-", node.lower())[:40].strip("-")
    return (
        "run", name, "--namespace", "default", "--image", image, "--restart", "Never",
        "--rm", "--attach", "--quiet", "--overrides", json.dumps(overrides, sort_keys=True, allow_nan=False),
        "--command", "--", "sh", "-c", script,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# How each reading is measured, and how to collect it when it is missing


_COLLECT = "aicr-catalog snapshot (or scripts/collect.sh, then aicr-catalog snapshot --from DIR)"

# (path or path prefix ending in '.', how it is measured / how to collect it)
HOW: tuple[tuple[str, str], ...] = (
    ("K8s.server.version", "serverVersion.gitVersion of `kubectl version -o json`"),
    ("K8s.nodes.total", "Nodes in `kubectl get nodes -o json`"),
    ("K8s.nodes.gpu", f"Nodes labelled {GPU_LABEL}=true in `kubectl get nodes -o json`"),
    ("K8s.nodes.ready-gpu", "GPU nodes whose Ready condition is True (`kubectl get nodes -o json`)"),
    ("K8s.nodes.gpus-per-node",
     f"the smallest status.capacity[{GPU_RESOURCE}] over the GPU nodes (`kubectl get nodes`)"),
    ("K8s.cliques.", f"the {CLIQUE_LABEL} labels of the GPU nodes (`kubectl get nodes -o json`)"),
    ("K8s.control-plane.tier",
     "not visible through the Kubernetes API: declare the managed control plane's size tier "
     "(EKS Provisioned Control Plane: standard, xl, 2xl, 4xl, 8xl) in declared.yaml or with "
     "--declare K8s.control-plane.tier=TIER"),
    ("K8s.apf.total-concurrency",
     "the sum of apiserver_flowcontrol_nominal_limit_seats over priority levels in "
     "`kubectl get --raw /metrics` (the API server replica that answered)"),
    ("K8s.apf.rejected-per-minute",
     "the increase of apiserver_flowcontrol_rejected_requests_total between two "
     "`kubectl get --raw /metrics` scrapes, per minute of the window between them"),
    ("K8s.dns.replicas",
     "status.readyReplicas of the kube-system Deployments labelled k8s-app=kube-dns"),
    ("K8s.kube-proxy.mode",
     "`mode` of the kube-proxy configuration ConfigMap in kube-system (empty = iptables)"),
    ("K8s.cluster.services", "Services in `kubectl get services --all-namespaces -o json`"),
    ("K8s.kubelet.max-pods",
     "the smallest status.capacity.pods over the GPU nodes (the kubelet's maxPods)"),
    ("K8s.kubelet.registry-pull-qps",
     "the smallest kubeletconfig.registryPullQPS over the GPU nodes' "
     "`kubectl get --raw /api/v1/nodes/NODE/proxy/configz` (unset = the kubelet default 5)"),
    ("K8s.kubelet.daemonset-pods-per-gpu-node",
     "the most DaemonSet-owned pods on one GPU node (`kubectl get pods --all-namespaces`)"),
    ("K8s.registry.mirror-configured",
     "not visible through the Kubernetes API: declare whether the GPU nodes pull through a "
     "registry mirror or cache (containerd hosts.toml, ECR pull-through cache) in declared.yaml "
     "or with --declare K8s.registry.mirror-configured=true|false"),
    ("K8s.network.subnet-free-ips",
     "not visible through the Kubernetes API: declare the free IPs of the node subnets "
     "(aws ec2 describe-subnets: the sum of AvailableIpAddressCount) in declared.yaml or with "
     "--declare K8s.network.subnet-free-ips=N"),
    ("K8s.daemonset.",
     "status.desiredNumberScheduled / status.numberReady of the DaemonSet "
     "(`kubectl get daemonsets --all-namespaces -o json`)"),
    ("K8s.nodeset.",
     "status.desired / status.readyReplicas of the Slinky NodeSet "
     "(`kubectl get nodesets.slinky.slurm.net --all-namespaces -o json`)"),
    ("GPU.smi.driver",
     f"the lowest driver version in the GPU nodes' {DRIVER_LABEL} labels (GPU Feature "
     "Discovery), which is what nvidia-smi reports on them"),
    ("OS.release.", "the feature.node.kubernetes.io/system-os_release.* labels of the GPU nodes "
     "(Node Feature Discovery) in `kubectl get nodes -o json`"),
    ("OS.sysctl./proc/sys/kernel/osrelease",
     "the lowest status.nodeInfo.kernelVersion over the GPU nodes (`kubectl get nodes -o json`)"),
    ("OS.sysctl./proc/sys/net/netfilter/nf_conntrack_max",
     "the smallest value read by a pod in the host network namespace of the sampled GPU nodes"),
    ("OS.sysctl./proc/sys/net/core/somaxconn",
     "the smallest value read by a pod in the host network namespace of the nodes running "
     "slurmctld (or, before Slurm is installed, of a sampled non-GPU node)"),
    ("OS.sysctl./proc/sys/net/ipv4/tcp_max_syn_backlog",
     "the smallest value read by a pod in the host network namespace of the nodes running "
     "slurmctld (or, before Slurm is installed, of a sampled non-GPU node)"),
)  # fmt: skip


def how_measured(path: str) -> str | None:
    """How the collector measures `path`, or None when it has no collector for it."""
    for key, text in HOW:
        if path == key or (key.endswith(".") and path.startswith(key)):
            return text
    return None


def how_to_collect(path: str) -> str:
    """One line telling an operator how to get `path` into a snapshot."""
    text = how_measured(path)
    if text is None:
        return "no collector in this catalog: add the reading to the snapshot by hand"
    if text.startswith("not visible"):
        return text
    return f"{_COLLECT}: {text}"


# ---------------------------------------------------------------------------------------------
# Reading the saved outputs


@dataclass(frozen=True, slots=True)
class Collected:
    """Readings (path -> value), how each was measured, and the readings that could not be."""

    readings: Mapping[str, Reading]
    how: Mapping[str, str]
    missing: Mapping[str, str]  # path -> why
    metadata: Mapping[str, str]


class _Builder:
    def __init__(self) -> None:
        self.readings: dict[str, Reading] = {}
        self.how: dict[str, str] = {}
        self.missing: dict[str, str] = {}

    def put(self, path: str, value: Reading, how: str) -> None:
        self.readings[path] = value
        self.how[path] = how
        self.missing.pop(path, None)

    def lack(self, path: str, why: str) -> None:
        if path not in self.readings:
            self.missing[path] = why


def _json(outputs: Mapping[str, bytes], name: str) -> Any:
    raw = outputs.get(name)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError as e:
        raise LoadError(f"{name}: not the JSON `kubectl ... -o json` writes: {e}") from e


def _items(outputs: Mapping[str, bytes], name: str, kind: str) -> list[dict[str, Any]] | None:
    doc = _json(outputs, name)
    if doc is None:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise LoadError(
            f"{name}: expected a {kind} list (`kubectl get ... -o json`), found no items"
        )
    items = [i for i in doc["items"] if isinstance(i, dict)]
    wrong = sorted({str(i.get("kind")) for i in items if i.get("kind") not in (kind, None)})
    if wrong:
        raise LoadError(f"{name}: expected {kind} objects, found kind {', '.join(wrong)}")
    _check_items(items, name, kind)
    return items


def _check_items(items: list[dict[str, Any]], name: str, kind: str) -> None:
    """What `kubectl get -o json` guarantees, held: each object once (by namespace and name: a
    list concatenated three times would count 36 nodes as 108), labels a mapping of strings
    (a number or a list as a label value is no Kubernetes object). A located LoadError."""
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        meta = item.get("metadata")
        if not isinstance(meta, dict):
            continue
        labels = meta.get("labels")
        at = f"$.items[{i}].metadata"
        if labels is not None and not isinstance(labels, dict):
            msg = f"labels is {type(labels).__name__}, not a mapping of strings"
            raise LoadError(
                f"{name}: {at}: {msg}", [Diagnostic(name, 0, 0, at, msg, "snapshot.labels")]
            )
        for key, value in (labels or {}).items():
            if not isinstance(value, str):
                msg = f"label {key!r} is {type(value).__name__}, not a string"
                raise LoadError(
                    f"{name}: {at}.labels: {msg}",
                    [Diagnostic(name, 0, 0, f"{at}.labels", msg, "snapshot.labels")],
                )
        if "name" not in meta:
            continue
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        if key in seen:
            msg = (f"{kind} {key.lstrip('/')} is listed twice (items {seen[key]} and {i}); "
                   "kubectl lists each object once")  # fmt: skip
            raise LoadError(
                f"{name}: {msg}",
                [Diagnostic(name, 0, 0, f"$.items[{i}]", msg, "snapshot.duplicate")],
            )
        seen[key] = i


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = _meta(obj).get("labels")
    return labels if isinstance(labels, dict) else {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name", ""))


def _ns_name(obj: Mapping[str, Any]) -> str:
    return f"{_meta(obj).get('namespace', '')}/{_name(obj)}"


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("status")
    return s if isinstance(s, dict) else {}


def _quantity(text: Any) -> int | None:
    """An integer resource quantity (`4`, `110`); None for anything else."""
    try:
        return int(str(text))
    except ValueError:
        return None


def _is_gpu(node: Mapping[str, Any]) -> bool:
    return _labels(node).get(GPU_LABEL) == "true"


def _ready(node: Mapping[str, Any]) -> bool:
    conds = _status(node).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds
               if isinstance(c, dict))  # fmt: skip


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def _cliques(b: _Builder, gpu: list[dict[str, Any]]) -> None:
    """The NVLink cliques of the GPU nodes: how many, the smallest and the largest."""
    cliques = Counter(_labels(n)[CLIQUE_LABEL] for n in gpu if CLIQUE_LABEL in _labels(n))
    outside = len(gpu) - sum(cliques.values())
    if cliques:
        note = f"; {outside} GPU node(s) carry no clique label" if outside else ""
        b.put("K8s.cliques.count", len(cliques),
              f"distinct {CLIQUE_LABEL} values over the GPU nodes{note}")  # fmt: skip
        smallest = 0 if outside else min(cliques.values())
        b.put("K8s.cliques.min-nodes", smallest,
              f"GPU nodes in the smallest {CLIQUE_LABEL} group (0 when a GPU node has none)")  # fmt: skip
        b.put("K8s.cliques.max-nodes", max(cliques.values()),
              f"GPU nodes in the largest {CLIQUE_LABEL} group")  # fmt: skip
    else:
        for p in ("K8s.cliques.count", "K8s.cliques.min-nodes", "K8s.cliques.max-nodes"):
            b.lack(
                p, f"no GPU node carries {CLIQUE_LABEL} (GPU Feature Discovery on NVL72 sets it)"
            )


def _driver(b: _Builder, gpu: list[dict[str, Any]]) -> None:
    """The lowest GPU driver version over the GPU nodes, from GPU Feature Discovery labels."""
    drivers: list[str] = []
    for n in gpu:
        labels = _labels(n)
        if DRIVER_LABEL in labels:
            drivers.append(labels[DRIVER_LABEL])
        elif all(p in labels for p in DRIVER_PARTS):
            drivers.append(".".join(labels[p] for p in DRIVER_PARTS))
    if len(drivers) == len(gpu):
        lowest = min(drivers, key=_version_key)
        spread = "" if len(set(drivers)) == 1 else f" ({len(set(drivers))} versions in the cluster)"
        b.put("GPU.smi.driver", lowest,
              f"the lowest {DRIVER_LABEL} label over the GPU nodes{spread}")  # fmt: skip
    else:
        b.lack("GPU.smi.driver", f"{len(gpu) - len(drivers)} GPU node(s) have no driver label "
               "(GPU Feature Discovery not running yet)")  # fmt: skip


def _nodes(b: _Builder, outputs: Mapping[str, bytes]) -> list[dict[str, Any]]:
    nodes = _items(outputs, "nodes.json", "Node")
    paths = ("K8s.nodes.total", "K8s.nodes.gpu", "K8s.nodes.ready-gpu", "K8s.nodes.gpus-per-node",
             "K8s.cliques.count", "K8s.cliques.min-nodes", "K8s.cliques.max-nodes",
             "K8s.kubelet.max-pods", "GPU.smi.driver")  # fmt: skip
    if nodes is None:
        for p in paths:
            b.lack(p, "nodes.json was not collected")
        return []
    gpu = [n for n in nodes if _is_gpu(n)]
    b.put("K8s.nodes.total", len(nodes), f"{len(nodes)} Nodes in nodes.json")
    b.put("K8s.nodes.gpu", len(gpu), f"Nodes labelled {GPU_LABEL}=true in nodes.json")
    b.put("K8s.nodes.ready-gpu", sum(1 for n in gpu if _ready(n)),
          "GPU nodes whose Ready condition is True in nodes.json")  # fmt: skip
    if not gpu:
        for p in paths[3:]:
            b.lack(p, f"no node is labelled {GPU_LABEL}=true")
        return nodes
    capacity = [_quantity(_status(n).get("capacity", {}).get(GPU_RESOURCE)) for n in gpu]
    if any(c is None for c in capacity):
        b.lack("K8s.nodes.gpus-per-node", f"a GPU node has no {GPU_RESOURCE} capacity yet")
    else:
        b.put("K8s.nodes.gpus-per-node", min(c for c in capacity if c is not None),
              f"the smallest status.capacity[{GPU_RESOURCE}] over {len(gpu)} GPU nodes")  # fmt: skip
    _cliques(b, gpu)
    pods = [_quantity(_status(n).get("capacity", {}).get("pods")) for n in gpu]
    if all(p is not None for p in pods):
        b.put("K8s.kubelet.max-pods", min(p for p in pods if p is not None),
              "the smallest status.capacity.pods over the GPU nodes (the kubelet's maxPods)")  # fmt: skip
    _os(b, gpu)
    _driver(b, gpu)
    return nodes


def _agreed(values: list[str]) -> str:
    """The value every GPU node agrees on; otherwise all of them joined (a constraint then fails)."""
    return ",".join(sorted(set(values)))


def _os(b: _Builder, gpu: list[dict[str, Any]]) -> None:
    for key in ("ID", "VERSION_ID"):
        label = f"{NFD_OS_LABEL}.{key}"
        values = [_labels(n)[label] for n in gpu if label in _labels(n)]
        if len(values) == len(gpu):
            b.put(f"OS.release.{key}", _agreed(values),
                  f"the {label} label of the GPU nodes (Node Feature Discovery; values joined "
                  "with ',' when nodes differ)")  # fmt: skip
        else:
            b.lack(f"OS.release.{key}", f"{len(gpu) - len(values)} GPU node(s) lack {label} "
                   "(Node Feature Discovery not running yet)")  # fmt: skip
    kernels = [str(_status(n).get("nodeInfo", {}).get("kernelVersion", "")) for n in gpu]
    if all(kernels):
        b.put("OS.sysctl./proc/sys/kernel/osrelease", min(kernels, key=_version_key),
              "the lowest status.nodeInfo.kernelVersion over the GPU nodes (the kernel release "
              "/proc/sys/kernel/osrelease reports)")  # fmt: skip


def _workloads(b: _Builder, outputs: Mapping[str, bytes]) -> None:
    daemonsets = _items(outputs, "daemonsets.json", "DaemonSet")
    if daemonsets is None:
        b.lack("K8s.daemonset.", "daemonsets.json was not collected")
    for ds in daemonsets or ():
        key, st = _ns_name(ds), _status(ds)
        b.put(f"K8s.daemonset.{key}.desired", int(st.get("desiredNumberScheduled", 0)),
              f"status.desiredNumberScheduled of DaemonSet {key}")  # fmt: skip
        b.put(f"K8s.daemonset.{key}.ready", int(st.get("numberReady", 0)),
              f"status.numberReady of DaemonSet {key}")  # fmt: skip
    nodesets = _items(outputs, "nodesets.json", "NodeSet")
    if nodesets is None:
        b.lack("K8s.nodeset.", "nodesets.json was not collected (no Slinky NodeSet CRD?)")
    for ns in nodesets or ():
        key, st = _ns_name(ns), _status(ns)
        b.put(f"K8s.nodeset.{key}.desired", int(st.get("desired", 0)),
              f"status.desired of NodeSet {key}")  # fmt: skip
        b.put(f"K8s.nodeset.{key}.ready", int(st.get("readyReplicas", 0)),
              f"status.readyReplicas of NodeSet {key}")  # fmt: skip
    deployments = _items(outputs, "deployments-kube-system.json", "Deployment")
    dns = [d for d in deployments or () if _labels(d).get("k8s-app") == "kube-dns"]
    if dns:
        names = ", ".join(sorted(_name(d) for d in dns))
        b.put("K8s.dns.replicas", sum(int(_status(d).get("readyReplicas", 0)) for d in dns),
              f"status.readyReplicas of kube-system Deployment(s) {names} (k8s-app=kube-dns)")  # fmt: skip
    else:
        b.lack("K8s.dns.replicas", "no kube-system Deployment labelled k8s-app=kube-dns")
    services = _items(outputs, "services.json", "Service")
    if services is None:
        b.lack("K8s.cluster.services", "services.json was not collected")
    else:
        b.put("K8s.cluster.services", len(services), "Services in services.json")


def _kube_proxy(b: _Builder, outputs: Mapping[str, bytes]) -> None:
    maps = _items(outputs, "configmaps-kube-system.json", "ConfigMap")
    # EKS ships kube-proxy-config (key `config`), kubeadm kube-proxy (key `config.conf`)
    for cm in sorted(maps or (), key=_name):
        if _name(cm) not in ("kube-proxy-config", "kube-proxy"):
            continue
        raw_data = cm.get("data")
        data: Mapping[str, Any] = raw_data if isinstance(raw_data, dict) else {}
        for key in ("config", "config.conf"):
            if key not in data:
                continue
            text = data[key]
            if not isinstance(text, str):
                continue
            where = f"configmaps-kube-system.json: {_name(cm)}.{key}"
            conf = parse_yaml(text, where, allow_empty=True).data  # bounded, located
            if isinstance(conf, dict) and conf.get("kind") == "KubeProxyConfiguration":
                mode = str(conf.get("mode") or "") or "iptables"
                b.put("K8s.kube-proxy.mode", mode,
                      f"`mode` of KubeProxyConfiguration in ConfigMap kube-system/{_name(cm)} "
                      "(empty means iptables)")  # fmt: skip
                return
    b.lack("K8s.kube-proxy.mode", "no kube-proxy configuration ConfigMap in kube-system "
           "(an eBPF dataplane replacing kube-proxy has no mode to read)")  # fmt: skip


def _pods(b: _Builder, outputs: Mapping[str, bytes], nodes: list[dict[str, Any]]) -> list[str]:
    """DaemonSet pods per GPU node; returns the nodes running slurmctld."""
    pods = _items(outputs, "pods.json", "Pod")
    if pods is None:
        b.lack("K8s.kubelet.daemonset-pods-per-gpu-node", "pods.json was not collected")
        return []
    gpu = {_name(n) for n in nodes if _is_gpu(n)}
    per_node: Counter[str] = Counter()
    slurmctld: set[str] = set()
    for p in pods:
        node = str((p.get("spec") or {}).get("nodeName") or "")
        owners = _meta(p).get("ownerReferences") or []
        if node in gpu and any(
            isinstance(o, dict) and o.get("kind") == "DaemonSet" for o in owners
        ):
            per_node[node] += 1
        if node and _labels(p).get(SLURMCTLD_LABEL[0]) == SLURMCTLD_LABEL[1]:
            slurmctld.add(node)
    if gpu:
        b.put("K8s.kubelet.daemonset-pods-per-gpu-node", max((per_node[n] for n in gpu), default=0),
              "the most DaemonSet-owned pods scheduled on one GPU node in pods.json")  # fmt: skip
    return sorted(slurmctld)


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def _metric_sum(text: str, name: str) -> float | None:
    total, seen = 0.0, False
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and m.group(1) == name:
            try:
                total += float(m.group(3))
            except ValueError:
                continue
            seen = True
    return total if seen else None


def _apf(b: _Builder, outputs: Mapping[str, bytes]) -> None:
    end = outputs.get("metrics-end.txt")
    start = outputs.get("metrics-start.txt")
    if end is None:
        for p in ("K8s.apf.total-concurrency", "K8s.apf.rejected-per-minute"):
            b.lack(p, "metrics-end.txt (kubectl get --raw /metrics) was not collected")
        return
    end_text = end.decode("utf-8", "replace")
    seats = _metric_sum(end_text, "apiserver_flowcontrol_nominal_limit_seats")
    if seats is None:
        b.lack("K8s.apf.total-concurrency",
               "the API server exposes no apiserver_flowcontrol_nominal_limit_seats")  # fmt: skip
    else:
        b.put("K8s.apf.total-concurrency", int(seats),
              "the sum of apiserver_flowcontrol_nominal_limit_seats over priority levels "
              "(metrics-end.txt, the API server replica that answered)")  # fmt: skip
    window_raw = outputs.get(WINDOW_FILE)
    name = "apiserver_flowcontrol_rejected_requests_total"
    if start is None or window_raw is None:
        b.lack("K8s.apf.rejected-per-minute",
               f"two /metrics scrapes and {WINDOW_FILE} are needed for a rate")  # fmt: skip
        return
    try:
        window = float(window_raw.decode().strip())
    except ValueError as e:
        raise LoadError(f"{WINDOW_FILE}: not a number of seconds: {window_raw[:40]!r}") from e
    if window <= 0:
        raise LoadError(f"{WINDOW_FILE}: the window must be positive, found {window}")
    before = _metric_sum(start.decode("utf-8", "replace"), name) or 0.0
    after = _metric_sum(end_text, name) or 0.0
    rate = max(0.0, after - before) * 60 / window
    b.put("K8s.apf.rejected-per-minute", int(rate) if rate.is_integer() else round(rate, 3),
          f"the increase of {name} over a {window:g}s window, per minute")  # fmt: skip


def _configz(b: _Builder, outputs: Mapping[str, bytes], nodes: list[dict[str, Any]]) -> None:
    gpu = sorted(_name(n) for n in nodes if _is_gpu(n))
    path = "K8s.kubelet.registry-pull-qps"
    found: dict[str, float] = {}
    for node in gpu:
        doc = _json(outputs, f"{CONFIGZ_DIR}/{node}.json")
        if doc is None:
            continue
        conf = doc.get("kubeletconfig") if isinstance(doc, dict) else None
        if not isinstance(conf, dict):
            raise LoadError(
                f"{CONFIGZ_DIR}/{node}.json: no `kubeletconfig` (not a /configz answer)"
            )
        found[node] = float(conf.get("registryPullQPS", DEFAULT_PULL_QPS))
    if not found:
        b.lack(path, f"no {CONFIGZ_DIR}/<gpu node>.json was collected")
        return
    lowest = min(found.values())
    b.put(path, int(lowest) if lowest.is_integer() else lowest,
          f"the smallest kubeletconfig.registryPullQPS over {len(found)} of {len(gpu)} GPU nodes' "
          "/configz (unset = 5)")  # fmt: skip


def _sysctls(
    b: _Builder, outputs: Mapping[str, bytes], nodes: list[dict[str, Any]], slurmctld: list[str]
) -> None:
    values: dict[str, dict[str, int]] = {}
    for name, raw in outputs.items():
        if not (name.startswith(f"{SYSCTL_DIR}/") and name.endswith(".txt")):
            continue
        node = name[len(SYSCTL_DIR) + 1 : -4]
        for line in raw.decode("utf-8", "replace").splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and key in SYSCTLS and value.strip().isdigit():
                values.setdefault(key, {})[node] = int(value.strip())
    gpu = {_name(n) for n in nodes if _is_gpu(n)}
    hosts = set(slurmctld) or {_name(n) for n in nodes} - gpu
    where = "the nodes running slurmctld" if slurmctld else "sampled non-GPU (system) nodes"
    for key in SYSCTLS:
        on = gpu if key.endswith("nf_conntrack_max") else hosts
        label = "sampled GPU nodes" if key.endswith("nf_conntrack_max") else where
        seen = {n: v for n, v in values.get(key, {}).items() if n in on}
        if seen:
            b.put(f"OS.sysctl.{key}", min(seen.values()),
                  f"the smallest value over {len(seen)} of the {label} "
                  f"({', '.join(sorted(seen)[:3])}{', ...' if len(seen) > 3 else ''}), "
                  "read in the host network namespace")  # fmt: skip
        else:
            b.lack(f"OS.sysctl.{key}", f"no {SYSCTL_DIR}/<node>.txt of the {label} gives it")


def parse_declared(raw: bytes, rel: str = DECLARED_FILE) -> dict[str, tuple[Reading, str]]:
    """declared.yaml: `{path: {value: V, source: TEXT}}` for readings kubectl cannot see."""
    doc = parse_yaml(raw, rel, allow_empty=True).data or {}
    if not isinstance(doc, dict):
        raise LoadError(f"{rel}: expected a mapping of reading path to {{value, source}}")
    out: dict[str, tuple[Reading, str]] = {}
    for path, entry in sorted(doc.items()):
        try:
            split_path(str(path))
        except ValueError as e:
            raise LoadError(f"{rel}: {e}") from e
        if not isinstance(entry, dict) or "value" not in entry:
            raise LoadError(f"{rel}: {path}: expected {{value: ..., source: ...}}")
        value = entry["value"]
        if not isinstance(value, str | int | float | bool):
            raise LoadError(f"{rel}: {path}: the value must be a string, number or boolean")
        out[str(path)] = (value, str(entry.get("source") or "declared by the operator"))
    return out


DECLARED_PATHS = ("K8s.control-plane.tier", "K8s.registry.mirror-configured",
                  "K8s.network.subnet-free-ips")  # fmt: skip


def readings_from(
    outputs: Mapping[str, bytes],
    declared: Mapping[str, tuple[Reading, str]] | None = None,
) -> Collected:
    """Every reading the saved outputs give, how each was measured, and what is missing.

    `outputs` maps file names (those of `SOURCES`, `configz/<node>.json`, `sysctl/<node>.txt`,
    `declared.yaml`, `metrics-window-seconds.txt`, `collected-at.txt`) to their bytes.
    `declared` adds or replaces readings (`--declare`). Raises LoadError for an output that is
    not what its command writes.
    """
    b = _Builder()
    version = _json(outputs, "version.json")
    if isinstance(version, dict) and isinstance(version.get("serverVersion"), dict):
        b.put("K8s.server.version", str(version["serverVersion"].get("gitVersion", "")),
              "serverVersion.gitVersion of version.json")  # fmt: skip
    else:
        b.lack("K8s.server.version", "version.json has no serverVersion")
    nodes = _nodes(b, outputs)
    _workloads(b, outputs)
    _kube_proxy(b, outputs)
    slurmctld = _pods(b, outputs, nodes)
    _apf(b, outputs)
    _configz(b, outputs, nodes)
    _sysctls(b, outputs, nodes, slurmctld)
    for path in DECLARED_PATHS:
        b.lack(path, "not visible through the Kubernetes API; declare it")
    merged = dict(parse_declared(outputs[DECLARED_FILE])) if DECLARED_FILE in outputs else {}
    for path, (value, source) in {**merged, **(declared or {})}.items():
        if value == FILL_IN:
            b.lack(path, f"{DECLARED_FILE} still says {FILL_IN}; declare the value")
            continue
        b.put(path, value, f"declared by the operator: {source}")
    metadata = {"source": "aicr-catalog snapshot"}
    if COLLECTED_AT_FILE in outputs:
        metadata["timestamp"] = outputs[COLLECTED_AT_FILE].decode().strip()
    return Collected(
        readings=dict(sorted(b.readings.items())),
        how=dict(sorted(b.how.items())),
        missing=dict(sorted(b.missing.items())),
        metadata=metadata,
    )


def snapshot_document(collected: Collected, metadata: Mapping[str, str]) -> dict[str, Any]:
    """The AICR Snapshot: measurements grouped by type and subtype, sorted; `context` holds how
    each reading was measured (upstream's per-subtype string map)."""
    grouped: dict[str, dict[str, dict[str, Reading]]] = {}
    context: dict[tuple[str, str], dict[str, str]] = {}
    for path, value in collected.readings.items():
        mtype, subtype, key = split_path(path)
        grouped.setdefault(mtype, {}).setdefault(subtype, {})[key] = value
        context.setdefault((mtype, subtype), {})[key] = collected.how[path]
    measurements = [
        {
            "type": mtype,
            "subtypes": [
                {"subtype": sub, "data": data, "context": context[(mtype, sub)]}
                for sub, data in sorted(subs.items())
            ],
        }
        for mtype, subs in sorted(grouped.items())
    ]
    return {
        "apiVersion": SNAPSHOT_API_VERSION,
        "kind": "Snapshot",
        "metadata": dict(sorted({**collected.metadata, **metadata}.items())),
        "measurements": measurements,
    }


# ---------------------------------------------------------------------------------------------
# Live collection through the real kubectl


Runner = Callable[[tuple[str, ...]], tuple[int, bytes, bytes]]  # args -> (rc, stdout, stderr)


@dataclass(frozen=True, slots=True)
class LiveOptions:
    window_seconds: int = 60
    sysctl_image: str = "busybox:1.36"
    node_pods: bool = True  # run the short-lived sysctl pods
    configz_workers: int = 16


def _gpu_and_system(nodes_json: bytes | None) -> tuple[list[str], list[str]]:
    if nodes_json is None:
        return [], []
    items = _items({"nodes.json": nodes_json}, "nodes.json", "Node") or []
    gpu = sorted(_name(n) for n in items if _is_gpu(n))
    return gpu, sorted(_name(n) for n in items if not _is_gpu(n))


def collect_live(
    run: Runner,
    options: LiveOptions,
    sleep: Callable[[float], None],
    progress: Callable[[str], None],
) -> tuple[dict[str, bytes], dict[str, str]]:
    """Run every source through `run` (kubectl with the user's kubeconfig and context).

    Returns (outputs, failures): failures maps a file name to kubectl's error; a failed optional
    source is simply absent. Creates short-lived pods only for the sysctls (`node_pods`).
    """
    from concurrent.futures import ThreadPoolExecutor

    outputs: dict[str, bytes] = {}
    failures: dict[str, str] = {}

    def one(name: str, args: tuple[str, ...], optional: bool = False) -> None:
        progress(f"kubectl {' '.join(args)}")
        rc, out, err = run(args)
        if rc == 0:
            outputs[name] = out
        elif not optional:
            failures[name] = err.decode("utf-8", "replace").strip() or f"exit {rc}"

    for src in SOURCES:
        if src.file == "daemonsets.json" and {"version.json", "nodes.json"} <= set(failures):
            return outputs, failures  # the cluster does not answer: stop before the rest
        if src.file == "metrics-end.txt":
            progress(f"waiting {options.window_seconds}s between two /metrics scrapes")
            sleep(options.window_seconds)
            outputs[WINDOW_FILE] = f"{options.window_seconds}\n".encode()
        one(src.file, src.args, src.optional)
    gpu, system = _gpu_and_system(outputs.get("nodes.json"))
    with ThreadPoolExecutor(max_workers=max(1, options.configz_workers)) as pool:
        list(pool.map(lambda n: one(f"{CONFIGZ_DIR}/{n}.json", configz_args(n)), gpu))
    if options.node_pods:
        slurmctld = _pods(_Builder(), outputs, _items(outputs, "nodes.json", "Node") or [])
        targets = sorted(set(gpu[:1] + (slurmctld or system[:1])))
        for node in targets:
            one(f"{SYSCTL_DIR}/{node}.txt", sysctl_pod_args(node, options.sysctl_image))
    return outputs, failures


def outputs_from_files(files: Iterable[tuple[str, bytes]]) -> dict[str, bytes]:
    """Saved outputs keyed by their path relative to the directory (`configz/n1.json`)."""
    return dict(sorted(files))


def missing_for(paths: Iterable[str], collected: Collected) -> dict[str, str]:
    """Of `paths` (the readings checks use), those the snapshot lacks, with why."""
    out: dict[str, str] = {}
    for p in sorted(set(paths)):
        if p in collected.readings:
            continue
        prefix = next((k for k in collected.missing if k.endswith(".") and p.startswith(k)), None)
        out[p] = collected.missing.get(p) or (collected.missing[prefix] if prefix else
                                               "not in the collected outputs")  # fmt: skip
    return out
