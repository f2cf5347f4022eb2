"""Upstream's evidence flow against a real OCI registry (CNCF distribution on 127.0.0.1):
push, pull by digest, the registry's failures as named errors, pointer files, the allowlist,
and an upstream summary bundle verified here."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.core import archive
from generator.core.errors import ValidationError
from generator.core.net import Client
from generator.evidence import oci
from generator.evidence.allowlist import read_allowlist
from generator.evidence.model import FailureClass, RejectedEvidence, SignerPolicy, VerifiedEvidence
from generator.evidence.pointer import parse_pointer, render_pointer
from generator.evidence.recipedigest import canonical_yaml, recipe_digest
from generator.evidence.stage import verify_stage
from generator.evidence.store import source_id
from generator.evidence.trustroot import load_trust_root
from generator.evidence.upstream import UpstreamOptions, verify_pointers
from generator.evidence.view import evidence_view
from generator.site.apifiles import published_runs
from tests import evidence_fixtures as ef
from tests.oci_fixtures import (
    PHASE_TESTS,
    RECIPE_YAML,
    UPSTREAM_RECIPE,
    V3,
    FakeRegistry,
    RealRegistry,
    answer,
    free_port,
    publish_upstream,
    running_fake_registry,
    running_registry,
    summary_bundle,
    tar_directory,
)

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "catalog"
DEMO_EVIDENCE = ROOT / "evidence" / "gb200-eks-ubuntu-training-kubeflow"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealRegistry]:
    yield from running_registry(tmp_path_factory)


@pytest.fixture
def fake_registry() -> Iterator[FakeRegistry]:
    yield from running_fake_registry()


def _allowlist(tmp: Path, body: str) -> Path:
    path = tmp / "recipes" / "evidence" / "allowlist.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


FIRST_PARTY = f"""schemaVersion: 1.0.0
partner:
  - label: example-lab
    issuer: {ef.ISSUER}
    identityPattern: ^https://github\\.com/example-lab/aicr-runs/\\.github/workflows/evidence\\.yaml@refs/heads/.+$
