"""`aicr-catalog evidence verify|show|sign|digest`: signed evidence statements."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from generator.catalog.lanes import Lanes
from generator.commands.common import (
    EXIT_DATA,
    EXIT_OK,
    EXIT_USAGE,
    catalog_option,
    fail,
    handles_errors,
    open_catalog,
    report_error,
    trust_root_option,
)
from generator.core import safeio
from generator.core.atomic import write_atomic
from generator.core.errors import CatalogError, UsageError, printable
from generator.core.records import DEFAULT_PROFILE, Catalog
from generator.evidence import report
from generator.evidence.model import (
    IN_TOTO_PAYLOAD_TYPE,
    Evidence,
    EvidenceFile,
    RootUse,
    RunState,
    Statement,
)
from generator.evidence.sign import (
    DEMO_IDENTITY,
    DEMO_ISSUER,
    demo_authority,
    sign_keyless,
    sign_offline,
)
from generator.evidence.stage import VerificationRun, verify_stage
from generator.evidence.statement import StatementError, parse_statement
from generator.evidence.store import evidence_path, load
from generator.evidence.trustroot import DEMO, PUBLIC_GOOD
from generator.evidence.upstream import UpstreamOptions

TRUST_ROOT_HELP = (
    "Trust root: public-good (default; the vendored, pinned Sigstore root), demo (the "
    "committed DEMO root for sample evidence), or a trusted_root.json FILE. Roots are judged by "
    "content: the demo root given as a path, link or copy is still the demo root (SAMPLE), and "
    "any other file is named by its sha256. Repeatable: a bundle verifies if any of them "
    "accepts it."
)


def _run(
    paths: Sequence[Path],
    trust_roots: Sequence[str],
    catalog_path: Path,
    jobs: int | None,
    upstream: UpstreamOptions | None = None,
) -> VerificationRun:
    if not safeio.is_dir(catalog_path):
        fail(f"catalog directory '{catalog_path}' not found; pass --catalog PATH", EXIT_USAGE)
    if not safeio.exists(catalog_path / "signers.yaml"):
        click.echo(
            f"note: {catalog_path} has no signers.yaml (this project's own file; an upstream "
            "AICR tree has none): the built-in signer policy allows nobody",
            err=True,
        )
    try:
        return verify_stage(
            paths,
            catalog_dir=catalog_path,
            trust_roots=trust_roots or (PUBLIC_GOOD,),
            claims=_lanes,
            jobs=jobs,
            upstream=upstream,
        )
    except UsageError as e:
        fail(e.message, EXIT_USAGE)
    except CatalogError as e:
        report_error(e)


def _lanes(catalog: Catalog) -> Lanes:
    """The catalog's lanes, against which `verify_stage` judges what statements claim."""
    from generator.scale.qualify import lanes_of

    return lanes_of(catalog.documents)


def upstream_options(f: Any) -> Any:
    """--online/--offline, --cache, --allow-tag, --allowlist, --upstream-recipes (pointer
    files)."""
    for option in reversed(
        [
            click.option(
                "--online/--offline",
                default=False,
                help="Pointer files: pull their bundles from the registries they name (--online), "
                "or read them from the cache only (--offline, the default).",
            ),
            click.option(
                "--cache",
                "oci_cache",
                type=click.Path(path_type=Path, file_okay=False),
                default=None,
                help="Content-addressed OCI cache (default: $AICR_CATALOG_OCI_CACHE, else "
                "~/.cache/aicr-catalog/oci).",
            ),
            click.option(
                "--allow-tag",
                is_flag=True,
                help="Allow a tag-only bundle reference with no digest to pin it (debugging only).",
            ),
            click.option(
                "--allowlist",
                type=click.Path(path_type=Path, dir_okay=False, exists=True),
                default=None,
                help="Upstream's recipes/evidence/allowlist.yaml (default: found beside the "
                "given directories).",
            ),
            click.option(
                "--upstream-recipes",
                type=click.Path(path_type=Path, file_okay=False, exists=True),
                default=None,
                help="Directory of hydrated upstream recipes (<recipe>.yaml, as `aicr recipe` "
                "writes them): upstream evidence is current when its recipe digest is theirs.",
            ),
        ]
    ):
        f = option(f)
    return f


def _upstream(values: dict[str, Any]) -> UpstreamOptions:
    return UpstreamOptions(
        cache=values.get("oci_cache"),
        online=bool(values.get("online")),
        allow_tag=bool(values.get("allow_tag")),
        allowlist=values.get("allowlist"),
        recipes=values.get("upstream_recipes"),
    )


@click.group("evidence")
@handles_errors
def command() -> None:
    """Signed evidence: verify, show, sign, push, pull, and the digest a statement must carry.

    Evidence is an in-toto Statement (predicate https://aicr.run/scale-qualification/v1, or
    upstream https://aicr.run/recipe-evidence/v1|v2|v3) in a DSSE envelope inside a Sigstore
    bundle, stored at evidence/<recipe>/<source>/<sha256-of-statement>.sigstore.json.
    """


