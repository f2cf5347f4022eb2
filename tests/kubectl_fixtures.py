"""Saved `kubectl` outputs of a healthy 36-node GB300 NVL72 EKS cluster, as `collect.sh` writes them.

The objects have the shapes the Kubernetes API returns (`kubectl get ... -o json`: a `List` of
Nodes with GPU Feature Discovery labels and `nvidia.com/gpu` capacity, DaemonSets, Slinky
NodeSets, Deployments, ConfigMaps, Services, Pods with owner references), the API server's
/metrics text and the kubelet's /configz answer. They are written by hand from those APIs'
documented types, not captured from a cluster. `tests/test_snapshot_collect.py` keeps the
committed files in step with this module (refresh with --update-goldens).
"""

from __future__ import annotations

import json
from typing import Any

CLUSTER = "gb300-eks-36"
GPU_NODES = tuple(
    f"ip-10-0-{rack}-{slot + 10}.ec2.internal" for rack in (1, 2) for slot in range(18)
)
SYSTEM_NODES = tuple(f"ip-10-0-0-{i}.ec2.internal" for i in (11, 12, 13))
RACK_UUIDS = {1: "4a1c2f0e-1b7d-4e55-9a31-6c0d8e2f1a01", 2: "4a1c2f0e-1b7d-4e55-9a31-6c0d8e2f1a02"}
CREATED = "2026-11-28T09:00:00Z"


def _uid(kind: str, name: str) -> str:
    import hashlib

    h = hashlib.sha256(f"{kind}/{name}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": items, "kind": "List",
            "metadata": {"resourceVersion": ""}}  # fmt: skip


def _node(name: str, gpu: bool, rack: int = 0) -> dict[str, Any]:
    labels = {
        "beta.kubernetes.io/arch": "arm64" if gpu else "amd64",
        "beta.kubernetes.io/os": "linux",
        "eks.amazonaws.com/nodegroup": "gb300-rack" if gpu else "system",
        "kubernetes.io/arch": "arm64" if gpu else "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "p6e-gb300.36xlarge" if gpu else "m7i.4xlarge",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": "us-east-1a",
    }
    capacity = {"cpu": "16", "ephemeral-storage": "104845292Ki", "memory": "65023764Ki",
                "pods": "110"}  # fmt: skip
    taints: list[dict[str, str]] = []
    if gpu:
        labels.update({
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.count": "4",
            "nvidia.com/gpu.product": "NVIDIA-GB300",
            "nvidia.com/gpu.clique": f"{RACK_UUIDS[rack]}.{rack}",
            "nvidia.com/cuda.driver-version.full": "580.105.08",
            "nvidia.com/cuda.driver.major": "580",
            "nvidia.com/cuda.driver.minor": "105",
            "nvidia.com/cuda.driver.rev": "08",
            "feature.node.kubernetes.io/pci-10de.present": "true",
            "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
            "feature.node.kubernetes.io/system-os_release.VERSION_ID": "24.04",
            "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": "24",
            "feature.node.kubernetes.io/system-os_release.VERSION_ID.minor": "04",
        })  # fmt: skip
        capacity.update({"cpu": "144", "memory": "1930365216Ki", "nvidia.com/gpu": "4"})
        taints = [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            "creationTimestamp": CREATED,
            "labels": labels,
            "name": name,
            "resourceVersion": "48211",
            "uid": _uid("Node", name),
        },
        "spec": {
            "providerID": f"aws:///us-east-1a/i-{_uid('i', name)[:17].replace('-', '')}",
            **({"taints": taints} if taints else {}),
        },
        "status": {
            "addresses": [
                {"address": name.split(".")[0][3:].replace("-", "."), "type": "InternalIP"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": dict(capacity),
            "capacity": capacity,
            "conditions": [
                {
                    "lastHeartbeatTime": CREATED,
                    "lastTransitionTime": CREATED,
                    "message": "kubelet has sufficient memory available",
                    "reason": "KubeletHasSufficientMemory",
                    "status": "False",
                    "type": "MemoryPressure",
                },
                {
                    "lastHeartbeatTime": CREATED,
                    "lastTransitionTime": CREATED,
                    "message": "kubelet is posting ready status",
                    "reason": "KubeletReady",
                    "status": "True",
                    "type": "Ready",
                },
            ],
            "nodeInfo": {
                "architecture": "arm64" if gpu else "amd64",
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.8.0-1031-aws",
                "kubeProxyVersion": "v1.34.2-eks-b3126f4",
                "kubeletVersion": "v1.34.2-eks-b3126f4",
                "operatingSystem": "linux",
                "osImage": "Ubuntu 24.04.3 LTS",
            },
        },
    }


# DaemonSets: (namespace, name, on GPU nodes only)
DAEMONSETS: tuple[tuple[str, str, bool], ...] = (
    ("kube-system", "aws-node", False),
    ("kube-system", "kube-proxy", False),
    ("kube-system", "ebs-csi-node", False),
    ("gpu-operator", "nvidia-driver-daemonset", True),
    ("gpu-operator", "nvidia-container-toolkit-daemonset", True),
    ("gpu-operator", "nvidia-device-plugin-daemonset", True),
    ("gpu-operator", "nvidia-dcgm-exporter", True),
    ("gpu-operator", "gpu-feature-discovery", True),
    ("gpu-operator", "nvidia-operator-validator", True),
    ("node-feature-discovery", "nfd-worker", False),
    ("nvsentinel", "platform-connectors", True),
    ("nvidia-dra-driver", "nvidia-dra-driver-gpu-kubelet-plugin", True),
    ("aws-efa", "aws-efa-k8s-device-plugin", True),
    ("monitoring", "kube-prometheus-stack-prometheus-node-exporter", False),
)


def _daemonset(ns: str, name: str, gpu_only: bool) -> dict[str, Any]:
    n = len(GPU_NODES) + (0 if gpu_only else len(SYSTEM_NODES))
    template_spec: dict[str, Any] = {
        "containers": [
            {"image": f"registry.example/{name}:1.0", "name": name.split("-")[-1], "resources": {}}
        ],
        "tolerations": [{"operator": "Exists"}],
    }
    if gpu_only:
        template_spec["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "creationTimestamp": CREATED,
            "generation": 1,
            "labels": {"app": name},
            "name": name,
            "namespace": ns,
            "resourceVersion": "50112",
            "uid": _uid("DaemonSet", f"{ns}/{name}"),
        },
        "spec": {
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": template_spec},
            "updateStrategy": {
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
                "type": "RollingUpdate",
            },
        },
        "status": {
            "currentNumberScheduled": n,
            "desiredNumberScheduled": n,
            "numberAvailable": n,
            "numberMisscheduled": 0,
            "numberReady": n,
            "observedGeneration": 1,
            "updatedNumberScheduled": n,
        },
    }


