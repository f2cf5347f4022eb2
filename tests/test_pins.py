"""Units of `generator.pins`: versions, the HTTP boundary, Helm index and OCI parsing, pin
collection from records, the formatters and the in-place pin writer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core.errors import UsageError
from generator.core.records import (
    Catalog,
    ComponentRef,
    Criteria,
    Document,
    Overlay,
    RecipeResult,
    Registry,
    RegistryComponent,
    ResolvedComponent,
)
from generator.pins import http as pins_http
from generator.pins import oci
from generator.pins.check import check_pins
from generator.pins.collect import collect_pins, recipe_usage, with_recipes
from generator.pins.helm_index import chart_versions, parse_index
from generator.pins.http import ETagCache, Fetcher, FetchError
from generator.pins.model import ExitCode, Newer, Pin, PinLocation, ProblemKind
from generator.pins.report import format_markdown, format_text
from generator.pins.versions import is_published, newer_versions, parse_version
from generator.pins.write import PinWriteError, bump_text, parse_request
from tests.fixtures.pins.server import PinsServer, Reply, Route, helm_index, tag_list

FIXTURE_REGISTRY = Path(__file__).parent / "fixtures" / "pins" / "catalog" / "registry.yaml"


@pytest.fixture
def server() -> Iterator[PinsServer]:
    with PinsServer() as s:
        yield s


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    seen: list[float] = []
    monkeypatch.setattr(pins_http, "_sleep", seen.append)
    return seen


# ---------------------------------------------------------------- versions


def test_leading_v_is_the_same_version() -> None:
    assert parse_version("v1.2.3") == parse_version("1.2.3")
    assert parse_version("latest") is None
    assert is_published("v26.7.0", ["26.7.0"])
    assert is_published("1.0.0", ["v1.0.0"])
    assert not is_published("1.0", ["1.0.0"])  # Helm matches the version string, not its value


def test_newer_versions_by_patch_minor_major() -> None:
    available = ["0.9.0", "1.2.3", "1.2.4", "1.2.11", "1.3.0", "1.10.1", "2.0.0", "v3.0.0", "x"]
    assert newer_versions("1.2.3", available) == Newer("1.2.11", "1.10.1", "v3.0.0")
    assert newer_versions("v3.0.0", available) == Newer()
    assert newer_versions("not-a-version", available) == Newer()


def test_pre_releases_only_offered_to_pre_release_pins() -> None:
    available = ["1.0.0", "1.0.1-rc.1", "1.1.0rc2", "2.0.0-alpha.1"]
    assert newer_versions("1.0.0", available) == Newer()
    assert newer_versions("0.9.0-rc.1", available) == Newer(None, None, "2.0.0-alpha.1")
    assert newer_versions("1.0.0-rc.1", available) == Newer(
        "1.0.1-rc.1", "1.1.0rc2", "2.0.0-alpha.1"
    )


def test_short_versions_pad_to_three_parts() -> None:
    assert newer_versions("1.2", ["1.2.1", "1.3", "2"]) == Newer("1.2.1", "1.3", "2")


# ---------------------------------------------------------------- Helm index, OCI


def test_index_versions_stay_strings() -> None:
    entries = parse_index(b"entries:\n  a:\n  - version: 1.10\n  - version: 2\n", "u")
    assert chart_versions(entries, "a", "u") == ("1.10", "2")


def test_chart_missing_from_index_is_chart_not_found() -> None:
    with pytest.raises(FetchError) as e:
        chart_versions({"a": []}, "b", "http://x/index.yaml")
    assert e.value.problem.kind is ProblemKind.CHART_NOT_FOUND
    assert e.value.problem.message == "chart b is not in http://x/index.yaml"


@pytest.mark.parametrize(
    ("repository", "chart", "expected"),
    [
        (
            "oci://ghcr.io/nvidia/nodewright/charts",
            "nodewright",
            (
                "nvidia/nodewright/charts/nodewright",
                "https://ghcr.io/v2/nvidia/nodewright/charts/nodewright/tags/list",
            ),
        ),
        ("oci://registry.k8s.io/", "dra", ("dra", "https://registry.k8s.io/v2/dra/tags/list")),
        ("oci://127.0.0.1:5000/c", "x", ("c/x", "http://127.0.0.1:5000/v2/c/x/tags/list")),
        ("oci://localhost:5000/c/", "x", ("c/x", "http://localhost:5000/v2/c/x/tags/list")),
        ("oci://[::1]:5000/c", "x", ("c/x", "http://[::1]:5000/v2/c/x/tags/list")),
        ("oci://127.example.com/c", "x", ("c/x", "https://127.example.com/v2/c/x/tags/list")),
    ],
)
def test_oci_tags_url(repository: str, chart: str, expected: tuple[str, str]) -> None:
    assert oci.tags_url(repository, chart) == expected


def test_oci_pagination_and_plus_in_tags(server: PinsServer) -> None:
    path = "/v2/c/x/tags/list"
    server.routes[path] = Route(
        [
            Reply(
                200,
                tag_list("c/x", ["1.0.0", "1.1.0_build.1"]),
                {"Link": '</v2/c/x/tags/list?n=2&last=1.1.0_build.1>; rel="next"'},
            ),
            Reply(200, tag_list("c/x", ["2.0.0"])),
        ]
    )
    tags = oci.list_tags(Fetcher(timeout=1, retries=0), f"oci://{server.host}/c", "x")
    assert tags == ("1.0.0", "1.1.0+build.1", "2.0.0")
    assert [s.query for s in server.requests_to(path)] == ["", "n=2&last=1.1.0_build.1"]


def test_oci_next_page_on_another_host_is_refused(server: PinsServer) -> None:
    server.routes["/v2/c/x/tags/list"] = Route(
        [
            Reply(
                200,
                tag_list("c/x", []),
                {"Link": '<https://elsewhere.invalid/v2/c/x/tags/list>; rel="next"'},
            )
        ]
    )
    with pytest.raises(FetchError) as e:
        oci.list_tags(Fetcher(timeout=1, retries=0), f"oci://{server.host}/c", "x")
    assert e.value.problem.kind is ProblemKind.MALFORMED
    assert "next page on another host" in e.value.problem.message


def test_oci_null_tags_is_an_empty_list(server: PinsServer) -> None:
    server.routes["/v2/c/x/tags/list"] = Route([Reply(200, b'{"name": "c/x", "tags": null}')])
    assert oci.list_tags(Fetcher(timeout=1, retries=0), f"oci://{server.host}/c", "x") == ()


@pytest.mark.parametrize(
    ("challenge", "kind", "message"),
    [
        (
            'Basic realm="r"',
            ProblemKind.HTTP_ERROR,
            "GET u: HTTP 401 and the registry offers no anonymous token (Basic)",
        ),
        (
            None,
            ProblemKind.HTTP_ERROR,
            "GET u: HTTP 401 and the registry offers no anonymous token (no challenge)",
        ),
        (
            'Bearer realm="http://tokens.example/t"',
            ProblemKind.MALFORMED,
            "GET u: HTTP 401 with an unusable token realm (not https)",
        ),
        (
            'Bearer service="s"',
            ProblemKind.MALFORMED,
            "GET u: HTTP 401 with an unusable token realm (not https)",
        ),
    ],
)
def test_unusable_challenges_fail_before_any_request(
    challenge: str | None, kind: ProblemKind, message: str
) -> None:
    fetcher = Fetcher(timeout=0.1, retries=0)
    with pytest.raises(FetchError) as e:
        oci._anonymous_token(fetcher, "u", "c/x", challenge)
    assert (e.value.problem.kind, e.value.problem.message) == (kind, message)
    assert fetcher.stats.requests == 0


def test_token_refused_by_registry(server: PinsServer) -> None:
    server.add_token_realm("good")
    server.routes["/v2/c/x/tags/list"] = Route([Reply(200, tag_list("c/x", []))], bearer="other")
    with pytest.raises(FetchError) as e:
        oci.list_tags(Fetcher(timeout=1, retries=0), f"oci://{server.host}/c", "x")
    assert e.value.problem.http_status == 401
    assert "refused the anonymous token" in e.value.problem.message


# ---------------------------------------------------------------- HTTP boundary


def test_etag_cache_ignores_tampered_or_foreign_entries(tmp_path: Path) -> None:
    cache = ETagCache(tmp_path)
    cache.put("http://a/index.yaml", '"e1"', b"body")
    got = cache.get("http://a/index.yaml")
    assert got is not None and (got.etag, got.body) == ('"e1"', b"body")
    assert cache.get("http://b/index.yaml") is None
    (body,) = tmp_path.glob("*.body")
    body.write_bytes(b"tampered")
    assert cache.get("http://a/index.yaml") is None
    (meta,) = tmp_path.glob("*.json")
    meta.write_text("{not json")
    assert cache.get("http://a/index.yaml") is None


def test_tampered_cache_means_an_unconditional_request(server: PinsServer, tmp_path: Path) -> None:
    server.routes["/i"] = Route([Reply(200, b"fresh")], etag='"e"')
    url = f"{server.url}/i"
    cache = ETagCache(tmp_path)
    cache.put(url, '"e"', b"old")
    (body,) = tmp_path.glob("*.body")
    body.write_bytes(b"tampered")
    got = Fetcher(timeout=1, retries=0, cache=cache).get(url)
    assert (got.status, got.body, got.from_cache) == (200, b"fresh", False)
    assert server.requests_to("/i")[0].headers.get("If-None-Match") is None


def test_retry_after_is_capped(server: PinsServer, no_sleep: list[float]) -> None:
    server.routes["/i"] = Route([Reply(429, b"", {"Retry-After": "3600"}), Reply(200, b"ok")])
    got = Fetcher(timeout=1, retries=1).get(f"{server.url}/i")
    assert got.body == b"ok"
    assert no_sleep == [pins_http.BACKOFF_MAX]


def test_connection_refused_is_unreachable_after_retries(no_sleep: list[float]) -> None:
    with PinsServer() as s:
        url = f"{s.url}/gone"
    fetcher = Fetcher(timeout=0.5, retries=2)
    with pytest.raises(FetchError) as e:
        fetcher.get(url)
    assert e.value.problem.kind is ProblemKind.UNREACHABLE
    assert (
        e.value.problem.message == f"GET {url}: unreachable (connection refused) (after 3 attempts)"
    )
    assert (fetcher.stats.requests, fetcher.stats.retries, no_sleep) == (3, 2, [0.5, 1.0])


# ---------------------------------------------------------------- collecting pins from records


def _doc(rel: str) -> Document:
    return Document(rel=rel, data={}, lines={"$": (1, 1)}, sha256="0" * 64)


def _reg(
    name: str,
    repo: str | None,
    chart: str | None,
    version: str | None,
    kind: str = "Helm",
    keys: tuple[str, ...] = (),
    i: int = 0,
) -> RegistryComponent:
    return RegistryComponent(
        name, name, keys, repo, chart, version, None, kind, f"$.components[{i}]"
    )


def _overlay(name: str, refs: tuple[ComponentRef, ...], kind: str = "RecipeMetadata") -> Overlay:
    return Overlay(
        kind,
        "aicr.run/v1beta1",
        name,
        None,
        Criteria(),
        (),
        (),
        refs,
        {},
        _doc(f"{'overlays' if kind == 'RecipeMetadata' else 'mixins'}/{name}.yaml"),
    )


def _catalog() -> Catalog:
    registry = Registry(
        components={
            "op": _reg(
                "op", "https://charts.example/repo/", "alias/op", "1.0.0", keys=("operator",)
            ),
            "oci-op": _reg("oci-op", "oci://reg.example/charts", None, "v2.0.0", i=1),
            "kust": _reg("kust", None, None, None, kind="Kustomize", i=2),
            "manifests": _reg("manifests", "", None, None, i=3),
        },
        doc=_doc("registry.yaml"),
    )
    refs = (
        ComponentRef("operator", version="1.1.0", json_path="$.spec.componentRefs[0]"),
        ComponentRef(
            "oci-op", source="oci://mirror.example/charts", json_path="$.spec.componentRefs[1]"
        ),
        ComponentRef("kust", type="Kustomize", version="v9", json_path="$.spec.componentRefs[2]"),
        ComponentRef("manifests", json_path="$.spec.componentRefs[3]"),
    )
    mixin_refs = (ComponentRef("op", version="1.1.0", json_path="$.spec.componentRefs[0]"),)
    return Catalog(
        root="x",
        overlays={"leaf": _overlay("leaf", refs)},
        mixins={"mx": _overlay("mx", mixin_refs, kind="RecipeMixin")},
        registry=registry,
        profiles={},
        files={},
    )


def test_collect_pins_from_registry_and_refs() -> None:
    pins = collect_pins(_catalog())
    assert [(p.component, p.version, p.repository, p.chart) for p in pins] == [
        ("oci-op", "v2.0.0", "oci://mirror.example/charts", "oci-op"),
        ("oci-op", "v2.0.0", "oci://reg.example/charts", "oci-op"),
        ("op", "1.0.0", "https://charts.example/repo", "op"),
        ("op", "1.1.0", "https://charts.example/repo", "op"),
    ]
    # The same pin written in an overlay (by alias) and in a mixin is one pin, two places.
    assert [loc.format() for loc in pins[3].locations] == [
        "mixins/mx.yaml:1:1: $.spec.componentRefs[0].version",
        "overlays/leaf.yaml:1:1: $.spec.componentRefs[0].version",
    ]
    assert pins[0].locations[0].json_path == "$.spec.componentRefs[1].source"


def _resolved(name: str, repo: str, chart: str, version: str) -> ResolvedComponent:
    return ResolvedComponent(name, "Helm", repo, chart, version, name, {}, (), (), (), 0, 0, ())


def _result(name: str, *components: ResolvedComponent) -> RecipeResult:
    return RecipeResult(
        name, Criteria(), (), (), (), components, {}, "standard", "0.0.0", (), "sha256:" + "0" * 64
    )


def test_recipe_usage_matches_resolved_components() -> None:
    from generator.core.errors import ResolveError

    results = {
        "a": _result("a", _resolved("op", "https://charts.example/repo", "op", "1.1.0")),
        "b": _result(
            "b",
            _resolved("op", "https://charts.example/repo/", "op", "1.0.0"),
            _resolved("oci-op", "oci://reg.example/charts", "oci-op", "v2.0.0"),
        ),
    }

    def resolve_leaf(leaf: str) -> RecipeResult:
        if leaf == "broken":
            raise ResolveError("no such overlay")
        return results[leaf]

    usage, failed = recipe_usage(["b", "a", "broken"], resolve_leaf)
    assert failed == ("broken: no such overlay",)
    pins = with_recipes(collect_pins(_catalog()), usage)
    assert [(p.component, p.version, p.recipes) for p in pins] == [
        ("oci-op", "v2.0.0", ()),
        ("oci-op", "v2.0.0", ("b",)),
        ("op", "1.0.0", ("b",)),
        ("op", "1.1.0", ("a",)),
    ]


# ---------------------------------------------------------------- report


def test_qualification_mapping_fills_the_column(server: PinsServer) -> None:
    server.routes["/index.yaml"] = Route([Reply(200, helm_index({"op": ["1.0.0"]}))])
    loc = PinLocation("registry.yaml", 3, 7, "$.components[0].helm.defaultVersion")
    pins = [
        Pin("op", server.url, "op", "1.0.0", (loc,), ("r1",)),
        Pin("op", server.url, "op", "0.9.0", (loc,), ()),
    ]
    report = check_pins(pins, Fetcher(timeout=1, retries=0), {("op", "1.0.0"): "lane-288"})
    assert [r.qualified for r in report.results] == ["unknown", "lane-288"]
    assert report.exit_code is ExitCode.MISSING
    text = format_text(report).replace(server.url, "REPO")
    assert text.splitlines()[1:3] == [
        "op         0.9.0    missing  -      -      1.0.0  unknown    0        REPO/op",
        "op         1.0.0    present  -      -      -      lane-288   1        REPO/op",
    ]
    assert "until the status model" not in format_markdown(report)


def test_markdown_escapes_table_cells(server: PinsServer) -> None:
    loc = PinLocation("registry.yaml", 3, 7, "$.x")
    pin = Pin("op", server.url + "/a|b", "op", "1.0.0", (loc,), ())
    report = check_pins([pin], Fetcher(timeout=1, retries=0))
    md = format_markdown(report)
    assert "/a\\|b/op |" in md
    assert report.exit_code is ExitCode.INCOMPLETE  # 404 on the index: an HTTP error


def test_empty_catalog_report() -> None:
    report = check_pins([], Fetcher(timeout=1, retries=0))
    assert report.exit_code is ExitCode.OK
    assert format_text(report).endswith(
        "\n0 pins: 0 present, 0 missing, 0 unknown; 0 with newer versions\n"
    )


# ---------------------------------------------------------------- write


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("alpha=1.0.0", ("alpha", "1.0.0", None)),
        ("overlays/x.yaml:alpha=v1.0.0+b.1", ("alpha", "v1.0.0+b.1", "overlays/x.yaml")),
    ],
)
def test_parse_request(spec: str, expected: tuple[str, str, str | None]) -> None:
    r = parse_request(spec)
    assert (r.component, r.version, r.file) == expected


@pytest.mark.parametrize(
    "spec", ["alpha", "=1.0", "f.yaml:=1.0", "alpha=", "alpha=1.0\n", "alpha=-1", "a=b c"]
)
def test_parse_request_rejects(spec: str) -> None:
    with pytest.raises(UsageError):
        parse_request(spec)


def test_bump_keeps_style_comments_and_line_endings() -> None:
    text = (
        "a:\r\n"
        "  - {name: x, version: 1.2.3}  # flow\r\n"
        "  - name: y\r\n"
        "    version: '2'   # single\r\n"
        "  - name: z\r\n"
        '    version: "v3" # double\r\n'
    )
    assert bump_text(text, "$.a[0].version", "1.3.0").splitlines(keepends=True)[1] == (
        "  - {name: x, version: 1.3.0}  # flow\r\n"
    )
    assert (
        bump_text(text, "$.a[1].version", "it's").splitlines()[3]
        == "    version: 'it''s'   # single"
    )
    assert bump_text(text, "$.a[2].version", "v4").splitlines()[5] == '    version: "v4" # double'
    # A plain scalar that YAML would read as a number is quoted.
    assert bump_text(text, "$.a[0].version", "1.10").splitlines()[1] == (
        '  - {name: x, version: "1.10"}  # flow'
    )


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("a:\n  version: |\n    1.0\n", "$.a.version"),
        ("v: &x 1.0.0\na:\n  version: *x\n", "$.a.version"),
        ("a:\n  version: 1.0.0\n", "$.a.missing"),
        ("a:\n  version: 1.0.0\n", "a.version"),
    ],
)
def test_bump_refuses_what_it_cannot_splice(text: str, path: str) -> None:
    with pytest.raises(PinWriteError):
        bump_text(text, path, "2.0.0")


@settings(max_examples=25, deadline=None)
@given(
    index=st.integers(min_value=0, max_value=2),
    version=st.from_regex(r"\Av?[0-9]{1,3}(\.[0-9]{1,3}){0,2}([-+][a-z0-9.]{1,8})?\Z"),
)
def test_bump_changes_exactly_one_value(index: int, version: str) -> None:
    text = FIXTURE_REGISTRY.read_text()
    path = f"$.components[{index}].helm.defaultVersion"
    new = bump_text(text, path, version)
    before, after = yaml.safe_load(text), yaml.safe_load(new)
    before["components"][index]["helm"]["defaultVersion"] = version
    assert after == before
    changed = [
        i
        for i, (a, b) in enumerate(zip(text.splitlines(), new.splitlines(), strict=True))
        if a != b
    ]
    assert len(changed) <= 1
    # the comment on the line survives
    assert new.count("# keep this comment") == 1


def test_json_helpers_are_sorted_and_stable() -> None:
    loc = PinLocation("registry.yaml", 1, 1, "$")
    assert json.dumps(loc.to_json(), sort_keys=True) == (
        '{"col": 1, "jsonPath": "$", "line": 1, "path": "registry.yaml"}'
    )


def test_unwritable_cache_only_warns(server: PinsServer, tmp_path: Path) -> None:
    server.routes["/i"] = Route([Reply(200, b"body")], etag='"e"')
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    said: list[str] = []
    fetcher = Fetcher(
        timeout=1, retries=0, cache=ETagCache(blocker / "cache"), progress=said.append
    )
    assert fetcher.get(f"{server.url}/i").body == b"body"
    assert said[-1].startswith("warning: ETag cache not written")
