"""The Content Security Policy: every page carries one, and a browser enforces it; the fast
path (`with_csp_utf8`, `policy`) is its reference's (`with_csp_reference`, `policy_reference`)
on every page of the repository's site and of a synthetic one, and on generated pages."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.bench.synth import SynthOptions, synthesize
from generator.site import build
from generator.site.build import BuildOptions, build_site
from generator.site.csp import policy, policy_reference, with_csp_reference, with_csp_utf8
from tests.test_browser import server  # noqa: F401
from tests.test_site import built_site, site_inputs  # noqa: F401

PAGE = """<html><head><title>t</title></head><body>
<script>var a = 1;</script><script id="__config" type="application/json">{"x": 1}</script>
<script src="assets/app.js"></script></body></html>"""


def test_policy_lists_each_inline_script_hash_and_nothing_else() -> None:
    p = policy(PAGE)
    assert p.startswith("default-src 'self'; script-src 'self' 'sha256-")
    assert len(re.findall(r"'sha256-", p)) == 1  # the JSON data block and the src script need none
    assert "'unsafe-inline'" not in p.split("script-src", 1)[1].split(";", 1)[0]
    assert "object-src 'none'" in p


def test_with_csp_is_the_first_head_element_and_idempotent() -> None:
    once = with_csp_utf8(PAGE)
    assert once.startswith(b'<html><head><meta http-equiv="Content-Security-Policy"')
    assert with_csp_utf8(once.decode()) == once


def test_every_built_page_has_a_policy(built_site: Path) -> None:  # noqa: F811
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) > 50
    missing = [
        p.relative_to(built_site).as_posix()
        for p in pages
        if 'http-equiv="Content-Security-Policy"' not in p.read_text(encoding="utf-8")
    ]
    assert missing == []


@pytest.mark.browser
def test_browser_refuses_a_smuggled_inline_script(browser: object, server: str) -> None:  # noqa: F811
    context = browser.new_context()  # type: ignore[attr-defined]
    page = context.new_page()
    violations: list[str] = []
    page.on("console", lambda m: "Content Security Policy" in m.text and violations.append(m.text))

    def inject(route: object) -> None:
        response = route.fetch()  # type: ignore[attr-defined]
        body = response.text().replace(
            "</body>",
            '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned2 = 1"></body>',
        )
        route.fulfill(response=response, body=body)  # type: ignore[attr-defined]

    page.route(server + "index.html", inject)
    page.goto(server + "index.html")
    page.wait_for_selector("#aicr-table tbody tr")  # the site's own scripts ran
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("window.__pwned2") is None
    assert violations, "the browser reported no CSP violation"
    context.close()


# --- the fast path is the reference ---------------------------------------------------------

_META = re.compile(r'<meta http-equiv="Content-Security-Policy" content="[^"]*">')


def test_every_page_of_the_site_is_its_reference(built_site: Path) -> None:  # noqa: F811
    """Each published page, its policy taken out, finished again both ways: the same bytes,
    the page's own; and finishing the published page changes nothing."""
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) > 50
    for path in pages:
        published = path.read_bytes()
        page = _META.sub("", published.decode(), count=1)
        assert with_csp_utf8(page) == with_csp_reference(page).encode() == published, path
        assert policy(page) == policy_reference(page)
        assert with_csp_utf8(published.decode()) == published


def test_every_page_of_a_synthetic_site_is_its_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every page as the build finishes it (stamped, its fill and data blocks in)."""
    synthesize(SynthOptions(3, 30, seed=7, jobs=1), tmp_path / "synth")
    seen: list[str] = []

    def spy(html: str) -> bytes:
        seen.append(html)
        fast = with_csp_utf8(html)
        assert fast == with_csp_reference(html).encode()
        return fast

    monkeypatch.setattr(build, "with_csp_utf8", spy)
    synth = tmp_path / "synth"
    build_site(
        BuildOptions(
            catalog=synth / "catalog",
            evidence=synth / "evidence",
            out=tmp_path / "site",
            trust_root=str(synth / "trust" / "synth-root.json"),
            source_date_epoch=0,
            bundles=False,
        )
    )
    assert len(seen) == len(list((tmp_path / "site").rglob("*.html"))) > 30


# pieces of a page: what the fast path must find, miss or refuse as the reference does (ſ is s
# and ı, İ are i under re.IGNORECASE; an unpaired surrogate cannot be encoded)
_PIECES = [
    "<script",
    "<SCRIPT",
    "<ScRiPt",
    "<ſcript",
    "<scrıpt",
    "<SCRİPT",
    "</script>",
    "</SCRIPT>",
    "</Script >",
    "</ſcript>",
    "</scrıpt>",
    ">",
    "<",
    "/",
    "<head>",
    "<HEAD lang=en>",
    "<header class=x>",
    "<head",
    ' src="a.js"',
    " SRC = b.js",
    ' type="application/json"',
    " type=module",
    " TYPE='text/javascript'",
    " type=text/plain",
    "var a = 1;",
    "x",
    " ",
    "\n",
    "—",
    "é",
    "Ł",
    "ſ",
    "ı",
    "İ",
    "\ud800",
    'http-equiv="Content-Security-Policy"',
    'HTTP-EQUIV="content-security-policy"',
]
_SKELETON = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    "<title>t</title></head><body><script>var a = 1;</script>",
    '<script id="__config" type="application/json">{"x": 1}</script>',
    '<script src="assets/app.js"></script></body></html>',
)


def _outcome(make: Callable[[str], object], html: str) -> object:
    try:
        return make(html)
    except UnicodeEncodeError as e:
        return ("refused", str(e))


_text = st.lists(st.sampled_from(_PIECES) | st.text(max_size=4), max_size=12).map("".join)


@settings(max_examples=600)
@given(st.lists(_text, min_size=len(_SKELETON) + 1, max_size=len(_SKELETON) + 1), st.booleans())
def test_generated_pages_are_their_reference(fills: list[str], bare: bool) -> None:
    """Pieces alone, or put between the parts of a page (as a stamped page's fill and data
    blocks are): the same page, policy and refusal."""
    if bare:
        html = "".join(fills)
    else:
        html = fills[0] + "".join(p + f for p, f in zip(_SKELETON, fills[1:], strict=True))
    reference = _outcome(lambda h: with_csp_reference(h).encode(), html)
    assert _outcome(with_csp_utf8, html) == reference
    assert _outcome(policy, html) == _outcome(policy_reference, html)
