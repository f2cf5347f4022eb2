"""URLs as text: the four `urllib.parse` functions the tool uses, from the one module importing it.

`urllib` is also `urllib.request`, which opens connections, so no module outside `core/` imports
any of it (tests/test_boundaries.py, `test_io_capable_modules_are_imported_only_in_core`); the
stages that build or take apart a URL import these names from here:

- `quote(text, safe=...)`: a path segment or query value percent-encoded (the site's links and
  badges, an OCI reference in a manifest URL);
- `urlencode(pairs)`: a query string (an OCI token request, a blob upload's digest);
- `urljoin(base, ref)`: a `Location` or `Link: rel="next"` resolved against the request's URL;
- `urlsplit(url)`: scheme, host and path, to hold a redirect or a token realm to its host.

They are the standard library's own functions, re-exported unchanged: pure string operations,
nothing opened, so every URL built is byte for byte what `urllib.parse` builds. A request is
made by `core/net.py` alone.
"""

from __future__ import annotations

from urllib.parse import SplitResult, quote, urlencode, urljoin, urlsplit

__all__ = ["SplitResult", "quote", "urlencode", "urljoin", "urlsplit"]
