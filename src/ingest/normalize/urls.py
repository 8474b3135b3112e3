"""URL policy: a record's ``url`` is null or an absolute http(s) URL, checked after parsing.

A link is judged the way a browser would read it, not the way it looks: character
references are decoded (as CommonMark does in link destinations), then the scheme is
taken after removing tab and newline characters and leading controls and blanks (as the
WHATWG URL parser does). Only ``http`` and ``https`` with a host are kept; anything else,
and any link holding control, blank, invisible or markup characters, a backslash or a
user name, is dropped with a warning whose message shows the raw value escaped.
"""

from __future__ import annotations

import html
import re
import unicodedata
from urllib.parse import urlsplit

# Characters no kept link may hold: C0/C1 controls, blanks, invisible format characters
# (bidi, zero-width, BOM), lone surrogates, markup and quoting characters, and the
# backslash (browsers read it as '/' in http(s) URLs, urllib does not).
_BAD_CHARS = re.compile(
    "[\x00-\x20\x7f-\xa0\xad\u061c\u115f\u1160\u180e\u2000-\u200f\u2028-\u202f\u205f-\u206f"
    '\u3000\u3164\ufeff\ufff9-\ufffb\ud800-\udfff<>"`\\\\]'
)
# Character references only with their ';' (``&copy=1`` in a query is not one).
_CHAR_REF = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_TAB_NEWLINE = re.compile("[\t\n\r]")
_C0_SPACE = "".join(chr(i) for i in range(0x21))
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_ALLOWED = ("http", "https")


def check_url(raw: str | None) -> tuple[str | None, tuple[str, str] | None]:
    """Return ``(url, None)`` for a usable link, else ``(None, (code, message))``.

    An empty link target is simply no URL.

    >>> check_url("https://oplearnx.com/topics/x")
    ('https://oplearnx.com/topics/x', None)
    >>> check_url("https://ok.example/a_(b)?q=1&amp;r=2")
    ('https://ok.example/a_(b)?q=1&r=2', None)
    >>> check_url("java\\tscript:alert(1)")[1][0]
    'URL_UNSAFE'
    >>> check_url("jav&#x09;ascript:alert(1)")[1][1]
    "link scheme 'javascript' is not http(s); dropped 'jav&#x09;ascript:alert(1)'"
    >>> check_url("/relative/path")[1][0]
    'URL_RELATIVE'
    >>> check_url('https://ok.example/b "标题"')
    ('https://ok.example/b', None)
    >>> check_url("<https://ok.example/a b>")[1][0]
    'URL_UNSAFE'
    >>> check_url("")
    (None, None)
    """
    if raw is None:
        return None, None
    s = raw.strip()
    if s.startswith("<") and s.endswith(">"):  # <url>: the whole of it is the link
        s = s[1:-1].strip()
    elif " " in s:  # (url "title") form
        s = s.split(" ", 1)[0]
    if not s:
        return None, None
    shown = repr(raw.strip()[:200])
    s = unicodedata.normalize("NFC", _CHAR_REF.sub(lambda m: html.unescape(m.group()), s))
    scheme = _browser_scheme(s)
    if scheme is not None and scheme not in _ALLOWED:
        return None, ("URL_UNSAFE", f"link scheme {scheme!r} is not http(s); dropped {shown}")
    bad = _BAD_CHARS.search(s)
    if bad is not None:
        what = repr(bad.group())
        return None, ("URL_UNSAFE", f"character {what} not allowed in a link; dropped {shown}")
    if scheme is None:
        return None, ("URL_RELATIVE", f"relative link {shown} has no base; dropped")
    try:
        parts = urlsplit(s)
        _ = parts.port  # raises ValueError on a bad port
    except ValueError:
        return None, ("URL_UNSAFE", f"unparsable link {shown}; dropped")
    if not s[len(scheme) + 1 :].startswith("//") or not parts.hostname:
        return None, ("URL_UNSAFE", f"{scheme} link without a host; dropped {shown}")
    if parts.username is not None or parts.password is not None:
        return None, ("URL_UNSAFE", f"link with a user name or password; dropped {shown}")
    return s, None


def _browser_scheme(s: str) -> str | None:
    """The scheme a browser would see (lower case), or None for a relative link."""
    view = _TAB_NEWLINE.sub("", s).strip(_C0_SPACE)
    m = _SCHEME.match(view)
    return m.group(1).lower() if m is not None else None
