"""The entries of the report's lists, each an HTML fragment with every value escaped: the
changes, the rejects, topics and files, the decisions, and the chart of listings per
topic and level."""

from __future__ import annotations

import json
import unicodedata
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, chain
from typing import Any

from rapidfuzz.distance import Indel

from ingest.contract import (
    Conflict,
    Decision,
    FileReport,
    Item,
    ItemTopic,
    Reject,
    Topic,
    TopicCheck,
)
from ingest.records import RunOutput
from ingest.report.view import ChangeEntry, Entry, View, cut, shorten

#: How many characters of a text a page shows, by what it is.
NAME = 200  # a title, a topic's name, a file's name, an id
TEXT = 600  # a summary, a message, an excerpt, a changed value
URL = 500  # a link; a longer one is shown as text, not linked
NONE = '<span class="none">—</span>'
TABLE_TAIL = "</tbody>\n</table>\n"
INNER = 20  # a list inside one entry (a file's warnings, a conflict's values) shows this many
#: Levels in the order the pages show them; ``None`` (a list-only entry) last.
LEVELS: tuple[str | None, ...] = ("beginner", "intermediate", "advanced", None)
#: The key of the pages that hold the topics' items (and every item's anchor).
TOPICS = "topics"
#: Each item's place on each of its topics: slug → item id → the item's ``ItemTopic``.
Places = dict[str, dict[str, ItemTopic]]


@dataclass(frozen=True, slots=True)
class Links:
    """Where an item's row and a topic's block are, from the page being made."""

    prefix: str  # "report/" from the report page, "" from a page beside it
    anchors: Mapping[str, int]  # "item-ID" / "topic-SLUG" → its page of topics

    def item(self, item_id: str) -> str | None:
        return self._to(f"item-{item_id}")

    def topic(self, slug: str) -> str | None:
        return self._to(f"topic-{slug}")

    def _to(self, anchor: str) -> str | None:
        n = self.anchors.get(anchor)
        return None if n is None else f"{self.prefix}{TOPICS}-{n}.html#{anchor}"

    def page(self, key: str, n: int) -> str:
        return f"{self.prefix}{key}-{n}.html"


@dataclass(frozen=True, slots=True)
class Shown:
    """What an entry's HTML needs beside the entry."""

    view: View
    links: Links
    places: Places
    cells: Mapping[str, str]  # item id → its own cells in a topic's table


@dataclass(frozen=True, slots=True)
class Listing:
    """One long list: its entries, how each is shown, what goes around them on a page."""

    key: str  # its pages are report/KEY-N.html
    title: str
    section: str  # the report page's section it is in
    entries: Sequence[Any]
    row: Callable[[Any, Shown], str]
    head: str = ""
    tail: str = ""


def listings(run: RunOutput, view: View) -> list[Listing]:
    """Every list but the topics' blocks, in the report page's order."""
    report = run.report
    mismatched = [view.topics[c.slug] for c in view.mismatches if c.slug in view.topics]
    index = (index_row, INDEX_HEAD, TABLE_TAIL)
    warnings = (warning_row, '<ul class="warnings">\n', "</ul>\n")
    conflicts = (conflict_row, CONFLICTS_HEAD, TABLE_TAIL)
    rejects = (reject_row, REJECTS_HEAD, TABLE_TAIL)
    return [
        Listing("changes", "Changes", "changes", view.changes, change_row),
        Listing("added", "Added", "changes", view.added, change_row),
        Listing("rejects", "Rejects", "problems", run.rejects, *rejects),
        Listing("mismatches", MISMATCHES, "problems", mismatched, *index),
        Listing("warnings", "Run warnings", "problems", report.warnings, *warnings),
        Listing("topic-index", "Topics", "topics", run.topics, *index),
        Listing("files", "Files", "files", view.files, file_row, FILES_HEAD, TABLE_TAIL),
        Listing("decisions", "Decisions", "decisions", report.decisions, decision_row),
        Listing("conflicts", CONFLICTS, "decisions", report.conflicts, *conflicts),
    ]


MISMATCHES = "Topics whose declared and found counts differ"
CONFLICTS = "Field conflicts in merges"


