"""Where an item page's parts are: byline, main entry, key/value block, related reading.

The page starts at its ``publisher··age`` byline: the last line holding ``··`` before its
first marker (a line ``- 分级``, ``- 收录时间`` or ``推荐阅读``). Without a byline it starts
at its main entry, read backwards from the key/value block: the summary line, the original
title when it has no Chinese or repeats the Chinese title, the Chinese title. The key/value
block is the first ``- `` line after the start (a menu entry ``- 首页`` aside) and what
follows up to ``推荐阅读``; the related reading is everything after that heading.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ingest.extract.parse.common import (
    MAX_LISTINGS,
    Line,
    Page,
    ends_sentence,
    is_full_summary,
    is_furniture,
    is_summary_line,
    same_line,
    split_furniture,
    split_lines,
    without_furniture,
)
from ingest.normalize.text import has_han
from ingest.records import Listing

RELATED_HEADING = "推荐阅读"
_KV_MARKERS = frozenset(["- 分级", "- 收录时间"])
MARKERS = _KV_MARKERS | {RELATED_HEADING}
_KEYS = {"分级": "rating", "收录时间": "collected_on"}
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_UNTITLED = "a summary line where a related entry's title should be: its title lines are gone"


@dataclass(frozen=True, slots=True)
class ItemFrame:
    """Indexes into the page's non-blank lines."""

    start: int  # the page's first line: its byline, or its main entry when that is gone
    byline: int | None
    main: tuple[int, int]  # the main entry's lines (with any stray lines before the k/v)
    kv: tuple[int, int]  # the key/value block's lines
    related: int | None  # the '推荐阅读' line


def is_kv(text: str) -> bool:
    return text.lstrip().startswith("- ")


def first_marker(texts: Sequence[str]) -> int | None:
    return next((i for i, s in enumerate(texts) if s.strip() in MARKERS), None)


def byline_at(texts: Sequence[str], before: int) -> int | None:
    """The last line holding '··' before ``before`` that is not site furniture."""
    return next(
        (i for i in range(before - 1, -1, -1) if "··" in texts[i] and not is_furniture(texts[i])),
        None,
    )


def locate(lines: list[Line]) -> ItemFrame:
    texts = [ln.text for ln in lines]
    marker = first_marker(texts)
    bound = len(lines) if marker is None else marker
    byline = byline_at(texts, bound)
    start = byline if byline is not None else _entry_start(texts, _kv_start(texts, bound))
    first = start + 1 if byline is not None else start
    kv_at = next(
        (i for i in range(first, len(lines)) if is_kv(texts[i]) and not is_furniture(texts[i])),
        None,
    )
    rel_at = next(
        (i for i in range(kv_at or first, len(lines)) if texts[i].strip() == RELATED_HEADING),
        None,
    )
    main_end = min(x for x in (kv_at, rel_at, len(lines)) if x is not None)
    kv_end = rel_at if rel_at is not None else len(lines)
    return ItemFrame(start, byline, (first, main_end), (main_end, kv_end), rel_at)


def entry_before_kv(texts: list[str]) -> bool:
    """Is there a key/value block (``- 分级`` / ``- 收录时间``) with an entry (a title and a
    summary line) before it? What a byline-less item page must show to be one."""
    kv = next((i for i, s in enumerate(texts) if s.strip() in _KV_MARKERS), None)
    return kv is not None and _summary_before(texts, _kv_start(texts, kv)) is not None


def _kv_start(texts: list[str], marker: int) -> int:
    """The first line of the key/value block that ends at (or holds) the first marker."""
    i = marker if marker < len(texts) and is_kv(texts[marker]) else marker - 1
    while i >= 0 and is_kv(texts[i]):
        i -= 1
    return i + 1


def _entry_start(texts: list[str], kv: int) -> int:
    """Where the main entry before the key/value block at ``kv`` starts (see the module
    docstring); line 0 when that shape is not there."""
    j = _summary_before(texts, kv)
    if j is None:
        return 0
    title = j - 1
    if title >= 1 and (not has_han(texts[title]) or same_line(texts[title - 1], texts[title])):
        title -= 1
    return title


def _summary_before(texts: list[str], kv: int) -> int | None:
    """The summary line of an entry ending just before line ``kv`` (site furniture after
    it aside), when a line comes before it for a title; else None."""
    j = kv - 1
    while j >= 0 and is_furniture(texts[j]):
        j -= 1
    return j if j >= 1 and is_summary_line(texts[j]) else None


