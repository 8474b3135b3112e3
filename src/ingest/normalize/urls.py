"""URL policy: a record's ``url`` is null or an absolute http(s) URL, checked after parsing.

A link is judged as a browser reads it: character references decoded (as CommonMark does in
link destinations), then the scheme taken after removing tab, newline, leading controls and
blanks (as the WHATWG parser does). Only ``http(s)`` with a host is kept; anything else, and
a link holding control, blank, invisible or markup characters, a backslash or a user name,
is dropped with a warning showing the raw value escaped. A target with a blank is a link
only when a CommonMark title (``"t"``, ``'t'``, ``(t)``) follows the blank; else it is
damage and dropped, never cut at the blank.

A kept link is canonical: scheme and host in lower case, the host a domain name (IDNA 2008,
written in ASCII) or an IP address, the default port dropped, port 0 and an empty host
refused; path, query and fragment kept as they are. A *topic* is identified by the
stronger :func:`topic_url`, so every variant of one topic page gives one topic and slug.
"""

from __future__ import annotations

import contextlib
import html
import ipaddress
import re
import unicodedata
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import idna

from ingest.normalize.text import CHAR_REF, text_memo

# Characters no kept link may hold: controls, blanks, invisible format characters, lone
# surrogates, markup and quotes, and the backslash (browsers read it as '/', urllib does not).
_BAD_CHARS = re.compile(
    "[\x00-\x20\x7f-\xa0\xad\u061c\u115f\u1160\u180e\u2000-\u200f\u2028-\u202f\u205f-\u206f"
    '\u3000\u3164\ufeff\ufff9-\ufffb\ud800-\udfff<>"`\\\\]'
)
_TAB_NEWLINE = re.compile("[\t\n\r]")
_C0_SPACE = "".join(chr(i) for i in range(0x21))
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_ALLOWED = ("http", "https")
_DEFAULT_PORT = {"http": 80, "https": 443}
# A CommonMark link title after the destination: "t", 't' or (t).
_TITLE = re.compile(r"""\s*(?:"[^"]*"|'[^']*'|\([^()]*\))\s*""")
# An ASCII host label as browsers accept it (letters, digits, hyphen, underscore).
_ASCII_LABEL = re.compile(r"[a-z0-9_-]{1,63}")
#: Query parameters that only say where a visitor came from: not part of a topic's identity.
TRACKING_PARAMS = frozenset(
    {"fbclid", "gclid", "dclid", "msclkid", "yclid", "igshid", "mc_cid", "mc_eid", "_ga", "_gl"}
    | {"spm", "ref_src"}
)


def check_url(raw: str | None) -> tuple[str | None, tuple[str, str] | None]:
    """``(url, None)`` for a usable link, else ``(None, (code, message))``; an empty target
    is simply no URL.

    >>> check_url("https://ok.example/a_(b)?q=1&amp;r=2")
    ('https://ok.example/a_(b)?q=1&r=2', None)
    >>> check_url("HTTP://Ok.EXAMPLE:80/Path"), check_url('https://ok.example/b "标题"')
    (('http://ok.example/Path', None), ('https://ok.example/b', None))
    >>> check_url("https://Bücher.example/x"), check_url("")
    (('https://xn--bcher-kva.example/x', None), (None, None))
    >>> [check_url(u)[1][0] for u in ("java\\tscript:alert(1)", "/relative", "https://xn--/")]
    ['URL_UNSAFE', 'URL_RELATIVE', 'URL_UNSAFE']
    >>> [check_url(u)[1][0] for u in ("<https://ok.example/a b>", "http://a.com:0/")]
    ['URL_UNSAFE', 'URL_UNSAFE']
    >>> check_url("jav&#x09;ascript:alert(1)")[1][1]
    "link scheme 'javascript' is not http(s); dropped 'jav&#x09;ascript:alert(1)'"
    >>> check_url("http://a.com/ b")[1]
    ('URL_UNSAFE', "character ' ' not allowed in a link; dropped 'http://a.com/ b'")
    """
    if raw is None:
        return None, None
    s = raw.strip()
    if s.startswith("<") and s.endswith(">"):  # <url>: the whole of it is the link
        s = s[1:-1].strip()
    elif " " in s and _TITLE.fullmatch(s.split(" ", 1)[1]):  # (url "title") form
        s = s.split(" ", 1)[0]
    if not s:
        return None, None
    shown = repr(raw.strip()[:200])
    s = unicodedata.normalize("NFC", CHAR_REF.sub(lambda m: html.unescape(m.group()), s))
    # the scheme a browser would see (lower case), or None for a relative link
    m = _SCHEME.match(_TAB_NEWLINE.sub("", s).strip(_C0_SPACE))
    scheme = m.group(1).lower() if m is not None else None
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
    if parts.port == 0:
        return None, ("URL_UNSAFE", f"link with port 0; dropped {shown}")
    host = _host_seen(parts.hostname)
    if host is None:
        return None, ("URL_UNSAFE", f"link host is not a valid domain name; dropped {shown}")
    port = parts.port
    netloc = host if port is None or port == _DEFAULT_PORT[scheme] else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path, parts.query, parts.fragment)), None