def escape(value: object) -> str:
    """``markupsafe.escape``'s output for a plain value, as a str: its Python wrapper and the
    Markup it builds cost more than the escaping, a million times."""
    return (
        str(value)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


def shown(text: str | None, limit: int = NAME) -> str:
    """``text`` shortened to ``limit`` and escaped; a dash for nothing."""
    return NONE if text is None or text == "" else escape(shorten(text, limit))


def safe_href(url: str | None) -> str | None:
    """``url`` if it may be a link (http or https, not over :data:`URL` characters), else
    None: records hold only such URLs already, but the page checks again.

    >>> safe_href("https://a.example/x"), safe_href("javascript:alert(1)"), safe_href(None)
    ('https://a.example/x', None, None)
    """
    if url is None or len(url) > URL:
        return None
    return url if url.lower().startswith(("http://", "https://")) else None


def n_of(count: int, noun: str) -> str:
    return f"{count} {noun if count == 1 else noun + 's'}"


JOIN_UNDER = 3  # a shared run shorter than this between two differences is marked too
MAX_RUNS = 8  # more differing runs than this: each text marked whole


def marked(old: str, new: str) -> tuple[str, str]:
    """``old`` and ``new`` as escaped HTML, what differs marked.

    >>> marked("模型服务与算力", "模型推理与算力")
    ('模型<del>服务</del>与算力', '模型<ins>推理</ins>与算力')
    """
    if old == new:
        return escape(old), escape(new)
    olds: list[str] = []
    news: list[str] = []
    i = j = runs = 0
    for a0, a1, b0, b1 in [*_shared(old, new), (len(old), len(old), len(new), len(new))]:
        if i < a0 or j < b0:
            runs += 1
            if i < a0:
                olds.append(f"<del>{escape(old[i:a0])}</del>")
            if j < b0:
                news.append(f"<ins>{escape(new[j:b0])}</ins>")
        olds.append(escape(old[a0:a1]))
        news.append(escape(new[b0:b1]))
        i, j = a1, b1
    if runs > MAX_RUNS:
        return _whole("del", old), _whole("ins", new)
    return "".join(olds), "".join(news)


def _shared(old: str, new: str) -> list[tuple[int, int, int, int]]:
    """The runs ``old[a0:a1] == new[b0:b1]`` the texts share, in order; a short one between
    two differences left out (one at the very start or end of both texts is kept)."""
    blocks = (
        (o.src_start, o.src_end, o.dest_start, o.dest_end)
        for o in Indel.opcodes(old, new)
        if o.tag == "equal"
    )
    return [
        (a0, a1, b0, b1)
        for a0, a1, b0, b1 in blocks
        if a1 - a0 >= JOIN_UNDER or a0 == b0 == 0 or (a1, b1) == (len(old), len(new))
    ]


def _whole(tag: str, text: str) -> str:
    return f"<{tag}>{escape(text)}</{tag}>" if text else ""


def item_ref(item_id: str, s: Shown) -> str:
    """An item's id, linked to its row, and its title."""
    code = f"<code>{shown(item_id)}</code>"
    href = s.links.item(item_id)
    if href is None or item_id not in s.view.titles:
        return code
    title = shown(s.view.titles[item_id])
    return f'<a href="{escape(href)}">{code}</a> <span lang="zh">{title}</span>'


def topic_ref(slug: str, s: Shown) -> str:
    """A topic's slug, linked to its block, and its name."""
    code = f"<code>{shown(slug)}</code>"
    href = s.links.topic(slug)
    topic = s.view.topics.get(slug)
    name = "" if topic is None or not topic.name else f' <span lang="zh">{shown(topic.name)}</span>'
    return code + name if href is None else f'<a href="{escape(href)}">{code}</a>{name}'


def levels(counts: Iterable[tuple[str | None, int]]) -> str:
    """``, beginner 2, advanced 1`` (levels are a vocabulary: the first few, names cut)."""
    return "".join(f", {shown(lv or 'no level', 20)} {n}" for lv, n in list(counts)[: len(LEVELS)])


def _levels_on(topic: Topic, s: Shown) -> list[tuple[str | None, int]]:
    """How many of a topic's items are at each level on it, in :data:`LEVELS` order."""
    on = s.places.get(topic.slug, {})
    counts: Counter[str | None] = Counter(on[i].level if i in on else None for i in topic.items)
    return [(lv, counts[lv]) for lv in LEVELS if counts[lv]]


def _table_head(classes: str, columns: str) -> str:
    """A table's start, up to its first row: a header cell for each of ``columns`` (``|``
    between them; ``+NAME``: a column of numbers)."""
    cells = "".join(
        f'<th class="num">{c[1:]}</th>' if c[0] == "+" else f"<th>{c}</th>"
        for c in columns.split("|")
    )
    return f'<table class="{classes}">\n<thead><tr>{cells}</tr></thead>\n<tbody>\n'


REJECTS_HEAD = _table_head("stack rejects", "File|Where|Reason|Message|Excerpt")


def reject_row(r: Reject, _: Shown) -> str:
    line = "" if r.locator.startswith("line ") else f" · line {r.line}"
    return (
        f'<tr>\n<td data-label="File" class="path"><code>{shown(r.file)}</code></td>\n'
        f'<td data-label="Where">{shown(r.locator)}{line} · byte {r.byte_offset}</td>\n'
        f'<td data-label="Reason"><code>{shown(r.reason)}</code></td>\n'
        f'<td data-label="Message" class="wide">{shown(r.message, TEXT)}</td>\n'
        f'<td data-label="Excerpt" class="wide"><pre class="excerpt">{shown(r.excerpt, TEXT)}'
        "</pre></td>\n</tr>\n"
    )


INDEX_HEAD = _table_head("stack index", "Topic|+Items|Levels|Declared on the site")


def index_row(topic: Topic, s: Shown) -> str:
    """A topic's line in the index (of all topics, or of those whose counts differ)."""
    return (
        f'<tr>\n<td data-label="Topic" class="wide">{topic_ref(topic.slug, s)}</td>\n'
        f'<td data-label="Items" class="num">{len(topic.items)}</td>\n'
        f'<td data-label="Levels">{levels(_levels_on(topic, s))[2:]}</td>\n'
        f'<td data-label="Declared">{declared(s.view.checks.get(topic.slug))}</td>\n</tr>\n'
    )


def declared(check: TopicCheck | None) -> str:
    """What the site declares of a topic against what the pages hold, with a badge."""
    if check is None or check.declared_count is None:
        return "not declared"
    said = n_of(check.declared_count, "item") + levels(check.declared_levels.items())
    if check.ok:
        return f'{said} <span class="badge good">match</span>'
    found = n_of(check.found_count, "item") + levels(check.found_levels.items())
    return f'{said} <span class="badge bad">differ</span> · found {found}'


FILES_HEAD = _table_head(
    "stack files", "File|Status|Kind|Encoding|+Bytes|+Listings|+Rejected|Warnings"
)


def file_row(f: FileReport, _: Shown) -> str:
    status = escape(f.status)
    warnings = "0"
    if f.warnings:
        items = "".join(f"<li>{shown(w, TEXT)}</li>" for w in f.warnings[:INNER])
        more = len(f.warnings) - INNER
        items += f'<li class="none">and {more} more (report.json)</li>' if more > 0 else ""
        warnings = (
            f'<details><summary>{len(f.warnings)}</summary><ul class="warnings">{items}'
            "</ul></details>"
        )
    return (
        f'<tr>\n<td data-label="File" class="path wide"><code>{shown(f.file)}</code></td>\n'
        f'<td data-label="Status"><span class="badge st-{status}">{status}</span></td>\n'
        f'<td data-label="Kind">{shown(f.format)}</td>\n'
        f'<td data-label="Encoding">{shown(f.encoding)}</td>\n'
        f'<td data-label="Bytes" class="num">{f.bytes}</td>\n'
        f'<td data-label="Listings" class="num">{f.listings}</td>\n'
        f'<td data-label="Rejected" class="num">{f.rejected_listings}</td>\n'
        f'<td data-label="Warnings">{warnings}</td>\n</tr>\n'
    )


def warning_row(w: str, _: Shown) -> str:
    return f"<li>{shown(w, TEXT)}</li>\n"


def change_row(e: ChangeEntry, s: Shown) -> str:
    """A change: what it is and to which record; a changed record's fields, each with its
    value before and now; what a merged item went into."""
    c = e.change
    ref = item_ref if c.entity == "item" else topic_ref
    head = f'<span class="badge op-{escape(c.op)}">{escape(c.entity)} {escape(c.op)}</span> '
    if c.op in ("removed", "merged"):  # gone from this publish: its id, and what it was
        was = e.before.get("title")
        head += f"<code>{shown(c.id)}</code>"
        head += f' <span lang="zh">{shown(was)}</span>' if isinstance(was, str) else ""
    else:
        head += ref(c.id, s)
    if c.into is not None:
        head += f" → merged into {ref(c.into, s)}"
    fields = "".join(_field(f, e.before.get(f), e.after.get(f)) for f in c.fields)
    return f'<article class="change">\n<h3>{head}</h3>\n{fields}</article>\n'


def _field(name: str, before: Any, after: Any) -> str:
    old, new = value_text(before), value_text(after)
    if old is None or new is None:  # nothing to mark against: the one there is, whole
        was = NONE if old is None else f"<del>{escape(old)}</del>"
        now = NONE if new is None else f"<ins>{escape(new)}</ins>"
    else:
        was, now = marked(old, new)
    return (
        f'<div class="field"><p class="field-name"><code>{shown(name)}</code></p>\n'
        f'<p class="old"><span class="tag">before</span> <span lang="zh">{was}</span></p>\n'
        f'<p class="new"><span class="tag">now</span> <span lang="zh">{now}</span></p></div>\n'
    )


def value_text(value: Any) -> str | None:
    """A field's value as the page shows it: a text as it is, another value as its JSON;
    cut to :data:`.view.TEXT` characters. None: no value (null, or a field one side lacks).

    >>> value_text("一段摘要"), value_text(None), value_text([{"slug": "a", "rank": 2}])
    ('一段摘要', None, '[{"slug": "a", "rank": 2}]')
    """
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return shorten(text, TEXT)


def decision_row(d: Decision, s: Shown) -> str:
    """A decision with both texts side by side, what differs between them marked."""
    title_a, title_b = marked(shorten(d.a.title or "", NAME), shorten(d.b.title or "", NAME))
    text_a, text_b = marked(shorten(d.a.summary_zh, TEXT), shorten(d.b.summary_zh, TEXT))
    sides = _side("A", d.a.source, title_a, text_a) + _side("B", d.b.source, title_b, text_b)
    return (
        f'<article class="decision">\n<h3><span class="badge good">{shown(d.kind)}</span> '
        f"score {d.score:.1f} → {item_ref(d.item, s)}</h3>\n"
        f'<p class="evidence">{shown(d.evidence, TEXT)}</p>\n<div class="sides">\n{sides}</div>\n'
        "</article>\n"
    )


def _side(label: str, source: str, title: str, text: str) -> str:
    return (
        f'<div class="side">\n<p class="side-head">{label} · <code>{shown(source)}</code>'
        f'</p>\n<p class="side-title" lang="zh">{title or NONE}</p>\n'
        f'<p lang="zh">{text}</p>\n</div>\n'
    )


CONFLICTS_HEAD = _table_head("stack", "Record|Field|Chosen|Values seen")


def conflict_row(c: Conflict, s: Shown) -> str:
    """A field merged listings disagreed on: the value chosen and every value seen."""
    record = item_ref(c.record, s) if c.record in s.view.titles else topic_ref(c.record, s)
    values = "".join(
        f'<li><span lang="zh">{shown(v.value, TEXT)}</span> <span class="src">'
        f"{shown(', '.join(v.sources))}</span></li>"
        for v in c.values[:INNER]
    )
    return (
        f'<tr>\n<td data-label="Record" class="wide">{record}</td>\n'
        f'<td data-label="Field"><code>{shown(c.field)}</code></td>\n'
        f'<td data-label="Chosen" class="wide" lang="zh">{shown(c.chosen, TEXT)}</td>\n'
        f'<td data-label="Values seen" class="wide"><ul class="values">{values}</ul></td>\n'
        "</tr>\n"
    )


def topic_blocks(
    topic: Topic | None, ids: Sequence[str], s: Shown, seen: set[str]
) -> Iterator[Entry]:
    """A topic's ``<details>`` block (``None``: the items on no topic): its summary line,
    its facts, its table of items; a large topic's in parts (see :func:`.view.cut`), each
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
    check = s.view.checks.get(topic.slug)
    badge = ""
    if check is not None:
        said = "declared counts " + ("match" if check.ok else "differ")
        badge = f' <span class="badge {"good" if check.ok else "bad"}">{said}</span>'
    href = safe_href(topic.url)
    url = f'<a href="{escape(href)}" rel="noreferrer">{shown(topic.url, URL)}</a>' if href else None
    anchor = f' id="topic-{escape(topic.slug)}"' if first else ""
    return (
        f'<details class="topic"{anchor} open>\n<summary><span class="name" lang="zh">'
        f"{shown(topic.name or topic.slug)}</span> <code>{shown(topic.slug)}</code> "
        f'<span class="count">{n_of(len(topic.items), "item")}{span}</span>{badge}</summary>\n'
        '<div class="topic-body">\n'
        + (f'<p lang="zh">{shown(topic.description, TEXT)}</p>\n' if topic.description else "")
        + f'<dl class="facts">\n<div><dt>category</dt><dd lang="zh">{shown(topic.category)}'
        f'</dd></div>\n<div><dt>url</dt><dd class="path">{url or shown(topic.url, URL)}</dd>'
        f"</div>\n<div><dt>declared on the site</dt><dd>{declared(check)}</dd></div>\n"
        f"<div><dt>levels</dt><dd>{levels(_levels_on(topic, s))[2:]}</dd></div>\n</dl>\n"
    )


TABLE_HEAD = _table_head("stack items", "+#|Level|Chinese title|Original title|Kind|Language|Id")


def _row(item_id: str, place: ItemTopic | None, s: Shown, seen: set[str]) -> Entry:
    at = (None, None, None) if place is None else (place.rank, place.level, place.level_label)
    own = s.cells.get(item_id, f"<td></td><td></td><td></td><td></td><td>{shown(item_id)}</td>")
    cells = _place_cells(*at) + own
    if item_id in seen:
        return Entry(f"<tr>{cells}</tr>\n")
    seen.add(item_id)
    return Entry(f'<tr id="item-{escape(item_id)}">{cells}</tr>\n', (f"item-{item_id}",))


@lru_cache(maxsize=4096)  # pure; ranks and levels repeat across a hundred thousand rows
def _place_cells(rank: int | None, level: str | None, level_label: str | None) -> str:
    """A row's rank and level cells."""
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


ROW = 40  # px per topic: a label line, then the bar
BAR_TOP = 17  # px from the top of a row to its bar
BAR_HEIGHT = 14
SPAN = 85.0  # percent of the width the longest bar fills; the rest holds its count
LABEL_COLUMNS = 44  # a label's width in columns (a CJK character takes two)
LARGEST = 20  # the topics the chart shows


@dataclass(frozen=True, slots=True)
class Chart:
    bars: list[str]  # each bar's SVG
    height: int


def build_chart(topics: list[Topic], s: Shown) -> Chart:
    """One bar for each of the :data:`LARGEST` topics with most items (then by slug),
    largest first, its segments by level, scaled to the largest."""
    largest = sorted(topics, key=lambda t: (-len(t.items), t.slug))[:LARGEST]
    scale = SPAN / (max((len(t.items) for t in largest), default=0) or 1)
    bars = [_bar(t, n * ROW, scale, s) for n, t in enumerate(largest)]
    return Chart(bars, height=max(len(bars), 1) * ROW)


def _bar(t: Topic, top: int, scale: float, s: Shown) -> str:
    """A bar: a link to its topic, its label, one rectangle a level, its total."""
    full = f"{t.name} ({t.slug})" if t.name else t.slug
    label, href, y = shown(full), s.links.topic(t.slug), top + BAR_TOP
    out = [
        (f'<a href="{escape(href)}">\n' if href else "<g>\n")
        + f"<title>{label}: {len(t.items)} items</title>\n"
        f'<text class="label" x="0" y="{top + 12}">{escape(clip(full, LABEL_COLUMNS))}</text>\n'
    ]
    x = 0.0
    for level, count in _levels_on(t, s):
        what = "with no level" if level is None else escape(level)
        out.append(
            f'<rect class="lv-{escape(level or "none")}" x="{x:.2f}%" y="{y}" '
            f'width="{count * scale:.2f}%" height="{BAR_HEIGHT}"><title>{label}: '
            f"{count} {what}</title></rect>\n"
        )
        x += count * scale
    out.append(
        f'<text class="total" x="{x:.2f}%" dx="5" y="{y + 11}">{len(t.items)}</text>\n'
        + ("</a>\n" if href else "</g>\n")
    )
    return "".join(out)


def clip(text: str, columns: int) -> str:
    """``text`` cut to ``columns`` display columns (wide characters take two), with an
    ellipsis when cut.

    >>> clip("模型服务与算力", 8), clip("abc", 8), clip("abcdefghij", 8)
    ('模型服…', 'abc', 'abcdefg…')
    """
    used = list(accumulate(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text))
    if not used or used[-1] <= columns:
        return text
    return text[: bisect_right(used, columns - 1)] + "…"  # one column kept for the ellipsis
