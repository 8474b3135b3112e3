"""A topic's block (its facts, and its items in rank order: the bulk of the pages beside the
report page; a large topic's block in parts) and the chart's bars, as Python string
building: a large run has a hundred thousand topic rows, and Jinja macro calls cost ten
times more per row. Every value goes through :func:`.text.escape`; the result is inserted
as it is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import chain

from ...records.output import Item, ItemTopic, Topic
from .chart import Chart
from .pager import Entry, cut
from .rows import Shown, declared, levels
from .text import NAME, TABLE_TAIL, TEXT, URL, escape, n_of, safe_href, shown
from .view import LEVELS


def topic_blocks(
    topic: Topic | None, ids: Sequence[str], s: Shown, seen: set[str]
) -> Iterator[Entry]:
    """A topic's ``<details>`` block (``None``: the items on no topic): its summary line,
    its facts, its table of items; a large topic's in parts (see :func:`.pager.cut`), each
    saying which of its items it holds. An item not in ``seen`` gets its anchor here (links
    to it land on its first row) and is added to it."""
    on = {} if topic is None else s.places.get(topic.slug, {})
    rows = (_row(i, on.get(i), s, seen) for i in ids)

    def head(start: int, stop: int) -> str:
        span = "" if stop - start == len(ids) else f", {start + 1}–{stop} here"
        if topic is None:
            anchor = ' id="unlisted"' if start == 0 else ""
            return (
                f'<details class="topic"{anchor} open>\n<summary><span class="name">'
                f'Items on no topic</span> <span class="count">{n_of(len(ids), "item")}{span}'
                '</span></summary>\n<div class="topic-body">\n<p>Found only in an item '
                "page's related reading.</p>\n" + TABLE_HEAD
            )
        return _topic_head(topic, start == 0, span, s) + TABLE_HEAD

    parts = cut(rows, head, TABLE_TAIL + "</div>\n</details>\n")
    if topic is None:
        return parts
    first = next(parts)  # the part with the topic's anchor
    return chain([first._replace(marks=(f"topic-{topic.slug}", *first.marks))], parts)


def _topic_head(topic: Topic, first: bool, span: str, s: Shown) -> str:
    slug = escape(topic.slug)
    check = s.view.checks.get(topic.slug)
    badge = ""
    if check is not None:
        good = check.ok
        said = "declared counts " + ("match" if good else "differ")
        badge = f' <span class="badge {"good" if good else "bad"}">{said}</span>'
    href = safe_href(topic.url)
    url = f'<a href="{escape(href)}" rel="noreferrer">{shown(topic.url, URL)}</a>' if href else None
    anchor = f' id="topic-{slug}"' if first else ""
    on = s.places.get(topic.slug, {})
    counts = dict.fromkeys(LEVELS, 0)
    for item_id in topic.items:
        place = on.get(item_id)
        counts[None if place is None else place.level] += 1
    return (
        f'<details class="topic"{anchor} open>\n<summary><span class="name" lang="zh">'
        f"{shown(topic.name or topic.slug)}</span> <code>{shown(topic.slug)}</code> "
        f'<span class="count">{n_of(len(topic.items), "item")}{span}</span>{badge}</summary>\n'
        '<div class="topic-body">\n'
        + (f'<p lang="zh">{shown(topic.description, TEXT)}</p>\n' if topic.description else "")
        + f'<dl class="facts">\n<div><dt>category</dt><dd lang="zh">{shown(topic.category)}'
        f'</dd></div>\n<div><dt>url</dt><dd class="path">{url or shown(topic.url, URL)}</dd>'
        f"</div>\n<div><dt>declared on the site</dt><dd>{declared(check)}</dd></div>\n"
        f"<div><dt>levels</dt><dd>{levels((k, v) for k, v in counts.items() if v)[2:]}</dd>"
        "</div>\n</dl>\n"
    )


TABLE_HEAD = (
    '<table class="stack items">\n<thead><tr><th class="num">#</th><th>Level</th>'
    "<th>Chinese title</th><th>Original title</th><th>Kind</th><th>Language</th><th>Id</th>"
    "</tr></thead>\n<tbody>\n"
)


def _row(item_id: str, place: ItemTopic | None, s: Shown, seen: set[str]) -> Entry:
    cells = s.cells.get(item_id, f"<td></td><td></td><td></td><td></td><td>{shown(item_id)}</td>")
    if item_id in seen:
        return Entry(f"<tr>{_place_cells(place)}{cells}</tr>\n")
    seen.add(item_id)
    row = f'<tr id="item-{escape(item_id)}">{_place_cells(place)}{cells}</tr>\n'
    return Entry(row, (f"item-{item_id}",))


def _place_cells(place: ItemTopic | None) -> str:
    """A row's rank and level cells."""
    if place is None:
        return _cells_of(None, None, None)
    return _cells_of(place.rank, place.level, place.level_label)


@lru_cache(maxsize=4096)  # pure; ranks and levels repeat across a hundred thousand rows
def _cells_of(rank: int | None, level: str | None, level_label: str | None) -> str:
    shown_ = escape((level or level_label or "—")[:NAME])
    return f'<td>{escape(rank or "—")}</td><td class="lv-{escape(level or "none")}">{shown_}</td>'


def item_cells(i: Item) -> str:
    """An item's own cells in a topic's table: the same in every topic it is on."""
    href = safe_href(i.url)
    title = shown(i.title_zh)
    first = f'<a href="{escape(href)}" rel="noreferrer">{title}</a>' if href else title
    lang = f' lang="{shown(i.original_language, 20)}"' if i.original_language else ""
    return (
        f'<td lang="zh">{first}</td><td{lang}>{shown(i.title_original)}</td>'
        f"<td>{shown(i.kind, 20)}</td><td>{shown(i.original_language, 20)}</td>"
        f"<td>{shown(i.id)}</td>"
    )


def chart_bars(chart: Chart, s: Shown) -> str:
    """The chart's bars: a link to each topic, its label, one rectangle a level, its total."""
    out = []
    for bar in chart.bars:
        label = shown(bar.full_label)
        href = s.links.topic(bar.slug)
        out.append(
            (f'<a href="{escape(href)}">\n' if href else "<g>\n")
            + f"<title>{label}: {bar.total} items</title>\n"
            f'<text class="label" x="0" y="{bar.top + 12}">{escape(bar.label)}</text>\n'
        )
        y = bar.top + chart.bar_top
        for seg in bar.segments:
            what = "with no level" if seg.level == "none" else escape(seg.level)
            out.append(
                f'<rect class="lv-{escape(seg.level)}" x="{escape(seg.x)}" y="{y}" '
                f'width="{escape(seg.width)}" height="{chart.bar_height}"><title>{label}: '
                f"{seg.count} {what}</title></rect>\n"
            )
        out.append(
            f'<text class="total" x="{escape(bar.end)}" dx="5" y="{y + 11}">{bar.total}</text>\n'
            + ("</a>\n" if href else "</g>\n")
        )
    return "".join(out)
