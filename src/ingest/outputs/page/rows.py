"""The entries of the pages' lists as Python string building: a reject, a topic whose
counts differ, a run warning, a topic's line in the index, a file. A large run has
thousands of each; Jinja loops and macro calls cost several times more per entry. Every
value goes through :func:`.text.escape` (numbers and our own words aside); the templates
insert the result as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...records.output import FileReport, ItemTopic, Reject, Topic, TopicCheck
from .text import INNER, TEXT, escape, n_of, shown
from .view import LEVELS, View

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
    shown_ = list(counts)[:LEVEL_NAMES]
    return "".join(f", {shown(lv or 'no level', LEVEL_NAME)} {n}" for lv, n in shown_)


LEVEL_NAMES, LEVEL_NAME = len(LEVELS), 20


# --------------------------------------------------------------------------- rejects


REJECTS_HEAD = (
    '<table class="stack rejects">\n<thead><tr><th>File</th><th>Where</th><th>Reason</th>'
    "<th>Message</th><th>Excerpt</th></tr></thead>\n<tbody>\n"
)


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


# --------------------------------------------------------------------------- topics


INDEX_HEAD = (
    '<table class="stack index">\n<thead><tr><th>Topic</th><th class="num">Items</th>'
    "<th>Levels</th><th>Declared on the site</th></tr></thead>\n<tbody>\n"
)


def index_row(topic: Topic, s: Shown) -> str:
    """A topic's line in the index (of all topics, or of those whose counts differ)."""
    on = s.places.get(topic.slug, {})
    counts = dict.fromkeys(LEVELS, 0)
    for item_id in topic.items:
        place = on.get(item_id)
        counts[None if place is None else place.level] += 1
    return (
        f'<tr>\n<td data-label="Topic" class="wide">{topic_ref(topic.slug, s)}</td>\n'
        f'<td data-label="Items" class="num">{len(topic.items)}</td>\n'
        f'<td data-label="Levels">{levels((k, v) for k, v in counts.items() if v)[2:]}</td>\n'
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


# --------------------------------------------------------------------------- files


FILES_HEAD = (
    '<table class="stack files">\n<thead><tr><th>File</th><th>Status</th><th>Kind</th>'
    '<th>Encoding</th><th class="num">Bytes</th><th class="num">Listings</th>'
    '<th class="num">Rejected</th><th>Warnings</th></tr></thead>\n<tbody>\n'
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


# --------------------------------------------------------------------------- warnings


def warning_row(w: str, _: Shown) -> str:
    return f"<li>{shown(w, TEXT)}</li>\n"
