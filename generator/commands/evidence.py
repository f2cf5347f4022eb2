"""`aicr-catalog evidence verify|show|sign|digest`: signed evidence statements."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from generator.commands.common import (
    EXIT_DATA,
    EXIT_OK,
    EXIT_USAGE,
    catalog_option,
    fail,
    open_catalog,
    report_error,
)
from generator.errors import CatalogError, UsageError, printable
from generator.evidence import report
from generator.evidence.collect import EvidenceRun, verify_paths
from generator.evidence.model import (
    IN_TOTO_PAYLOAD_TYPE,
    EvidenceFile,
    Statement,
)
from generator.evidence.sign import (
    DEMO_IDENTITY,
    DEMO_ISSUER,
    demo_authority,
    sign_keyless,
    sign_offline,
)
from generator.evidence.statement import StatementError, parse_statement
from generator.evidence.store import evidence_path
from generator.evidence.trustroot import DEMO, PUBLIC_GOOD

TRUST_ROOT_HELP = (
    "Trust root: public-good (default; the vendored, pinned Sigstore root), demo (the "
    "committed DEMO root for sample evidence), or a trusted_root.json FILE. Roots are judged by "
    "content: the demo root given as a path, link or copy is still the demo root (SAMPLE), and "
    "any other file is named by its sha256. Repeatable: a bundle verifies if any of them "
    "accepts it."
)


def _run(
    paths: Sequence[Path], trust_roots: Sequence[str], catalog_path: Path, jobs: int | None
) -> EvidenceRun:
    if not catalog_path.is_dir():
        fail(f"catalog directory '{catalog_path}' not found; pass --catalog PATH", EXIT_USAGE)
    if not (catalog_path / "signers.yaml").exists():
        click.echo(
            f"note: {catalog_path} has no signers.yaml (this project's own file; an upstream "
            "AICR tree has none): the built-in signer policy allows nobody",
            err=True,
        )
    try:
        return verify_paths(
            paths, catalog_dir=catalog_path, trust_roots=trust_roots or (PUBLIC_GOOD,), jobs=jobs
        )
    except UsageError as e:
        fail(e.message, EXIT_USAGE)
    except CatalogError as e:
        report_error(e)


@click.group("evidence")
def command() -> None:
    """Signed evidence: verify, show, sign, and the digest a statement must carry.

    Evidence is an in-toto Statement (predicate https://aicr.run/scale-qualification/v1, or
    upstream https://aicr.run/recipe-evidence/v1|v2|v3) in a DSSE envelope inside a Sigstore
    bundle, stored at evidence/<recipe>/<source>/<sha256-of-statement>.sigstore.json.
    """


@command.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option(
    "--trust-root",
    "trust_roots",
    multiple=True,
    metavar="public-good|demo|FILE",
    help=TRUST_ROOT_HELP,
)
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
def verify_command(
    paths: tuple[Path, ...],
    trust_roots: tuple[str, ...],
    catalog_path: Path,
    fmt: str,
    jobs: int | None,
) -> None:
    """Verify evidence bundles offline (files, or directories searched for *.sigstore.json).

    Checks: Sigstore bundle, certificate chain to the trust root at the log's time, SCT,
    transparency-log proof, checkpoint and SET, DSSE signature, signer against
    CATALOG/signers.yaml, payload type, statement type, predicate type and schema (numbers
    within JSON's domain), file location, and the recipe digest against the current resolved
    recipe (a mismatch is stale: shown, not counted). A current scale-qualification statement
    is then judged against the catalog's lane criteria: a signed verdict or KPI status that its
    raw results do not give is rejected as verdict-mismatch, an attestedAt later than the
    transparency log's time as attested-after-logged. No network is used.

    Exit codes: 0 every file verified and current; 1 any file rejected or stale; 2 usage (a
    missing or corrupt trust root included).
    """
    run = _run(paths, trust_roots, catalog_path, jobs)
    if not run.records:
        fail("no *.sigstore.json evidence file found under the given paths", EXIT_USAGE)
    if fmt == "json":
        click.echo(report.verification_json(run.records, run.trust_roots), nl=False)
    elif fmt == "github":
        click.echo(_github(run), nl=False)
    else:
        click.echo(report.verification_text(run.records), nl=False)
    sys.exit(EXIT_OK if all(r.counted for r in run.records) else EXIT_DATA)


def _github(run: EvidenceRun) -> str:
    """One annotation per file that does not count (rejected: error; stale: warning)."""
    from generator.report import annotation

    lines = []
    for r in run.records:
        if r.counted:
            continue
        klass = "stale" if getattr(r, "stale", False) else str(getattr(r, "klass", "rejected"))
        lines.append(
            annotation(
                "warning" if klass == "stale" else "error",
                r.message,
                title=f"evidence {klass}",
                path=r.path,
            )
        )
    lines.append(report.verification_text(run.records).splitlines()[-1])
    return "\n".join(lines) + "\n"


@command.command("show")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option(
    "--trust-root",
    "trust_roots",
    multiple=True,
    metavar="public-good|demo|FILE",
    help=TRUST_ROOT_HELP,
)
@catalog_option
def show_command(path: Path, trust_roots: tuple[str, ...], catalog_path: Path) -> None:
    """Verify one evidence bundle and render its statement for people.

    Exit codes: 0 verified and current; 1 rejected or stale (still shown when readable); 2 usage.
    """
    run = _run([path], trust_roots, catalog_path, 1)
    (record,) = run.records
    file = run.files[0]
    click.echo(report.record_text(record))
    statement = record.statement
    if statement is None:
        statement = _unverified_statement(file)
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
@click.option(
    "--trust-root",
    "trust_root",
    type=click.Choice([PUBLIC_GOOD, DEMO]),
    default=PUBLIC_GOOD,
    show_default=True,
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
    target = output or into / evidence_path(statement.recipe, issuer, identity, data)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bundle)
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
@click.option("--scale-profile", "profile", default="standard", show_default=True)
@catalog_option
def digest_command(recipe: str, profile: str, catalog_path: Path) -> None:
    """Print the recipe digest an evidence statement must carry (predicate.recipe.digest).

    Exit codes: 0 printed; 1 the recipe does not resolve; 2 usage.
    """
    from generator.resolve import resolve

    catalog = open_catalog(catalog_path)
    try:
        result = resolve(catalog, recipe, profile=profile)
    except CatalogError as e:
        report_error(e)
    click.echo(result.digest)
