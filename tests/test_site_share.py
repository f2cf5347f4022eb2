"""Sharing the site's results (issue 30 item 7): badges that name their recipe, embed snippets on
each recipe page, and no sitemap that lists nothing. Two builds through the CLI (`build
--no-bundles`), one without and one with `--site-url`."""

from __future__ import annotations

import functools
import html
import html.parser
import http.server
import json
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.core.markdown import link_text
from generator.site.badges import LABEL_MAX
from tests.conftest import CATALOG, REPO

SITE_URL = "https://example.org/aicr"  # no trailing slash: the build adds it
RECIPE = "gb300-eks-ubuntu-training-slurm"
SVG = "{http://www.w3.org/2000/svg}"


@dataclass(frozen=True)
class Built:
    out: Path
    stderr: str


def _build(out: Path, *extra: str) -> Built:
    result = CliRunner().invoke(
        main,
        [
            "build",
            "--catalog",
            str(CATALOG),
            "--evidence",
            str(REPO / "evidence"),
            "--trust-root",
            "demo",
            "--no-bundles",
            "--no-cache",
            "-o",
            str(out),
            *extra,
        ],
        env={"SOURCE_DATE_EPOCH": "1767225600"},
    )
    assert result.exit_code == 0, result.output
    return Built(out, result.stderr)


@pytest.fixture(scope="module")
def relative(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _build(tmp_path_factory.mktemp("rel") / "site", "--no-timeline")


@pytest.fixture(scope="module")
def absolute(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _build(tmp_path_factory.mktemp("abs") / "site", "--site-url", SITE_URL)


def _badges(site: Path) -> Iterator[tuple[str, str, Path]]:
    index = json.loads((site / "api" / "v1" / "recipes.json").read_text())
    for r in index["recipes"]:
        for p in r["profiles"]:
            yield r["name"], p["name"], site / p["badge"]


def test_every_badge_names_its_recipe(relative: Built) -> None:
    seen = 0
    for recipe, profile, path in _badges(relative.out):
        root = ET.fromstring(path.read_bytes())
        title = root.findtext(f"{SVG}title") or ""
        assert root.attrib["aria-label"] == title
        assert title.startswith(f"AICR recipe {recipe}, scale profile {profile}: "), title
        shown = [t.text for t in root.iter(f"{SVG}text")]
        label = f"{recipe} · {profile}"
        assert shown[0] == (label if len(label) <= LABEL_MAX else profile)
        sidecar = json.loads(path.with_suffix(".json").read_text())
        assert (sidecar["title"], sidecar["label"]) == (title, shown[0])
        seen += 1
    assert seen >= 40  # every recipe × profile row of the repository's catalog


class _Blocks(html.parser.HTMLParser):
    """The text of each `<pre><code class=...>` of a page, by class."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[tuple[str, str]] = []
        self._in: str | None = None
        self._pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "pre":
            self._pre = True
        elif tag == "code" and self._pre:
            self._in = dict(attrs).get("class") or ""
            self.blocks.append((self._in, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "code":
            self._in = None
        elif tag == "pre":
            self._pre = False

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            cls, text = self.blocks[-1]
            self.blocks[-1] = (cls, text + data)


def _snippets(site: Path, recipe: str) -> tuple[str, list[str], list[str]]:
    page = (site / "recipes" / f"{recipe}.html").read_text()
    parser = _Blocks()
    parser.feed(page)
    md = [t for c, t in parser.blocks if c == "aicr-embed-md"]
    tags = [t for c, t in parser.blocks if c == "aicr-embed-html"]
    return page, md, tags


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.attrs: dict[str, dict[str, str | None]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs[tag] = dict(attrs)


def _check_snippets(site: Path, base: str, recipe: str) -> None:
    _, md, tags = _snippets(site, recipe)
    badges = [(p, path) for r, p, path in _badges(site) if r == recipe]
    assert len(md) == len(tags) == len(badges) >= 1
    for (profile, path), markdown, tag in zip(badges, md, tags, strict=True):
        title = ET.fromstring(path.read_bytes()).findtext(f"{SVG}title") or ""
        img = f"{base}badges/{recipe}/{profile}.svg"
        link = f"{base}recipes/{recipe}.html#profile-{profile}"
        assert markdown == f"[![{link_text(title)}]({img})]({link})"
        parsed = _Tags()
        parsed.feed(tag)
        assert parsed.attrs["a"] == {"href": link}
        assert parsed.attrs["img"] == {"src": img, "alt": title}
        assert (site / img.removeprefix(base)).is_file()  # the snippet shows the published badge
        page = (site / link.removeprefix(base).split("#")[0]).read_text()
        assert f'id="profile-{profile}"' in page


def test_recipe_page_offers_relative_embed_snippets_and_says_so(relative: Built) -> None:
    _check_snippets(relative.out, "", RECIPE)
    page = _snippets(relative.out, RECIPE)[0]
    assert "relative to the site's root" in html.unescape(page)


def test_recipe_page_offers_absolute_embed_snippets_under_the_site_url(absolute: Built) -> None:
    _check_snippets(absolute.out, SITE_URL + "/", RECIPE)
    page = _snippets(absolute.out, RECIPE)[0]
    assert "relative to the site's root" not in html.unescape(page)


def test_no_site_url_writes_no_sitemap_and_says_why(relative: Built) -> None:
    assert not (relative.out / "api" / "v1" / "timeline.json").exists()  # --no-timeline
    assert not (relative.out / "sitemap.xml").exists()
    assert not (relative.out / "sitemap.xml.gz").exists()
    assert "note: sitemap: no sitemap.xml written" in relative.stderr
    assert "--site-url" in relative.stderr.split("note: sitemap:", 1)[1].splitlines()[0]


def test_a_site_url_writes_a_sitemap_of_absolute_urls(absolute: Built) -> None:
    assert "note: sitemap" not in absolute.stderr
    root = ET.fromstring((absolute.out / "sitemap.xml").read_bytes())
    locs = [e.text or "" for e in root.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")]
    assert f"{SITE_URL}/recipes/{RECIPE}.html" in locs
    assert len(locs) >= 40 and all(loc.startswith(SITE_URL + "/") for loc in locs)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.browser
def test_embed_snippet_has_a_copy_button_that_copies_it(browser: object, relative: Built) -> None:
    handler = functools.partial(_Quiet, directory=str(relative.out))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    context = browser.new_context()  # type: ignore[attr-defined]
    try:
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base[:-1])
        page = context.new_page()
        page.goto(f"{base}recipes/{RECIPE}.html")
        block = page.locator("pre:has(code.aicr-embed-md)").first
        block.locator("button.aicr-copy").click()
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == _snippets(relative.out, RECIPE)[1][0]
    finally:
        context.close()
        httpd.shutdown()
        httpd.server_close()


def test_a_hostile_name_in_the_alt_text_stays_text() -> None:
    from markdown_it import MarkdownIt  # CommonMark, as GitHub renders a README

    name = "x](javascript:alert(1)) *em* <b>&amp; `c` \\ ![y](z) | ~~s~~ [w"
    rendered = (
        MarkdownIt("commonmark")
        .enable(["table", "strikethrough"])
        .render(f"[![{link_text(name)}](a.svg)](b.html)")
    )
    parsed = _Tags()
    parsed.feed(rendered)
    assert parsed.attrs["a"] == {"href": "b.html"}
    assert parsed.attrs["img"] == {"src": "a.svg", "alt": name}
    assert rendered.count("<a ") == rendered.count("<img ") == 1 and "<b>" not in rendered
