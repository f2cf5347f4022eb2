"""Reading AICR Snapshots into `{Type}.{Subtype}.{Key}` readings (generator/scale/snapshot.py)."""

from __future__ import annotations

import json

import pytest

from generator.core.errors import LoadError
from generator.scale.snapshot import parse_snapshot, scale_measurement_keys, split_path

GOOD = """apiVersion: aicr.run/v1
kind: Snapshot
metadata: {timestamp: "2026-11-30T00:00:00Z"}
measurements:
  - type: K8s
    subtypes:
      - subtype: server
        data: {version: v1.34.2}
      - subtype: daemonset
        data: {"gpu-operator/nvidia-driver-daemonset.desired": 36}
  - type: OS
    subtypes:
      - subtype: sysctl
        data: {/proc/sys/net/core/somaxconn: 4096}
  - type: SystemD
    subtypes:
      - subtype: containerd.service
        data: {ActiveState: active}
"""


def test_readings_are_addressed_type_subtype_key() -> None:
    snap = parse_snapshot(GOOD, "good.yaml")
    assert snap.readings == {
        "K8s.daemonset.gpu-operator/nvidia-driver-daemonset.desired": 36,
        "K8s.server.version": "v1.34.2",
        "OS.sysctl./proc/sys/net/core/somaxconn": 4096,
        "SystemD.containerd.service.ActiveState": "active",
    }
    assert snap.api_version == "aicr.run/v1"
    assert snap.metadata == {"timestamp": "2026-11-30T00:00:00Z"}
    assert snap.get("K8s.server.version") == "v1.34.2" and snap.get("K8s.server.platform") is None


def test_json_snapshots_read_the_same() -> None:
    import yaml

    as_json = json.dumps(yaml.safe_load(GOOD))
    assert parse_snapshot(as_json, "good.json").readings == parse_snapshot(GOOD, "g").readings


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("K8s.server.version", ("K8s", "server", "version")),
        (
            "OS.sysctl./proc/sys/net/core/somaxconn",
            ("OS", "sysctl", "/proc/sys/net/core/somaxconn"),
        ),
        (
            "NodeTopology.label.nvidia.com/gpu.present",
            ("NodeTopology", "label", "nvidia.com/gpu.present"),
        ),
        (
            "SystemD.containerd.service.ActiveState",
            ("SystemD", "containerd.service", "ActiveState"),
        ),
    ],
)
def test_split_path_first_dot_except_systemd(path: str, parts: tuple[str, str, str]) -> None:
    assert split_path(path) == parts


@pytest.mark.parametrize(
    "bad", ["K8s", "K8s.server", ".server.version", "K8s..version", "SystemD.x"]
)
def test_split_path_rejects_malformed_paths(bad: str) -> None:
    with pytest.raises(ValueError):
        split_path(bad)


def _diags(text: str) -> list[tuple[int, str, str]]:
    with pytest.raises(LoadError) as e:
        parse_snapshot(text, "s.yaml")
    return [(d.line, d.json_path, d.rule) for d in e.value.diagnostics]


def test_wrong_kind_names_what_was_seen_and_what_is_accepted() -> None:
    with pytest.raises(LoadError) as e:
        parse_snapshot(GOOD.replace("kind: Snapshot", "kind: RecipeResult"), "s.yaml")
    (d,) = e.value.diagnostics
    assert d.rule == "snapshot.header" and d.line == 2
    assert "'RecipeResult'" in d.message and "aicr.run/v1" in d.message


def test_unknown_api_version_is_refused() -> None:
    assert _diags(GOOD.replace("aicr.run/v1", "aicr.run/v9")) == [(1, "$", "snapshot.header")]


def test_schema_problems_are_located() -> None:
    text = GOOD.replace("data: {version: v1.34.2}", "data: {version: {major: 1}}")
    assert _diags(text) == [(8, "$.measurements[0].subtypes[0].data.version", "schema.type")]


def test_conflicting_duplicate_readings_are_refused_and_equal_ones_merge() -> None:
    dup = (
        GOOD
        + "  - type: K8s\n    subtypes:\n      - subtype: server\n        data: {version: v1.30.0}\n"
    )
    assert _diags(dup) == [
        (22, "$.measurements[3].subtypes[0].data.version", "snapshot.duplicate-reading")
    ]
    same = (
        GOOD
        + "  - type: K8s\n    subtypes:\n      - subtype: server\n        data: {version: v1.34.2}\n"
    )
    assert parse_snapshot(same, "s.yaml").get("K8s.server.version") == "v1.34.2"


def test_duplicate_yaml_keys_and_broken_yaml_are_load_errors() -> None:
    dup_key = GOOD.replace("kind: Snapshot", "kind: Snapshot\nkind: Snapshot")
    assert [r for _, _, r in _diags(dup_key)] == ["yaml.duplicate-key"]
    assert [r for _, _, r in _diags("measurements: [")] == ["yaml.parse"]


def test_the_schema_documents_the_scale_readings() -> None:
    keys = scale_measurement_keys()
    assert "K8s.nodes.gpu" in keys and "K8s.cliques.min-nodes" in keys
    assert all(v.get("description") for v in keys.values())
    for path in keys:
        split_path(path.replace("<namespace>/<name>", "ns/name"))
