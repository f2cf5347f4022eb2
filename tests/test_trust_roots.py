"""Trust by content, through one function (issue 27, item 3).

`release verify --trust-root <a copy of the demo root>` used to accept a release forged with the
demo keys (which are public): the command compared the spelling `demo`, not the content. Now
every command declares its `--trust-root` with `trust_root_option` (a `TrustRootOption` that
knows what the command verifies), every root is read by `trustroot.load_trust_root`, and a
release use refuses the demo root however it is given. The tests below forge such a release,
try it with the demo root given every way (copy renamed, link, reformatted, mixed with other
keys), and enumerate every command's options so a new --trust-root declared another way fails.
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.commands.common import TrustRootOption, trust_root_option
from generator.core.errors import UsageError
from generator.evidence import testroot
from generator.evidence.model import RootUse
from generator.evidence.trustroot import DEMO_SEED, load_trust_root
from generator.publish.release import SITE_ARCHIVE
from generator.publish.release_verify import SIGNATURE, verify_release
from tests import evidence_fixtures as ef
from tests.conftest import REPO
from tests.test_release_verify import IDENTITY, VERSION, sign_blob

DEMO_ROOT = REPO / "catalog" / "trust" / "demo" / "trusted_root.json"
GENERATOR = REPO / "generator"


def _forged_release(directory: Path, authority: testroot.Authority) -> Path:
    """A release directory whose manifest is signed by `authority` as the release workflow of
    NVIDIA/aicr-catalog at VERSION: everything `release verify` checks holds."""
    directory.mkdir(parents=True)
    site = b"not really a site\n"
    site_name = SITE_ARCHIVE.format(version=VERSION)
    manifest = json.dumps(
        {
            "version": VERSION,
            "commit": "f" * 40,
            "site": {"file": site_name, "sha256": hashlib.sha256(site).hexdigest()},
            "recipes": [],
        },
        sort_keys=True,
    ).encode()
    files = {
        "release-manifest.json": manifest,
        SIGNATURE: sign_blob(authority, manifest),
        site_name: site,
    }
    for name, data in files.items():
        (directory / name).write_bytes(data)
    sums = "".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in sorted(files.items()))
    (directory / "SHA256SUMS").write_text(sums)
    return directory


def _demo_root_variants(tmp: Path) -> dict[str, Path]:
    """The demo root given every way but by its name."""
    out = tmp / "roots"
    out.mkdir()
    copy = out / "release-root.json"
    shutil.copyfile(DEMO_ROOT, copy)
    link = out / "link.json"
    link.symlink_to(DEMO_ROOT)
    reformatted = out / "reformatted.json"
    reformatted.write_text(json.dumps(json.loads(DEMO_ROOT.read_bytes()), indent=4))
    # the demo CA beside another authority's logs: still demo material
    other = json.loads(testroot.trusted_root_json(ef.make_authority("other")))
    demo = json.loads(DEMO_ROOT.read_bytes())
    mixed_doc = {**other, "certificateAuthorities": demo["certificateAuthorities"]}
    mixed = out / "mixed.json"
    mixed.write_text(json.dumps(mixed_doc))
    return {"copy": copy, "link": link, "reformatted": reformatted, "mixed": mixed}


@pytest.fixture(scope="module")
def demo_authority() -> testroot.Authority:
    """The demo authority, from its public seed: anyone can sign as it."""
    return testroot.make_authority("aicr-demo", DEMO_SEED)


def test_the_demo_keys_really_forge_a_release(
    tmp_path: Path, demo_authority: testroot.Authority
) -> None:
    """The forgery is sound: signed by any other authority, the same release verifies with that
    authority's root (exit 0), so a refusal below is the demo root's, not the fixture's."""
    other = ef.make_authority("release-forgery-control")
    d = _forged_release(tmp_path / "control", other)
    root = ef.write_root(other, tmp_path)
    got = CliRunner().invoke(main, ["release", "verify", str(d), "--trust-root", str(root)])
    assert got.exit_code == 0, got.output
    assert IDENTITY in got.output
    # and the demo-signed one is a valid signature under the demo root's keys
    forged = _forged_release(tmp_path / "forged", demo_authority)
    report = verify_release(forged, load_trust_root("demo"))
    assert [d.rule for d in report.problems] == ["release.signature"]  # only the refusal


@pytest.mark.parametrize("way", ["copy", "link", "reformatted", "mixed", "demo"])
def test_release_verify_refuses_the_demo_root_however_given(
    tmp_path: Path, demo_authority: testroot.Authority, way: str
) -> None:
    forged = _forged_release(tmp_path / "forged", demo_authority)
    spec = "demo" if way == "demo" else str(_demo_root_variants(tmp_path)[way])
    got = CliRunner().invoke(main, ["release", "verify", str(forged), "--trust-root", spec])
    assert got.exit_code == 2, got.output
    assert "demo root" in got.output and f"release {VERSION} (commit" not in got.output


