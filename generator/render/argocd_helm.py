"""The `argocd-helm` deployer (upstream AICR's, since 2026): the bundle is one Helm chart that
renders the Argo CD Applications, so install-time settings are Helm values, not file edits.

Layout (as upstream's): `Chart.yaml` (`aicr-bundle`), `values.yaml` (the install-time inputs),
`values.schema.json`, `templates/<release>.yaml` (one Application per numbered folder, and
`templates/aicr-stack.yaml`, the parent Application), `static/<component>.yaml` (an upstream
chart's values), and the local charts of the components' manifests in their numbered folders.

Install-time inputs (`helm install aicr oci://REGISTRY/NS/aicr-bundle --set repoURL=...`):
`repoURL` (the parent OCI namespace or chart repository, without the chart name: the templates
append `.Chart.Name`), `targetRevision` (default: the chart's version), `deployer.namePrefix`,
`deployer.destinationServer`, `deployer.project`, `deployer.includeRootApp`; and per component,
values under its name (`--set gpu-operator.driver.version=...`), merged over its static values.

A local chart's Application points at its folder inside this chart's OCI artifact (Argo CD's OCI
sources); an upstream chart's Application pulls the chart itself, its values inline. Sync waves are
the `argocd` deployer's (3 x dependency depth + phase).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from generator import __version__
from generator.core.records import RecipeResult
from generator.render.argocd import ARGOCD_NAMESPACE, IN_CLUSTER, SYNC_WAVE, synced_chart_files
from generator.render.common import (
    BundleFile,
    Folder,
    Release,
    Rendered,
    chart_leaf,
    folders,
    header_comment,
    yaml_bytes,
)
from generator.render.helm import values_file

CHART_NAME = "aicr-bundle"
PARENT = "aicr-stack"
_PREFIX = '{{ (.Values.deployer | default dict).namePrefix | default "" }}'
_SERVER = f'{{{{ (.Values.deployer | default dict).destinationServer | default "{IN_CLUSTER}" }}}}'
_PROJECT = '{{ (.Values.deployer | default dict).project | default "default" }}'
_REPO = (
    '{{ required "repoURL is required: --set repoURL=<parent OCI namespace or chart repository, '
    'without the chart name>" .Values.repoURL | trimSuffix "/" }}'
)
_REVISION = "{{ .Values.targetRevision | default .Chart.Version }}"


def _q(text: str) -> str:
    """A YAML single-quoted scalar holding Helm template text."""
    return "'" + text.replace("'", "''") + "'"


def _values_block(component: str, static: bool) -> str:
    """The Application's inline Helm values: the static file merged with the install-time
    values under the component's name."""
    dynamic = f'{{{{- $dynamic := index .Values "{component}" | default dict -}}}}'
    if not static:
        return f"        {dynamic}\n        {{{{- toYaml $dynamic | nindent 8 }}}}\n"
    return (
        f'        {{{{- $static := (.Files.Get "static/{component}.yaml") | fromYaml | default dict'
        " -}}\n"
        f"        {dynamic}\n"
        "        {{- mustMergeOverwrite $static $dynamic | toYaml | nindent 8 }}\n"
    )


def _application(f: Folder) -> str:
    c = f.component
    options = ["CreateNamespace=true"] if f.creates_namespace else []
    options.append("ServerSideApply=true")
    if f.local:
        options.append("SkipDryRunOnMissingResource=true")
        source = (
            f"    repoURL: {_q(_REPO + '/{{ .Chart.Name }}')}\n"
            f"    targetRevision: {_q(_REVISION)}\n"
            f"    path: {f.dir}\n"
            "    helm:\n"
            f"      releaseName: {f.release}\n"
            "      values: |-\n" + _values_block(c.name, static=False)
        )
    else:
        source = (
            f"    repoURL: {json.dumps(str(c.repository).removeprefix('oci://'), allow_nan=False)}\n"
            f"    chart: {json.dumps(chart_leaf(c), allow_nan=False)}\n"
            f"    targetRevision: {json.dumps(c.version, allow_nan=False)}\n"
            "    helm:\n"
            f"      releaseName: {f.release}\n"
            "      values: |-\n" + _values_block(c.name, static=True)
        )
    opts = "".join(f"      - {o}\n" for o in options)
    return (
        "apiVersion: argoproj.io/v1alpha1\n"
        "kind: Application\n"
        "metadata:\n"
        f"  name: {_q(_PREFIX + f.release)}\n"
        f"  namespace: {ARGOCD_NAMESPACE}\n"
        "  annotations:\n"
        f'    {SYNC_WAVE}: "{f.wave}"\n'
        "  finalizers:\n"
        "    - resources-finalizer.argocd.argoproj.io\n"
        "spec:\n"
        f"  project: {_q(_PROJECT)}\n"
        "  destination:\n"
        f"    server: {_q(_SERVER)}\n"
        f"    namespace: {json.dumps(c.namespace, allow_nan=False)}\n"
        "  source:\n" + source + "  syncPolicy:\n"
        "    automated:\n"
        "      prune: true\n"
        "      selfHeal: true\n"
        "    syncOptions:\n" + opts
    )


