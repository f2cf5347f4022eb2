"""The file doors hold through the real command line (issue 27, items 1 and 8).

Item 1: a committed `CONTRIBUTING.md -> /proc/self/environ` published the build's environment;
every read now goes through `core/safeio.py`, so the build stops with a located error and
publishes nothing. Item 8: `evidence push` wrote its pointer through a link planted at the
pointer's predictable path; every write now goes through `core/atomic.py`, which follows no
link. Each example runs through the CLI; generated variants of each class run in a forked child
under the memory and time limits of the hostile I/O tests.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.cli import main
from generator.core import atomic, safeio
from generator.evidence import oci
from generator.site.build import BuildOptions, _contract, static_docs
from tests.oci_fixtures import RealRegistry, running_registry
from tests.test_cases import MINIMAL
from tests.test_hostile_io import isolated

REPO = Path(__file__).resolve().parent.parent
SECRET = "AICR_DOORS_SECRET=do-not-publish-me"
PUSHED = REPO / "evidence" / "gb200-eks-ubuntu-training-kubeflow"


# ---------------------------------------------------------------- item 1: reads


def _repo_copy(tmp: Path) -> Path:
    """A copy of this repository's code, templates and docs: REPO of the copied generator."""
    repo = tmp / "repo"
    repo.mkdir()
    for name in ("generator", "site_templates", "docs"):
        shutil.copytree(
            REPO / name, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    for name in ("mkdocs.yml", "SECURITY.md"):
        shutil.copy(REPO / name, repo / name)
    return repo


def test_build_refuses_a_committed_link_to_the_environment(tmp_path: Path) -> None:
    """The reported attack, through the command: exit 1, the link named, no site, no secret."""
    repo = _repo_copy(tmp_path)
    (repo / "CONTRIBUTING.md").symlink_to("/proc/self/environ")
    (tmp_path / "ev").mkdir()
    out = tmp_path / "site"
    name, value = SECRET.split("=")
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "generator.cli", "build", "--catalog", str(MINIMAL)),
            *("--evidence", str(tmp_path / "ev"), "-o", str(out), "--trust-root", "demo"),
            *("--no-bundles", "--no-cache"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(repo), name: value},
        timeout=600,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "CONTRIBUTING.md" in proc.stderr and "[file.symlink-escape]" in proc.stderr
    assert value not in proc.stdout + proc.stderr
    assert not out.exists()


_TARGETS = ["environ", "outside-file", "dev-zero", "fifo", "outside-dir-link"]


def _plant(path: Path, kind: str, outside: Path) -> None:
    if path.is_symlink() or path.exists():
        path.unlink()
    if kind == "environ":
        path.symlink_to("/proc/self/environ")
    elif kind == "outside-file":
        path.symlink_to(outside / "secret.txt")
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "outside-dir-link":
        path.symlink_to(outside)