def _pod(ns: str, name: str, node: str, owner: tuple[str, str, str] | None,
         labels: dict[str, str]) -> dict[str, Any]:  # fmt: skip
    meta: dict[str, Any] = {"creationTimestamp": CREATED, "labels": labels, "name": name,
                            "namespace": ns, "uid": _uid("Pod", f"{ns}/{name}")}  # fmt: skip
    if owner is not None:
        api, kind, oname = owner
        meta["ownerReferences"] = [{"apiVersion": api, "blockOwnerDeletion": True,
                                    "controller": True, "kind": kind, "name": oname,
                                    "uid": _uid(kind, f"{ns}/{oname}")}]  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [{"image": "registry.example/app:1.0", "name": "main"}],
            "nodeName": node,
            "restartPolicy": "Always",
        },
        "status": {"conditions": [{"status": "True", "type": "Ready"}], "phase": "Running"},
    }


def _pods() -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = []
    for ns, ds, gpu_only in DAEMONSETS:
        nodes = GPU_NODES if gpu_only else (*SYSTEM_NODES, *GPU_NODES)
        for i, node in enumerate(nodes):
            pods.append(_pod(ns, f"{ds}-{i:05x}", node, ("apps/v1", "DaemonSet", ds), {"app": ds}))
    for i, node in enumerate(GPU_NODES):
        pods.append(_pod("slurm", f"slurm-worker-slinky-{i:05x}", node,
                         ("slinky.slurm.net/v1beta1", "NodeSet", "slurm-worker-slinky"),
                         {"app.kubernetes.io/name": "slurmd"}))  # fmt: skip
    pods.append(_pod("slurm", "slurm-controller-0", SYSTEM_NODES[0],
                     ("apps/v1", "StatefulSet", "slurm-controller"),
                     {"app.kubernetes.io/name": "slurmctld"}))  # fmt: skip
    for i, node in enumerate(SYSTEM_NODES[1:]):
        pods.append(_pod("kube-system", f"coredns-7bf6d5b5c8-{i:05x}", node,
                         ("apps/v1", "ReplicaSet", "coredns-7bf6d5b5c8"), {"k8s-app": "kube-dns"}))  # fmt: skip
    return sorted(pods, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))


