"""A Content Security Policy for every page: only the site's own scripts run.

mkdocs-material inlines a few small scripts (storage helpers, palette); rather than allow inline
script in general, the policy lists the sha256 of each inline script of that page. Anything else
— a `<script>` that recipe or evidence text might smuggle in despite escaping, an `onerror=`
handler, a script from another origin — is refused by the browser. Styles may be inline (plotly
draws with inline styles); images and fonts only from the site or `data:`.

Every page is finished here (~22,000 at 1,000 recipes), so the page's scripts are found in its
UTF-8 bytes (`with_csp_utf8`), not with the case-insensitive regexes of `policy_reference` and
`with_csp_reference`: under `re.IGNORECASE` the engine cannot search for the pattern's literal
start and steps through every character (~65 of the ~114 µs a 54 KB page took). The bytes are
lowered (ASCII only, as `bytes.lower` does) and searched with `bytes.find`; each match is the
reference regex's match, in bytes (`_scripts`). That holds because under `re.IGNORECASE` the
letters of `<script`, `</script>` and `<head` match only their two ASCII cases, but for `ſ`
(U+017F, like s) and `ı`/`İ` (U+0131/U+0130, like i): a page that holds any of those three
goes to the reference (their UTF-8 begins with byte 0xC4 or 0xC5, checked first), and so does
a page UTF-8 cannot encode. Each script's token and whether its attributes make it run are
computed once per distinct text (`_token`, `_runs`). `tests/test_csp.py` holds the two equal
on every page of two built sites and on generated pages (hypothesis). With the page's
encoding (done here once, not after), it cut 89 → 66 µs a page (the policy's own part 57 → 33):
the 4,423 pages of the 200 x 4,000 synthetic site, 0.39 → 0.29 CPU-s.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re

_INLINE_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.S | re.I)
_HEAD = re.compile(r"<head[^>]*>", re.I)
_MARK = 'http-equiv="Content-Security-Policy"'


def _executable(attrs: str) -> bool:
    """A script element without src whose type is JavaScript (JSON data blocks do not run)."""
    if re.search(r"\bsrc\s*=", attrs, re.I):
        return False
    m = re.search(r"\btype\s*=\s*[\"']?([^\"'\s>]+)", attrs, re.I)
    return m is None or m.group(1).lower() in (
        "text/javascript",
        "module",
        "application/javascript",
    )


def _source_token(body: bytes) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode() + "'"


def _policy(hashes: list[str]) -> str:
    script_src = " ".join(["'self'", *hashes])
    return (
        "default-src 'self'; "
        f"script-src {script_src}; "
        "style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self'; "
        "object-src 'none'; base-uri 'self'; form-action 'self'"
    )


def policy_reference(html: str) -> str:
    hashes = sorted(
        {
            _source_token(m.group("body").encode())
            for m in _INLINE_SCRIPT.finditer(html)
            if _executable(m.group("attrs"))
        }
    )
    return _policy(hashes)


def with_csp_reference(html: str) -> str:
    """The page with its policy as the first element of <head> (idempotent)."""
    if _MARK in html:
        return html
    m = _HEAD.search(html)
    if m is None:
        return html
    meta = f'<meta {_MARK} content="{policy_reference(html)}">'
    return html[: m.end()] + meta + html[m.end() :]


# -- the fast path: the same, found in the page's UTF-8 ------------------------------------------

_MARK_UTF8 = _MARK.encode()
_HEAD_UTF8 = re.compile(rb"<head[^>]*>")  # on the lowered bytes: a literal start, searched for


def _utf8(html: str) -> tuple[bytes, bytes] | None:
    """The page's UTF-8 and its lowered copy, or None where the reference must look: a page
    with ſ, ı or İ (their UTF-8 begins with 0xC4 or 0xC5; only then are they looked for), or
    one UTF-8 cannot encode."""
    try:
        data = html.encode()
    except UnicodeEncodeError:
        return None
    low = data.lower()
    if (b"\xc4" in low or b"\xc5" in low) and (
        "\u017f" in html or "\u0130" in html or "\u0131" in html
    ):
        return None
    return data, low


def _scripts(data: bytes, low: bytes) -> list[str]:
    """The sorted tokens of the page's inline scripts that run: `_INLINE_SCRIPT`'s matches.
    A match begins at the first `<script` (any case) at or after where the last ended; its
    attributes run to the first `>` after, its body to the first `</script>` after that. Where
    either is missing, no later `<script` can match either."""
    tokens: set[str] = set()
    pos = 0
    while (start := low.find(b"<script", pos)) != -1:
        gt = low.find(b">", start + 7)
        if gt == -1:
            break
        end = low.find(b"</script>", gt + 1)
        if end == -1:
            break
        if _runs(data[start + 7 : gt]):
            tokens.add(_token(data[gt + 1 : end]))
        pos = end + 9
    return sorted(tokens)


def _runs(attrs: bytes) -> bool:
    return _runs_small(attrs) if len(attrs) <= _SMALL else _executable(attrs.decode())


def _token(body: bytes) -> str:
    return _token_small(body) if len(body) <= _SMALL else _source_token(body)


_SMALL = 4096  # the longest text remembered: at most 512 of each, so at most 4 MB in all


@functools.lru_cache(maxsize=512)
def _runs_small(attrs: bytes) -> bool:
    return _executable(attrs.decode())


@functools.lru_cache(maxsize=512)
def _token_small(body: bytes) -> str:
    return _source_token(body)


def policy(html: str) -> str:
    """The page's Content-Security-Policy (`policy_reference`'s, found faster)."""
    found = _utf8(html)
    if found is None:
        return policy_reference(html)
    return _policy(_scripts(*found))


def with_csp_utf8(html: str) -> bytes:
    """`with_csp_reference(html)` in UTF-8, as a finished page is published; a page UTF-8
    cannot encode raises as `.encode()` of the reference's page does."""
    found = _utf8(html)
    if found is None:
        return with_csp_reference(html).encode()
    data, low = found
    if _MARK_UTF8 in data:
        return data
    m = _HEAD_UTF8.search(low)
    if m is None:
        return data
    meta = f'<meta {_MARK} content="{_policy(_scripts(data, low))}">'.encode()
    view = memoryview(data)
    return b"".join((view[: m.end()], meta, view[m.end() :]))
