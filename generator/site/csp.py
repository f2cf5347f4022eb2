"""A Content Security Policy for every page: only the site's own scripts run.

mkdocs-material inlines a few small scripts (storage helpers, palette); rather than allow inline
script in general, the policy lists the sha256 of each inline script of that page. Anything else
— a `<script>` that recipe or evidence text might smuggle in despite escaping, an `onerror=`
handler, a script from another origin — is refused by the browser. Styles may be inline (plotly
draws with inline styles); images and fonts only from the site or `data:`.
"""

from __future__ import annotations

import base64
import hashlib
import re

_INLINE_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.S | re.I)
_HEAD = re.compile(r"<head[^>]*>", re.I)


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


def policy(html: str) -> str:
    hashes = sorted(
        {
            "'sha256-"
            + base64.b64encode(hashlib.sha256(m.group("body").encode()).digest()).decode()
            + "'"
            for m in _INLINE_SCRIPT.finditer(html)
            if _executable(m.group("attrs"))
        }
    )
    script_src = " ".join(["'self'", *hashes])
    return (
        "default-src 'self'; "
        f"script-src {script_src}; "
        "style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self'; "
        "object-src 'none'; base-uri 'self'; form-action 'self'"
    )


def with_csp(html: str) -> str:
    """The page with its policy as the first element of <head> (idempotent)."""
    if 'http-equiv="Content-Security-Policy"' in html:
        return html
    m = _HEAD.search(html)
    if m is None:
        return html
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy(html)}">'
    return html[: m.end()] + meta + html[m.end() :]