def test_every_page_source_is_read_through_the_safe_reader(tmp_path: Path) -> None:
    """Generated variants: SECURITY.md, CONTRIBUTING.md, a docs page or the scale contract
    swapped for a link out of the repository, a device or a FIFO: a refusal naming the file,
    never its target's bytes, a hang or a crash."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)

    @settings(
        max_examples=25,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        st.sampled_from(
            ["SECURITY.md", "CONTRIBUTING.md", "docs/page.md", "docs/scale-contract.md"]
        ),
        st.sampled_from(_TARGETS),
    )
    def prop(rel: str, kind: str) -> None:
        repo = tmp_path / "repo"
        shutil.rmtree(repo, ignore_errors=True)
        (repo / "docs").mkdir(parents=True)
        for name in ("SECURITY.md", "CONTRIBUTING.md", "docs/page.md", "docs/scale-contract.md"):
            (repo / name).write_text(f"# {name}\n")
        _plant(repo / rel, kind, outside)
        options = BuildOptions(
            catalog=MINIMAL, evidence=tmp_path, out=tmp_path / "o", docs=repo / "docs"
        )
        try:
            published = static_docs(options)
            contract = _contract(options)
        except safeio.Refusal as refused:
            text = refused.diagnostics_text()
            assert rel.split("/")[-1] in text and SECRET not in text
            assert refused.rule in (safeio.ESCAPE, safeio.NOT_REGULAR)
            return
        # not refused: only a docs page that is no regular file, left out (never its target)
        assert rel == "docs/page.md" and kind in ("fifo", "dev-zero", "outside-dir-link")
        assert "page.md" not in published and contract is not None
        assert not any(SECRET.encode() in data for data in published.values())

    def run() -> dict[str, Any]:
        prop()
        return {}

    isolated(run, seconds=60)


# ---------------------------------------------------------------- archives: one member reader


_SPELLINGS = ["x.yaml", "./x.yaml", "x.yaml/", "x.yaml//", "./x.yaml/", "d/../x.yaml"]


def _tar(names: list[str], gz: bool = False) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for i, name in enumerate(names):
            info = tarfile.TarInfo(name)
            data = f"n: {i}\n".encode()
            info.size = len(data)
            info.type = tarfile.REGTYPE
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    if gz:
        import gzip

        raw = gzip.compress(raw, mtime=0)
    return raw


def test_a_duplicate_archive_entry_is_refused_whatever_its_spelling() -> None:
    """Item 9: `x` then `x/` passed the OCI layer's duplicate check (it compared the raw name
    with the stripped one). Names are normalised first now, in the one archive reader."""

    @settings(max_examples=60, deadline=None, database=None, derandomize=True)
    @given(st.sampled_from(_SPELLINGS), st.sampled_from(_SPELLINGS), st.booleans())
    def prop(first: str, second: str, gz: bool) -> None:
        raw = _tar([first, second], gz)
        with pytest.raises(safeio.Refusal) as e:
            safeio.tar_files(raw, what="layer")
        assert "appears twice" in e.value.message or "leaves the archive" in e.value.message
        with pytest.raises(oci.UnsafeArtifact):
            oci.untar_layer(raw, "layer")

    def run() -> dict[str, Any]:
        prop()
        return {}

    isolated(run, seconds=60)


def test_the_trailing_slash_duplicate_through_qualify(tmp_path: Path) -> None:
    """Through the CLI: `qualify --bundle` with `bundle-info.yaml` twice (once as
    `bundle-info.yaml/`) is refused as a usage error naming the entry, not read as the first."""
    from tests.test_qualify import _results_dir

    archive = tmp_path / "bundle.tar.gz"
    archive.write_bytes(_tar(["b/bundle-info.yaml", "b/bundle-info.yaml/"], gz=True))
    results = _results_dir(tmp_path, "lane-288")
    r = CliRunner().invoke(
        main,
        [
            *("qualify", "--lane", "lane-288", "--recipe", "gb300-eks-ubuntu-training-slurm"),
            *("--scale-profile", "nvl72-2304", "--results", str(results)),
            *("--bundle", str(archive), "--catalog", str(REPO / "catalog")),
            *("-o", str(tmp_path / "statement.json")),
        ],
    )
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    assert "entry 'b/bundle-info.yaml' appears twice" in r.output
    assert not (tmp_path / "statement.json").exists()


def test_a_gzip_bomb_member_is_capped_before_it_is_unpacked() -> None:
    raw = _tar(["a"], gz=False)
    import gzip

    bomb = gzip.compress(raw + b"\0" * (64 << 20), mtime=0)  # 64 MiB of zeros in ~64 KiB

    def run() -> dict[str, Any]:
        try:
            safeio.tar_files(bomb, what="layer", total_limit=1 << 20)
        except safeio.Refusal as e:
            return {"message": e.message}
        return {"message": ""}

    assert "more than" in isolated(run, seconds=20)["message"]


# ---------------------------------------------------------------- item 8: writes


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealRegistry]:
    yield from running_registry(tmp_path_factory)


def _push(registry: RealRegistry, pointers: Path, cache: Path, bundle: Path) -> Any:
    return CliRunner().invoke(
        main,
        [
            *("evidence", "push", str(bundle), "--to", f"{registry.host}/catalog/evidence"),
            *("--trust-root", "demo", "--pointers", str(pointers), "--cache", str(cache)),
            *("--catalog", str(REPO / "catalog")),
        ],
    )


@pytest.mark.parametrize("where", ["file", "source-dir", "recipe-dir"])
def test_push_never_writes_through_a_planted_link(
    registry: RealRegistry, tmp_path: Path, where: str
) -> None:
    """The pointer's path is predictable (<recipe>/<source>/sha256-<digest>.yaml): a link
    planted there, or at a directory on the way, is refused; the file outside is unchanged."""
    bundle = sorted(PUSHED.rglob("*.sigstore.json"))[0]
    first = _push(registry, tmp_path / "p1", tmp_path / "cache", bundle)
    assert first.exit_code == 0, first.output
    (written,) = sorted((tmp_path / "p1").rglob("sha256-*.yaml"))
    rel = written.relative_to(tmp_path / "p1")
    victim_dir = tmp_path / "victim"
    pointers = tmp_path / "p2"
    # where the link goes, and the file a write through it would overwrite
    link_at, victim = {
        "file": (rel, victim_dir / rel.name),
        "source-dir": (rel.parent, victim_dir / rel.name),
        "recipe-dir": (Path(rel.parts[0]), victim_dir / rel.parent.name / rel.name),
    }[where]
    victim.parent.mkdir(parents=True)
    victim.write_text("precious\n")
    (pointers / link_at).parent.mkdir(parents=True, exist_ok=True)
    (pointers / link_at).symlink_to(victim if where == "file" else victim_dir)
    r = _push(registry, pointers, tmp_path / "cache", bundle)
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    assert "symbolic link" in r.output and "[file.write-through-link]" in r.output
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in victim_dir.rglob("*") if p.is_file()) == [rel.name]


def test_the_writer_never_follows_a_link_below_its_root(tmp_path: Path) -> None:
    """Generated variants: a path of one to four parts below a root, with a link to an outside
    directory (or file) planted at any one of them: `write_atomic` refuses and writes nothing
    outside; with no link it writes the file, and only it."""

    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        st.lists(st.sampled_from(["a", "b", "c.yaml"]), min_size=1, max_size=4),
        st.one_of(st.none(), st.integers(0, 3)),
        st.booleans(),
    )
    def prop(parts: list[str], link_at: int | None, existing: bool) -> None:
        base = tmp_path / "case"
        shutil.rmtree(base, ignore_errors=True)
        root, outside = base / "root", base / "outside"
        outside.mkdir(parents=True)
        root.mkdir()
        (outside / parts[-1]).write_text("precious\n")
        path = root.joinpath(*parts)
        if existing:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("old\n")
        planted = link_at is not None and link_at < len(parts)
        if planted:
            assert link_at is not None
            spot = root.joinpath(*parts[: link_at + 1])
            if spot.is_dir():
                shutil.rmtree(spot)
            elif spot.exists():
                spot.unlink()
            spot.parent.mkdir(parents=True, exist_ok=True)
            last = link_at == len(parts) - 1
            spot.symlink_to(outside / parts[-1] if last else outside)
        before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
        try:
            atomic.write_atomic(path, b"new\n", root=root)
        except safeio.Refusal as e:
            assert planted and e.rule == atomic.WRITE_LINK
        else:
            assert not planted and path.read_bytes() == b"new\n"
        assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before
        assert not [p for p in base.rglob("*.tmp")]  # nothing half-written left behind

    def run() -> dict[str, Any]:
        prop()
        return {}

    isolated(run, seconds=60)


def test_append_and_lock_refuse_links(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("precious\n")
    (tmp_path / "summary.md").symlink_to(tmp_path / "secret")
    with pytest.raises(safeio.Refusal) as e:
        atomic.append_text(tmp_path / "summary.md", "appended")
    assert e.value.rule == atomic.WRITE_LINK
    with pytest.raises(safeio.Refusal):
        atomic.open_lock(tmp_path / "summary.md")
    assert (tmp_path / "secret").read_text() == "precious\n"


def test_the_step_summary_is_not_written_through_a_link(tmp_path: Path) -> None:
    """`validate --format github` appends to $GITHUB_STEP_SUMMARY: never through a link."""
    (tmp_path / "secret").write_text("precious\n")
    (tmp_path / "summary.md").symlink_to(tmp_path / "secret")
    r = CliRunner().invoke(
        main,
        ["validate", "--catalog", str(MINIMAL), "--format", "github"],
        env={"GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")},
    )
    assert r.exit_code == 1, r.output
    assert "[file.write-through-link]" in r.output
    assert (tmp_path / "secret").read_text() == "precious\n"


def test_a_template_linked_out_of_its_tree_is_never_rendered(tmp_path: Path) -> None:
    """Jinja reads templates through `safeio.template_source` (not `FileSystemLoader`, which
    follows links): a site or bundle template swapped for `-> /proc/self/environ` is refused."""
    import jinja2

    root = tmp_path / "templates"
    root.mkdir()
    (root / "ok.j2").write_text("{% include 'inc.j2' %}!")
    (root / "inc.j2").write_text("included")
    (root / "env.j2").symlink_to("/proc/self/environ")
    (root / "leak.j2").write_text("{% include 'env.j2' %}")
    env = jinja2.Environment(loader=jinja2.FunctionLoader(safeio.template_source(root)))
    assert env.get_template("ok.j2").render() == "included!"
    for name in ("env.j2", "leak.j2"):
        with pytest.raises(safeio.Refusal) as e:
            env.get_template(name).render()
        assert e.value.rule == safeio.ESCAPE and "env.j2" in e.value.message + str(e.value)
    with pytest.raises(jinja2.TemplateNotFound):
        env.get_template("missing.j2")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_upstream_digest_reads_through_the_door(tmp_path: Path, kind: str) -> None:
    """`evidence upstream-digest FILE` read the file directly: a FIFO hung it, a link to
    /dev/zero grew memory without end. Now: exit 1 at once, the file named."""
    path = tmp_path / "recipe.yaml"
    _plant(path, kind, tmp_path)

    def run() -> dict[str, Any]:
        r = CliRunner().invoke(main, ["evidence", "upstream-digest", str(path)])
        return {"code": r.exit_code, "output": r.output}

    got = isolated(run, seconds=20)
    assert got["code"] == 1 and "not a regular file" in got["output"], got
    assert "Traceback" not in got["output"]


def test_a_compat_baseline_linked_out_of_its_tree_is_refused(tmp_path: Path) -> None:
    """`compat` read its baselines with `Path.read_text`: a baseline swapped for a link to a
    secret was parsed (and quoted in the error). Now a located refusal naming the link."""
    from generator.publish import compat

    schemas = tmp_path / "schemas"
    shutil.copytree(REPO / "catalog" / "schemas", schemas)
    (tmp_path / "secret.json").write_text(f'{{"s": "{SECRET}"}}')
    baseline = schemas / compat.BASELINE_DIR / compat.LAYOUTS
    baseline.unlink()
    baseline.symlink_to(tmp_path / "secret.json")
    with pytest.raises(safeio.Refusal) as e:
        compat.check(schemas, REPO / "catalog", "0.0.0")
    assert e.value.rule == safeio.ESCAPE and SECRET not in e.value.diagnostics_text()
    assert compat.LAYOUTS in e.value.diagnostics_text()
