"""The Content Security Policy: every page carries one, and a browser enforces it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generator.site.csp import policy, with_csp
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
    once = with_csp(PAGE)
    assert once.startswith('<html><head><meta http-equiv="Content-Security-Policy"')
    assert with_csp(once) == once


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
