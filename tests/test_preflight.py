"""The preflight engine on hand-built records: expressions, comparison, results, exit codes, reports."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
import pytest

from generator.catalog import schemas
from generator.core.errors import ValidationError
from generator.core.records import (
    Constraint,
    Criteria,
    RecipeResult,
    ResolvedComponent,
    ScaleProfile,
)
from generator.core.yamlio import parse_yaml
from generator.scale.checkexpr import (
    ExprError,
    compare,
    compile_expr,
    to_bytes,
    to_count,
    to_cpu,
    to_seconds,
)
from generator.scale.collect import how_to_collect
from generator.scale.preflight import (
    Check,
    CheckSet,
    Finding,
    Format,
    Owner,
    PreflightReport,
    Result,
    Source,
    all_checks,
    checkset_from,
    constraint_check,
    preflight,
    render,
    report_json,
)
from generator.scale.snapshot import ClusterSnapshot

# ---------------------------------------------------------------------------------------------
# hand-built inputs


def component(name: str, values: Mapping[str, Any]) -> ResolvedComponent:
    return ResolvedComponent(
        name=name, type="Helm", repository=None, chart=name, version="1.0.0",
        namespace=name, values=values, manifest_files=(), pre_manifest_files=(),
        dependency_refs=(), order=0, depth=0, values_files=(),
    )  # fmt: skip


def recipe(
    components: tuple[ResolvedComponent, ...] = (),
    constraints: tuple[Constraint, ...] = (),
    accelerator: str | None = "gb300",
) -> RecipeResult:
    return RecipeResult(
        name="test-recipe", criteria=Criteria(service="eks", accelerator=accelerator),
        applied_overlays=("base", "test-recipe"), mixins=(), constraints=constraints,
        components=components, validation={}, scale_profile="big", scale_profile_version="2.0.0",
        overrides=(), digest="sha256:" + "ab" * 32,
    )  # fmt: skip


def profile(prerequisites: tuple[Mapping[str, Any], ...] = ()) -> ScaleProfile:
    return ScaleProfile(
        name="big", version="2.0.0", nodes_min=37, nodes_max=2304, description="test",
        applies_to=(), owned_values=(), prerequisites=prerequisites, ladder=("lane-36",), doc=None,
    )  # fmt: skip


def snapshot(**readings: Any) -> ClusterSnapshot:
    return ClusterSnapshot(
        rel="snap.yaml", api_version="aicr.run/v1", metadata={}, readings=readings
    )


def check(**kw: Any) -> Check:
    base: dict[str, Any] = dict(
        id="c", source=Source.CATALOG, owner=Owner.CATALOG, severity="error",
        description="d", remediation="r", operator=">=", observed="1", expected=None, value=1,
    )  # fmt: skip
    base.update(kw)
    return Check(**base)


def checkset(*checks: Check, **constants: Any) -> CheckSet:
    return CheckSet(constants=constants, tables={"nvl72": {"gb300": True}}, checks=checks)


def one(
    c: Check,
    result: RecipeResult | None = None,
    nodes: int | None = None,
    readings: Mapping[str, Any] | None = None,
) -> Finding:
    report = preflight(
        result or recipe(), profile(), checkset(c), snapshot(**(readings or {})), nodes
    )
    (finding,) = report.findings
    return finding


# ---------------------------------------------------------------------------------------------
# value parsing and comparison


@pytest.mark.parametrize(
    ("observed", "op", "expected", "holds"),
    [
        ("v1.34.2-eks-b3126f4", ">=", "1.34", True),
        ("v1.33.9-eks-1", ">=", "1.34", False),
        ("1.33", ">=", "1.4", True),  # versions, not decimals
        ("580.105.08", ">=", "580", True),
        ("570.86.10", ">=", "580", False),
        ("24.04", "==", "24.04", True),
        (262144, ">=", "131072", True),
        ("65536", ">=", 131072, False),
        (36, "==", 36.0, True),
        (True, "==", "true", True),
        ("false", "==", True, False),
        ("ubuntu", "==", "ubuntu", True),
        ("rhel", "!=", "ubuntu", True),
        ("nftables", "in", ["ipvs", "nftables"], True),
        ("iptables", "in", ["ipvs", "nftables"], False),
        ("iptables", "not-in", ["ipvs", "nftables"], True),
        (36, "between", [1, 36], True),
        (37, "between", [1, 36], False),
    ],
)
def test_compare_coerces_versions_numbers_and_booleans(
    observed: Any, op: str, expected: Any, holds: bool
) -> None:
    assert compare(observed, op, expected) is holds


@pytest.mark.parametrize(
    ("observed", "op", "expected"),
    [("ubuntu", ">=", "rhel"), (True, ">", False), ("x", "in", "xyz"), (1, "between", [1])],
)
def test_compare_refuses_what_cannot_be_compared(observed: Any, op: str, expected: Any) -> None:
    with pytest.raises(ExprError):
        compare(observed, op, expected)


def test_quantities_durations_counts_and_cpu() -> None:
    assert to_bytes("4Gi") == 4 * 1024**3
    assert to_bytes("500M") == 500 * 1000**2
    assert to_bytes("45GB") == 45 * 1024**3  # Prometheus sizes are base 1024
    assert to_bytes("1.5Mi") == 1572864
    assert to_seconds("30s") == 30 and to_seconds("1h30m") == 5400 and to_seconds("5d") == 432000
    assert to_count("5%", 2304) == 116  # percentages round up, as Kubernetes does
    assert to_count("25%", 36) == 9 and to_count(18, 2304) == 18 and to_count("1", 10) == 1
    assert to_cpu("500m") == 0.5 and to_cpu("2") == 2.0
    for bad in (lambda: to_bytes("lots"), lambda: to_seconds("soon"), lambda: to_count(1.5, 4)):
        with pytest.raises(ExprError):
            bad()


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os')",
        "().__class__",
        "m('x')[0]",
        "[n for n in [1]]",
        "lambda: 1",
        "open('f')",
        "max(1, key=2)",
        "nodes.bit_length()",
        "1 +",
    ],
)
def test_expressions_reject_everything_outside_the_whitelist(text: str) -> None:
    with pytest.raises(ExprError):
        compile_expr(text)


# ---------------------------------------------------------------------------------------------
# results


def test_missing_measurement_is_unavailable_never_pass() -> None:
    f = one(check(observed="m('K8s.dns.replicas')", value=2))
    assert f.result is Result.UNAVAILABLE
    assert f.observed is None
    assert "K8s.dns.replicas" in f.message and "never a pass" in f.message


def test_nodes_without_declaration_or_reading_is_unavailable() -> None:
    f = one(check(observed="nodes", value=1))
    assert f.result is Result.UNAVAILABLE and "K8s.nodes.gpu" in f.message


def test_nodes_is_the_larger_of_declared_and_observed() -> None:
    c = check(observed="nodes", operator="==", value=72)
    assert one(c, readings={"K8s.nodes.gpu": 72}).result is Result.PASS
    assert one(c, nodes=72).result is Result.PASS
    assert one(c, nodes=36, readings={"K8s.nodes.gpu": 72}).result is Result.PASS
    grow = one(c, nodes=144, readings={"K8s.nodes.gpu": 72})
    assert grow.result is Result.FAIL and grow.observed == 144
    declared = check(observed="declared_nodes", operator="==", value=36)
    assert one(declared, nodes=36, readings={"K8s.nodes.gpu": 72}).result is Result.PASS
    assert one(declared, readings={"K8s.nodes.gpu": 36}).observed == 0


def test_daemonset_with_zero_desired_pods_fails() -> None:
    c = check(
        observed="m('K8s.daemonset.ns/ds.ready')", operator="==",
        expected="m('K8s.daemonset.ns/ds.desired')", fail_when_zero=True,
    )  # fmt: skip
    zero = one(c, readings={"K8s.daemonset.ns/ds.ready": 0, "K8s.daemonset.ns/ds.desired": 0})
    assert zero.result is Result.FAIL and "0" in zero.message
    ok = one(c, readings={"K8s.daemonset.ns/ds.ready": 4, "K8s.daemonset.ns/ds.desired": 4})
    assert ok.result is Result.PASS
    partial = one(c, readings={"K8s.daemonset.ns/ds.ready": 3, "K8s.daemonset.ns/ds.desired": 4})
    assert partial.result is Result.FAIL and partial.observed == 3 and partial.expected == "== 4"


def test_component_absent_from_the_recipe_is_skipped() -> None:
    by_field = one(check(component="slinky-slurm", observed="1"))
    by_value = one(check(observed="v('slinky-slurm', 'nodesets.slinky.replicas')"))
    assert by_field.result is by_value.result is Result.SKIPPED
    assert "slinky-slurm" in by_field.message and "slinky-slurm" in by_value.message


def test_when_false_skips_and_when_needing_missing_data_is_unavailable() -> None:
    assert one(check(when="nodes > 100"), nodes=36).result is Result.SKIPPED
    assert one(check(when="m('K8s.cluster.services') > 1")).result is Result.UNAVAILABLE


def test_resolved_values_defaults_and_unset_values() -> None:
    r = recipe((component("gpu-operator", {"driver": {"upgradePolicy": {"maxUnavailable": 18}}}),))
    path = "'driver.upgradePolicy.maxUnavailable'"
    assert (
        one(check(observed=f"v('gpu-operator', {path})", operator="==", value=18), r).result
        is Result.PASS
    )
    with_default = check(
        observed="v('gpu-operator', 'driver.version', '580.1')", operator="==", value="580.1"
    )
    assert one(with_default, r).result is Result.PASS
    unset = one(check(observed="v('gpu-operator', 'driver.version')"), r)
    assert unset.result is Result.FAIL and "does not set driver.version" in unset.message


def test_lazy_default_reads_the_snapshot_only_when_the_value_is_unset() -> None:
    c = check(observed="major(v('gpu-operator', 'driver.version', m('GPU.smi.driver')))", value=580)
    pinned = recipe((component("gpu-operator", {"driver": {"version": "580.105.08"}}),))
    assert one(c, pinned).result is Result.PASS  # no GPU.smi.driver reading needed
    unpinned = recipe((component("gpu-operator", {}),))
    assert one(c, unpinned).result is Result.UNAVAILABLE
    assert one(c, unpinned, readings={"GPU.smi.driver": "570.1"}).result is Result.FAIL


def test_evaluation_errors_fail_catalog_checks_and_leave_infrastructure_unavailable() -> None:
    cat = one(check(observed="bytes(m('X.y.z'))"), readings={"X.y.z": "a lot"})
    infra = one(check(owner=Owner.INFRASTRUCTURE, area="kubelet", observed="bytes(m('X.y.z'))"),
                readings={"X.y.z": "a lot"})  # fmt: skip
    assert cat.result is Result.FAIL and "a lot" in cat.message
    assert infra.result is Result.UNAVAILABLE


def test_constants_tables_and_criteria_in_expressions() -> None:
    c = check(
        observed="count('5%', nodes)", operator="<=",
        expected="rack if lookup('nvl72', criteria('accelerator'), False) else nodes",
    )  # fmt: skip
    cs = checkset(c, rack=18)
    big = preflight(recipe(), profile(), cs, snapshot(), 2304).findings[0]
    assert big.result is Result.FAIL and big.observed == 116 and big.expected == "<= 18"
    h100 = preflight(recipe(accelerator="h100"), profile(), cs, snapshot(), 2304).findings[0]
    assert h100.result is Result.PASS and h100.expected == "<= 2304"


def test_recipe_constraints_become_infrastructure_checks() -> None:
    c = constraint_check(Constraint("K8s.server.version", ">= 1.34", "error", "upgrade"))
    assert (c.id, c.operator, c.value, c.owner, c.area) == (
        "recipe.K8s.server.version", ">=", "1.34", Owner.INFRASTRUCTURE, "control-plane",
    )  # fmt: skip
    exact = constraint_check(Constraint("OS.release.VERSION_ID", "24.04"))
    assert (exact.operator, exact.value, exact.area, exact.severity) == (
        "==",
        "24.04",
        "node-pools",
        "error",
    )
    sysctl = constraint_check(Constraint("OS.sysctl./proc/sys/vm/max_map_count", ">= 262144"))
    assert sysctl.area == "host-sysctls"


# ---------------------------------------------------------------------------------------------
# whole reports and exit codes


def finding(owner: Owner, result: Result, severity: str = "error") -> Finding:
    return Finding(
        id=f"{owner}-{result}-{severity}", source=Source.CATALOG, owner=owner,
        area=None if owner is Owner.CATALOG else "kubelet", component=None, result=result,
        severity=severity, description="d", observed=None, expected="== 1", remediation="r",
        message="",
    )  # fmt: skip


def report(*findings: Finding) -> PreflightReport:
    return PreflightReport(
        recipe="r", digest="sha256:" + "00" * 32, profile="p", profile_version="1.0.0",
        nodes_declared=None, nodes_observed=None, snapshot="s.yaml", findings=findings,
    )  # fmt: skip


CAT, INF = Owner.CATALOG, Owner.INFRASTRUCTURE


@pytest.mark.parametrize(
    ("findings", "code"),
    [
        ((), 0),
        ((finding(CAT, Result.PASS), finding(INF, Result.SKIPPED)), 0),
        ((finding(CAT, Result.FAIL, "warning"), finding(INF, Result.UNAVAILABLE, "warning")), 0),
        ((finding(INF, Result.FAIL),), 3),
        # data missing for an error-severity check, nothing failed: insufficient data
        ((finding(CAT, Result.UNAVAILABLE),), 4),
        ((finding(INF, Result.UNAVAILABLE), finding(CAT, Result.PASS)), 4),
        ((finding(INF, Result.UNAVAILABLE), finding(INF, Result.FAIL)), 3),
        ((finding(CAT, Result.UNAVAILABLE), finding(CAT, Result.FAIL)), 1),
        ((finding(CAT, Result.FAIL),), 1),
        ((finding(CAT, Result.FAIL), finding(INF, Result.FAIL)), 1),
    ],
)
def test_exit_codes(findings: tuple[Finding, ...], code: int) -> None:
    assert report(*findings).exit_code == code


def _sample_inputs() -> tuple[RecipeResult, ScaleProfile, CheckSet, ClusterSnapshot]:
    r = recipe(
        (component("gpu-operator", {"daemonsets": {"rollingUpdate": {"maxUnavailable": "5%"}}}),),
        (Constraint("K8s.server.version", ">= 1.34", "error", "Upgrade to 1.34."),),
    )
    p = profile(
        ({"id": "big.dns", "owner": "infrastructure", "area": "cluster-dns",
          "measurement": "K8s.dns.replicas", "operator": ">=", "expected": "ceil(nodes / 128)",
          "description": "DNS replicas.", "remediation": "Scale CoreDNS."},),
    )  # fmt: skip
    cs = checkset(
        check(id="rollout", component="gpu-operator",
              observed="ceil(nodes / count(v('gpu-operator', 'daemonsets.rollingUpdate.maxUnavailable', 1), nodes))",
              operator="<=", expected="40", description="Rollout waves.", remediation="Use 5%."),
        check(id="band", observed="m('K8s.nodes.gpu')", operator="between",
              expected="[profile_min, profile_max]", description="Band.", remediation="Pick a profile."),
    )  # fmt: skip
    s = snapshot(**{"K8s.server.version": "v1.33.1", "K8s.nodes.gpu": 2304})
    return r, p, cs, s


def test_report_text_is_the_whole_transcript() -> None:
    r, p, cs, s = _sample_inputs()
    text = render(preflight(r, p, cs, s, 2304), Format.TEXT)
    assert text == (
        "preflight: recipe test-recipe, scale profile big 2.0.0\n"
        f"  digest sha256:{'ab' * 32}\n"
        "  snapshot snap.yaml: GPU nodes declared 2304, observed 2304\n"
        "\n"
        "FAIL        infrastructure error   recipe.K8s.server.version  observed v1.33.1, expected >= 1.34\n"
        "    fix: Upgrade to 1.34.\n"
        "UNAVAILABLE infrastructure error   big.dns                    observed -, expected >= ceil(nodes / 128)\n"
        "    why: the snapshot has no reading K8s.dns.replicas; missing data is never a pass\n"
        "    fix: Scale CoreDNS.\n"
        "PASS        catalog        error   band                       observed 2304, expected between 37 and 2304\n"
        "PASS        catalog        error   rollout                    observed 20, expected <= 40\n"
        "\n"
        "insufficient data: 1 reading missing\n"
        "  K8s.dns.replicas (needed by big.dns)\n"
        "    collect: aicr-catalog snapshot (or scripts/collect.sh, then aicr-catalog snapshot --from"
        " DIR): status.readyReplicas of the kube-system Deployments labelled k8s-app=kube-dns\n"
        "\n"
        "4 checks: 2 pass, 1 fail (0 catalog, 1 infrastructure), 0 skipped, 1 unavailable\n"
        "exit 3: infrastructure prerequisites unmet (no catalog-owned check failed)\n"
    )


def test_report_json_validates_is_sorted_and_deterministic() -> None:
    r, p, cs, s = _sample_inputs()
    first = render(preflight(r, p, cs, s, 2304), Format.JSON)
    again = render(preflight(r, p, cs, s, 2304), Format.JSON)
    assert first == again
    doc = json.loads(first)
    jsonschema.Draft202012Validator(schemas.schema("preflight-report")).validate(doc)
    ids = [f["id"] for f in doc["findings"]]
    assert ids == sorted(ids) == ["band", "big.dns", "recipe.K8s.server.version", "rollout"]
    assert doc["summary"] == {
        "checks": 4, "pass": 2, "fail": 1, "skipped": 0, "unavailable": 1,
        "catalogFailures": 0, "infrastructureFailures": 1, "missingReadings": 1, "exitCode": 3,
    }  # fmt: skip
    assert doc["missingReadings"] == [
        {"reading": "K8s.dns.replicas", "checks": ["big.dns"],
         "howToCollect": how_to_collect("K8s.dns.replicas")},
    ]  # fmt: skip
    assert by_id_missing(doc) == {"big.dns": "K8s.dns.replicas"}
    by_id = {f["id"]: f for f in doc["findings"]}
    assert by_id["big.dns"]["observed"] is None and by_id["big.dns"]["result"] == "unavailable"
    assert by_id["recipe.K8s.server.version"]["source"] == "recipe"
    assert by_id["big.dns"]["source"] == "profile" and by_id["big.dns"]["area"] == "cluster-dns"


def by_id_missing(doc: dict[str, object]) -> dict[str, str]:
    findings = doc["findings"]
    assert isinstance(findings, list)
    return {f["id"]: f["missing"] for f in findings if f["missing"] is not None}


def test_insufficient_data_exits_4_and_lists_each_reading_with_how_to_collect() -> None:
    """Issue 18 item 3: with no failure, missing readings are insufficient data (exit 4), not an
    infrastructure verdict (3), whoever owns the checks that lack them."""
    r, p, cs, s = _sample_inputs()
    s = snapshot(**{"K8s.server.version": "v1.34.1", "K8s.nodes.gpu": 2304})
    rep_ = preflight(r, p, cs, s, 2304)
    assert rep_.exit_code == 4
    text = render(rep_, Format.TEXT)
    assert "insufficient data: 1 reading missing\n  K8s.dns.replicas (needed by big.dns)\n" in text
    assert text.endswith("exit 4: insufficient data: error-severity checks lack readings "
                         "(nothing failed; nothing is shown to hold either)\n")  # fmt: skip
    gh = render(rep_, Format.GITHUB)
    assert "::notice title=preflight::exit 4: insufficient data" in gh


def test_report_schema_rejects_an_observed_value_on_an_unavailable_finding() -> None:
    r, p, cs, s = _sample_inputs()
    doc = report_json(preflight(r, p, cs, s, 2304))
    doc["findings"][1]["observed"] = 3  # big.dns is unavailable
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schemas.schema("preflight-report")).validate(doc)


def test_github_format_annotates_only_blocking_findings() -> None:
    r, p, cs, s = _sample_inputs()
    out = render(preflight(r, p, cs, s, 2304), Format.GITHUB).splitlines()
    assert [line.split("::")[1] for line in out] == [
        "error title=preflight big.dns",
        "error title=preflight recipe.K8s.server.version",
        "notice title=preflight",
    ]


def test_github_annotations_escape_percent_and_newlines() -> None:
    c = check(
        id="pct", observed="count('5%', 100)", operator="<=", value=1, remediation="use 1%\nor less"
    )
    out = render(preflight(recipe(), profile(), checkset(c), snapshot(), 100), Format.GITHUB)
    first = out.splitlines()[0]
    assert first.startswith("::error title=preflight pct::") and "1%25%0Aor less" in first


def test_duplicate_check_ids_across_sources_are_refused() -> None:
    r, p, _, _ = _sample_inputs()
    clash = checkset(check(id="big.dns"))
    with pytest.raises(ValidationError) as e:
        all_checks(r, p, clash)
    assert "big.dns" in e.value.diagnostics[0].message


# ---------------------------------------------------------------------------------------------
# checks.yaml parsing


CHECKS_HEAD = """apiVersion: catalog.aicr.run/v1alpha1
kind: ScaleChecks
metadata: {name: t}
spec:
  constants: {rack: 18}
  checks:
