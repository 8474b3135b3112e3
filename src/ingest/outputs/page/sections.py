"""A topic's block (its facts, and its items in rank order: the bulk of the pages beside the
report page) and the chart's bars, as Python string building: a large run has a hundred
thousand topic rows, and Jinja macro calls cost ten times more per row. Every value goes
through :func:`.text.escape`; the result is inserted as it is.
"""

from __future__ import annotations

from functools import lru_cache

from ...records.output import Item, ItemTopic, Topic
from .chart import Chart
from .plan import Part
from .rows import LEVELS_BYTES, Shown, declared, levels
from .text import AROUND, NAME, TABLE_TAIL, TEXT, URL, bound, escape, n_of, safe_href, shown
from .view import LEVELS, View


def topic_block(part: Part, s: Shown) -> str:
    """A topic's ``<details>`` block: its summary line, its facts, its table of items (a
    large topic's block is cut in parts, one a page: each part says which items it holds)."""
    topic, n = part.topic, part.total
    span = "" if len(part.ids) == n else f", {part.start + 1}–{part.start + len(part.ids)} here"
    if topic is None:
        head = (
            '<details class="topic" id="unlisted" open>\n<summary><span class="name">Items on '
            f'no topic</span> <span class="count">{n_of(n, "item")}{span}</span></summary>\n'
            '<div class="topic-body">\n<p>Found only in an item page\'s related reading.</p>\n'
        )
    else:
        head = _topic_head(topic, part, s, span)
    rows = "".join(_row(i, topic, part, s) for i in part.ids)
    return f"{head}{TABLE_HEAD}{rows}{TABLE_TAIL}</div>\n</details>\n"


def _topic_head(topic: Topic, part: Part, s: Shown, span: str) -> str:
    slug = escape(topic.slug)
    check = s.view.checks.get(topic.slug)
    badge = ""
    if check is not None:
        good = check.ok
        said = "declared counts " + ("match" if good else "differ")
        badge = f' <span class="badge {"good" if good else "bad"}">{said}</span>'
    href = safe_href(topic.url)
    url = f'<a href="{escape(href)}" rel="noreferrer">{shown(topic.url, URL)}</a>' if href else None
    anchor = f' id="topic-{slug}"' if part.start == 0 else ""
    on = s.places.get(topic.slug, {})
    counts = {lv: 0 for lv in LEVELS}
    for item_id in topic.items:
        place = on.get(item_id)
        counts[None if place is None else place.level] += 1
    return (
        f'<details class="topic"{anchor} open>\n<summary><span class="name" lang="zh">'
        f"{shown(topic.name or topic.slug)}</span> <code>{shown(topic.slug)}</code> "
        f'<span class="count">{n_of(part.total, "item")}{span}</span>{badge}</summary>\n'
        '<div class="topic-body">\n'
        + (f'<p lang="zh">{shown(topic.description, TEXT)}</p>\n' if topic.description else "")
        + f'<dl class="facts">\n<div><dt>category</dt><dd lang="zh">{shown(topic.category)}'
        f'</dd></div>\n<div><dt>url</dt><dd class="path">{url or shown(topic.url, URL)}</dd>'
        f"</div>\n<div><dt>declared on the site</dt><dd>{declared(check)}</dd></div>\n"
        f"<div><dt>levels</dt><dd>{levels((k, v) for k, v in counts.items() if v)[2:]}</dd>"
        "</div>\n</dl>\n"
    )


def head_bytes(topic: Topic | None, view: View) -> int:
    """The bound of a topic block's bytes, but its rows."""
    if topic is None:
        return 4 * AROUND + len(TABLE_HEAD)
    texts = bound(topic.name, topic.slug, topic.slug, topic.slug, topic.category)
    texts += bound(topic.description, limit=TEXT) + 2 * bound(topic.url, limit=URL)
    said = len(declared(view.checks.get(topic.slug)).encode("utf-8"))
    return texts + said + 8 * AROUND + LEVELS_BYTES + len(TABLE_HEAD)


TABLE_HEAD = (
    '<table class="stack items">\n<thead><tr><th class="num">#</th><th>Level</th>'
    "<th>Chinese title</th><th>Original title</th><th>Kind</th><th>Language</th><th>Id</th>"
    "</tr></thead>\n<tbody>\n"
)


def _row(item_id: str, topic: Topic | None, part: Part, s: Shown) -> str:
    anchor = f' id="item-{escape(item_id)}"' if item_id in part.anchored else ""
    place = None if topic is None else s.places.get(topic.slug, {}).get(item_id)
    cells = s.cells.get(item_id, f"<td></td><td></td><td></td><td></td><td>{shown(item_id)}</td>")
    return f"<tr{anchor}>{_place_cells(place)}{cells}</tr>\n"


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


def item_bytes(i: Item) -> int:
    """The bound of an item's row in any topic's table: its texts (its place's, the
    longest of its topics'), and the row's markup."""
    texts = bound(i.title_zh, i.title_original, i.id, i.id, around=0)
    texts += bound(i.url, i.url, limit=URL, around=0)
    texts += 2 * bound(i.original_language, i.kind, limit=20, around=0)
    places = [_cells_of(t.rank, t.level, t.level_label) for t in i.topics]
    place = max(len(p.encode("utf-8")) for p in [*places, _cells_of(None, None, None)])
    return texts + place + ROW_MARKUP


#: A topic's table row's own markup: its tags, attributes and the item's anchor (but texts).
ROW_MARKUP = 400


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
