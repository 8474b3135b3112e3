"""URL policy: a record's ``url`` is null or an absolute http(s) URL, checked after parsing."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_BAD_CHARS = re.compile(r"[\x00-\x20\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff<>\"`]")


def check_url(raw: str | None) -> tuple[str | None, tuple[str, str] | None]:
    """Return ``(url, None)`` for a usable link, else ``(None, (code, message))``.

    An empty link target is simply no URL.

    >>> check_url("https://oplearnx.com/topics/x")
    ('https://oplearnx.com/topics/x', None)
    >>> check_url("java\\tscript:alert(1)")[1][0]
    'URL_UNSAFE'
    >>> check_url("")
    (None, None)
    """
    if raw is None:
        return None, None
    s = raw.strip()
    if s.startswith("<") and s.endswith(">"):
        s = s[1:-1].strip()
    if " " in s:  # (url "title") form
        s = s.split(" ", 1)[0]
    if not s:
        return None, None
    shown = repr(s[:200])
    if _BAD_CHARS.search(s):
        return None, ("URL_UNSAFE", f"control or blank characters in link {shown}")
    try:
        parts = urlsplit(s)
    except ValueError:
        return None, ("URL_UNSAFE", f"unparsable link {shown}")
    scheme = parts.scheme.lower()
    if scheme in ("http", "https") and parts.netloc and parts.hostname:
        return s, None
    if not scheme:
        return None, ("URL_RELATIVE", f"relative link {shown} has no base; dropped")
    return None, ("URL_UNSAFE", f"link scheme {scheme!r} is not http(s); dropped {shown}")
