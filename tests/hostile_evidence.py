"""The signed inputs of the hostile evidence cases (`tests/cases/hostile/evidence-*/`).

Each evidence case is a folder of the case corpus (format: tests/cases/README.md) run through
`aicr-catalog evidence verify`. Its signed bundles cannot be written by hand, so this module
describes every case as data and writes the folders' input files:

    .venv/bin/python -m tests.hostile_evidence      # (re)write the inputs of every case

Signing is deterministic (RFC 6979 ECDSA, keys and serials derived from a fixed seed, a fixed
signing time), so the same code writes the same bytes: `tests/test_hostile_evidence.py`
regenerates every case into a temporary directory and fails unless the committed files are
byte-identical. The expectations (`expected.txt`, `stderr.txt`, `exit.txt`) are not written
here: they come from the real CLI (`pytest tests/test_cases.py --update-goldens`), reviewed, or,
for a case recording a bug, by hand with a `bug.txt`.

The bytes depend on `tests/evidence_fixtures.py` (the base predicate, signing time),
`generator/evidence/testroot.py` and the minimal catalog's recipe digests: a change to any of them
shows as a failing regeneration test. Then rerun this module, refresh the expectations with
`pytest tests/test_cases.py -k "evidence- or page-" --update-goldens` and review both diffs.

Layout inside a case's catalog (the minimal catalog plus):

    catalog/signers.yaml                  allows IDENTITY via ISSUER
    catalog/trust/hostile-root.json       the private test authority's trusted_root.json
    catalog/evidence/<recipe>/<source>/<sha256-of-statement>.sigstore.json

Evidence sits inside the case's catalog so that the runner's `symlinks.txt`, `fifos.txt` and
`generate.yaml` (catalog-relative) can place links, pipes and huge files among it; the verifier
judges a file's place relative to the `evidence/` directory it is found under, so the location of
that directory inside `catalog/` changes nothing.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.evidence import testroot
from generator.evidence.statement import build_statement
from generator.evidence.store import evidence_path
from tests import evidence_fixtures as fx

CASES = Path(__file__).resolve().parent / "cases"
HOSTILE = CASES / "hostile"
MINIMAL = CASES / "minimal"

AUTHORITY_NAME = "hostile"
ROOT_FILE = "trust/hostile-root.json"
ISSUER = fx.ISSUER
IDENTITY = fx.IDENTITY
FOREIGN_ISSUER = "https://oidc.attacker.example"
RECIPE = "h100-eks-ubuntu-training"
OTHER_RECIPE = "gb300-eks-ubuntu-training-slurm"
PROFILE = {"name": "standard", "version": "1.0.0"}
# A digest the recipe had before some change: any digest other than the current one.
OLDER_DIGEST = "sha256:" + "0123456789abcdef" * 4
VERIFY = (
    "evidence verify catalog/evidence --catalog catalog --trust-root catalog/" + ROOT_FILE + "\n"
)

HUGE_INTEGER = "7" * 5000
DEMO_KEYS = "trust/demo/DEMO-PRIVATE-KEYS.json"
SIGNERS_YAML = f"""\
apiVersion: aicr.run/v1
kind: SignerPolicy
signers:
  - label: Example lab
    class: partner
    issuer: {ISSUER}
    identity: {IDENTITY}
