"""Item page (plain text): one resource, its key/value block and its related reading.

Layout: ``publisher··age``; Chinese title; original title; summary; ``- key`` / ``- value``
lines; ``推荐阅读``; then related entries of Chinese title, original title and summary. Where
the page starts and where its parts are is :mod:`.item_frame`'s to say; stray lines around
them are skipped with a warning (LINES_SKIPPED), never read into an entry or a key.

An entry is read by what its lines are, not by counting them. A resource written in Chinese
shows its Chinese title again on the original-title line, or no such line: both are a
Chinese original (``original_is_chinese``; its original title is its Chinese title). A
summary holds a full stop (``。``) and a title never does, so a line that reads like a
summary and holds one never starts an entry: it is rejected (MISSING_FIELD) rather than
read as a title, and a title-shaped line followed by such a summary is the original title.
"""

from __future__ import annotations

import datetime as dt
import re

from ...normalize.text import has_han
from ...records.internal import Listing
from .base import MAX_LISTINGS, Line, Page, ends_sentence, split_lines
from .item_frame import is_kv, locate
from .lines import (
    is_full_summary,
    is_furniture,
    is_summary_line,
    same_line,
    split_furniture,
    without_furniture,
)

_KEYS = {"分级": "rating", "收录时间": "collected_on"}
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


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
        _related(
            page, without_furniture(page, lines[frame.related + 1 :], "in the related reading")
        )
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
            page.reject(
                ln.start,
                f"line {ln.number}",
                "UNEXPECTED_LINE",
                "a line inside the key/value block that is not '- ...'",
                ln.text,
            )
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
    raw = "\n".join(ln.text for ln in lines)
    if len(lines) not in (2, 3) or not is_summary_line(lines[-1].text):
        reason = "TRUNCATED_ITEM" if len(lines) < 2 else "ITEM_MALFORMED"
        page.reject(
            first.start,
            where,
            reason,
            f"expected title, [original title,] summary; got {len(lines)} line(s)",
            raw,
        )
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
        if is_full_summary(lines[i].text):
            _untitled(page, lines[i], ordinal)
            i += 1
            continue
        size = _entry_size(lines, i)
        if size < 0 and i + 3 >= len(lines):
            size = i - len(lines)  # the file ends inside this entry: all of the rest is it
        _add_related(page, lines[i : i + abs(size)], ordinal, complete=size > 0)
        i += abs(size)


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


def _untitled(page: Page, line: Line, ordinal: int) -> None:
    page.reject(
        line.start,
        f"related {ordinal}",
        "MISSING_FIELD",
        "a summary line where a related entry's title should be: its title lines are gone",
        line.text,
    )


def _add_related(page: Page, chunk: list[Line], ordinal: int, *, complete: bool) -> None:
    if not complete:
        cut = page.is_last(chunk[-1])
        page.reject(
            chunk[0].start,
            f"related {ordinal}",
            "TRUNCATED_ITEM" if cut else "MISSING_FIELD",
            "the file ends before this related entry's summary"
            if cut
            else "a related entry without its summary line",
            "\n".join(x.text for x in chunk),
        )
        return
    entry = _entry(page, chunk, ordinal, "related", chunk[0])
    if entry is not None:
        page.mark("related")
        page.add(entry)