def parse_item_page(page: Page) -> None:
    lines = page.without_long_lines([ln for ln in split_lines(page.text) if ln.text.strip()])
    if not lines:
        return
    frame = locate(lines)
    page.skip(lines[: frame.start], "before the page's first structural mark")
    publisher = age = None
    if frame.byline is not None:
        publisher, age = _byline(page, lines[frame.byline])
        page.mark("byline")
    else:
        page.warn("BYLINE_MISSING", "file", "no 'publisher··age' line: publisher and age unknown")
    main = _main_entry(page, lines[slice(*frame.main)], lines[frame.start])
    facts = _kv(page, lines[slice(*frame.kv)], frame.related is not None)
    if main is not None:
        main.publisher, main.published_ago = publisher, age
        main.rating, main.collected_on = facts.get("rating"), facts.get("collected_on")
        page.add(main)
    if frame.related is not None:
        page.mark("related_heading")
        related = lines[frame.related + 1 :]
        _related(page, without_furniture(page, related, "in the related reading"))
        if main is not None:
            main.related_idx = tuple(x.index for x in page.result.listings if x.role == "related")


def _byline(page: Page, line: Line) -> tuple[str | None, str | None]:
    publisher, _, age = line.text.rpartition("··")
    where = f"line {line.number}"
    return page.field(publisher, where) or None, page.field(age, where) or None


def _main_entry(page: Page, region: list[Line], anchor: Line) -> Listing | None:
    """The page's own entry. Site furniture before it, and lines after its finished
    summary that read like no summary (before the key/value block), are skipped."""
    lead = 0
    while lead < len(region) and is_furniture(region[lead].text):
        lead += 1
    page.skip(region[:lead], "before the item's title")
    region = region[lead:]
    size = _entry_size(region, 0) if region else -1
    rest = region[size:] if size > 0 else []
    if (
        rest
        and ends_sentence(region[size - 1].text)
        and not any(is_summary_line(ln.text) for ln in rest)
    ):
        page.skip(rest, "between the item's summary and its key/value block")
        region = region[:size]
    main = _entry(page, region, 0, "main", anchor)
    if main is not None:
        page.mark("entry")
    return main


def _kv(page: Page, lines: list[Line], related: bool) -> dict[str, str]:
    lines, furniture = split_furniture(lines)
    page.skip(furniture, "of site furniture among key/values")
    last = max((i for i, ln in enumerate(lines) if is_kv(ln.text)), default=-1)
    after = lines[last + 1 :]
    if after and not any(is_summary_line(ln.text) for ln in after):
        page.skip(after, "after the key/value block" + (" before 推荐阅读" if related else ""))
        lines = lines[: last + 1]
    items = [ln for ln in lines if is_kv(ln.text)]
    for ln in lines:
        if not is_kv(ln.text):
            why = "a line inside the key/value block that is not '- ...'"
            page.reject_line(ln, "UNEXPECTED_LINE", why)
    if items:
        page.mark("key_values")
    texts = [page.field(ln.text.lstrip()[2:], f"line {ln.number}") for ln in items]
    facts: dict[str, str] = {}
    for k, v in _pairs(page, items, texts):
        key_ln, val_ln, key, value = items[k], items[v], texts[k], texts[v]
        name = _KEYS.get(key)
        if name is None:
            page.warn("UNKNOWN_KEY", f"line {key_ln.number}", f"{key!r} = {value!r} not used")
        elif name in facts:
            page.warn("BAD_KV", f"line {key_ln.number}", f"{key!r} given twice; first kept")
        elif name == "collected_on" and not _valid_date(value):
            page.warn("BAD_DATE", f"line {val_ln.number}", f"{value!r} is not a YYYY-MM-DD date")
        else:
            facts[name] = value
    return facts


def _pairs(page: Page, items: list[Line], texts: list[str]) -> list[tuple[int, int]]:
    """Key/value pairs (indexes) in order. A line that is no known key, right before a
    known key, cannot be a key with its value: a stray line (skipped), not a shift."""
    pairs, i = [], 0
    while i < len(items):
        if i + 1 >= len(items):
            page.warn("BAD_KV", f"line {items[i].number}", "a key without a value")
        elif texts[i] not in _KEYS and texts[i + 1] in _KEYS:
            page.skip([items[i]], "in the key/value block, before a known key")
            i += 1
            continue
        else:
            pairs.append((i, i + 1))
        i += 2
    return pairs