"""


def authority() -> testroot.Authority:
    return testroot.make_authority(AUTHORITY_NAME, b"tests hostile evidence")


def current_digest(recipe: str) -> str:
    """The digest `recipe` (standard profile) has in the minimal catalog."""
    catalog, _ = load_catalog(MINIMAL)
    return resolve(catalog, recipe, profile="standard").digest


def statement(recipe: str, digest: str, **changes: Any) -> bytes:
    pred = fx.predicate(recipe={"name": recipe, "digest": digest}, scaleProfile=PROFILE, **changes)
    return build_statement(pred)


def sign(payload: bytes, *, issuer: str = ISSUER, **kw: Any) -> bytes:
    return fx.sign(authority(), payload, identity=IDENTITY, issuer=issuer, **kw)


def stored_at(payload: bytes, *, recipe: str | None = None, issuer: str = ISSUER) -> str:
    """The catalog-relative path where a bundle of `payload` belongs (or would, for `recipe`)."""
    name = recipe or json.loads(payload)["predicate"]["recipe"]["name"]
    return evidence_path(name, issuer, IDENTITY, payload)


def edit_bundle(bundle: bytes, change: Any) -> bytes:
    """The bundle with `change(doc)` applied to its JSON document, written as sign_dsse does."""
    doc = json.loads(bundle)
    change(doc)
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


@dataclass(frozen=True, slots=True)
class Case:
    """The inputs of one case folder; `files` are catalog-relative."""

    name: str
    about: str
    files: Mapping[str, bytes] = field(default_factory=dict)
    command: str = VERIFY
    symlinks: str = ""
    fifos: str = ""
    generate: str = ""

    def outputs(self) -> dict[str, bytes]:
        """Every file this module writes into the case folder, by folder-relative path."""
        base = {
            "catalog/signers.yaml": SIGNERS_YAML.encode(),
            f"catalog/{ROOT_FILE}": testroot.trusted_root_json(authority()),
        }
        out = {"about.txt": self.about.strip().encode() + b"\n"}
        if self.command:  # none: the runner's default, `validate catalog`
            out["command.txt"] = self.command.encode()
        out.update(base)
        out.update({f"catalog/{rel}": data for rel, data in self.files.items()})
        for name, text in (
            ("symlinks.txt", self.symlinks),
            ("fifos.txt", self.fifos),
            ("generate.yaml", self.generate),
        ):
            if text:
                out[name] = text.encode()
        return out


def upstream_statement(recipe_name: str, digest_hex: str) -> bytes:
    """An upstream AICR recipe-evidence/v1 statement (its recipe name is not pattern-checked)."""
    doc = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "recipe", "digest": {"sha256": digest_hex}}],
        "predicateType": "https://aicr.run/recipe-evidence/v1",
        "predicate": {
            "recipe": {"name": recipe_name, "digest": digest_hex},
            "attestedAt": "2026-11-30T10:00:00Z",
            "phases": {"deployment": {"passed": 3, "failed": 0, "skipped": 0}},
        },
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def cases() -> tuple[Case, ...]:
    """Every evidence case, sorted by name."""
    digest = current_digest(RECIPE)
    good = statement(RECIPE, digest)
    good_bundle = sign(good)
    at = stored_at(good)

    other = statement(OTHER_RECIPE, current_digest(OTHER_RECIPE))
    older = statement(RECIPE, OLDER_DIGEST)
    foreign = sign(good, issuer=FOREIGN_ISSUER)
    wrong_type = "application/vnd.dsse.envelope.v1+json"

    def swap_type(doc: dict[str, Any]) -> None:
        doc["dsseEnvelope"]["payloadType"] = "application/json"

    def drop_envelope(doc: dict[str, Any]) -> None:
        del doc["dsseEnvelope"]

    def garbage_payload(doc: dict[str, Any]) -> None:
        doc["dsseEnvelope"]["payload"] = "!!not*base64~~" + doc["dsseEnvelope"]["payload"][14:]

    def wrong_recipe_in_payload(doc: dict[str, Any]) -> None:
        doc["dsseEnvelope"]["payload"] = base64.b64encode(statement(OTHER_RECIPE, digest)).decode()

    forged = statement(
        RECIPE,
        digest,
        reasons=[TERMINAL_ESCAPES["reason"]],
        kpis=[
            {
                "id": "nccl-busbw",
                "value": 400,
                "unit": TERMINAL_ESCAPES["kpi-unit"],
                "threshold": {"operator": ">=", "value": 380},
                "status": "passed",
            }
        ],
    )

    def forged_payload(doc: dict[str, Any]) -> None:
        doc["dsseEnvelope"]["payload"] = base64.b64encode(forged).decode()

    def huge_log_index(doc: dict[str, Any]) -> None:
        doc["verificationMaterial"]["tlogEntries"][0]["logIndex"] = HUGE_INTEGER

    def garbage_certificate(doc: dict[str, Any]) -> None:
        raw = base64.b64encode(b"\x30\x82\x67\x58not a certificate").decode()
        doc["verificationMaterial"]["certificate"]["rawBytes"] = raw

    def no_log_entry(doc: dict[str, Any]) -> None:
        doc["verificationMaterial"]["tlogEntries"] = []

    unknown = statement("no-such-recipe", digest)
    traversal = upstream_statement("../outside/pwned", digest.removeprefix("sha256:"))
    huge_bundle = edit_bundle(good_bundle, huge_log_index).replace(
        f'"{HUGE_INTEGER}"'.encode(), HUGE_INTEGER.encode()
    )
    name_of_other = stored_at(statement(RECIPE, digest, verdict="pass", reasons=[]))
    nested = f"{at.rsplit('/', 4)[0]}/mirror/{at}"
    evidence = tuple(
        sorted(
            (
                Case(
                    "evidence-control-verified",
                    "The control of the evidence cases: a bundle signed by the allowed signer over "
                    "a statement for the recipe's current digest, at its proper path, verifies "
                    "(exit 0). Every other evidence-* case changes one thing of this setup.",
                    {at: good_bundle},
                ),
                Case(
                    "evidence-replay-other-recipe",
                    f"Replay: a valid signature over a statement for another recipe "
                    f"({OTHER_RECIPE}, its current digest) copied under this recipe's directory "
                    f"({RECIPE}). The signature verifies, but the file's location is recomputed "
                    "from the signed statement: path-mismatch, not counted for either recipe.",
                    {stored_at(other, recipe=RECIPE): sign(other)},
                ),
                Case(
                    "evidence-replay-older-digest",
                    "Replay of an older run: a valid signature over a statement for this recipe "
                    "at a digest it no longer has, stored at its proper path. It verifies but is "
                    "stale (shown, not counted), and the command exits 1.",
                    {stored_at(older): sign(older)},
                ),
                Case(
                    "evidence-issuer-not-allowed",
                    f"The certificate's identity is the allowed one, but its OIDC issuer "
                    f"({FOREIGN_ISSUER}) is not the one signers.yaml pairs it with: "
                    "signer-not-allowed (identity and issuer are matched together).",
                    {stored_at(good, issuer=FOREIGN_ISSUER): foreign},
                ),
                Case(
                    "evidence-payload-type-swapped",
                    "The DSSE payloadType was changed after signing (in-toto -> application/json). "
                    "DSSE signs the type with the payload (PAE), so the signature no longer "
                    "verifies: signature-invalid.",
                    {at: edit_bundle(good_bundle, swap_type)},
                ),
                Case(
                    "evidence-payload-type-signed-other",
                    f"A valid signature whose DSSE payloadType is {wrong_type!r}, not in-toto: "
                    "the signature verifies but the payload is not an in-toto statement, so it "
                    "is rejected as payload-type.",
                    {at: sign(good, payload_type=wrong_type)},
                ),
                Case(
                    "evidence-payload-swapped",
                    "The DSSE payload was replaced after signing by a statement for another "
                    "recipe (the signature and the transparency log entry cover the original): "
                    "rejected, signature or log evidence does not verify.",
                    {at: edit_bundle(good_bundle, wrong_recipe_in_payload)},
                ),
                Case(
                    "evidence-truncated",
                    "The bundle is cut off after its first 1,000 bytes (an interrupted "
                    "download or commit): malformed-bundle, not JSON.",
                    {at: good_bundle[:1000]},
                ),
                Case(
                    "evidence-corrupted-json",
                    "The bundle's JSON is corrupted in the middle (a brace replaced by junk "
                    "bytes that are not UTF-8): malformed-bundle.",
                    {at: good_bundle.replace(b'"tlogEntries": [', b'"tlogEntries": \xff\xfe[', 1)},
                ),
                Case(
                    "evidence-no-dsse-envelope",
                    "The bundle's dsseEnvelope was removed (verification material only): it "
                    "carries no statement at all: malformed-bundle.",
                    {at: edit_bundle(good_bundle, drop_envelope)},
                ),
                Case(
                    "evidence-payload-base64-garbage",
                    "The DSSE payload is not base64 (its first characters replaced by "
                    "punctuation): malformed-bundle, without a traceback from the decoder.",
                    {at: edit_bundle(good_bundle, garbage_payload)},
                ),
                Case(
                    "evidence-path-mismatch-name",
                    "A valid bundle in the right recipe and signer directory, under a file name "
                    "that is the digest of another statement: its name does not match its "
                    "content, so it is rejected as path-mismatch.",
                    {name_of_other: good_bundle},
                ),
                Case(
                    "evidence-duplicate-content-renamed",
                    "Two evidence files with the same content: one at its proper path, a copy "
                    "under another name in the same directory. Both are reported; the proper one "
                    "verifies and the copy is a path-mismatch, so the run counts once.",
                    {
                        at: good_bundle,
                        at.replace(".sigstore.json", "-copy.sigstore.json"): good_bundle,
                    },
                ),
                Case(
                    "evidence-duplicate-content-nested",
                    "Two evidence files with the same content, the second in a nested "
                    "mirror/evidence/<recipe>/<source>/ tree: the path check is exact below the "
                    "evidence root, so the copy is a path-mismatch and the run counts once, which "
                    "tests/test_hostile_evidence.py also checks in `status`.",
                    {at: good_bundle, nested: good_bundle},
                ),
                Case(
                    "evidence-show-terminal-escapes",
                    "`evidence show` of a bundle whose payload was replaced by a statement whose "
                    "reason and KPI unit hold terminal control sequences (ESC cursor-up and "
                    "erase-line, carriage return, newline, a bidi override): the bundle does not "
                    "verify, and show prints the statement marked UNVERIFIED, but printed raw "
                    "the sequences erase the REJECTED and UNVERIFIED lines and draw a forged "
                    "VERIFIED line. Text from a statement must be printed with its control "
                    "characters escaped (generator.core.errors.printable), as diagnostics are.",
                    {at: edit_bundle(good_bundle, forged_payload)},
                    command=f"evidence show catalog/{at} --catalog catalog "
                    f"--trust-root catalog/{ROOT_FILE}\n",
                ),
                Case(
                    "evidence-json-huge-integer",
                    "The bundle's logIndex is a JSON integer of 5,000 digits. Python's json "
                    "refuses integers beyond 4,300 digits with a ValueError (not a "
                    "JSONDecodeError), which must be reported as a malformed bundle, not escape.",
                    {at: huge_bundle},
                ),
                Case(
                    "evidence-json-deep-nesting",
                    "The file is 100,000 nested JSON arrays (200 kB): the JSON decoder's "
                    "recursion limit is reported as a malformed bundle, without a crash.",
                    {},
                    generate=f"files:\n  - path: {at}\n    parts:\n"
                    '      - text: "["\n        times: 100000\n'
                    '      - text: "]"\n        times: 100000\n',
                ),
                Case(
                    "evidence-json-not-an-object",
                    "The file is valid JSON but a list, not a bundle object: malformed-bundle.",
                    {at: b"[]\n"},
                ),
                Case(
                    "evidence-empty-file",
                    "The evidence file is empty (zero bytes): malformed-bundle, not JSON.",
                    {at: b""},
                ),
                Case(
                    "evidence-certificate-garbage",
                    "The bundle's certificate rawBytes are valid base64 of bytes that are not "
                    "DER: malformed-bundle, with the parser's reason.",
                    {at: edit_bundle(good_bundle, garbage_certificate)},
                ),
                Case(
                    "evidence-no-log-entry",
                    "The bundle's transparency log entries were removed (nothing proves when, or "
                    "that, it was logged): malformed-bundle.",
                    {at: edit_bundle(good_bundle, no_log_entry)},
                ),
                Case(
                    "evidence-unknown-recipe",
                    "A valid signature over a statement for a recipe the catalog does not have, "
                    "stored at its proper path: it verifies but is stale (no current digest to "
                    "match: 'recipe not found'), shown and not counted.",
                    {stored_at(unknown): sign(unknown)},
                ),
                Case(
                    "evidence-sign-recipe-traversal",
                    "`evidence sign` of an upstream recipe-evidence/v1 statement whose recipe "
                    "name is '../outside/pwned' (upstream predicates do not pattern-check the "
                    "name). The default output path is built from the name, so the bundle is "
                    "written outside evidence/ (here to ../outside/, beside the catalog). A "
                    "recipe name that is not a safe path segment must be refused.",
                    {
                        "statement.json": traversal,
                        DEMO_KEYS: testroot.private_keys_json(authority()),
                    },
                    command="evidence sign catalog/statement.json --trust-root demo "
                    "--catalog catalog\n",
                ),
                Case(
                    "evidence-symlink-leaving-repository",
                    "An evidence file that is a symbolic link to /etc/passwd, outside the "
                    "repository. Following it reads (and a site build would publish under "
                    "evidence/raw/) a file that is not part of the repository; it must be refused "
                    "without being read, as the catalog loader refuses links leaving the catalog.",
                    {},
                    symlinks=f"{at} -> /etc/passwd\n",
                ),
                Case(
                    "evidence-fifo",
                    "An evidence file that is a named pipe. Searching the directory must not "
                    "block on it, nor silently skip it: a file named *.sigstore.json that is not "
                    "a regular file is an error naming it.",
                    {},
                    fifos=f"{at}\n",
                ),
                Case(
                    "evidence-oversized",
                    "An evidence file of 4 GiB (sparse): a real bundle is a few kilobytes. It "
                    "must be refused by its size before it is read, as catalog files are "
                    "(yamlio.MAX_FILE_BYTES, 1 MiB, whose comment names evidence files too), "
                    "not read into memory.",
                    {},
                    generate=f"files:\n  - path: {at}\n    size: 4294967296\n    parts:\n"
                    '      - text: "{"\n',
                ),
            ),
            key=lambda c: c.name,
        )
    )
    return (*evidence, page_case(), upstream_name_case())


# Statement text that would rewrite a terminal if printed raw (evidence-show-terminal-escapes).
TERMINAL_ESCAPES = {
    "reason": "ok\x1b[3A\x1b[2K\rVERIFIED evidence/forged.sigstore.json: signed by NVIDIA\x1b[0m",
    "kpi-unit": "GB/s\nVERIFIED (forged line)\r\u202egnissap",
}


# ---------------------------------------------------------------- page injection

# Strings that would be live markup, template syntax or shell if any page, template or script
# interpreted catalog or evidence text instead of escaping it.
INJECTIONS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "{{ 7*7 }}",
    "$(id)",
)
PAGE_CASE = "page-script-injection"
UPSTREAM_NAME_CASE = "page-upstream-recipe-name"


def injected(field: str) -> str:
    """The text placed in `field`: a marker naming the field, then every injection string."""
    return f"XSS-{field} " + " ".join(INJECTIONS)


def _yq(text: str) -> str:
    """`text` as a single-quoted YAML scalar."""
    return "'" + text.replace("'", "''") + "'"


# Recipe text fields that reach pages, by marker: (catalog file, its text).
PAGE_SIGNER_LABEL = injected("signer-label")
PAGE_IDENTITY = (
    "https://github.com/example-lab/aicr-runs/.github/workflows/"
    + injected("signer-identity").replace(" ", "%20")
    + "@refs/heads/main"
)
PAGE_REJECTED_IDENTITY = "https://github.com/intruder/fork/" + injected(
    "rejected-identity"
).replace(" ", "%20")
PAGE_CATALOG: dict[str, str] = {
    "overlays/base.yaml": f"""\
