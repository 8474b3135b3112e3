"""Topic list (plain text): description line, stats line, then title / summary line pairs.

Pairs are read by what each line is, not by position alone: a line that reads like a
Chinese summary is a summary, so a missing title leaves its summary an *orphan* (joined
later by its summary, or rejected) instead of shifting every later title onto the wrong
listing. A Chinese resource's title may read like a summary (by its length, or a question
mark): a line without a full stop (``。``) before a summary with one is that title.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ingest.extract.parse.common import (
    MAX_LISTINGS,
    Line,
    Page,
    ends_sentence,
    is_full_summary,
    is_furniture,
    is_summary_line,
    split_lines,
    without_furniture,
)
from ingest.normalize.text import clean, has_han, match_key
from ingest.records import LEVELS, Listing, TopicStats

STATS = re.compile(r"^\s*([0-9]{1,9})\s*条精选(.*)$")
_LEVEL_COUNT = re.compile(r"^(\S+)\s+([0-9]{1,9})$")


def stats_at(texts: Sequence[str]) -> int | None:
    """The index of the first stats line (``44 条精选 · …``), if there is one."""
    return next((i for i, s in enumerate(texts) if STATS.match(s.strip())), None)


def parse_topic_list(page: Page) -> None:
    lines = [ln for ln in split_lines(page.text) if ln.text.strip()]
    at = stats_at([ln.text for ln in lines])
    assert at is not None  # detection guarantees the stats line
    desc = next((i for i in range(at - 1, -1, -1) if not is_furniture(lines[i].text)), None)
    page.skip(lines[: at if desc is None else desc], "before the page's first structural mark")
    if desc is None:
        page.warn("DESCRIPTION_MISSING", "file", "no description line: topic unknown")
    else:
        page.skip(lines[desc + 1 : at], "between the description and the stats line")
        description = page.field(lines[desc].text, f"line {lines[desc].number}")
        page.result.stats = _stats(page, description, lines[at])
        page.mark("description")
    page.mark("stats")
    body = without_furniture(page, page.without_long_lines(lines[at + 1 :]), "in the entries")
    if body:
        page.mark("entries")
    i = 0
    ordinal = 0
    while i < len(body) and ordinal < MAX_LISTINGS:
        line = body[i]
        if is_summary_line(line.text) and not _heads_summary(body, i):
            _listing(page, None, line, ordinal, orphan=True)
            ordinal += 1
            i += 1
        elif i + 1 >= len(body) or (page.is_last(body[i + 1]) and not _pairs(body, i)):
            _no_summary(page, body[i : i + 2])
            i += 2
        elif not _pairs(body, i):
            why = "a title line followed by another title line; no summary"
            page.reject_line(line, "PAIRING_ERROR", why)
            i += 1
        elif _wrapped(body, i + 1):
            raw = "\n".join(x.text for x in body[i : i + 3])
            why = "the summary goes on over the next line (wrapped?)"
            page.reject_line(line, "PAIRING_ERROR", why, raw)
            i += 3
        else:
            _listing(page, line, body[i + 1], ordinal, orphan=False)
            ordinal += 1
            i += 2
    if i < len(body):
        why = f"more than {MAX_LISTINGS} listings; the rest is not read"
        page.reject_line(body[i], "TOO_MANY_ITEMS", why)


def _no_summary(page: Page, lines: list[Line]) -> None:
    """A title (or two) at the end of the entries: cut short if the file ends there, else
    (site furniture follows) a title without its summary."""
    raw = "\n".join(x.text for x in lines)
    if page.is_last(lines[-1]):
        reason, message = "TRUNCATED_ITEM", "the file ends before this listing's summary does"
    else:
        reason, message = "PAIRING_ERROR", "a title line at the end of the entries; no summary"
    page.reject_line(lines[0], reason, message, raw)


def _heads_summary(body: list[Line], i: int) -> bool:
    """Is ``body[i]``, which reads like a summary, the title of the next line? Yes when it
    holds no full stop and the next line is a summary that does (see the module docstring)."""
    return "。" not in body[i].text and i + 1 < len(body) and is_full_summary(body[i + 1].text)


def _pairs(body: list[Line], i: int) -> bool:
    """Can the title at ``body[i]`` pair with the next line as its summary? Not when that
    line is a title itself: no Chinese at all, or a summary line follows it."""
    nxt = body[i + 1].text
    after = body[i + 2].text if i + 2 < len(body) else ""
    return is_summary_line(nxt) or (has_han(nxt) and not is_summary_line(after))


def _wrapped(body: list[Line], j: int) -> bool:
    """Does the summary at ``body[j]`` stop mid-sentence, with more summary-like text on the
    next line (a wrapped line, or a title missing after a cut summary: either way unsafe)?"""
    return (
        j + 1 < len(body) and not ends_sentence(body[j].text) and is_summary_line(body[j + 1].text)
    )


def _stats(page: Page, description: str, line: Line) -> TopicStats:
    m = STATS.match(clean(line.text))
    assert m is not None  # stats_at found it
    levels: dict[str, int] = {}
    notes: list[str] = []
    for part in (p.strip() for p in m.group(2).split("·")):
        lm = _LEVEL_COUNT.match(part)
        if lm is not None and lm.group(1) in LEVELS:
            levels[LEVELS[lm.group(1)]] = int(lm.group(2))
        elif part:
            notes.append(part)
    return TopicStats(
        description=description,
        description_key=match_key(description),
        declared_count=int(m.group(1)),
        declared_levels=levels,
        order_note=" · ".join(notes) or None,
    )


def _listing(page: Page, title: Line | None, summary: Line, ordinal: int, *, orphan: bool) -> None:
    first = title or summary
    where = f"line {first.number}"
    raw = (title.text + "\n" if title else "") + summary.text
    problem = page.bad_raw(raw)
    if problem is None and page.cut_short(summary):
        problem = ("TRUNCATED_ITEM", "the file ends inside this listing's summary")
    if problem is not None:
        page.reject(first.start, where, problem[0], problem[1], raw)
        return
    if orphan:
        page.warn("TITLE_MISSING", where, "summary line without its title line")
    stats = page.result.stats
    page.add(
        Listing(
            prov=page.prov(first.start, where),
            ordinal=ordinal,
            summary_zh=page.field(summary.text, f"line {summary.number}"),
            title_original=page.field(title.text, where) or None if title else None,
            topic_key=stats.description_key if stats else None,
            role="orphan" if orphan else "listing",
        )
    )
