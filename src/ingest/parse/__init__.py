"""Parse: one module per page kind; :func:`parse_file` is the per-file map."""

from __future__ import annotations

import hashlib
from types import ModuleType

from ..models import Format, PageReject, PageResult, Provenance
from ..read import Decoded, InputFile, Locator, decode, read_bytes
from .base import Page, excerpt
from .detect import detect
from .item_page import parse_item_page
from .topic_list import parse_topic_list
from .topic_page import parse_topic_page

_PARSERS = {
    Format.TOPIC_PAGE: parse_topic_page,
    Format.TOPIC_LIST: parse_topic_list,
    Format.ITEM_PAGE: parse_item_page,
}


def parse_file(f: InputFile) -> PageResult:
    """Read, decode, detect and parse one file. Pure: looks at no other file."""
    if f.problem is not None:
        return _file_reject(PageResult(f.name, "", 0, None, None), *f.problem, "")
    data, problem = read_bytes(f)
    if data is None:
        assert problem is not None
        return _file_reject(PageResult(f.name, "", 0, None, None), *problem, "")
    return parse_bytes(f.name, data)


def parse_bytes(name: str, data: bytes) -> PageResult:
    """The per-file map on bytes already read."""
    result = PageResult(name, hashlib.sha256(data).hexdigest(), len(data), None, None)
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
    if "<" in text[:1024] and _html().looks_like_html(text):
        rendered = _html().html_to_text(text)
        result.parser = rendered.parser
        result.warnings.extend(f"file: {w}" for w in rendered.warnings)
        text = rendered.text
        locator = Locator(text, "utf-8", 0)  # offsets now refer to the rendered text
        result.warnings.append("file: HTML_INPUT: locations refer to the page's rendered text")
    fmt, why = detect(text)
    if fmt is None:
        return _file_reject(result, "UNKNOWN_FORMAT", why, text)
    result.format = fmt.value
    _PARSERS[fmt](Page(result, text, locator))
    return result


def _html() -> ModuleType:
    """The HTML renderer, imported only when a page looks like HTML (selectolax is heavy)."""
    from .. import htmltext

    return htmltext


def _file_reject(result: PageResult, reason: str, message: str, raw: str) -> PageResult:
    prov = Provenance(result.file, result.sha256, result.format or "", "file", 0, 1)
    result.rejects.append(PageReject(prov, reason, message, excerpt(raw), False))
    return result