@command.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@trust_root_option(use=RootUse.EVIDENCE, name="trust_roots", multiple=True, help=TRUST_ROOT_HELP)
@catalog_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="github: an annotation on each rejected or stale file, named from the repository root.",
)
@click.option(
    "--jobs", type=click.IntRange(min=1), default=None, help="Processes (default: every core)."
)
@upstream_options
@handles_errors
def verify_command(
    paths: tuple[Path, ...],
    trust_roots: tuple[str, ...],
    catalog_path: Path,
    fmt: str,
    jobs: int | None,
    **upstream: Any,
) -> None:
    """Verify evidence bundles offline (files, or directories searched for *.sigstore.json and
    upstream pointer files sha256-<hex>.yaml).

    Checks: Sigstore bundle, certificate chain to the trust root at the log's time, SCT,
    transparency-log proof, checkpoint and SET, DSSE signature, signer against
    CATALOG/signers.yaml (plus upstream's allowlist.yaml when found or given), payload type,
    statement type, predicate type and schema (numbers within JSON's domain), file location,
    and the recipe digest against the current resolved recipe (a mismatch is stale: shown, not
    counted). A current scale-qualification statement is then judged against the catalog's lane
    criteria: a signed verdict or KPI status that its raw results do not give is rejected as
    verdict-mismatch, an attestedAt later than the transparency log's time as
    attested-after-logged. A pointer file's bundle is pulled by digest into a content-addressed
    cache (the only network use, and only with --online), then its manifest.json,
    predicate and CTRF reports are checked too (see docs/upstream-evidence.md).

    Exit codes: 0 every file verified and current; 1 any file rejected or stale; 2 usage (a
    missing or corrupt trust root included).
    """
    run = _run(paths, trust_roots, catalog_path, jobs, _upstream(upstream))
    records = run.by_path()
    if not records:
        fail(
            "no *.sigstore.json evidence file or sha256-<hex>.yaml pointer found under the given paths",
            EXIT_USAGE,
        )
    if fmt == "json":
        click.echo(report.verification_json(records, run.trust_roots), nl=False)
    elif fmt == "github":
        click.echo(_github(records), nl=False)
    else:
        click.echo(report.verification_text(records), nl=False)
    sys.exit(EXIT_OK if all(r.counted for r in records) else EXIT_DATA)


def _github(records: Sequence[Evidence]) -> str:
    """One annotation per file that does not count (rejected: error; stale: warning)."""
    from generator.core.report import annotation

    lines = []
    for r in records:
        if r.counted:
            continue
        stale = RunState.of(r) is RunState.STALE
        klass = "stale" if stale else str(r.klass)
        lines.append(
            annotation(
                "warning" if klass == "stale" else "error",
                r.message,
                title=f"evidence {klass}",
                path=r.path,
            )
        )
    lines.append(report.verification_text(records).splitlines()[-1])
    return "\n".join(lines) + "\n"


@command.command("show")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@trust_root_option(use=RootUse.EVIDENCE, name="trust_roots", multiple=True, help=TRUST_ROOT_HELP)
@catalog_option
@upstream_options
@handles_errors
def show_command(
    path: Path, trust_roots: tuple[str, ...], catalog_path: Path, **upstream: Any
) -> None:
    """Verify one evidence bundle (or an upstream pointer file, following it to its bundle)
    and render its statement for people.

    Exit codes: 0 verified and current; 1 rejected or stale (still shown when readable); 2 usage.
    """
    run = _run([path], trust_roots, catalog_path, 1, _upstream(upstream))
    if len(run.records) != 1:
        fail(f"{printable(str(path))} is neither an evidence bundle nor a pointer file", EXIT_USAGE)
    (record,) = run.records
    click.echo(report.record_text(record))
    statement = record.statement
    if statement is None and run.files:
        statement = _unverified_statement(load(run.files[0]))
        if statement is not None:
            click.echo("(statement shown UNVERIFIED: the bundle did not verify)")
    if statement is not None:
        click.echo(report.statement_text(statement), nl=False)
    sys.exit(EXIT_OK if record.counted else EXIT_DATA)


def _unverified_statement(file: EvidenceFile) -> Statement | None:
    """The statement inside a bundle that did not verify, for display only."""
    import base64

    try:
        envelope = json.loads(file.data)["dsseEnvelope"]
        return parse_statement(envelope["payloadType"], base64.b64decode(envelope["payload"]))
    except (ValueError, KeyError, TypeError, StatementError):
        return None