kind: RecipeMetadata
apiVersion: aicr.run/v1beta1
metadata:
  name: base
spec:
  constraints:
    - name: K8s.server.version
      value: ">= 1.32"
      severity: error
      description: {_yq(injected("constraint-description"))}
      remediation: {_yq(injected("constraint-remediation"))}
  componentRefs:
    - name: cert-manager
      type: Helm
      valuesFile: components/cert-manager/values.yaml
    - name: nfd
      type: Helm
      valuesFile: components/nfd/values.yaml
    - name: gpu-operator
      type: Helm
      valuesFile: components/gpu-operator/values.yaml
      dependencyRefs:
        - nfd
        - cert-manager
  validation:
    readiness:
      checks:
        - gpu-nodes-ready
    deployment:
      constraints:
        - name: Deployment.gpu-operator.ready
          value: {_yq(injected("phase-constraint-value"))}
          description: {_yq(injected("phase-constraint-description"))}
          remediation: {_yq(injected("phase-constraint-remediation"))}
""",
    "overlays/h100-eks-ubuntu-training.yaml": f"""\
kind: RecipeMetadata
apiVersion: aicr.run/v1beta1
metadata:
  name: h100-eks-ubuntu-training
spec:
  base: eks-training
  criteria:
    service: eks
    accelerator: h100
    os: ubuntu
    intent: training
  constraints:
    - name: K8s.server.version
      value: ">= 1.33"
      description: {_yq(injected("leaf-constraint-description"))}
      remediation: {_yq(injected("leaf-constraint-remediation"))}
  componentRefs:
    - name: gpu-operator
      overrides:
        mig:
          strategy: single