_checked_seen = text_memo(check_url)


def checked_url(raw: str | None) -> tuple[str | None, tuple[str, str] | None]:
    """:func:`check_url`, remembered (a resource's link is on every page listing it)."""
    return check_url(None) if raw is None else _checked_seen(raw)


def canonical_host(host: str) -> str | None:
    """The host in its canonical ASCII form, or None when it is not a usable host name.

    >>> [canonical_host(h) for h in ("OK.Example", "例子.测试", "xn--", "a..b", "[::1]")]
    ['ok.example', 'xn--fsqu00a.xn--0zwm56d', None, None, '[::1]']
    """
    host = host.strip("[]")
    with contextlib.suppress(ValueError):  # not an IP address: a name
        ip = ipaddress.ip_address(host)
        return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError):
            return None
    host = host.lower()
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    return host if all(_valid_label(x) for x in labels) else None


#: :func:`canonical_host`, remembered: a crawl names a few hosts again and again.
_host_seen = text_memo(canonical_host)


def _valid_label(label: str) -> bool:
    if not _ASCII_LABEL.fullmatch(label):
        return False
    if not label.startswith("xn--"):
        return True
    try:
        idna.decode(label)
    except (idna.IDNAError, UnicodeError):
        return False
    return True


def topic_url(url: str) -> str:
    """The identity of a topic page's URL (a URL ``check_url`` kept): https, no ``www.``,
    no default port, no trailing slash, no tracking parameters (``utm_*`` and
    :data:`TRACKING_PARAMS`; the others sorted), no fragment. Path case is kept.

    >>> topic_url("http://www.oplearnx.com:443/topics/x/?utm_source=a&b=2&a=1#top")
    'https://oplearnx.com/topics/x?a=1&b=2'
    >>> topic_url("https://oplearnx.com/")
    'https://oplearnx.com'
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = host[4:] if host.startswith("www.") and host.count(".") >= 2 else host
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or port in (80, 443) else f"{host}:{port}"
    query = sorted(
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not (k.lower().startswith("utm_") or k.lower() in TRACKING_PARAMS)
    )
    return urlunsplit(("https", netloc, parts.path.rstrip("/"), urlencode(query), ""))


def unpaged(url: str) -> str:
    """A topic URL without the page number a paginated topic's part may carry (a number
    in :data:`PAGE_PARAMS`, a last ``/page/N``): what parts of one topic have in common.

    >>> unpaged("https://oplearnx.com/topics/x?page=2"), unpaged("https://oplearnx.com/x/page/3")
    ('https://oplearnx.com/topics/x', 'https://oplearnx.com/x')
    """
    parts = urlsplit(url)
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not (k.lower() in PAGE_PARAMS and v.isdigit())
    ]
    path = _PAGE_PATH.sub("", parts.path)
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode(query), ""))


def url_slug(url: str) -> str:
    """A topic's slug from its URL: the last segment of its path, lower case, ``a-z0-9-``.

    >>> url_slug("https://oplearnx.com/topics/Model_Serving?page=2")
    'model-serving'
    """
    seg = url.rstrip("/").rsplit("/", 1)[-1].split("?")[0].split("#")[0].lower()
    return _SLUG_BAD.sub("-", seg).strip("-")[:80].strip("-")


#: Query parameters that number the pages of a paginated list.
PAGE_PARAMS = frozenset({"page", "paged", "pg", "pn"})
_PAGE_PATH = re.compile(r"/page/[0-9]+$")
_SLUG_BAD = re.compile(r"[^a-z0-9-]+")