@command.command("sign")
@click.argument(
    "statement_file",
    metavar="STATEMENT",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
)
@trust_root_option(
    use=RootUse.EVIDENCE,
    type=click.Choice([PUBLIC_GOOD, DEMO]),
    metavar="public-good|demo",
    help="public-good: Sigstore keyless (network + an ambient CI identity token); demo: sign "
    "offline with the committed DEMO root (sample evidence only).",
)
@click.option(
    "--identity",
    default=DEMO_IDENTITY,
    show_default=True,
    help="Demo only: the identity to sign as.",
)
@click.option(
    "--issuer",
    default=DEMO_ISSUER,
    show_default=True,
    help="Demo only: the OIDC issuer to sign as.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the bundle here (default: its evidence/<recipe>/<source>/<digest>.sigstore.json under --into).",
)
@click.option(
    "--into",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="Repository root under which the default evidence/ path is created.",
)
@catalog_option
@handles_errors
def sign_command(
    statement_file: Path,
    trust_root: str,
    identity: str,
    issuer: str,
    output: Path | None,
    into: Path,
    catalog_path: Path,
) -> None:
    """Sign an in-toto statement into a Sigstore bundle.

    Without --trust-root demo this is Sigstore keyless signing through sigstore-python: it needs
    the network and an ambient OIDC identity token (as in a CI job with id-token permission),
    so it cannot run offline or in this repository's tests. With --trust-root demo it signs
    offline with the committed DEMO keys, at the predicate's attestedAt (else
    SOURCE_DATE_EPOCH): deterministic, and only ever trusted as sample evidence.

    Exit codes: 0 signed; 1 the statement is not valid evidence; 2 usage or signing unavailable.
    """
    data = _read_statement(statement_file)
    try:
        statement = parse_statement(IN_TOTO_PAYLOAD_TYPE, data)
    except StatementError as e:
        fail(printable(f"{statement_file}: {e.message} [{e.klass}]"), EXIT_DATA)
    try:
        if trust_root == DEMO:
            bundle = sign_offline(
                data, demo_authority(catalog_path), identity=identity, issuer=issuer
            )
        else:
            bundle = sign_keyless(data)
            doc = json.loads(bundle)
            identity, issuer = _signer_of(doc)
    except UsageError as e:
        fail(e.message, EXIT_USAGE)
    if output is not None:
        write_atomic(output, bundle)
        target = output
    else:  # a path the tool chose inside --into: no link below it is followed
        target = into / evidence_path(statement.recipe, issuer, identity, data)
        write_atomic(target, bundle, root=into)
    click.echo(str(target))


def _read_statement(path: Path) -> bytes:
    """The statement file's bytes: a regular file within the size limit (a pipe would block)."""
    from generator.evidence.store import Found, read_one

    shown = printable(str(path))
    data, problem = read_one(Found(path, Path("/"), path.name), shown)
    if problem is not None:
        fail(f"{shown}: {problem.message} [{problem.rule}]", EXIT_USAGE)
    assert data is not None
    return data


def _signer_of(doc: dict) -> tuple[str, str]:  # type: ignore[type-arg]  # pragma: no cover
    import base64

    from cryptography import x509

    from generator.evidence.verify import cert_identity, cert_issuer

    raw = base64.b64decode(doc["verificationMaterial"]["certificate"]["rawBytes"])
    cert = x509.load_der_x509_certificate(raw)
    return cert_identity(cert), cert_issuer(cert)


@command.command("digest")
@click.option("--recipe", required=True, help="A leaf recipe name.")
@click.option("--scale-profile", "profile", default=DEFAULT_PROFILE, show_default=True)
@catalog_option
@handles_errors
def digest_command(recipe: str, profile: str, catalog_path: Path) -> None:
    """Print the recipe digest an evidence statement must carry (predicate.recipe.digest).

    Exit codes: 0 printed; 1 the recipe does not resolve; 2 usage.
    """
    from generator.catalog.resolve import resolve

    catalog = open_catalog(catalog_path)
    try:
        result = resolve(catalog, recipe, profile=profile)
    except CatalogError as e:
        report_error(e)
    click.echo(result.digest)