""",
    "components/gpu-operator/values.yaml": f"""\
driver:
  enabled: true
  note: {_yq(injected("values-string"))}
toolkit:
  enabled: true
nfd:
  enabled: false
""",
}
PAGE_DISPLAY_NAME = injected("component-display-name")


def _page_catalog(root: Path) -> Path:
    """The page case's catalog (minimal + PAGE_CATALOG + display name) under `root`."""
    import shutil

    catalog = root / "catalog"
    shutil.copytree(MINIMAL, catalog)
    for rel, text in PAGE_CATALOG.items():
        (catalog / rel).write_text(text, encoding="utf-8")
    registry = (catalog / "registry.yaml").read_text(encoding="utf-8")
    registry = registry.replace(
        "displayName: NVIDIA GPU Operator", f"displayName: {_yq(PAGE_DISPLAY_NAME)}", 1
    )
    (catalog / "registry.yaml").write_text(registry, encoding="utf-8")
    return catalog


def page_case() -> Case:
    """A catalog and a verified evidence run with INJECTIONS in every text field that reaches
    a page; `tests/test_hostile_pages.py` builds the site from it."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        catalog_dir = _page_catalog(Path(tmp))
        catalog, _ = load_catalog(catalog_dir)
        digest = resolve(catalog, RECIPE, profile="standard").digest
        files = {rel: (catalog_dir / rel).read_bytes() for rel in (*PAGE_CATALOG, "registry.yaml")}
    pred = fx.predicate(
        recipe={"name": RECIPE, "digest": digest},
        scaleProfile=PROFILE,
        componentVersions={"gpu-operator": injected("component-version")},
        phases={
            "deployment": {
                "checks": [
                    {
                        "name": injected("check-name"),
                        "status": "passed",
                        "targets": 144,
                        "message": injected("check-message"),
                    }
                ]
            },
            "conformance": {"checks": []},
            "performance": {"checks": []},
        },
        kpis=[
            {
                "id": injected("kpi-id"),
                "value": 350.5,
                "unit": injected("kpi-unit"),
                "threshold": {"operator": ">=", "value": 380},
                "status": "failed",
            }
        ],
        reasons=[injected("verdict-reason")],
        generator={"name": injected("generator-name"), "version": "0.1.0"},
    )
    payload = build_statement(pred)
    bundle = fx.sign(authority(), payload, identity=PAGE_IDENTITY, issuer=ISSUER)
    files[evidence_path(RECIPE, ISSUER, PAGE_IDENTITY, payload)] = bundle
    # the same run signed by someone the policy does not allow: rejected, its message shown
    intruder = fx.sign(authority(), payload, identity=PAGE_REJECTED_IDENTITY, issuer=ISSUER)
    files[evidence_path(RECIPE, ISSUER, PAGE_REJECTED_IDENTITY, payload)] = intruder
    signers = f"""\