"""


def test_checkset_from_locates_bad_expressions_and_unknown_names() -> None:
    text = CHECKS_HEAD + (
        "    - {id: a, owner: catalog, operator: '>=', observed: 'nodes', expected: 'rak',\n"
        "       description: d, remediation: r}\n"
        "    - {id: b, owner: catalog, operator: '>=', observed: 'nodes.real', value: 1,\n"
        "       description: d, remediation: r}\n"
        "    - {id: a, owner: catalog, operator: '>=', measurement: 'K8s.dns.replicas', value: 1,\n"
        "       description: d, remediation: r}\n"
    )
    with pytest.raises(ValidationError) as e:
        checkset_from(parse_yaml(text, "scale/checks.yaml"))
    got = [(d.line, d.json_path, d.rule) for d in e.value.diagnostics]
    assert got == [
        (7, "$.spec.checks[0].expected", "scale.check-expression"),
        (9, "$.spec.checks[1].observed", "scale.check-expression"),
        (11, "$.spec.checks[2].id", "scale.check-duplicate"),
    ]
    assert any(msg.message.startswith("unknown name(s) rak") for msg in e.value.diagnostics)


def test_checkset_schema_requires_an_area_on_infrastructure_checks() -> None:
    text = CHECKS_HEAD + (
        "    - {id: a, owner: infrastructure, operator: '>=', observed: 'nodes', value: 1,\n"
        "       description: d, remediation: r}\n"
    )
    with pytest.raises(ValidationError) as e:
        checkset_from(parse_yaml(text, "scale/checks.yaml"))
    assert any("area" in d.message for d in e.value.diagnostics)


def test_checkset_from_accepts_a_valid_file() -> None:
    text = CHECKS_HEAD + (
        "    - {id: a, owner: catalog, operator: '<=', observed: 'count(\"5%\", nodes)',\n"
        "       expected: 'rack', description: d, remediation: r}\n"
    )
    cs = checkset_from(parse_yaml(text, "scale/checks.yaml"))
    assert cs.constants == {"rack": 18}
    assert [c.id for c in cs.checks] == ["a"]
    (f,) = preflight(recipe(), profile(), cs, snapshot(), 2304).findings
    assert (f.result, f.observed) == (Result.FAIL, 116)
