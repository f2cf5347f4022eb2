"""What an OCI registry publishes for a chart: its tag list (`GET /v2/<name>/tags/list`).

Registries answer an anonymous request with `401` and a `WWW-Authenticate: Bearer realm=…,
service=…,scope=…` challenge; we fetch an anonymous pull token from the realm and retry once
with it. Helm stores a version's `+` as `_` in a tag, so tags are mapped back.

Registries on a loopback host (127.0.0.0/8, localhost, ::1) are spoken to over plain HTTP, as
container tools do for local registries; every other registry (and token realm) must be HTTPS.
"""

from __future__ import annotations

import ipaddress
import json
import re

from generator.core.urls import urlencode, urljoin, urlsplit
from generator.pins.http import Fetcher, FetchError, header
from generator.pins.model import Problem, ProblemKind

MAX_PAGES = 100  # bound on `Link: rel="next"` pagination
TOKEN_BYTES = 64 << 10  # an anonymous token answer
_CHALLENGE = re.compile(r'(\w+)\s*=\s*"([^"]*)"')
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


def _is_loopback(netloc: str) -> bool:
    """`localhost`, 127.0.0.0/8 or [::1], with or without a port."""
    host = urlsplit(f"//{netloc}").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def tags_url(repository: str, chart: str) -> tuple[str, str]:
    """(repository name inside the registry, URL of its tag list) for `oci://host/path` + chart."""
    ref = repository.removeprefix("oci://").rstrip("/")
    host, _, path = ref.partition("/")
    name = f"{path}/{chart}" if path and chart else (path or chart)
    scheme = "http" if _is_loopback(host) else "https"
    return name, f"{scheme}://{host}/v2/{name}/tags/list"


def list_tags(fetcher: Fetcher, repository: str, chart: str) -> tuple[str, ...]:
    """Every version published for the chart (tags with `_` read as `+`), sorted."""
    name, url = tags_url(repository, chart)
    tags: set[str] = set()
    token: str | None = None
    for _ in range(MAX_PAGES):
        page, token, next_url = _page(fetcher, url, name, token)
        tags.update(page)
        if next_url is None:
            return tuple(sorted(t.replace("_", "+") for t in tags))
        url = next_url
    message = f"GET {url}: more than {MAX_PAGES} pages of tags"
    raise FetchError(Problem(ProblemKind.MALFORMED, message))


def _page(
    fetcher: Fetcher, url: str, name: str, token: str | None
) -> tuple[list[str], str | None, str | None]:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    resp = fetcher.get(url, headers=auth, accept=frozenset({200, 401, 404}))
    if resp.status == 401 and token is None:
        token = _anonymous_token(fetcher, url, name, header(resp.headers, "WWW-Authenticate"))
        auth = {"Authorization": f"Bearer {token}"}
        resp = fetcher.get(url, headers=auth, accept=frozenset({200, 401, 404}))
    if resp.status == 401:
        message = f"GET {url}: HTTP 401: the registry refused the anonymous token"
        raise FetchError(Problem(ProblemKind.HTTP_ERROR, message, 401))
    if resp.status == 404:
        message = f"repository {name} is not in the registry ({url}: HTTP 404)"
        raise FetchError(Problem(ProblemKind.CHART_NOT_FOUND, message, 404))
    try:
        doc = json.loads(resp.body)
    except ValueError as e:
        message = f"malformed tag list {url}: not JSON"
        raise FetchError(Problem(ProblemKind.MALFORMED, message)) from e
    tags = doc.get("tags") if isinstance(doc, dict) else None
    if tags is None and isinstance(doc, dict) and "tags" in doc:
        tags = []  # a repository without tags answers `"tags": null`
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        message = f"malformed tag list {url}: no `tags` list of strings"
        raise FetchError(Problem(ProblemKind.MALFORMED, message))
    link = header(resp.headers, "Link")
    match = _NEXT.search(link) if link else None
    next_url = urljoin(url, match.group(1)) if match else None
    if next_url is not None and urlsplit(next_url).netloc != urlsplit(url).netloc:
        message = f"malformed tag list {url}: next page on another host"
        raise FetchError(Problem(ProblemKind.MALFORMED, message))
    return tags, token, next_url


def _anonymous_token(fetcher: Fetcher, url: str, name: str, challenge: str | None) -> str:
    if not challenge or not challenge.lower().startswith("bearer "):
        scheme = challenge.split(" ", 1)[0] if challenge else "no challenge"
        message = f"GET {url}: HTTP 401 and the registry offers no anonymous token ({scheme})"
        raise FetchError(Problem(ProblemKind.HTTP_ERROR, message, 401))
    params = dict(_CHALLENGE.findall(challenge))
    realm = params.pop("realm", "")
    parts = urlsplit(realm)
    if parts.scheme != "https" and not (parts.scheme == "http" and _is_loopback(parts.netloc)):
        message = f"GET {url}: HTTP 401 with an unusable token realm (not https)"
        raise FetchError(Problem(ProblemKind.MALFORMED, message, 401))
    params.setdefault("scope", f"repository:{name}:pull")
    query = urlencode(sorted(params.items()))
    token_url = f"{realm}{'&' if parts.query else '?'}{query}"
    resp = fetcher.get(token_url, conditional=False, max_bytes=TOKEN_BYTES)
    try:
        doc = json.loads(resp.body)
    except ValueError:
        doc = None
    token = (doc.get("token") or doc.get("access_token")) if isinstance(doc, dict) else None
    if not isinstance(token, str) or not token:
        # the realm is the registry's text: the message names the registry's URL instead
        message = f"malformed token response for {url}: no `token`"
        raise FetchError(Problem(ProblemKind.MALFORMED, message))
    return token
