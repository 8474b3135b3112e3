"""The page's long, repeated parts as Python string building: a row of a topic's table, a
decision, a conflict. A large run has a hundred thousand topic rows and thousands of
decisions; Jinja macro calls cost ten times more per row. Every value still goes through
``markupsafe.escape``; the result is :class:`Markup` the templates insert as it is. The
bytes are those the templates produced (the golden page and a large run were compared).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

from markupsafe import Markup

from ...records.output import Conflict, Decision, DecisionSide, Item, ItemTopic
from .view import ItemRow, safe_href

_NONE = '<span class="none">—</span>'


def escape(value: object) -> str:
    """``markupsafe.escape``'s output for a plain value (``& < > ' "``), as a str: its
    Python wrapper and the Markup it builds cost more than the escaping, a million times."""
    return (
        str(value)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


def item_cells(i: Item) -> str:
    """An item's own cells in a topic's table: the same in every topic it is on."""
    href = safe_href(i.url)
    title = escape(i.title_zh or "—")
    first = f'<a href="{escape(href)}" rel="noreferrer">{title}</a>' if href else title
    lang = f' lang="{escape(i.original_language)}"' if i.original_language else ""
    return (
        f'<td lang="zh">{first}</td><td{lang}>{escape(i.title_original or "—")}</td>'
        f"<td>{escape(i.kind or '—')}</td><td>{escape(i.original_language or '—')}</td>"
        f"<td>{escape(i.id)}</td>"
    )


def topic_table(rows: Iterable[ItemRow], cells: Mapping[str, str]) -> Markup:
    """A table of items, one row a line (a topic's, or the items on no topic)."""
    return Markup(_TABLE_HEAD + "".join(_row(r, cells[r.item.id]) for r in rows) + _TABLE_TAIL)


_TABLE_HEAD = (
    '<table class="stack items">\n<thead><tr><th class="num">#</th><th>Level</th>'
    "<th>Chinese title</th><th>Original title</th><th>Kind</th><th>Language</th><th>Id</th>"
    "</tr></thead>\n<tbody>\n"
)
_TABLE_TAIL = "</tbody>\n</table>\n"


def _row(r: ItemRow, cells: str) -> str:
    anchor = f' id="item-{escape(r.item.id)}"' if r.anchor else ""
    return f"<tr{anchor}>{_place_cells(r.place)}{cells}</tr>\n"


def _place_cells(place: ItemTopic | None) -> str:
    """A row's rank and level cells."""
    if place is None:
        return _cells_of(None, None, None)
    return _cells_of(place.rank, place.level, place.level_label)


@lru_cache(maxsize=4096)  # pure; ranks and levels repeat across a hundred thousand rows
def _cells_of(rank: int | None, level: str | None, level_label: str | None) -> str:
    shown = escape(level or level_label or "—")
    return f'<td>{escape(rank or "—")}</td><td class="lv-{escape(level or "none")}">{shown}</td>'


def decisions(found: Iterable[Decision], titles: Mapping[str, str]) -> Markup:
    """Every decision as an article with both texts side by side."""
    return Markup("".join(_decision(d, titles) for d in found))


def _decision(d: Decision, titles: Mapping[str, str]) -> str:
    sides = _side("A", d.a) + _side("B", d.b)
    return (
        f'<article class="decision">\n<h3><span class="badge good">{escape(d.kind)}</span> '
        f"score {d.score:.1f} → {item_ref(d.item, titles)}</h3>\n"
        f'<p class="evidence">{escape(d.evidence)}</p>\n<div class="sides">\n{sides}</div>\n'
        "</article>\n"
    )


def _side(label: str, side: DecisionSide) -> str:
    return (
        f'<div class="side">\n<p class="side-head">{label} · <code>{escape(side.source)}</code>'
        f'</p>\n<p class="side-title" lang="zh">{or_dash(side.title)}</p>\n'
        f'<p lang="zh">{escape(side.summary_zh)}</p>\n</div>\n'
    )


def conflicts(
    found: Iterable[Conflict], titles: Mapping[str, str], slugs: frozenset[str]
) -> Markup:
    """Every field conflict as a table row."""
    return Markup("".join(_conflict(c, titles, slugs) for c in found))


def _conflict(c: Conflict, titles: Mapping[str, str], slugs: frozenset[str]) -> str:
    record = item_ref(c.record, titles) if c.record in titles else topic_ref(c.record, slugs)
    values = "".join(
        f'<li><span lang="zh">{escape(v.value)}</span> <span class="src">'
        f"{escape(', '.join(v.sources))}</span></li>"
        for v in c.values
    )
    return (
        f'<tr>\n<td data-label="Record" class="wide">{record}</td>\n'
        f'<td data-label="Field"><code>{escape(c.field)}</code></td>\n'
        f'<td data-label="Chosen" class="wide" lang="zh">{escape(c.chosen)}</td>\n'
        f'<td data-label="Values seen" class="wide"><ul class="values">{values}</ul></td>\n'
        "</tr>\n"
    )


def item_ref(item_id: str, titles: Mapping[str, str]) -> str:
    code = f"<code>{escape(item_id)}</code>"
    if item_id not in titles:
        return code
    title = escape(titles[item_id])
    return f'<a href="#item-{escape(item_id)}">{code}</a> <span lang="zh">{title}</span>'


def topic_ref(slug: str, slugs: frozenset[str]) -> str:
    code = f"<code>{escape(slug)}</code>"
    return f'<a href="#topic-{escape(slug)}">{code}</a>' if slug in slugs else code


def or_dash(value: str | None) -> str:
    return _NONE if value is None or value == "" else escape(value)