def _nodeset() -> dict[str, Any]:
    n = len(GPU_NODES)
    return {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "NodeSet",
        "metadata": {
            "creationTimestamp": CREATED,
            "generation": 1,
            "name": "slurm-worker-slinky",
            "namespace": "slurm",
            "uid": _uid("NodeSet", "slurm/slurm-worker-slinky"),
        },
        "spec": {
            "controllerRef": {"name": "slurm", "namespace": "slurm"},
            "scalingMode": "DaemonSet",
            "replicas": 1,
            "partition": {"enabled": True},
            "template": {"spec": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}},
            "updateStrategy": {"rollingUpdate": {"maxUnavailable": 1}, "type": "RollingUpdate"},
        },
        "status": {
            "availableReplicas": n,
            "desired": n,
            "nodeSetHash": "6d9f7c8b5",
            "observedGeneration": 1,
            "readyReplicas": n,
            "replicas": n,
            "selector": "app.kubernetes.io/name=slurmd",
            "slurmIdle": n,
            "updatedReplicas": n,
        },
    }


def _coredns() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "creationTimestamp": CREATED,
            "generation": 1,
            "labels": {"eks.amazonaws.com/component": "coredns", "k8s-app": "kube-dns"},
            "name": "coredns",
            "namespace": "kube-system",
            "uid": _uid("Deployment", "kube-system/coredns"),
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"k8s-app": "kube-dns"}},
            "template": {
                "metadata": {"labels": {"k8s-app": "kube-dns"}},
                "spec": {"containers": [{"image": "coredns:v1.11.4", "name": "coredns"}]},
            },
        },
        "status": {
            "availableReplicas": 2,
            "observedGeneration": 1,
            "readyReplicas": 2,
            "replicas": 2,
            "updatedReplicas": 2,
        },
    }


def _configmaps() -> list[dict[str, Any]]:
    kube_proxy = (
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
        "bindAddress: 0.0.0.0\n"
        "clientConnection:\n  kubeconfig: /var/lib/kube-proxy/kubeconfig\n"
        "conntrack:\n  maxPerCore: 32768\n  min: 131072\n"
        "kind: KubeProxyConfiguration\n"
        "metricsBindAddress: 0.0.0.0:10249\n"
        'mode: "iptables"\n'
    )
    return [
        {"apiVersion": "v1", "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\n...\n"},
         "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "namespace": "kube-system",
                                           "uid": _uid("ConfigMap", "kube-root-ca.crt")}},
        {"apiVersion": "v1", "data": {"config": kube_proxy}, "kind": "ConfigMap",
         "metadata": {"labels": {"eks.amazonaws.com/component": "kube-proxy",
                                 "k8s-app": "kube-proxy"},
                      "name": "kube-proxy-config", "namespace": "kube-system",
                      "uid": _uid("ConfigMap", "kube-proxy-config")}},
    ]  # fmt: skip


def _services(n: int = 140) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        ns = ("default", "gpu-operator", "monitoring", "slurm", "kube-system")[i % 5]
        name = "kubernetes" if i == 0 else f"svc-{i:03d}"
        out.append({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns, "uid": _uid("Service", f"{ns}/{name}")},
            "spec": {"clusterIP": f"172.20.{i // 250}.{i % 250 + 1}", "ports": [
                {"name": "https" if i == 0 else "http", "port": 443 if i == 0 else 8080,
                 "protocol": "TCP", "targetPort": 443 if i == 0 else 8080}],
                "type": "ClusterIP"},
            "status": {"loadBalancer": {}},
        })  # fmt: skip
    return out


# The API server's default priority levels at a total of 600 seats (nominal seats per level).
APF_SEATS = {"catch-all": 13, "exempt": 0, "global-default": 49, "leader-election": 25,
             "node-high": 98, "system": 74, "workload-high": 98, "workload-low": 245}  # fmt: skip


