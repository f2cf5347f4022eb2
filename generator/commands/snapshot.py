"""`aicr-catalog snapshot`: the readings preflight's checks use, as an AICR Snapshot.

From a live cluster through the real `kubectl`, or `--from DIR` of outputs saved by
`scripts/collect.sh`. The reading logic lives in `generator/scale/collect.py`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import NoReturn

import click
import yaml

from generator.catalog.load import load_catalog
from generator.commands.common import handles_errors
from generator.core import proc, safeio
from generator.core.atomic import write_atomic
from generator.core.errors import CatalogError, UsageError
from generator.core.timeutil import now_rfc3339
from generator.core.yamlio import parse_yaml
from generator.scale.collect import (
    Collected,
    LiveOptions,
    collect_live,
    how_to_collect,
    missing_for,
    readings_from,
    snapshot_document,
)
from generator.scale.preflight import catalog_checks, measurement_paths
from generator.scale.snapshot import Reading, split_path

MAX_FILE = 1 << 30  # a saved output larger than 1 GiB is not a kubectl answer
KUBECTL_TIMEOUT = 600  # seconds for one kubectl request
# what kubectl needs of the caller's environment beyond the door's allow-list
# (generator/core/proc.py): its config, the proxy and TLS settings it honours, and what the
# credential plugins of the common clusters read (aws, gke-gcloud-auth-plugin, kubelogin)
KUBECTL_ENV = (
    "KUBECONFIG", "KUBECACHEDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "USER",
    "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR",
    "AWS_*", "AZURE_*", "GOOGLE_*", "CLOUDSDK_*", "KUBELOGIN_*",
)  # fmt: skip


def _usage(message: str) -> NoReturn:
    raise UsageError(message)


def _declared(items: tuple[str, ...]) -> dict[str, tuple[Reading, str]]:
    out: dict[str, tuple[Reading, str]] = {}
    for item in items:
        try:  # bytes that are not UTF-8 reach here as lone surrogates (click's surrogateescape)
            item.encode("utf-8")
        except UnicodeEncodeError:
            shown = item.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
            raise click.BadParameter(
                f"{shown} is not valid UTF-8", param_hint="--declare"
            ) from None
        path, sep, text = item.partition("=")
        try:
            split_path(path.strip())
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--declare") from e
        if not sep or not text.strip():
            raise click.BadParameter(f"{item!r} is not PATH=VALUE", param_hint="--declare")
        try:
            value = parse_yaml(text, "--declare").data
        except CatalogError:
            value = None
        if not isinstance(value, str | int | float | bool):
            value = text.strip()
        out[path.strip()] = (value, "given with --declare")
    return out


def _read_dir(root: Path) -> dict[str, bytes]:
    if not safeio.is_dir(root):
        _usage(f"--from '{root}' is not a directory")
    files: dict[str, bytes] = {}
    for path in safeio.glob_tree(root, "*"):
        rel = path.relative_to(root).as_posix()
        if safeio.is_link(path):
            _usage(f"{rel}: a symbolic link; --from reads only the files collect.sh writes")
        if not safeio.is_file(path):
            continue
        try:
            files[rel] = safeio.read(path, root=root, where="--from", limit=MAX_FILE)
        except safeio.Refusal as e:
            if e.rule == safeio.TOO_LARGE:
                _usage(f"{rel}: larger than 1 GiB; not a saved kubectl output")
            _usage(f"{rel}: {e.message}")
    return files


def _live(kubeconfig: Path | None, context: str | None, options: LiveOptions) -> dict[str, bytes]:
    kubectl = proc.which("kubectl")
    if kubectl is None:
        _usage("kubectl is not on PATH; install it, or collect with scripts/collect.sh elsewhere "
               "and pass --from DIR")  # fmt: skip
    base = [kubectl]
    if kubeconfig is not None:
        base += ["--kubeconfig", str(kubeconfig)]
    if context is not None:
        base += ["--context", context]

    def run(args: tuple[str, ...]) -> tuple[int, bytes, bytes]:
        try:
            p = proc.run([*base, *args], timeout=KUBECTL_TIMEOUT, limit=MAX_FILE,
                         inherit=KUBECTL_ENV)  # fmt: skip
        except proc.ProcError as e:  # timed out, or an answer past 1 GiB: that file fails
            return (124 if e.rule == proc.TIMED_OUT else 1), b"", e.message.encode()
        return p.returncode, p.stdout, p.stderr

    outputs, failures = collect_live(run, options, time.sleep,
                                     lambda m: click.echo(f"snapshot: {m}", err=True))  # fmt: skip
    if "nodes.json" in failures and "version.json" in failures:
        _usage(f"kubectl cannot reach the cluster: {failures['version.json']}")
    for name, err in sorted(failures.items()):
        click.echo(f"warning: {name}: kubectl failed: {err}", err=True)
    outputs["collected-at.txt"] = now_rfc3339().encode()
    return outputs


def _report_missing(collected: Collected, catalog_path: Path) -> None:
    try:
        catalog, _ = load_catalog(catalog_path)
        used = set(measurement_paths(c for _, c in catalog_checks(catalog)))
        # recipe constraints are checks too (preflight's recipe.* findings)
        for overlay in (*catalog.overlays.values(), *catalog.mixins.values()):
            used.update(c.name for c in overlay.constraints)
    except CatalogError as e:
        click.echo(f"warning: cannot list the readings the checks use: {e.message}", err=True)
        return
    missing = missing_for(used, collected)
    click.echo(
        f"snapshot: {len(used) - len(missing)} of {len(used)} readings the checks and "
        "recipe constraints use",
        err=True,
    )
    for path, why in missing.items():
        click.echo(f"  missing {path}: {why}\n    collect: {how_to_collect(path)}", err=True)


@click.command("snapshot")
@click.option("--from", "from_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Build from outputs saved by scripts/collect.sh (no cluster).")  # fmt: skip
@click.option("--kubeconfig", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="kubeconfig for the live cluster (kubectl's own default otherwise).")  # fmt: skip
@click.option("--context", default=None, help="kubeconfig context of the live cluster.")
@click.option("--declare", "declares", multiple=True, metavar="PATH=VALUE",
              help="A reading kubectl cannot see, e.g. K8s.control-plane.tier=4xl (repeatable).")  # fmt: skip
@click.option("--window", type=click.IntRange(min=1), default=60, show_default=True,
              help="Seconds between the two /metrics scrapes (API rejections per minute).")  # fmt: skip
@click.option("--sysctl-image", default="busybox:1.36", show_default=True,
              help="Image of the short-lived pods that read host sysctls (live only).")  # fmt: skip
@click.option("--no-node-pods", is_flag=True,
              help="Run no pod on the nodes: the OS.sysctl readings are then missing.")  # fmt: skip
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the snapshot here (YAML); stdout otherwise.")  # fmt: skip
@click.option("--catalog", "catalog_path", type=click.Path(path_type=Path, file_okay=False),
              default=Path("catalog"), show_default=True,
              help="Catalog whose checks say which readings are needed (for the missing list).")  # fmt: skip
@handles_errors
def command(
    from_dir: Path | None,
    kubeconfig: Path | None,
    context: str | None,
    declares: tuple[str, ...],
    window: int,
    sysctl_image: str,
    no_node_pods: bool,
    output: Path | None,
    catalog_path: Path,
) -> None:
    """Collect the readings preflight's checks use into an AICR Snapshot.

    Live: runs `kubectl` (the real client, with --kubeconfig/--context) read-only, except for
    one short-lived pod per sampled node that reads host sysctls (--no-node-pods skips them).
    --from DIR: reads the same outputs saved by scripts/collect.sh, so collection can happen on
    a bastion and preflight elsewhere. Each reading's `context` entry says how it was measured;
    readings the checks use but the outputs lack are listed on stderr with how to collect each.

    \b
    Exit codes:
      0  snapshot written (missing readings, if any, are listed on stderr)
      1  a saved output is not what its kubectl command writes
      2  usage: no such directory, kubectl absent or unable to reach the cluster
    """
    if from_dir is not None and (kubeconfig is not None or context is not None):
        _usage("--from reads saved outputs; --kubeconfig/--context are for a live cluster")
    declared = _declared(declares)
    if from_dir is not None:
        outputs = _read_dir(from_dir)
    else:
        options = LiveOptions(window_seconds=window, sysctl_image=sysctl_image,
                              node_pods=not no_node_pods)  # fmt: skip
        outputs = _live(kubeconfig, context, options)
    try:
        collected = readings_from(outputs, declared)
    except CatalogError as e:  # the readings' own diagnostics are not repeated
        raise CatalogError(e.message) from e
    doc = snapshot_document(collected, {})
    text = yaml.safe_dump(doc, sort_keys=False, width=100, allow_unicode=True)
    if output is None:
        click.echo(text, nl=False)
    else:
        write_atomic(output, text.encode())
        click.echo(f"snapshot: wrote {output} ({len(collected.readings)} readings)", err=True)
    _report_missing(collected, catalog_path)
