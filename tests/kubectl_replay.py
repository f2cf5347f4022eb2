"""A stand-in for `kubectl ARGS` that answers from saved outputs (not an API server).

Standard library only: the `kubectl` stub of `tests/test_snapshot_collect.py` is a new Python
process for each of the ~90 commands `scripts/collect.sh` runs, so it must start in tens of
milliseconds rather than import the generator (which took about a second per command). The
saved outputs are `tests/kubectl_fixtures.files()`; which file answers which command comes from
`generator.scale.collect.SOURCES`, handed in by the caller (`by_args`).
"""

from __future__ import annotations

import json
from pathlib import Path


def read_dir(root: Path) -> dict[str, bytes]:
    """The saved outputs under `root`, by relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def replay(
    args: tuple[str, ...], files: dict[str, bytes], by_args: dict[tuple[str, ...], str]
) -> tuple[int, bytes, bytes]:
    """kubectl's exit code, stdout and stderr for `args`, from the saved outputs `files`."""
    if args in by_args and by_args[args] in files:
        return 0, files[by_args[args]], b""
    if args[:2] == ("get", "--raw") and args[2].endswith("/proxy/configz"):
        node = args[2].split("/")[4]
        return 0, files[f"configz/{node}.json"], b""
    if args[0] == "run":
        node = json.loads(args[args.index("--overrides") + 1])["spec"]["nodeName"]
        return 0, files.get(f"sysctl/{node}.txt", b""), b""
    return 1, b"", f"error: unexpected {args}".encode()


def jsonpath(args: tuple[str, ...], files: dict[str, bytes]) -> str:
    """What `kubectl get ... -o jsonpath=...` prints for the two lists `collect.sh` asks for."""
    if args[:2] == ("get", "nodes"):
        want = "nvidia.com/gpu.present=true" in args
        assert want or "nvidia.com/gpu.present!=true" in args, args
        items = json.loads(files["nodes.json"])["items"]
        names = [n["metadata"]["name"] for n in items
                 if (n["metadata"]["labels"].get("nvidia.com/gpu.present") == "true") == want]  # fmt: skip
        return "".join(f"{n}\n" for n in names)
    if args[:2] == ("get", "pods"):
        items = json.loads(files["pods.json"])["items"]
        return "".join(f"{p['spec']['nodeName']}\n" for p in items
                       if p["metadata"]["labels"].get("app.kubernetes.io/name") == "slurmctld")  # fmt: skip
    raise AssertionError(args)
