"""The sample snapshots in catalog/scale/snapshots/ are generated here, and must match.

Each variant is its healthy cluster with one named change, so the claim "one defect" is visible in
this file. Refresh after an intended change with `pytest tests/test_preflight_samples.py
--update-goldens` and review the diff.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import yaml

from tests.conftest import CATALOG

SNAPSHOTS = CATALOG / "scale" / "snapshots"
SAMPLE_NOTE = (
    "A sample: hand-built to exercise the scale contract, not captured from a real cluster."
)


@dataclass(frozen=True)
class Cluster:
    name: str
    nodes_total: int
    gpu_nodes: int
    cliques: int
    tier: str
    apf_concurrency: int
    dns_replicas: int
    kube_proxy: str
    services: int
    conntrack_max: int
    mirror: bool
    subnet_free_ips: int
    ds_pods_per_gpu_node: int
    backlog: int
    zero_daemonsets: tuple[str, ...] = ()
    k8s_version: str = "v1.34.2-eks-b3126f4"
    slurm_nodeset: bool = False  # a Slinky NodeSet in DaemonSet mode on every GPU node


SMALL = Cluster(
    name="gb300-eks-36", nodes_total=39, gpu_nodes=36, cliques=2, tier="standard",
    apf_concurrency=600, dns_replicas=2, kube_proxy="iptables", services=140,
    conntrack_max=262144, mirror=False, subnet_free_ips=6000, ds_pods_per_gpu_node=18,
    backlog=4096, slurm_nodeset=True,
)  # fmt: skip
LARGE = Cluster(
    name="gb300-eks-2304", nodes_total=2340, gpu_nodes=2304, cliques=128, tier="4xl",
    apf_concurrency=2400, dns_replicas=24, kube_proxy="nftables", services=1450,
    conntrack_max=1048576, mirror=True, subnet_free_ips=40000, ds_pods_per_gpu_node=22,
    backlog=8192, slurm_nodeset=True,
)  # fmt: skip


def snapshot(c: Cluster) -> dict[str, Any]:
    gpu, total = c.gpu_nodes, c.nodes_total
    daemonsets = {
        "gpu-operator/nvidia-dcgm-exporter": gpu,
        "gpu-operator/nvidia-device-plugin-daemonset": gpu,
        "gpu-operator/nvidia-driver-daemonset": gpu,
        "node-feature-discovery/nfd-worker": total,
        "nvidia-dra-driver/nvidia-dra-driver-gpu-kubelet-plugin": gpu,
        "nvsentinel/platform-connectors": gpu,
    }
    ds_data: dict[str, int] = {}
    for key, n in sorted(daemonsets.items()):
        n = 0 if key in c.zero_daemonsets else n
        ds_data[f"{key}.desired"] = n
        ds_data[f"{key}.ready"] = n
    k8s = [
        ("server", {"version": c.k8s_version, "platform": "eks"}),
        ("nodes", {"total": total, "gpu": gpu, "ready-gpu": gpu, "gpus-per-node": 4}),
        ("cliques", {"count": c.cliques, "min-nodes": 18, "max-nodes": 18}),
        ("control-plane", {"tier": c.tier}),
        ("apf", {"total-concurrency": c.apf_concurrency, "rejected-per-minute": 0}),
        ("dns", {"replicas": c.dns_replicas}),
        ("kube-proxy", {"mode": c.kube_proxy}),
        ("cluster", {"services": c.services}),
        ("kubelet", {"max-pods": 110, "registry-pull-qps": 10,
                     "daemonset-pods-per-gpu-node": c.ds_pods_per_gpu_node}),
        ("registry", {"mirror-configured": c.mirror}),
        ("network", {"subnet-free-ips": c.subnet_free_ips}),
        ("daemonset", ds_data),
    ]  # fmt: skip
    if c.slurm_nodeset:
        k8s.append(("nodeset", {"slurm/slurm-worker-slinky.desired": gpu,
                                "slurm/slurm-worker-slinky.ready": gpu}))  # fmt: skip
    return {
        "apiVersion": "aicr.run/v1",
        "kind": "Snapshot",
        "metadata": {
            "cluster": c.name,
            "source": "sample (hand-built for the scale contract)",
            "timestamp": "2026-11-30T00:00:00Z",
        },
        "measurements": [
            {"type": "K8s", "subtypes": [{"subtype": s, "data": d} for s, d in k8s]},
            {"type": "GPU", "subtypes": [{"subtype": "smi", "data": {
                "driver": "580.105.08", "model": "NVIDIA GB300", "gpu-count": 4}}]},
            {"type": "OS", "subtypes": [
                {"subtype": "release", "data": {"ID": "ubuntu", "VERSION_ID": "24.04"}},
                {"subtype": "sysctl", "data": {
                    "/proc/sys/net/netfilter/nf_conntrack_max": c.conntrack_max,
                    "/proc/sys/net/core/somaxconn": c.backlog,
                    "/proc/sys/net/ipv4/tcp_max_syn_backlog": c.backlog,
                }},
            ]},
        ],
    }  # fmt: skip


SAMPLES: dict[str, tuple[Cluster, tuple[str, ...]]] = {
    "gb300-eks-36-healthy.yaml": (
        SMALL,
        (
            "A healthy 36-node (two-rack) GB300 NVL72 cluster on EKS: 36 GPU nodes in 2 complete cliques",
            "plus 3 system nodes, with the Slurm nodeset of the -slurm recipes on every GPU node. Preflight",
            "with scale profile standard passes every applicable check (exit 0) for both",
            "gb300-eks-ubuntu-training and gb300-eks-ubuntu-training-slurm.",
        ),
    ),
    "gb300-eks-36-catalog-defect.yaml": (
        replace(SMALL, zero_daemonsets=("nvidia-dra-driver/nvidia-dra-driver-gpu-kubelet-plugin",)),
        (
            "The healthy 36-node cluster with one catalog-owned defect: the DRA kubelet plugin daemonset",
            "has 0 desired pods (its resolved node selector matches no GPU node). Exit 1.",
        ),
    ),
    "gb300-eks-36-infra-defect.yaml": (
        replace(SMALL, conntrack_max=65536),
        (
            "The healthy 36-node cluster with one infrastructure defect: nf_conntrack_max is 65536 on the",
            "GPU nodes, below kube-proxy's floor of 131072. The catalog never changes host settings: exit 3.",
        ),
    ),
    "gb300-eks-2304-healthy.yaml": (
        LARGE,
        (
            "A healthy 2,304-node GB300 NVL72 cluster on EKS: 128 complete racks (9,216 GPUs) plus 36 system",
            "nodes, a 4XL control-plane tier, nftables kube-proxy, a pull-through cache. Preflight with recipe",
            "gb300-eks-ubuntu-training-slurm, scale profile nvl72-2304 and --nodes 2304 passes (exit 0).",
        ),
    ),
    "gb300-eks-2304-catalog-defect.yaml": (
        replace(LARGE, zero_daemonsets=("gpu-operator/nvidia-driver-daemonset",)),
        (
            "The healthy 2,304-node cluster with one catalog-owned defect: the NVIDIA driver daemonset has",
            "0 desired pods (the resolved node selector matches no GPU node). Exit 1.",
        ),
    ),
    "gb300-eks-2304-infra-defect.yaml": (
        replace(LARGE, dns_replicas=2),
        (
            "The healthy 2,304-node cluster with one infrastructure defect: CoreDNS still runs the 2 replicas",
            "of a small cluster, where 2,340 nodes need 19. Cluster DNS is not the catalog's: exit 3.",
        ),
    ),
    "gb300-eks-2304-mixed-defects.yaml": (
        replace(LARGE, dns_replicas=2, zero_daemonsets=("gpu-operator/nvidia-driver-daemonset",)),
        (
            "The healthy 2,304-node cluster with both defects at once: the NVIDIA driver daemonset has 0",
            "desired pods (catalog-owned) and CoreDNS runs 2 replicas (infrastructure). A catalog-owned",
            "failure decides the exit code: 1. Both findings are reported.",
        ),
    ),
}


def render_sample(cluster: Cluster, header: tuple[str, ...]) -> str:
    lines = [f"# {line}" for line in (*header, SAMPLE_NOTE)]
    body = yaml.safe_dump(snapshot(cluster), sort_keys=False, width=100)
    return "\n".join(lines) + "\n" + body


def test_sample_snapshots_are_generated_from_this_file(update_goldens: bool) -> None:
    expected = {name: render_sample(c, h) for name, (c, h) in SAMPLES.items()}
    if update_goldens:
        for old in SNAPSHOTS.glob("*.yaml"):
            if old.name not in expected:
                old.unlink()
        for name, text in expected.items():
            (SNAPSHOTS / name).write_text(text, encoding="utf-8")
    actual = {p.name: p.read_text(encoding="utf-8") for p in SNAPSHOTS.glob("*.yaml")}
    assert sorted(actual) == sorted(expected)
    for name, text in expected.items():
        assert actual[name] == text, f"{name} differs; rerun with --update-goldens and review"
