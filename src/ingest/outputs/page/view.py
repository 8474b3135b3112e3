"""What the report page shows, gathered from a run's records: plain values for the templates.

Everything here is a pure function of the :class:`RunOutput`; nothing reads the clock, so
the same run gives the same page, byte for byte. Texts stay raw: the templates escape them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from msgspec import structs

from ...records.output import (
    Change,
    FileReport,
    Item,
    ItemTopic,
    Topic,
    TopicCheck,
)
from ...records.run import RunOutput

#: Levels in the order the page shows them; ``None`` (a list-only entry) last.
LEVELS: tuple[str | None, ...] = ("beginner", "intermediate", "advanced", None)
OPS = ("added", "changed", "removed", "merged")
#: Lists longer than this start folded (a first run adds everything; a large crawl has
#: thousands of files and decisions), so the page opens on what needs a look.
FOLD_OVER = 50
#: Topic sections start unfolded only in runs with at most this many topics.
OPEN_TOPICS_UP_TO = 3


class ItemRow(NamedTuple):
    """One item in a topic (a named tuple: a large run has a hundred thousand)."""

    place: ItemTopic | None  # its rank and level on the topic; None: a list-only entry
    item: Item
    anchor: bool = False  # the item's first row on the page: links to it land here

    @property
    def level(self) -> str | None:
        return None if self.place is None else self.place.level


@dataclass(frozen=True, slots=True)
class TopicView:
    topic: Topic
    check: TopicCheck | None
    rows: list[ItemRow]
    levels: list[tuple[str | None, int]]

    @property
    def title(self) -> str:
        return self.topic.name or self.topic.slug


@dataclass(frozen=True, slots=True)
class ChangeGroup:
    """The changes of one entity and op, e.g. every item added."""

    entity: str
    op: str
    changes: list[Change]

    @property
    def open(self) -> bool:
        return self.op != "added" and len(self.changes) <= FOLD_OVER


@dataclass(frozen=True, slots=True)
class View:
    run: RunOutput
    troubled_files: list[FileReport]
    clean_files: list[FileReport]
    topics: list[TopicView]
    unlisted: list[ItemRow]
    changes: list[ChangeGroup]
    totals: list[tuple[str, int]]
    reject_reasons: list[tuple[str, int]]
    decision_kinds: list[tuple[str, int]]
    conflict_fields: list[tuple[str, int]]
    titles: dict[str, str]
    slugs: frozenset[str]
    open_topics: bool


def build_view(run: RunOutput) -> View:
    """Gather what the page shows from ``run``."""
    items = {i.id: i for i in run.items}
    checks = {c.slug: c for c in run.report.consistency}
    seen: set[str] = set()
    places = places_of(run.items)
    topics = [topic_view(t, items, places, checks.get(t.slug), seen) for t in run.topics]
    files = run.report.files
    return View(
        run=run,
        troubled_files=[f for f in files if troubled(f)],
        clean_files=[f for f in files if not troubled(f)],
        topics=topics,
        unlisted=[ItemRow(None, i, True) for i in run.items if i.id not in seen],
        changes=change_groups(run.changes),
        totals=[(k.replace("_", " "), v) for k, v in structs.asdict(run.report.totals).items()],
        reject_reasons=tally(r.reason for r in run.rejects),
        decision_kinds=tally(d.kind for d in run.report.decisions),
        conflict_fields=tally(c.field for c in run.report.conflicts),
        titles={i.id: display_title(i) for i in run.items},
        slugs=frozenset(t.slug for t in run.topics),
        open_topics=len(run.topics) <= OPEN_TOPICS_UP_TO,
    )


def topic_view(
    topic: Topic,
    items: dict[str, Item],
    places: Places,
    check: TopicCheck | None,
    seen: set[str],
) -> TopicView:
    """A topic's items in the topic's own order (rank order, list-only entries last); an
    item not in ``seen`` yet gets its anchor here and is added to it."""
    on = places.get(topic.slug, {})
    rows = []
    for item_id in topic.items:
        item = items.get(item_id)
        if item is not None:
            rows.append(_tuple_new(ItemRow, (on.get(item_id), item, item_id not in seen)))
            seen.add(item_id)
    counts = Counter(r.level for r in rows)
    return TopicView(topic, check, rows, [(lv, counts[lv]) for lv in LEVELS if counts[lv]])


_tuple_new = tuple.__new__
#: Each item's place on each of its topics: slug → item id → the item's ``ItemTopic``.
Places = dict[str, dict[str, ItemTopic]]


def places_of(items: Iterable[Item]) -> Places:
    """Where each item stands on each topic it is on (an item has one place a topic).
    Looked up by key: an item is on eight topics on average, and searching its list of
    places for each of them cost a quarter of the page's view at 100 MB."""
    out: Places = {}
    for i in items:
        for t in i.topics:
            out.setdefault(t.slug, {})[i.id] = t
    return out


def troubled(f: FileReport) -> bool:
    """A file that needs a look: not read whole, or read with warnings."""
    return f.status != "ok" or bool(f.warnings)


def change_groups(changes: list[Change]) -> list[ChangeGroup]:
    """Changes grouped by entity (topics first: fewer, weightier) then by op."""
    out = []
    for entity in ("topic", "item"):
        for op in OPS:
            found = [c for c in changes if c.entity == entity and c.op == op]
            if found:
                out.append(ChangeGroup(entity, op, found))
    return out


def tally(values: Iterable[str]) -> list[tuple[str, int]]:
    """(value, count), most frequent first, then by value.

    >>> tally(["b", "a", "b", "c"])
    [('b', 2), ('a', 1), ('c', 1)]
    """
    return sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0]))


def display_title(item: Item) -> str:
    """The title a curator knows the item by: Chinese, else original, else its summary."""
    return item.title_zh or item.title_original or shorten(item.summary_zh, 60)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut.

    >>> shorten("abcdef", 4), shorten("abc", 4)
    ('abc…', 'abc')
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def safe_href(url: str | None) -> str | None:
    """``url`` if it may be a link (http or https), else None. Records hold only such
    URLs already; the page checks again rather than trust its input.

    >>> safe_href("https://a.example/x"), safe_href("javascript:alert(1)"), safe_href(None)
    ('https://a.example/x', None, None)
    """
    if url is not None and url.lower().startswith(("http://", "https://")):
        return url
    return None