def _valid_date(s: str) -> bool:
    if not _DATE.match(s):
        return False
    try:
        dt.date.fromisoformat(s)
    except ValueError:
        return False
    return True


def _entry(page: Page, lines: list[Line], ordinal: int, role: str, anchor: Line) -> Listing | None:
    """One resource from 2 lines (title, summary) or 3 (title, original title, summary)."""
    where = "item" if role == "main" else f"related {ordinal}"
    first = lines[0] if lines else anchor
    raw = _text(lines)
    if len(lines) not in (2, 3) or not is_summary_line(lines[-1].text):
        reason = "TRUNCATED_ITEM" if len(lines) < 2 else "ITEM_MALFORMED"
        why = f"expected title, [original title,] summary; got {len(lines)} line(s)"
        page.reject(first.start, where, reason, why, raw)
        return None
    problem = page.bad_raw(raw)
    if problem is None and page.cut_short(lines[-1]):
        problem = ("TRUNCATED_ITEM", "the file ends inside this entry's summary")
    if problem is not None:
        page.reject(first.start, where, problem[0], problem[1], raw)
        return None
    loc = f"{where} (line {first.number})"
    title = page.field(lines[0].text, loc) or None
    original = page.field(lines[1].text, loc) or None if len(lines) == 3 else None
    return Listing(
        prov=page.prov(first.start, where),
        ordinal=ordinal,
        title_zh=title,
        title_original=original,
        original_is_chinese=len(lines) == 2,
        summary_zh=page.field(lines[-1].text, loc),
        role=role,
    )


def _related(page: Page, lines: list[Line]) -> None:
    """Split the related reading into entries; an entry missing its summary is rejected
    alone (its title lines), and the next entry starts where the next title does. A
    summary where an entry's title should be is rejected alone, never read as a title."""
    i, ordinal = 0, 0
    while i < len(lines) and ordinal < MAX_LISTINGS:
        ordinal += 1
        where = f"related {ordinal}"
        if is_full_summary(lines[i].text):
            page.reject(lines[i].start, where, "MISSING_FIELD", _UNTITLED, lines[i].text)
            i += 1
            continue
        size = _entry_size(lines, i)
        if size < 0 and i + 3 >= len(lines):
            size = i - len(lines)  # the file ends inside this entry: all of the rest is it
        chunk = lines[i : i + abs(size)]
        i += abs(size)
        if size > 0:
            entry = _entry(page, chunk, ordinal, "related", chunk[0])
            if entry is not None:
                page.mark("related")
                page.add(entry)
        elif page.is_last(chunk[-1]):
            why = "the file ends before this related entry's summary"
            page.reject(chunk[0].start, where, "TRUNCATED_ITEM", why, _text(chunk))
        else:
            why = "a related entry without its summary line"
            page.reject(chunk[0].start, where, "MISSING_FIELD", why, _text(chunk))


def _text(lines: list[Line]) -> str:
    return "\n".join(ln.text for ln in lines)


def _entry_size(lines: list[Line], i: int) -> int:
    """Lines of the entry starting at ``lines[i]`` (its Chinese title, however much it reads
    like prose): 2 or 3 when it ends with its summary, negative when it has none.

    The second line is the original title when it repeats the Chinese title (a Chinese
    original), when it reads like no summary, or when it holds no full stop and a summary
    that ends with one follows it; else, when it reads like a summary, it is the summary."""
    if i + 1 >= len(lines):
        return -1
    second = lines[i + 1].text
    if same_line(second, lines[i].text):
        return 3 if _summary_at(lines, i + 2) else -2
    if _summary_at(lines, i + 1) and (
        "。" in second or i + 2 >= len(lines) or not is_full_summary(lines[i + 2].text)
    ):
        return 2
    if _summary_at(lines, i + 2):
        return 3
    return -2 if not has_han(second) else -1


def _summary_at(lines: list[Line], j: int) -> bool:
    """Is ``lines[j]`` a summary? One that does not end a sentence must be followed by a
    Chinese title line (or nothing): a title followed by an English title is a title."""
    if j >= len(lines) or not is_summary_line(lines[j].text):
        return False
    return ends_sentence(lines[j].text) or j + 1 >= len(lines) or has_han(lines[j + 1].text)
