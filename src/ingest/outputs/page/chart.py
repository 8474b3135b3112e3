"""The chart of items listed per topic and level (the largest topics: a bar each, so a
run of thousands of topics does not draw a chart thousands of bars tall): geometry for an
inline SVG.

Bars are placed in percent of the chart's width, so the SVG fills any screen (390 px or
a desktop) while its labels keep their size; the template only writes the numbers out.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from ...records.output import Item, Topic
from .view import levels_on

ROW = 40  # px per topic: a label line, then the bar
BAR_TOP = 17  # px from the top of a row to its bar
BAR_HEIGHT = 14
SPAN = 85.0  # percent of the width the longest bar fills; the rest holds its count
LABEL_COLUMNS = 44  # a label's width in columns (a CJK character takes two)
LARGEST = 20  # the topics the chart shows


@dataclass(frozen=True, slots=True)
class Segment:
    """One level's share of a bar."""

    level: str
    count: int
    x: str
    width: str


@dataclass(frozen=True, slots=True)
class Bar:
    slug: str
    label: str
    full_label: str
    top: int
    total: int
    end: str
    segments: list[Segment]


@dataclass(frozen=True, slots=True)
class Chart:
    bars: list[Bar]
    height: int
    bar_top: int = BAR_TOP
    bar_height: int = BAR_HEIGHT


def build_chart(topics: list[Topic], items: Mapping[str, Item]) -> Chart:
    """One bar for each of the :data:`LARGEST` topics with most items (then by slug),
    largest first, its segments by level, scaled to the largest."""
    largest = sorted(topics, key=lambda t: (-len(t.items), t.slug))[:LARGEST]
    scale = SPAN / (max((len(t.items) for t in largest), default=0) or 1)
    bars = [_bar(t, levels_on(t, items), n * ROW, scale) for n, t in enumerate(largest)]
    return Chart(bars, height=max(len(bars), 1) * ROW)


def _bar(t: Topic, levels: list[tuple[str | None, int]], top: int, scale: float) -> Bar:
    segments = []
    x = 0.0
    for level, count in levels:
        segments.append(Segment(level or "none", count, _pct(x), _pct(count * scale)))
        x += count * scale
    full = f"{t.name} ({t.slug})" if t.name else t.slug
    return Bar(t.slug, clip(full, LABEL_COLUMNS), full, top, len(t.items), _pct(x), segments)


def _pct(value: float) -> str:
    return f"{value:.2f}%"


def clip(text: str, columns: int) -> str:
    """``text`` cut to ``columns`` display columns (wide characters take two), with an
    ellipsis when cut.

    >>> clip("模型服务与算力", 8), clip("abc", 8), clip("abcdefghij", 8)
    ('模型服…', 'abc', 'abcdefg…')
    """
    if sum(map(_columns, text)) <= columns:
        return text
    used = 0
    for n, ch in enumerate(text):
        used += _columns(ch)
        if used > columns - 1:  # one column is kept for the ellipsis
            return text[:n] + "…"
    return text


def _columns(ch: str) -> int:
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1