def _metrics(rejected: int) -> str:
    lines = [
        "# HELP apiserver_flowcontrol_nominal_limit_seats [BETA] Nominal number of execution "
        "seats configured for each priority level",
        "# TYPE apiserver_flowcontrol_nominal_limit_seats gauge",
    ]
    lines += [f'apiserver_flowcontrol_nominal_limit_seats{{priority_level="{k}"}} {v}'
              for k, v in sorted(APF_SEATS.items())]  # fmt: skip
    lines += [
        "# HELP apiserver_flowcontrol_rejected_requests_total [BETA] Number of requests rejected "
        "by API Priority and Fairness subsystem",
        "# TYPE apiserver_flowcontrol_rejected_requests_total counter",
        'apiserver_flowcontrol_rejected_requests_total{flow_schema="service-accounts",'
        f'priority_level="workload-low",reason="queue-full"}} {rejected}',
        "# HELP apiserver_request_total [STABLE] Counter of apiserver requests",
        "# TYPE apiserver_request_total counter",
        'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",'
        'resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"} 18231',
    ]
    return "\n".join(lines) + "\n"


def _configz(pull_qps: int) -> dict[str, Any]:
    return {"kubeletconfig": {
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True}},
        "cgroupDriver": "systemd", "clusterDNS": ["172.20.0.10"], "clusterDomain": "cluster.local",
        "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"},
        "kubeAPIBurst": 100, "kubeAPIQPS": 50, "maxPods": 110,
        "registryBurst": 20, "registryPullQPS": pull_qps, "serializeImagePulls": False,
        "systemReserved": {"cpu": "500m", "memory": "2Gi"},
    }}  # fmt: skip


def files() -> dict[str, bytes]:
    """file name -> bytes, as `scripts/collect.sh` writes them (kubectl's 4-space JSON)."""

    def js(obj: Any) -> bytes:
        return (json.dumps(obj, indent=4, sort_keys=True) + "\n").encode()

    nodes = [_node(n, False) for n in SYSTEM_NODES] + [
        _node(n, True, 1 + i // 18) for i, n in enumerate(GPU_NODES)
    ]
    out: dict[str, bytes] = {
        "version.json": js(
            {
                "clientVersion": {
                    "gitVersion": "v1.34.1",
                    "major": "1",
                    "minor": "34",
                    "platform": "linux/amd64",
                },
                "kustomizeVersion": "v5.7.1",
                "serverVersion": {
                    "buildDate": "2026-10-21T18:02:11Z",
                    "gitVersion": "v1.34.2-eks-b3126f4",
                    "goVersion": "go1.24.9",
                    "major": "1",
                    "minor": "34",
                    "platform": "linux/amd64",
                },
            }
        ),
        "nodes.json": js(_list(nodes)),
        "daemonsets.json": js(_list([_daemonset(*d) for d in DAEMONSETS])),
        "nodesets.json": js(_list([_nodeset()])),
        "deployments-kube-system.json": js(_list([_coredns()])),
        "configmaps-kube-system.json": js(_list(_configmaps())),
        "services.json": js(_list(_services())),
        "pods.json": js(_list(_pods())),
        "metrics-start.txt": _metrics(3).encode(),
        "metrics-end.txt": _metrics(3).encode(),
        "metrics-window-seconds.txt": b"60\n",
        "collected-at.txt": b"2026-11-30T00:00:00Z\n",
        "declared.yaml": (
            b"# Readings kubectl cannot see, declared by the operator (scripts/collect.sh template).\n"
            b"K8s.control-plane.tier:\n  value: standard\n"
            b"  source: EKS console, cluster gb300-eks-36, Control plane scaling tier\n"
            b"K8s.registry.mirror-configured:\n  value: false\n"
            b"  source: no containerd registry mirror configured on the node group\n"
            b"K8s.network.subnet-free-ips:\n  value: 6000\n"
            b"  source: aws ec2 describe-subnets, sum of AvailableIpAddressCount of the node subnets\n"
        ),
    }
    for node in GPU_NODES:
        out[f"configz/{node}.json"] = js(_configz(10))
    sysctl = "".join(f"{k}={v}\n" for k, v in (
        ("/proc/sys/net/netfilter/nf_conntrack_max", 262144),
        ("/proc/sys/net/core/somaxconn", 4096),
        ("/proc/sys/net/ipv4/tcp_max_syn_backlog", 4096),
    ))  # fmt: skip
    out[f"sysctl/{GPU_NODES[0]}.txt"] = sysctl.encode()
    out[f"sysctl/{SYSTEM_NODES[0]}.txt"] = sysctl.encode()
    return dict(sorted(out.items()))
