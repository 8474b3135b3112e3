"""Topic page header and footer: name, description, category, URL and slug; notice and site.

The header is ``# NAME DESCRIPTION - 所属：[category]() - 网站：[url]()`` (flattened onto one
line, or with line breaks); the footer follows the last listing after ``---``.
"""

from __future__ import annotations

import re

from ...normalize.text import clean, match_key, md_unescape
from ...normalize.urls import check_url, topic_url
from ...records.internal import TopicHeader
from .base import Page
from .topic_frame import FOOTER, HEADER_FIELD, SECTION

_LINK = re.compile(r"\[((?:\\.|[^\]\\]){0,2000})\]\(([^()\s]{0,2000})\)")
_SITE = re.compile(r"来源\s*[：:]\s*(.+?)\s*[（(]\s*(\S+?)\s*[）)]\s*$")
_SLUG_BAD = re.compile(r"[^a-z0-9-]+")


def parse_header(page: Page, raw: str) -> TopicHeader:
    sec = SECTION.search(raw)
    raw = raw[: sec.start()] if sec is not None else raw
    raw = raw.lstrip("\ufeff \t\r\n")
    raw = raw[1:] if raw.startswith("#") else raw
    parts = HEADER_FIELD.split(raw)
    title_desc = parts[0]
    fields = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    category = _link_text(page, fields.get("所属"))
    url, topic_url = _header_url(page, fields.get("网站"))
    name, desc, keys = _split_name(page, title_desc)
    return TopicHeader(
        slug=_slug(page, topic_url),
        name=name,
        description=desc,
        description_keys=keys,
        category=category,
        url=url,
        site_name=None,
        site_url=None,
        notice=None,
    )


def _link_text(page: Page, raw: str | None) -> str | None:
    if raw is None:
        return None
    m = _LINK.search(raw)
    text = m.group(1) if m is not None else raw
    return page.field(text, "header", markdown=True) or None


def _header_url(page: Page, raw: str | None) -> tuple[str | None, str | None]:
    """The topic's URL and the text the slug comes from: the canonical topic URL
    (:func:`~ingest.normalize.urls.topic_url`, the same for every variant of the page's
    URL) when the header gives a usable link, else the raw text."""
    if raw is None:
        return None, None
    m = _LINK.search(raw)
    candidates = [md_unescape(m.group(2)), md_unescape(m.group(1))] if m else [raw.strip()]
    for c in candidates:
        url, _ = check_url(c)
        if url is not None:
            canonical = topic_url(url)
            return canonical, canonical
    text = clean(candidates[-1])
    return page.url(text, "header"), text


def _split_name(page: Page, raw: str) -> tuple[str | None, str | None, tuple[str, ...]]:
    """Split '# NAME DESCRIPTION'. A line break decides; on one line the first space does,
    and every later space is kept as a candidate for the join with a topic-list."""
    raw = raw.strip()
    if "\n" in raw or "\r" in raw:
        first, _, rest = raw.replace("\r", "\n").partition("\n")
        name = page.field(first, "header", markdown=True)
        desc = page.field(rest, "header", markdown=True)
        return name or None, desc or None, (match_key(desc),) if desc else ()
    text = page.field(raw, "header", markdown=True)
    if " " not in text:
        return text or None, None, ()
    name, _, desc = text.partition(" ")
    spaces = [i for i, ch in enumerate(text) if ch == " "]
    keys = tuple(match_key(text[i + 1 :]) for i in spaces[:32])
    return name, desc, keys


def _slug(page: Page, url: str | None) -> str:
    if url:
        seg = url.rstrip("/").rsplit("/", 1)[-1].split("?")[0].split("#")[0].lower()
        slug = _SLUG_BAD.sub("-", seg).strip("-")[:80].strip("-")
        if slug:
            return slug
    page.warn("SLUG_MISSING", "header", "no usable topic URL; slug derived from the header")
    return ""


def find_footer(page: Page, text: str, after: int) -> int | None:
    """The first '---' after the last listing head; later ones are warned about."""
    found = [m.start() for m in FOOTER.finditer(text, after)]
    if len(found) > 1:
        page.warn(
            "FOOTER_REPEATED",
            "footer",
            f"{len(found)} '---' separators after the last listing; the first ends the listings",
        )
    return found[0] if found else None


def parse_footer(page: Page, raw: str) -> None:
    """The footer's notice and source site, from its text after the ``---``."""
    body = clean(raw)
    header = page.result.header
    if header is None:
        return
    m = _SITE.search(body)
    if m is not None:
        header.site_name = m.group(1)
        header.site_url = page.url(m.group(2), "footer")
        body = body[: body.find("来源")].strip()
    header.notice = body or None
