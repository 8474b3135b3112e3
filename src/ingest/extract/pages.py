"""The per-file map: read, decode, detect and parse one file into a :class:`PageResult`.

:func:`extract_page` is what every engine runs on each input. It looks at no other file.
An unexpected exception inside one file's parse is a bug, but it must not lose the run:
it becomes an INTERNAL_ERROR reject of that file.
"""

from __future__ import annotations

import hashlib
import traceback
from collections.abc import Callable
from types import ModuleType

from ..records.internal import PageReject, PageResult, Provenance
from ..records.vocab import Format
from .decode import Decoded, Locator, decode
from .detect import detect
from .discover import InputFile, StoredPage
from .parse.base import Page, excerpt
from .parse.item_page import parse_item_page
from .parse.topic_list import parse_topic_list
from .parse.topic_page import parse_topic_page
from .read import read_bytes

#: A page an earlier run parsed, by its bytes' sha256 and the name it has now (None: parse it).
Known = Callable[[str, str], PageResult | None]

_PARSERS = {
    Format.TOPIC_PAGE: parse_topic_page,
    Format.TOPIC_LIST: parse_topic_list,
    Format.ITEM_PAGE: parse_item_page,
}


def extract_page(f: InputFile | StoredPage, known: Known | None = None) -> PageResult:
    """:func:`parse_file`, with a bug in a parser turned into an INTERNAL_ERROR reject.
    A page from the state (``--merge``) is parsed from the bytes the state kept. ``known``
    gives a page whose bytes an earlier run parsed, as it parsed them (not parsed again)."""
    try:
        if isinstance(f, StoredPage):
            result = _page(f.name, f.data, known)
            result.from_state = True
            for x in result.listings:
                x.stored, x.crawled_at = True, f.crawled_at
            return result
        return parse_file(f, known)
    except Exception as e:  # a bug: keep the run going, count it, say where
        r = PageResult(f.name, "", 0, None, None)
        where = traceback.extract_tb(e.__traceback__)[-1]
        msg = f"{type(e).__name__}: {e} (at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})"
        r.rejects.append(
            PageReject(Provenance(f.name, "", "", "file", 0, 1), "INTERNAL_ERROR", msg, "", False)
        )
        return r


def parse_file(f: InputFile, known: Known | None = None) -> PageResult:
    """Read, decode, detect and parse one file. Pure: looks at no other file."""
    if f.problem is not None:
        return _file_reject(PageResult(f.name, "", 0, None, None), *f.problem, "")
    data, problem = read_bytes(f.path)
    if data is None:
        assert problem is not None
        return _file_reject(PageResult(f.name, "", 0, None, None), *problem, "")
    return _page(f.name, data, known)


def _page(name: str, data: bytes, known: Known | None) -> PageResult:
    """The page ``known`` has for these bytes, else the bytes parsed."""
    sha256 = hashlib.sha256(data).hexdigest()
    found = None if known is None else known(sha256, name)
    return found if found is not None else parse_bytes(name, data, sha256)


def parse_bytes(name: str, data: bytes, sha256: str | None = None) -> PageResult:
    """The per-file map on bytes already read (``sha256``: theirs, if already known)."""
    sha256 = sha256 or hashlib.sha256(data).hexdigest()
    result = PageResult(name, sha256, len(data), None, None)
    dec = decode(data)
    result.encoding = dec.encoding
    if dec.text is None:
        return _file_reject(
            result,
            dec.reason or "ENCODING_UNDECODABLE",
            dec.message or "",
            data[:200].decode("latin-1"),
        )
    if dec.invalid_bytes:
        result.warnings.append(f"file: INVALID_UTF8: {dec.invalid_bytes} invalid byte(s)")
    if not dec.text.strip(" \t\r\n\u3000\u00a0\ufeff\x0b\x0c"):
        return _file_reject(result, "EMPTY_INPUT", "only white space", dec.text)
    return _parse_text(result, dec)


def _parse_text(result: PageResult, dec: Decoded) -> PageResult:
    text = dec.text or ""
    locator = Locator(text, dec.codec, dec.bom_len)
    bad_bytes: bool | None = dec.invalid_bytes > 0  # strict decoding leaves none behind
    if "<" in text[:1024] and _html().looks_like_html(text):
        rendered = _html().html_to_text(text)
        result.parser = rendered.parser
        result.warnings.extend(f"file: {w}" for w in rendered.warnings)
        text, (fmt, why, marks) = _html_kind(rendered.text, rendered.plain)
        locator = Locator(text, "utf-8", 0)  # offsets now refer to the rendered text
        bad_bytes = None  # the page looks for itself
        result.warnings.append("file: HTML_INPUT: locations refer to the page's rendered text")
    else:
        fmt, why, marks = detect(text)
    if fmt is None:
        result.marks = marks  # what was seen, so a layout change shows in the report
        return _file_reject(result, "UNKNOWN_FORMAT", why, text)
    result.format = fmt.value
    _PARSERS[fmt](Page(result, text, locator, bad_bytes))
    return result


def _html_kind(markdown: str, plain: str) -> tuple[str, tuple[Format | None, str, list[str]]]:
    """A saved page's text and kind: the page is of the kind whose dump shape its text takes
    (a topic page's markdown, a topic list's or an item page's plain text). Neither, or
    both: UNKNOWN_FORMAT, as a text dump that no kind, or two, claims."""
    as_md, as_plain = detect(markdown), detect(plain)
    claims = [(markdown, as_md)] if as_md[0] is Format.TOPIC_PAGE else []
    if as_plain[0] in (Format.TOPIC_LIST, Format.ITEM_PAGE):
        claims.append((plain, as_plain))
    if len(claims) == 1:
        return claims[0]
    if claims:
        kinds = " and ".join(f.value for _, (f, _, _) in claims if f is not None)
        return markdown, (None, f"ambiguous: looks like {kinds}", as_md[2])
    return markdown, (None, as_md[1] if as_md[1].startswith("ambiguous") else as_plain[1], as_md[2])


def _html() -> ModuleType:
    """The HTML renderer, imported only when a page looks like HTML (selectolax is heavy)."""
    from . import html

    return html


def _file_reject(result: PageResult, reason: str, message: str, raw: str) -> PageResult:
    prov = Provenance(result.file, result.sha256, result.format or "", "file", 0, 1)
    result.rejects.append(PageReject(prov, reason, message, excerpt(raw), False))
    return result