@command.command("push")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option(
    "--to",
    "to",
    required=True,
    metavar="REGISTRY/REPO",
    help="Where to push, e.g. ghcr.io/org/aicr-evidence or 127.0.0.1:5000/evidence.",
)
@click.option(
    "--pointers",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("recipes/evidence"),
    show_default=True,
    help="Write upstream-shaped pointers under this directory (<recipe>/<source>/sha256-<hex>.yaml).",
)
@trust_root_option(use=RootUse.EVIDENCE, name="trust_roots", multiple=True, help=TRUST_ROOT_HELP)
@click.option(
    "--cache",
    "oci_cache",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The OCI cache to seed with what is pushed (default as for verify).",
)
@catalog_option
@handles_errors
def push_command(
    paths: tuple[Path, ...],
    to: str,
    pointers: Path,
    trust_roots: tuple[str, ...],
    oci_cache: Path | None,
    catalog_path: Path,
) -> None:
    """Push signed evidence bundles (*.sigstore.json under PATHS) to an OCI registry.

    Each bundle is verified offline first (as `evidence verify`; stale is allowed); those that
    verify are pushed as OCI artifacts (one layer: the bundle) and get an upstream-shaped pointer
    file naming the artifact by digest. The cache is seeded, so verifying the pointers needs no
    network. Prints one line per bundle.

    Exit codes: 0 every bundle pushed; 1 a bundle did not verify, or the registry refused;
    2 usage.
    """
    from generator.core.net import Client
    from generator.evidence.oci import RegistryError
    from generator.evidence.publish import push_evidence
    from generator.evidence.trustroot import load_trust_root
    from generator.evidence.upstream import cache_for, load_policy

    if not safeio.is_dir(catalog_path):
        fail(f"catalog directory '{catalog_path}' not found; pass --catalog PATH", EXIT_USAGE)
    try:
        roots = tuple(load_trust_root(s, catalog_path) for s in (trust_roots or (PUBLIC_GOOD,)))
        policy = load_policy(catalog_path)
        outcomes = push_evidence(
            paths,
            to=to,
            pointers=pointers,
            trust_roots=roots,
            policy=policy,
            cache=cache_for(oci_cache),
            client=Client.on(),  # `evidence push` is the network's own command
        )
    except RegistryError as e:
        raise CatalogError(
            printable(f"{e.message} [{e.rule}]"), hint=e.hint, exit_code=e.exit_code
        ) from e
    except UsageError as e:
        fail(e.message, EXIT_USAGE)
    except CatalogError as e:
        report_error(e)
    if not outcomes:
        fail("no *.sigstore.json evidence file found under the given paths", EXIT_USAGE)
    for o in outcomes:
        if o.pushed is None:
            click.echo(printable(f"{o.path}: {o.problem}"))
        else:
            click.echo(printable(f"{o.path}: pushed {o.pushed.reference}; pointer {o.pointer}"))
    sys.exit(EXIT_OK if all(o.pushed for o in outcomes) else EXIT_DATA)


@command.command("pull")
@click.argument("reference", metavar="REGISTRY/REPO@sha256:HEX")
@click.option("--offline", is_flag=True, help="Read the cache only, never the network.")
@click.option("--allow-tag", is_flag=True, help="Allow a tag-only reference (debugging only).")
@click.option(
    "--cache",
    "oci_cache",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Content-addressed OCI cache (default as for verify).",
)
@handles_errors
def pull_command(reference: str, offline: bool, allow_tag: bool, oci_cache: Path | None) -> None:
    """Pull an evidence artifact by digest into the cache and list what it holds (not verified:
    `evidence verify` on its pointer verifies it).

    Exit codes: 0 pulled (or already cached); 1 the registry refused or the content does not
    match its digest; 2 usage (bad or tag-only reference).
    """
    from generator.core.net import Client
    from generator.evidence.oci import RegistryError, pull
    from generator.evidence.upstream import cache_for

    try:
        # `evidence pull` is the network's own command; --offline keeps it to the cache
        pulled = pull(
            reference,
            cache=cache_for(oci_cache),
            client=Client.on(),
            offline=offline,
            allow_tag=allow_tag,
        )
    except RegistryError as e:
        raise CatalogError(
            printable(f"{e.message} [{e.rule}]"), hint=e.hint, exit_code=e.exit_code
        ) from e
    where = "cache" if pulled.from_cache else "registry"
    click.echo(printable(f"{pulled.reference} ({pulled.artifact_type}, from the {where})"))
    for name in sorted(pulled.files):
        click.echo(printable(f"  {name} ({len(pulled.files[name])} bytes)"))
    click.echo(f"  signatures attached as referrers: {len(pulled.signatures)}")


@command.command("upstream-digest")
@click.argument("recipe", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option(
    "--predicate-type",
    default="https://aicr.run/recipe-evidence/v3",
    show_default=True,
    help="v3 leaves metadata.version out of the digest; v1/v2 keep it.",
)
@handles_errors
def upstream_digest_command(recipe: Path, predicate_type: str) -> None:
    """Print upstream AICR's digest of a hydrated recipe YAML (what its `aicr evidence digest`
    stamps into predicate.recipe.digest), for RECIPE as `aicr recipe` wrote it.

    Exit codes: 0 printed; 1 not a YAML recipe; 2 usage.
    """
    from generator.evidence.recipedigest import DigestError, recipe_digest

    try:
        click.echo(recipe_digest(safeio.read(recipe, limit=safeio.YAML_BYTES), predicate_type))
    except (DigestError, safeio.Refusal) as e:
        fail(printable(f"{recipe}: {e}"), EXIT_DATA)