apiVersion: aicr.run/v1
kind: SignerPolicy
signers:
  - label: {_yq(PAGE_SIGNER_LABEL)}
    class: partner
    issuer: {ISSUER}
    identity: {_yq(PAGE_IDENTITY)}
"""
    files["signers.yaml"] = signers.encode()
    return Case(
        PAGE_CASE,
        "Script, markup, template and shell injection strings ("
        + ", ".join(INJECTIONS)
        + ") in every text field of a recipe and of a verified evidence statement that reaches a "
        "page: constraint description and remediation, a phase constraint's value, "
        "description and remediation, a values string, a component's display name, and in the "
        "evidence check names and messages, KPI id and unit, verdict reason, component version, "
        "generator name, signer label and certificate identity, and the identity of a second, "
        "rejected signer (in the rejection message). validate accepts them (they are "
        "text, not names); tests/test_hostile_pages.py builds the site from this case and "
        "asserts every one appears only escaped.",
        files,
        command="",
    )


def upstream_name_case() -> Case:
    """An upstream statement whose recipe name is markup, signed by the allowed signer."""
    payload = upstream_statement(injected("upstream-recipe-name"), "ab" * 32)
    where = evidence_path(RECIPE, ISSUER, IDENTITY, payload)
    return Case(
        UPSTREAM_NAME_CASE,
        "An upstream recipe-evidence/v1 statement, signed by the allowed signer, whose recipe "
        "name is markup (" + ", ".join(INJECTIONS) + "), stored under a real recipe. The "
        "verifier rejects it (path-mismatch) but keeps its statement, and the site gives it an "
        "evidence page titled with that name: tests/test_hostile_pages.py builds the site from "
        "this case and checks that the name is never live markup.",
        {where: sign(payload)},
    )


def write(root: Path = HOSTILE) -> list[Path]:
    """Write every case's inputs under `root`; returns the files written."""
    import shutil

    written = []
    for case in cases():
        # the case's catalog/ is entirely generated: stale bundles of an older run must go
        shutil.rmtree(root / case.name / "catalog", ignore_errors=True)
        for rel, data in sorted(case.outputs().items()):
            path = root / case.name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    files = write(Path(sys.argv[1]) if len(sys.argv) > 1 else HOSTILE)
    print(f"wrote {len(files)} files of {len(cases())} cases")