@pytest.mark.parametrize("way", ["copy", "link", "reformatted", "mixed"])
def test_the_library_refuses_a_demo_root_too(
    tmp_path: Path, demo_authority: testroot.Authority, way: str
) -> None:
    """`verify_release` given a root loaded for evidence (demo accepted, labelled) still refuses
    to let it vouch for a release."""
    forged = _forged_release(tmp_path / "forged", demo_authority)
    root = load_trust_root(str(_demo_root_variants(tmp_path)[way]))
    assert root.demo and root.name == "demo"
    report = verify_release(forged, root)
    assert not report.ok
    assert any("demo root" in d.message for d in report.problems)
    (tmp_path / "again").mkdir()
    with pytest.raises(UsageError) as e:  # the one function, for a release
        load_trust_root(str(_demo_root_variants(tmp_path / "again")[way]), use=RootUse.RELEASE)
    assert [d.rule for d in e.value.diagnostics] == ["trust-root.demo"]


@pytest.mark.parametrize("way", ["copy", "reformatted"])
def test_evidence_commands_label_a_demo_copy_as_demo(tmp_path: Path, way: str) -> None:
    """For evidence, the demo root given as a renamed copy is the demo root: SAMPLE."""
    spec = str(_demo_root_variants(tmp_path)[way])
    got = CliRunner().invoke(
        main,
        [
            "evidence",
            "verify",
            str(REPO / "evidence" / "gb200-eks-ubuntu-training-kubeflow"),
            "--trust-root",
            spec,
            "--format",
            "json",
        ],
    )
    doc = json.loads(got.stdout)
    assert {r["trustRoot"] for r in doc["results"] if r["state"] != "rejected"} == {"demo"}
    assert all(r["sample"] for r in doc["results"] if r["state"] != "rejected")


# ---------------------------------------------------------------- every --trust-root, one way


def _commands(cmd: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, click.Command]]:
    out = [(" ".join(path), cmd)]
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        for name in sorted(cmd.list_commands(ctx)):
            sub = cmd.get_command(ctx, name)
            if sub is not None:
                out += _commands(sub, (*path, name))
    return out


def trust_root_problems(root: click.Command) -> list[str]:
    """A command option that takes a trust root but is not a TrustRootOption, or a release
    command whose root is not judged for a release."""
    problems = []
    for name, cmd in _commands(root):
        for param in cmd.params:
            takes_root = any("trust" in o for o in param.opts) or "trust" in (param.name or "")
            if not takes_root:
                continue
            if not isinstance(param, TrustRootOption):
                problems.append(f"{name}: {param.opts} is not declared with trust_root_option")
            elif name.startswith("release") and param.use is not RootUse.RELEASE:
                problems.append(f"{name}: a release command must refuse the demo root")
    return problems


def test_every_trust_root_option_goes_through_the_one_function() -> None:
    names = [n for n, c in _commands(main) if any(isinstance(p, TrustRootOption) for p in c.params)]
    assert len(names) >= 9, names  # build, status, validate, release, release verify, evidence *
    assert trust_root_problems(main) == []


def test_the_enumeration_catches_a_root_declared_another_way() -> None:
    @click.group()
    def cli() -> None:
        pass

    @cli.command("plain")
    @click.option("--trust-root", default="public-good")
    def plain(trust_root: str) -> None:
        pass

    @cli.group("release")
    def release() -> None:
        pass

    @release.command("check")
    @trust_root_option(use=RootUse.EVIDENCE, help="a release command using the evidence use")
    def check(trust_root: str) -> None:
        pass

    @cli.command("fine")
    @trust_root_option(use=RootUse.EVIDENCE, help="the one way")
    def fine(trust_root: str) -> None:
        pass

    assert trust_root_problems(cli) == [
        "plain: ['--trust-root'] is not declared with trust_root_option",
        "release check: a release command must refuse the demo root",
    ]


def _constructs(source: str, names: set[str]) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            called = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            if called in names:
                found.add(called)
    return found


def test_roots_are_made_and_parsed_in_trustroot_only() -> None:
    """A TrustRoot record is made only by load_trust_root, and sigstore's TrustedRoot is read
    from a file nowhere (verifiers are built from the bytes load_trust_root judged)."""
    made: dict[str, set[str]] = {}
    for p in sorted(GENERATOR.rglob("*.py")):
        rel = str(p.relative_to(GENERATOR))
        hits = _constructs(p.read_text("utf-8"), {"TrustRoot", "from_file"})
        if hits:
            made[rel] = hits
    assert made == {"evidence/trustroot.py": {"TrustRoot"}}


RELEASE_MODULES = (
    "commands/release.py",
    "commands/release_verify.py",
    "publish/release.py",
    "publish/release_verify.py",
)


def _release_loads(source: str) -> list[str]:
    """How each load_trust_root call of `source` states its use ("" when it does not)."""
    uses = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "load_trust_root":
            kw = {k.arg: k.value for k in node.keywords}
            use = kw.get("use")
            uses.append(ast.unparse(use) if use is not None else "")
    return uses


def test_release_code_loads_roots_for_a_release_only() -> None:
    """Every root the release commands load is loaded for a release (demo refused); the
    commands that build and verify releases load at least one."""
    loads = {m: _release_loads((GENERATOR / m).read_text("utf-8")) for m in RELEASE_MODULES}
    assert all(u == "RootUse.RELEASE" for us in loads.values() for u in us), loads
    assert loads["publish/release.py"] and loads["commands/release_verify.py"], loads
    assert _release_loads("load_trust_root(spec)") == [""]  # the check sees a missing use
