"""The per-file map: decode, detect and parse one file's bytes into a :class:`PageResult`.
An exception inside one file's parse is a bug that must not lose the run: it becomes an
INTERNAL_ERROR reject of that file (:func:`failed_page`).

A page's kind is detected from its content (never its file name), wherever it starts.
Exactly one kind must claim the page (none, or two: UNKNOWN_FORMAT, never a best-effort
parse); its marks may follow lines of no structure (a breadcrumb, a saved page's menu).
- topic page: a listing head ``N. [title](url)（kind · level）：``, or a ``# `` heading that
  a ``- 所属：`` / ``- 网站：`` header field follows;
- topic list: a stats line (``44 条精选 · …``);
- item page: a line ``推荐阅读``, ``- 分级`` or ``- 收录时间`` after a ``publisher··age`` line,
  or on a page another kind claims too; without a byline, its entry (a title and a
  summary line) must come right before ``- 分级`` or ``- 收录时间``.
"""

from __future__ import annotations

import hashlib
import traceback
from types import ModuleType

from ingest.extract.decode import Decoded, Locator, decode
from ingest.extract.parse.common import (
    DETECTION_CHARS,
    Page,
    excerpt,
    first_listing_head,
    line_pieces,
)
from ingest.extract.parse.item_page import byline_at, entry_before_kv, first_marker, parse_item_page
from ingest.extract.parse.topic_list import parse_topic_list, stats_at
from ingest.extract.parse.topic_page import locate, parse_topic_page
from ingest.records import Format, PageReject, PageResult, Provenance

_PARSERS = {
    Format.TOPIC_PAGE: parse_topic_page,
    Format.TOPIC_LIST: parse_topic_list,
    Format.ITEM_PAGE: parse_item_page,
}


def failed_page(name: str, e: Exception) -> PageResult:
    where = traceback.extract_tb(e.__traceback__)[-1]
    msg = f"{type(e).__name__}: {e} (at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})"
    return file_reject(PageResult(name, "", 0, None, None), "INTERNAL_ERROR", msg, "")


def parse_bytes(name: str, data: bytes, sha256: str | None = None) -> PageResult:
    """The per-file map on bytes already read (``sha256``: theirs, if already known)."""
    sha256 = sha256 or hashlib.sha256(data).hexdigest()
    result = PageResult(name, sha256, len(data), None, None)
    dec = decode(data)
    result.encoding = dec.encoding
    if dec.text is None:
        reason = dec.reason or "ENCODING_UNDECODABLE"
        return file_reject(result, reason, dec.message or "", data[:200].decode("latin-1"))
    if dec.invalid_bytes:
        result.warnings.append(f"file: INVALID_UTF8: {dec.invalid_bytes} invalid byte(s)")
    if not dec.text.strip(" \t\r\n\u3000\u00a0\ufeff\x0b\x0c"):
        return file_reject(result, "EMPTY_INPUT", "only white space", dec.text)
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
        return file_reject(result, "UNKNOWN_FORMAT", why, text)
    result.format = fmt.value
    _PARSERS[fmt](Page(result, text, locator, bad_bytes))
    return result


def _html_kind(markdown: str, plain: str) -> tuple[str, tuple[Format | None, str, list[str]]]:
    """A saved page's text and kind: that whose dump shape its text takes (a topic page's
    markdown, a topic list's or an item page's plain text); neither or both: UNKNOWN_FORMAT."""
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
    from ingest.extract import html  # only when a page looks like HTML: selectolax is heavy

    return html


def file_reject(result: PageResult, reason: str, message: str, raw: str) -> PageResult:
    prov = Provenance(result.file, result.sha256, result.format or "", "file", 0, 1)
    result.rejects.append(PageReject(prov, reason, message, excerpt(raw), False))
    return result


def detect(text: str) -> tuple[Format | None, str, list[str]]:
    """The page kind (or None and why not) and the structural marks seen."""
    head = text[:DETECTION_CHARS]
    lines = [s for piece in line_pieces(head) if (s := piece.strip())]
    if not lines:
        return None, "no text", []
    first = first_listing_head(head)
    frame = locate(head, first)
    marks = [m for m in frame.marks if m != "section"]
    marks += ["listings"] if first is not None else []
    claims = []
    if first is not None or ("heading" in marks and len(marks) > 1):
        claims.append(Format.TOPIC_PAGE)
    if stats_at(lines) is not None:
        claims.append(Format.TOPIC_LIST)
        marks.append("stats")
    marker = first_marker(lines)
    if marker is not None:
        marks.append("item_markers")
        byline = byline_at(lines, marker) is not None
        marks += ["byline"] if byline else []
        if byline or claims or entry_before_kv(lines):
            claims.append(Format.ITEM_PAGE)
    if len(claims) == 1:
        return claims[0], "", marks
    if not claims:
        return None, "no page kind recognised: not a topic page, topic list or item page", marks
    return None, "ambiguous: looks like " + " and ".join(c.value for c in claims), marks