"""


def _place(tmp: Path, published: object) -> Path:
    rel = published.pointer_rel  # type: ignore[attr-defined]
    path = tmp / "recipes" / "evidence" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(published.pointer)  # type: ignore[attr-defined]
    return path


def _roots(tmp: Path) -> tuple[object, ...]:
    authority = ef.make_authority()
    return authority, load_trust_root(str(ef.write_root(authority, tmp)))


# --- references, cache, pull ------------------------------------------------------------------


def test_reference_parsing_and_refusals() -> None:
    ref = oci.parse_reference("oci://ghcr.io/org/aicr-evidence@sha256:" + "a" * 64)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (
        "ghcr.io",
        "org/aicr-evidence",
        None,
        "sha256:" + "a" * 64,
    )
    assert oci.parse_reference("127.0.0.1:5000/e/v:1.0").tag == "1.0"
    for bad in ("noregistry", "ghcr.io/Org/X", "ghcr.io/o/r@sha256:abc", "ghcr.io/o/r:bad tag"):
        with pytest.raises(oci.InvalidReference):
            oci.parse_reference(bad)


def test_push_then_pull_by_digest_and_offline_cache(registry: RealRegistry, tmp_path: Path) -> None:
    reg = registry.client()
    files = {"recipe.yaml": b"a: 1\n", "ctrf/deployment.json": b"{}\n"}
    pushed = oci.push_artifact(
        reg,
        oci.parse_reference(f"{registry.host}/t/push"),
        artifact_type=oci.AICR_ARTIFACT_TYPE,
        layers=[(oci.LAYER_TAR_GZIP, archive.gzip_bytes(tar_directory(files)), {oci.TITLE: "."})],
    )
    cache = oci.Cache(tmp_path / "cache")
    with pytest.raises(oci.NotCached):
        oci.pull(str(pushed.reference), cache=cache, offline=True)
    pulled = oci.pull(str(pushed.reference), cache=cache, client=Client.on())
    assert (dict(pulled.files), pulled.from_cache, pulled.digest) == (files, False, pushed.digest)
    again = oci.pull(str(pushed.reference), cache=cache, offline=True)
    assert again.from_cache and dict(again.files) == files
    # the cache is content-addressed: a damaged entry is not used, offline it is "not cached"
    blob = cache.root / "blobs" / "sha256" / pushed.digest.removeprefix("sha256:")
    blob.write_bytes(blob.read_bytes() + b" ")
    with pytest.raises(oci.NotCached):
        oci.pull(str(pushed.reference), cache=cache, offline=True)
    assert (
        oci.pull(str(pushed.reference), cache=cache, client=Client.on()).digest == pushed.digest
    )  # refetched


def test_wrong_digest_and_tag_only(registry: RealRegistry, tmp_path: Path) -> None:
    reg = registry.client()
    pushed = oci.push_artifact(
        reg,
        oci.parse_reference(f"{registry.host}/t/tagged:v1"),
        artifact_type=oci.CATALOG_ARTIFACT_TYPE,
        layers=[("application/octet-stream", b"x", {oci.TITLE: "x.sigstore.json"})],
    )
    cache = oci.Cache(tmp_path / "c")
    with pytest.raises(oci.RegistryNotFound, match="404"):
        oci.pull(f"{registry.host}/t/tagged@sha256:" + "0" * 64, cache=cache, client=Client.on())
    with pytest.raises(oci.UnpinnedReference, match="tag-only"):
        oci.pull(f"{registry.host}/t/tagged:v1", cache=cache, client=Client.on())
    assert (
        oci.pull(
            f"{registry.host}/t/tagged:v1", cache=cache, allow_tag=True, client=Client.on()
        ).digest
        == pushed.digest
    )
    # a pointer's digest pins a tag: a tag now naming other content is refused
    with pytest.raises(oci.RegistryNotFound):
        oci.pull(
            f"{registry.host}/t/tagged:v1",
            cache=cache,
            expect_digest="sha256:" + "1" * 64,
            client=Client.on(),
        )
    with pytest.raises(oci.DigestMismatch):
        oci.pull(
            f"{registry.host}/t/tagged@{pushed.digest}",
            cache=cache,
            expect_digest="sha256:" + "1" * 64,
        )


def test_registry_down_is_named(tmp_path: Path) -> None:
    ref = f"127.0.0.1:{free_port()}/t/x@sha256:" + "2" * 64
    with pytest.raises(oci.RegistryUnreachable, match="cannot connect"):
        oci.pull(ref, cache=oci.Cache(tmp_path), client=Client.on())


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (401, oci.RegistryUnauthorized),
        (403, oci.RegistryForbidden),
        (404, oci.RegistryNotFound),
        (500, oci.RegistryServerError),
        (503, oci.RegistryServerError),
        (418, oci.RegistryProtocolError),
    ],
)
def test_registry_answers_are_named(
    fake_registry: FakeRegistry, tmp_path: Path, status: int, error: type
) -> None:
    body = json.dumps({"errors": [{"code": "DENIED", "message": "no"}]}).encode()
    fake_registry.routes["/v2/"] = answer(status, body)
    with pytest.raises(error) as info:
        oci.pull(
            f"{fake_registry.host}/t/x@sha256:" + "3" * 64,
            cache=oci.Cache(tmp_path),
            client=Client.on(),
        )
    assert str(status) in info.value.message and info.value.rule.startswith("oci.")


def test_timeout_and_wrong_content(fake_registry: FakeRegistry, tmp_path: Path) -> None:
    digest = "sha256:" + "4" * 64
    fake_registry.routes["/v2/t/slow/"] = answer(200, b"{}", delay=2)
    reg = oci.Registry(fake_registry.host, Client.on(idle_seconds=0.3), plain_http=True)
    with pytest.raises(oci.RegistryTimeout):
        oci.pull(f"{fake_registry.host}/t/slow@{digest}", cache=oci.Cache(tmp_path), registry=reg)
    fake_registry.routes["/v2/t/evil/"] = answer(200, b'{"schemaVersion":2,"layers":[]}')
    with pytest.raises(oci.DigestMismatch, match="served content"):
        oci.pull(
            f"{fake_registry.host}/t/evil@{digest}", cache=oci.Cache(tmp_path), client=Client.on()
        )


def test_unsafe_layers_are_refused() -> None:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("../escape")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(oci.UnsafeArtifact, match="leaves"):
        oci.untar_layer(buf.getvalue(), "layer")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        link = tarfile.TarInfo("recipe.yaml")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    with pytest.raises(oci.UnsafeArtifact, match="not a regular file"):
        oci.untar_layer(buf.getvalue(), "layer")


# --- upstream's recipe digest -----------------------------------------------------------------


def test_recipe_digest_is_upstreams_canonical_form() -> None:
    canon = canonical_yaml(RECIPE_YAML, strip_version=True)
    text = canon.decode()
    assert text.startswith(
        "apiVersion: aicr.run/v1alpha3\ncomponentRefs:\n    - name: gpu-operator\n"
    )
    assert "version: v0.12.0" not in text and "      namespace: gpu-operator\n" in text
    # comments, key order and metadata.version (v3) do not change it; content does
    reordered = b"# note\nkind: RecipeResult\n" + RECIPE_YAML.replace(
        b"kind: RecipeResult\n", b""
    ).replace(b"v0.12.0", b"v0.13.0")
    assert recipe_digest(reordered, V3) == recipe_digest(RECIPE_YAML, V3)
    v1 = "https://aicr.run/recipe-evidence/v1"
    assert recipe_digest(reordered, v1) != recipe_digest(RECIPE_YAML, v1)
    assert recipe_digest(RECIPE_YAML.replace(b"v25.10.0", b"v25.10.1"), V3) != recipe_digest(
        RECIPE_YAML, V3
    )


# --- the allowlist ----------------------------------------------------------------------------


def test_allowlist_rules(tmp_path: Path) -> None:
    slug = source_id(ef.ISSUER, ef.IDENTITY)
    good = _allowlist(
        tmp_path, FIRST_PARTY + f"community:\n  - issuer: {ef.ISSUER}\n    source: {slug}\n"
    )
    rules, slugs = read_allowlist(good, "allowlist.yaml")
    assert len(rules) == 1 and slugs[0].source == slug

    cases = {
        "allowlist.cleartext-identity": f"schemaVersion: 1.0.0\ncommunity:\n  - issuer: {ef.ISSUER}\n    identity: someone@example.com\n",
        "allowlist.community-pattern": f"schemaVersion: 1.0.0\ncommunity:\n  - issuer: {ef.ISSUER}\n    identityPattern: ^https://github\\.com/a/b/x@.+$\n",
        "allowlist.over-broad": f"schemaVersion: 1.0.0\npartner:\n  - issuer: {ef.ISSUER}\n    identityPattern: ^https://github\\.com/.*/x@refs/heads/main$\n",
        "allowlist.overlap": FIRST_PARTY
        + f"  - issuer: {ef.ISSUER}\n    identityPattern: ^https://github\\.com/example-lab/aicr-runs/\\.github/workflows/evidence\\.yaml@refs/tags/.+$\n",
        "allowlist.schema": f"schemaVersion: 2.0.0\ncommunity:\n  - issuer: {ef.ISSUER}\n    source: {slug[:12]}\n",
    }
    for rule, body in cases.items():
        path = _allowlist(tmp_path / rule, body)
        with pytest.raises(ValidationError) as info:
            read_allowlist(path, "allowlist.yaml")
        rules_seen = {d.rule for d in info.value.diagnostics}
        assert rule in rules_seen, (rule, [d.format() for d in info.value.diagnostics])
        assert all(d.line > 0 for d in info.value.diagnostics if d.json_path != "$")


def test_community_entry_with_cleartext_identity_fails_verify(tmp_path: Path) -> None:
    _allowlist(
        tmp_path,
        f"schemaVersion: 1.0.0\ncommunity:\n  - issuer: {ef.ISSUER}\n    identity: me@example.com\n",
    )
    result = CliRunner().invoke(
        main,
        [
            "evidence",
            "verify",
            str(tmp_path / "recipes" / "evidence"),
            "--catalog",
            str(CATALOG),
            "--offline",
            "--cache",
            str(tmp_path / "cache"),
        ],
    )
    assert result.exit_code == 1, result.output
    assert (
        "[allowlist.cleartext-identity]" in result.output and "allowlist.yaml:4:" in result.output
    )


# --- pointers ---------------------------------------------------------------------------------


def test_pointer_schema_is_located() -> None:
    bad = b"schemaVersion: 1.0.0\nrecipe: ../x\nattestations:\n  - bundle: {oci: r/x, digest: sha256:abc}\n    attestedAt: now\n"
    pointer, diags = parse_pointer(bad, "p.yaml")
    assert pointer is None
    rules = {(d.json_path, d.rule) for d in diags}
    assert ("$.recipe", "pointer.schema") in rules
    assert ("$.attestations[0].signer", "pointer.unsigned") in rules
    assert ("$.attestations[0].bundle.digest", "pointer.schema") in rules
    assert all(d.line for d in diags)


def test_upstream_summary_bundle_verifies_here(registry: RealRegistry, tmp_path: Path) -> None:
    """A pointer + summary bundle made the way upstream's docs describe verifies, with its phases
    and checks from the CTRF reports; it is stale until the current upstream recipe digests the
    same; the build of the site needs no network once cached."""
    authority, _ = _roots(tmp_path)
    files, predicate = summary_bundle()
    published = publish_upstream(registry.client(), "aicr/evidence", authority, files, predicate)
    _place(tmp_path, published)
    _allowlist(tmp_path, FIRST_PARTY)
    cache = tmp_path / "cache"
    recipes = tmp_path / "upstream-recipes"
    recipes.mkdir()
    (recipes / f"{UPSTREAM_RECIPE}.yaml").write_bytes(RECIPE_YAML)
    run = verify_stage(
        [tmp_path / "recipes" / "evidence"],
        catalog_dir=CATALOG,
        trust_roots=(str(tmp_path / "test-root.json"),),
        upstream=UpstreamOptions(cache=cache, recipes=recipes, online=True),
    )
    (record,) = run.records
    assert isinstance(record, VerifiedEvidence), record.message
    assert (record.signer_label, str(record.signer_class), record.stale) == (
        "example-lab",
        "partner",
        False,
    )
    st = record.statement
    assert st.bundle_digest == published.pushed.digest
    assert {p: [(c.name, c.status) for c in cs] for p, cs in st.phases.items()} == {
        p: PHASE_TESTS[p] for p in ("deployment", "conformance", "performance")
    }
    assert st.verdict == "fail" and st.reasons == ("failed conformance: gang-scheduling",)
    # offline, from the cache: same answer, and no socket is opened
    import socket

    real = socket.socket.connect
    try:
        socket.socket.connect = lambda *a: (_ for _ in ()).throw(AssertionError("network"))  # type: ignore[method-assign]
        again = verify_stage(
            [tmp_path / "recipes" / "evidence"],
            catalog_dir=CATALOG,
            trust_roots=(str(tmp_path / "test-root.json"),),
            upstream=UpstreamOptions(cache=cache, recipes=recipes),
        )
    finally:
        socket.socket.connect = real  # type: ignore[method-assign]
    assert again.records == run.records
    # another current recipe: the same evidence is stale (shown, not counted)
    (recipes / f"{UPSTREAM_RECIPE}.yaml").write_bytes(RECIPE_YAML.replace(b"v25.7.0", b"v25.8.0"))
    stale = verify_stage(
        [tmp_path / "recipes" / "evidence"],
        catalog_dir=CATALOG,
        trust_roots=(str(tmp_path / "test-root.json"),),
        upstream=UpstreamOptions(cache=cache, recipes=recipes),
    )
    assert isinstance(stale.records[0], VerifiedEvidence) and stale.records[0].stale


def _verify_one(tmp_path: Path, root: object, policy: SignerPolicy | None = None) -> object:
    from generator.evidence.upstream import cache_for, load_policy

    pol = policy or load_policy(CATALOG, [tmp_path / "recipes" / "evidence"])
    (record,) = verify_pointers(
        [tmp_path / "recipes" / "evidence"],
        trust_roots=(root,),  # type: ignore[arg-type]
        policy=pol,
        cache=cache_for(tmp_path / "cache"),
        online=True,
    )
    return record


def test_manifest_with_a_changed_file_is_rejected(registry: RealRegistry, tmp_path: Path) -> None:
    authority, root = _roots(tmp_path)
    files, predicate = summary_bundle()
    files["snapshot.yaml"] = b"kind: Snapshot\nmeasurements: [forged]\n"  # after the manifest
    published = publish_upstream(registry.client(), "aicr/changed", authority, files, predicate)
    _place(tmp_path, published)
    _allowlist(tmp_path, FIRST_PARTY)
    record = _verify_one(tmp_path, root)
    assert isinstance(record, RejectedEvidence)
    assert record.klass is FailureClass.BUNDLE_INVALID and "snapshot.yaml" in record.message


def test_ctrf_that_disagrees_with_the_predicate_is_rejected(
    registry: RealRegistry, tmp_path: Path
) -> None:
    authority, root = _roots(tmp_path)
    files, predicate = summary_bundle()
    predicate["phases"]["conformance"]["failed"] = 0  # the signed count hides the failure
    predicate["phases"]["conformance"]["passed"] = 2
    published = publish_upstream(registry.client(), "aicr/ctrf", authority, files, predicate)
    _place(tmp_path, published)
    _allowlist(tmp_path, FIRST_PARTY)
    record = _verify_one(tmp_path, root)
    assert isinstance(record, RejectedEvidence) and record.klass is FailureClass.BUNDLE_INVALID
    assert "conformance" in record.message


def test_pointer_whose_signer_is_not_allowlisted(registry: RealRegistry, tmp_path: Path) -> None:
    authority, root = _roots(tmp_path)
    files, predicate = summary_bundle()
    stranger = "https://github.com/stranger/fork/.github/workflows/evidence.yaml@refs/heads/main"
    published = publish_upstream(
        registry.client(), "aicr/stranger", authority, files, predicate, identity=stranger
    )
    _place(tmp_path, published)
    _allowlist(tmp_path, FIRST_PARTY)
    record = _verify_one(tmp_path, root)
    assert isinstance(record, RejectedEvidence) and record.klass is FailureClass.SIGNER_NOT_ALLOWED
    assert stranger in record.message


def test_pointer_that_lies_about_its_signer_or_place(
    registry: RealRegistry, tmp_path: Path
) -> None:
    authority, root = _roots(tmp_path)
    files, predicate = summary_bundle()
    published = publish_upstream(registry.client(), "aicr/lies", authority, files, predicate)
    _allowlist(tmp_path, FIRST_PARTY)
    # moved under another source directory
    wrong = (
        tmp_path
        / "recipes"
        / "evidence"
        / UPSTREAM_RECIPE
        / ("0" * 32)
        / published.pointer_rel.split("/")[-1]
    )
    wrong.parent.mkdir(parents=True)
    wrong.write_bytes(published.pointer)
    record = _verify_one(tmp_path, root)
    assert isinstance(record, RejectedEvidence) and record.klass is FailureClass.POINTER_INVALID
    shutil.rmtree(wrong.parent)
    # a digest no registry has: a named, located registry failure, not a traceback
    text = published.pointer.replace(published.pushed.digest.encode(), b"sha256:" + b"5" * 64)
    rel = published.pointer_rel.replace(
        published.pushed.digest.replace(":", "-"), "sha256-" + "5" * 64
    )
    path = tmp_path / "recipes" / "evidence" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text)
    record = _verify_one(tmp_path, root)
    assert isinstance(record, RejectedEvidence) and record.klass is FailureClass.BUNDLE_UNAVAILABLE
    assert "[oci.not-found]" in record.message


def test_push_catalog_evidence_then_verify_pointers(registry: RealRegistry, tmp_path: Path) -> None:
    """`evidence push` (this catalog's demo-signed sample evidence) writes upstream-shaped pointers;
    they are pulled back by digest and verified, offline from the seeded cache."""
    runner = CliRunner()
    pointers = tmp_path / "recipes" / "evidence"
    cache = tmp_path / "cache"
    pushed = runner.invoke(
        main,
        [
            "evidence",
            "push",
            str(DEMO_EVIDENCE),
            "--to",
            f"{registry.host}/catalog/evidence",
            "--trust-root",
            "demo",
            "--pointers",
            str(pointers),
            "--cache",
            str(cache),
            "--catalog",
            str(CATALOG),
        ],
    )
    assert pushed.exit_code == 0, pushed.output
    written = sorted(pointers.rglob("sha256-*.yaml"))
    bundles = sorted(DEMO_EVIDENCE.rglob("*.sigstore.json"))
    assert len(written) == len(bundles) > 0
    doc = parse_pointer(written[0].read_bytes(), written[0].name)[0]
    assert doc is not None and doc.oci == f"{registry.host}/catalog/evidence"
    verify = [
        "evidence",
        "verify",
        str(pointers),
        "--trust-root",
        "demo",
        "--catalog",
        str(CATALOG),
        "--format",
        "json",
        "--cache",
    ]
    offline = runner.invoke(main, [*verify, str(cache), "--offline"])
    online = runner.invoke(main, [*verify, str(tmp_path / "fresh-cache"), "--online"])
    for result in (offline, online):
        out = json.loads(result.stdout)
        states = {
            r["repositoryPath"].split("/")[-1]: (r["class"], r["state"]) for r in out["results"]
        }
        assert len(states) == len(bundles), result.output
        assert all(cls in (None, "stale") for cls, _ in states.values()), result.output
    # pull by digest through the CLI, from the cache and never the network
    ref = f"{doc.oci}@{doc.digest}"
    pulled = runner.invoke(main, ["evidence", "pull", ref, "--offline", "--cache", str(cache)])
    assert (
        pulled.exit_code == 0
        and "from the cache" in pulled.output
        and ".sigstore.json" in pulled.output
    )
    tag_only = runner.invoke(main, ["evidence", "pull", f"{doc.oci}:latest", "--cache", str(cache)])
    assert (
        tag_only.exit_code == 2
        and "[oci.unpinned]" in tag_only.output
        and "Traceback" not in tag_only.output
    )
    down = runner.invoke(
        main,
        [
            "evidence",
            "pull",
            f"127.0.0.1:{free_port()}/x/y@{doc.digest}",
            "--cache",
            str(tmp_path / "empty"),
        ],
    )
    assert down.exit_code == 1 and "[oci.unreachable]" in down.output


def test_allowlist_and_signers_yaml_are_one_policy(tmp_path: Path) -> None:
    """A signer named by both files keeps one class: a different class is refused when read;
    the same class is the same signer (signers.yaml names it)."""
    from generator.evidence.upstream import load_policy

    nvidia = (
        "^https://github\\.com/NVIDIA/aicr/\\.github/workflows/evidence\\.yaml@refs/heads/main$"
    )
    body = f"schemaVersion: 1.0.0\n{{cls}}:\n  - label: upstream-ci\n    issuer: {ef.ISSUER}\n    identityPattern: {nvidia}\n"
    _allowlist(tmp_path / "a", body.format(cls="partner"))
    with pytest.raises(ValidationError) as info:
        load_policy(CATALOG, [tmp_path / "a"])
    assert {d.rule for d in info.value.diagnostics} == {"allowlist.overlap"}
    _allowlist(tmp_path / "b", body.format(cls="firstParty"))
    policy = load_policy(CATALOG, [tmp_path / "b"])
    identity = "https://github.com/NVIDIA/aicr/.github/workflows/evidence.yaml@refs/heads/main"
    rule = policy.match(identity, ef.ISSUER, "public-good")
    assert rule is not None and (rule.label, str(rule.klass)) == (
        "NVIDIA AICR release CI",
        "first-party",
    )
    # a slug entry admits exactly the signer it hashes, nobody else
    slug = source_id(ef.ISSUER, ef.IDENTITY)
    _allowlist(
        tmp_path / "c",
        f"schemaVersion: 1.0.0\ncommunity:\n  - label: someone\n    issuer: {ef.ISSUER}\n    source: {slug}\n",
    )
    policy = load_policy(CATALOG, [tmp_path / "c"])
    assert policy.match(ef.IDENTITY, ef.ISSUER, "public-good").label == "someone"  # type: ignore[union-attr]
    assert policy.match(ef.OTHER_IDENTITY, ef.ISSUER, "public-good") is None


def _status(evidence: Path, env: dict[str, str]) -> dict[str, object]:
    result = CliRunner().invoke(
        main,
        [
            "status",
            "gb200-eks-ubuntu-training-kubeflow",
            "--evidence",
            str(evidence),
            "--trust-root",
            "demo",
            "--format",
            "json",
            "--catalog",
            str(CATALOG),
        ],
        env=env,
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    return json.loads(json.dumps(doc).replace(str(evidence), "EVIDENCE"))


def test_status_from_pointers_equals_status_from_bundles(
    registry: RealRegistry, tmp_path: Path
) -> None:
    """Pushed and pointed to, the sample evidence gives `status` the same answer as the bundles
    in evidence/ do (only the run paths differ), read offline from the seeded cache."""
    pointers = tmp_path / "recipes" / "evidence"  # upstream's layout
    cache = tmp_path / "cache"
    pushed = CliRunner().invoke(
        main,
        [
            "evidence",
            "push",
            str(DEMO_EVIDENCE),
            "--to",
            f"{registry.host}/catalog/status",
            "--trust-root",
            "demo",
            "--pointers",
            str(pointers),
            "--cache",
            str(cache),
            "--catalog",
            str(CATALOG),
        ],
    )
    assert pushed.exit_code == 0, pushed.output
    env = {"AICR_CATALOG_OCI_CACHE": str(cache)}  # offline: no --online
    via_pointers = _status(pointers, env)
    via_bundles = _status(ROOT / "evidence", env)
    strip = lambda doc: json.dumps(doc, sort_keys=True)  # noqa: E731
    import re

    def no_paths(doc: dict[str, object]) -> str:
        """The document with where each run was found left out: its path and the part of its
        id made from the path."""
        text = re.sub(r'"repositoryPath": "[^"]*"', '"repositoryPath": ""', strip(doc))
        return re.sub(r'"id": "([0-9a-f]{16}|file)-[0-9a-f]{8}"', r'"id": "\1"', text)

    assert no_paths(via_pointers) == no_paths(via_bundles)
    assert "sha256-" in strip(via_pointers)  # the runs are the pointers
    # offline with an empty cache: every pointer is rejected (bundle-unavailable), none counted
    empty = _status(pointers, {"AICR_CATALOG_OCI_CACHE": str(tmp_path / "none")})
    assert "bundle-unavailable" in strip(empty), strip(empty)[-3000:]
    assert no_paths(empty) != no_paths(via_bundles)


def test_site_stage_shows_upstream_phases(
    registry: RealRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build's evidence stage reads pointers: an upstream run reaches the site with one check
    per CTRF test, per phase, and its pointer as the run's raw file."""
    from generator import pipeline
    from generator.site import stages

    authority, _ = _roots(tmp_path)
    files, predicate = summary_bundle()
    published = publish_upstream(registry.client(), "aicr/site", authority, files, predicate)
    evidence = tmp_path / "evidence"
    target = evidence / published.pointer_rel
    target.parent.mkdir(parents=True)
    target.write_bytes(published.pointer)
    (evidence / "allowlist.yaml").write_text(FIRST_PARTY)
    monkeypatch.setenv("AICR_CATALOG_OCI_CACHE", str(tmp_path / "cache"))
    root = str(tmp_path / "test-root.json")
    outcome = pipeline.run(pipeline.Inputs(CATALOG, evidence, (root,), online=True, jobs=1))
    raws = stages.raw_files(outcome.verification, evidence)
    (record,) = outcome.records
    assert isinstance(record, VerifiedEvidence), record.message
    found = stages.raw_file(raws[record.path], frozenset(outcome.verification.pointers))
    run = evidence_view(record, trust_root=outcome.trust_root, raw=found)
    assert run.bundle_digest == published.pushed.digest and run.predicate_type == V3
    assert [(c.phase, c.name, c.status) for c in run.checks] == [
        (p, n, s) for p in ("deployment", "conformance", "performance") for n, s in PHASE_TESTS[p]
    ]
    # the raw download is the run's Sigstore bundle (the referrer), which verifies on its own
    assert run.raw is not None and run.raw.pointer and run.raw.statement
    raw = stages.read_raw(run.raw)
    assert json.loads(raw)["dsseEnvelope"]["payloadType"] == "application/vnd.in-toto+json"


def test_bodies_and_layers_are_read_with_limits(
    fake_registry: FakeRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest = "sha256:" + "6" * 64
    monkeypatch.setattr(oci, "MAX_MANIFEST_BYTES", 1000)
    fake_registry.routes["/v2/t/big/"] = answer(200, b"{" + b" " * 5000 + b"}")
    with pytest.raises(oci.RegistryProtocolError, match="limit"):
        oci.pull(
            f"{fake_registry.host}/t/big@{digest}", cache=oci.Cache(tmp_path), client=Client.on()
        )
    monkeypatch.setattr(oci, "MAX_UNPACKED_BYTES", 10_000)
    bomb = archive.gzip_bytes(tar_directory({"recipe.yaml": b"a" * 50_000}))
    assert len(bomb) < 10_000
    with pytest.raises(oci.UnsafeArtifact, match=r"unpacks? to more than"):
        oci.untar_layer(bomb, "layer")


def test_a_pointer_given_by_name(registry: RealRegistry, tmp_path: Path) -> None:
    authority, _ = _roots(tmp_path)
    files, predicate = summary_bundle()
    published = publish_upstream(registry.client(), "aicr/byname", authority, files, predicate)
    path = _place(tmp_path, published)
    _allowlist(tmp_path, FIRST_PARTY)
    result = CliRunner().invoke(
        main,
        [
            "evidence",
            "verify",
            str(path),
            "--trust-root",
            str(tmp_path / "test-root.json"),
            "--allowlist",
            str(tmp_path / "recipes" / "evidence" / "allowlist.yaml"),
            "--cache",
            str(tmp_path / "cache"),
            "--online",
            "--catalog",
            str(CATALOG),
        ],
    )
    # verified, stale: no --upstream-recipes, so the current upstream digest is unknown
    assert result.exit_code == 1, result.output
    assert (
        result.output.startswith("STALE ")
        and "1 file(s): 0 verified, 1 stale, 0 rejected" in result.output
    )


# Digests computed with Go's gopkg.in/yaml.v3 v3.0.1 (the version upstream AICR vendors): parse,
# drop comments, sort mapping keys, drop metadata.version, Marshal, sha256 — upstream's v3
# recipe digest. tests/fixtures/upstream-canonical.yaml exercises block/flow collections,
# literal/folded scalars with every chomping, quoting, nulls and nested sequences.
GO_YAML_V3_DIGESTS = {
    "tests/fixtures/upstream-canonical.yaml": "c58b9ffe084944d58b009a4ba6e0f0b0a53465ad9b23a85632b1c8277373b46b",
    "upstream-aicr/v0.11.1/recipes/overlays/base.yaml": "b5788a4c8c81a739622bedcfdd1be4e63bcd364f26d933867a58d8c9259f19fb",
    "upstream-aicr/v0.11.1/recipes/overlays/aks.yaml": "7674031e7b48e07e7dafff4dd3c5c14f463a8a2399e5819183acf9e6ed2f4bc7",
    "upstream-aicr/v0.11.1/recipes/overlays/eks.yaml": "aee7e45d5a3c607fc16fb61f365091204c14660b078ae5e1a5c53c6579e68da5",
    "upstream-aicr/v0.11.1/recipes/overlays/gke-cos.yaml": "2467b7c8129238197396060cd4eaf656d6a7a664b2bc3e550e8bfe5ccca57fd5",
    "upstream-aicr/v0.11.1/recipes/overlays/h100-eks-ubuntu-training.yaml": "71f9020505b803fe4ed44f513286585b83a861a5daaaa49befd6d3d986487e0b",
    "upstream-aicr/v0.11.1/recipes/registry.yaml": "cdddf6fdaa807bacc005561c76b30a75f292cb2f1283edd80c87750a1dcbbe6b",
    "upstream-aicr/v0.11.1/recipes/validators/catalog.yaml": "391b1462512d3169e39eef26f629253bb699136e9218e923725856f9ed285abe",
    "upstream-aicr/v0.11.1/recipes/checks/cert-manager/health-check.yaml": "a433ef7cc8069338a060337a24fb22083a7433e91cb5576f82c55b73c742d58a",
}


def test_recipe_digest_matches_go_yaml_v3() -> None:
    rel = "tests/fixtures/upstream-canonical.yaml"
    assert recipe_digest((ROOT / rel).read_bytes(), V3) == GO_YAML_V3_DIGESTS[rel]


def test_recipe_digest_matches_go_yaml_v3_on_upstream_recipes(shared_dir: Path) -> None:
    for rel, want in GO_YAML_V3_DIGESTS.items():
        if not rel.startswith("tests/"):
            assert recipe_digest((shared_dir / rel).read_bytes(), V3) == want, rel


def test_show_follows_a_pointer_and_lists_checks(registry: RealRegistry, tmp_path: Path) -> None:
    authority, _ = _roots(tmp_path)
    files, predicate = summary_bundle()
    nested = {f"summary-bundle/{k}": v for k, v in files.items()}  # packed from the emit dir
    published = publish_upstream(registry.client(), "aicr/show", authority, nested, predicate)
    path = _place(tmp_path, published)
    _allowlist(tmp_path, FIRST_PARTY)
    recipes = tmp_path / "current"
    recipes.mkdir()
    (recipes / f"{UPSTREAM_RECIPE}.yaml").write_bytes(RECIPE_YAML)
    result = CliRunner().invoke(
        main,
        [
            "evidence",
            "show",
            str(path),
            "--trust-root",
            str(tmp_path / "test-root.json"),
            "--cache",
            str(tmp_path / "cache"),
            "--upstream-recipes",
            str(recipes),
            "--online",
            "--catalog",
            str(CATALOG),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("VERIFIED ") and "gang-scheduling" in result.output
    assert "no lane (upstream recipe evidence has no node count)" in result.output
    assert published.pushed.digest in result.output


def test_anonymous_bearer_token_then_401(fake_registry: FakeRegistry, tmp_path: Path) -> None:
    """A public registry's challenge is answered with an anonymous token; a registry that still
    refuses is a named 401, after one retry (no loop)."""
    calls: list[str] = []
    host = fake_registry.host
    digest = "sha256:" + "7" * 64
    challenge = {"WWW-Authenticate": f'Bearer realm="http://{host}/token",service="test",scope="x"'}

    def manifests(h: Any) -> None:
        calls.append(h.headers.get("Authorization", ""))
        answer(401, b"", challenge)(h)

    fake_registry.routes["/token"] = answer(200, b'{"token": "anon-123"}')
    fake_registry.routes["/v2/"] = manifests
    with pytest.raises(oci.RegistryUnauthorized, match="401"):
        oci.pull(f"{host}/t/x@{digest}", cache=oci.Cache(tmp_path), client=Client.on())
    assert calls == ["", "Bearer anon-123"]


def test_pointers_are_written_as_upstream_writes_them() -> None:
    """tests/fixtures/upstream-pointer.yaml was written by Go's yaml.v3 (SetIndent(2), as
    upstream's deterministic serializer) from the same fields, attestedAt a time.Time."""
    written = render_pointer(
        recipe="h100-eks-ubuntu-training",
        profile=None,
        oci="ghcr.io/org/aicr-evidence:abc",
        digest="sha256:" + "a" * 64,
        predicate_type=V3,
        identity="https://github.com/o/r/.github/workflows/e.yaml@refs/heads/main",
        issuer="https://token.actions.githubusercontent.com",
        rekor_log_index=12345,
        attested_at="2026-11-30T10:00:00Z",
    )
    assert written == (ROOT / "tests" / "fixtures" / "upstream-pointer.yaml").read_bytes()
    pointer, diags = parse_pointer(written, "p.yaml")
    assert diags == () and pointer is not None and pointer.rekor_log_index == 12345


def test_status_counts_current_upstream_evidence_per_check(
    registry: RealRegistry, tmp_path: Path
) -> None:
    """Current upstream evidence (its digest is upstream's digest of the current recipe) counts
    in the recipe's per-check consensus, for no lane; with another current recipe it is stale."""
    authority, _ = _roots(tmp_path)
    files, predicate = summary_bundle()
    published = publish_upstream(registry.client(), "aicr/status", authority, files, predicate)
    evidence = tmp_path / "evidence"
    (evidence / published.pointer_rel).parent.mkdir(parents=True)
    (evidence / published.pointer_rel).write_bytes(published.pointer)
    (evidence / "allowlist.yaml").write_text(FIRST_PARTY)
    current = tmp_path / "current"
    current.mkdir()
    (current / f"{UPSTREAM_RECIPE}.yaml").write_bytes(RECIPE_YAML)
    env = {
        "AICR_CATALOG_OCI_CACHE": str(tmp_path / "cache"),
        "AICR_CATALOG_UPSTREAM_RECIPES": str(current),
    }

    def status() -> dict[str, Any]:
        result = CliRunner().invoke(
            main,
            [
                "status",
                UPSTREAM_RECIPE,
                "--evidence",
                str(evidence),
                "--trust-root",
                str(tmp_path / "test-root.json"),
                "--format",
                "json",
                "--online",
                "--catalog",
                str(CATALOG),
            ],
            env=env,
        )
        assert result.exit_code == 0, result.output
        (row,) = [r for r in json.loads(result.stdout)["recipes"] if r["profile"] == "standard"]
        return row  # type: ignore[no-any-return]

    row = status()
    assert (row["runs"], row["excluded"], row["consensus"]) == (1, 0, "FAILING")
    checks = {
        (c["phase"], c["check"]): c["state"] for c in row["checks"] if c["passed"] or c["failed"]
    }
    assert checks[("conformance", "gang-scheduling")] == "FAILING"
    assert checks[("deployment", "gpu-operator-ready")] in ("SINGLE", "CONFIRMED")
    assert row["ceiling"]["lane"] is None  # no lane: upstream evidence has no node count
    (current / f"{UPSTREAM_RECIPE}.yaml").write_bytes(RECIPE_YAML.replace(b"v25.7.0", b"v25.8.0"))
    row = status()
    assert (row["runs"], row["excluded"]) == (0, 1)
    assert row["excludedEvidence"][0]["exclusion"] == "stale"


def test_the_built_site_shows_an_upstream_run_with_its_phases(
    registry: RealRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #20's end: a pointer + summary bundle made by upstream's flow, through the real
    build, on the leaf's evidence page: the run, its predicate, and one row per CTRF test in each
    phase, with the failed conformance test shown failed."""
    from generator.site.build import BuildOptions, build_site
    from tests import oci_fixtures

    leaf = "h100-eks-ubuntu-training-slurm"
    monkeypatch.setattr(oci_fixtures, "UPSTREAM_RECIPE", leaf)  # a leaf has an evidence page
    authority, _ = _roots(tmp_path)
    files, predicate = summary_bundle(
        RECIPE_YAML.replace(b"name: h100-eks-ubuntu-training\n", f"name: {leaf}\n".encode())
    )
    published = publish_upstream(registry.client(), "aicr/site-page", authority, files, predicate)
    evidence = tmp_path / "evidence"
    target = evidence / published.pointer_rel
    target.parent.mkdir(parents=True)
    target.write_bytes(published.pointer)
    (evidence / "allowlist.yaml").write_text(FIRST_PARTY)
    monkeypatch.setenv("AICR_CATALOG_OCI_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "site"
    build_site(
        BuildOptions(
            catalog=CATALOG,
            evidence=evidence,
            out=out,
            trust_root=str(tmp_path / "test-root.json"),
            source_date_epoch=1_764_547_200,
            bundles=False,
            online=True,
        )
    )
    runs = list(published_runs(out))
    (run,) = [r for r in runs if r["recipe"] == leaf]
    assert run["predicateType"] == V3, run
    summary = (out / "evidence" / f"{leaf}.html").read_text()
    assert f'<tr id="run-{run["id"]}">' in summary  # its row, linking to its own page
    page = (out / run["url"]).read_text()  # the run's checks are on its page
    assert published.pushed.digest in page or run["id"] in page
    for phase, tests in PHASE_TESTS.items():
        for name, _status in tests:
            assert name in page, (phase, name)
    at = page.rindex("gang-scheduling")
    row = page[page.rfind("<tr", 0, at) : page.find("</tr>", at)]
    assert row.startswith("<tr><td>conformance</td><td>gang-scheduling</td>") and ">failed<" in row