def _parent() -> str:
    return (
        "{{- $deployer := .Values.deployer | default dict }}\n"
        '{{- if or (not (hasKey $deployer "includeRootApp")) $deployer.includeRootApp }}\n'
        "apiVersion: argoproj.io/v1alpha1\n"
        "kind: Application\n"
        "metadata:\n"
        f"  name: {_q(_PREFIX + PARENT)}\n"
        f"  namespace: {ARGOCD_NAMESPACE}\n"
        "spec:\n"
        f"  project: {_q(_PROJECT)}\n"
        "  destination:\n"
        f"    server: {_q(_SERVER)}\n"
        f"    namespace: {ARGOCD_NAMESPACE}\n"
        "  source:\n"
        f"    repoURL: {_q(_REPO)}\n"
        "    chart: '{{ .Chart.Name }}'\n"
        f"    targetRevision: {_q(_REVISION)}\n"
        "    helm:\n"
        "      valuesObject:\n"
        "        deployer:\n"
        "          includeRootApp: false\n"
        "  syncPolicy:\n"
        "    automated:\n"
        "      prune: true\n"
        "      selfHeal: true\n"
        "{{- end }}\n"
    )


def _schema(result: RecipeResult) -> dict[str, Any]:
    deployer = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "namePrefix": {"type": "string"},
            "destinationServer": {"type": "string"},
            "project": {"type": "string"},
            "includeRootApp": {"type": "boolean"},
        },
    }
    props: dict[str, Any] = {
        "repoURL": {"type": "string"},
        "targetRevision": {"type": "string"},
        "deployer": deployer,
    }
    for c in result.components:
        props[c.name] = {"type": "object"}
    return {
        "$schema": "https://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": False,
        "properties": props,
    }


def render(result: RecipeResult, manifests: Mapping[str, bytes]) -> Rendered:
    header = header_comment(result)
    files: dict[str, BundleFile] = {}
    releases: list[Release] = []
    for f in folders(result, manifests):
        c = f.component
        if f.local:
            files.update(synced_chart_files(f, header))
        else:
            # the values the Application reads (static/), and in the release's folder, as in
            # every deployer (and upstream's argocd-helm layout)
            files[f"static/{c.name}.yaml"] = BundleFile(values_file(c.values, header))
            files[f"{f.dir}/values.yaml"] = BundleFile(values_file(c.values, header))
        files[f"templates/{f.release}.yaml"] = BundleFile(
            (header + _application(f)).encode("utf-8")
        )
        releases.append(Release(f.release, c.name, c.namespace, f.dir))
    files[f"templates/{PARENT}.yaml"] = BundleFile((header + _parent()).encode("utf-8"))
    chart = {
        "apiVersion": "v2",
        "name": CHART_NAME,
        "description": f"The Argo CD Applications of recipe {result.name}, as a Helm chart",
        "type": "application",
        "version": __version__,
        "appVersion": result.name,
    }
    files["Chart.yaml"] = BundleFile(yaml_bytes(chart, header=header))
    values = {
        "repoURL": "",
        "targetRevision": "",
        "deployer": {
            "namePrefix": "",
            "destinationServer": IN_CLUSTER,
            "project": "default",
            "includeRootApp": True,
        },
    }
    files["values.yaml"] = BundleFile(yaml_bytes(values, header=header))
    files["values.schema.json"] = BundleFile(
        (json.dumps(_schema(result), indent=2, sort_keys=True, allow_nan=False) + "\n").encode(
            "utf-8"
        )
    )
    return Rendered(files, "Chart.yaml", tuple(releases))
