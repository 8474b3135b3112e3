"""The report's pages as a whole: every long list (:class:`.plan.Listing`), which page holds
what, and where each item's and topic's row is (:class:`Book`). Made before the pages are
written, in the run's process; what only the pages need (each item's place on each topic,
its cells) is made when the first page is, in the child that writes them.
"""

from __future__ import annotations

from functools import cached_property, partial
from typing import Any

from ...records.run import RunOutput
from .changes import (
    CONFLICTS_HEAD,
    change_bytes,
    change_row,
    conflict_bytes,
    conflict_row,
    decision_bytes,
    decision_row,
)
from .chart import Chart, build_chart
from .plan import BUDGET, Listing, anchors, listing, pack, topic_parts
from .rows import (
    FILES_HEAD,
    INDEX_HEAD,
    REJECTS_HEAD,
    TOPICS,
    Links,
    Places,
    Shown,
    file_bytes,
    file_row,
    index_bytes,
    index_row,
    reject_bytes,
    reject_row,
    warning_bytes,
    warning_row,
)
from .sections import head_bytes, item_bytes, item_cells, topic_block
from .view import View, build_view

UL, UL_END = '<ul class="warnings">\n', "</ul>\n"
_conflicts = (conflict_bytes, conflict_row, CONFLICTS_HEAD)
#: The lists, in the order of the report page, and the section each is in.
SECTION = {
    "changes": "changes",
    "added": "changes",
    "rejects": "problems",
    "mismatches": "problems",
    "warnings": "problems",
    "topic-index": "topics",
    TOPICS: "topics",
    "files": "files",
    "decisions": "decisions",
    "conflicts": "decisions",
}


class Book:
    """The report page and the pages beside it, planned."""

    def __init__(self, run: RunOutput) -> None:
        self.view = view = build_view(run)
        self.chart: Chart = build_chart(run.topics, view.items)
        report, topics = run.report, view.topics
        on_topics = {i for t in run.topics for i in t.items}
        unlisted = [i.id for i in run.items if i.id not in on_topics]
        sizes = {i.id: item_bytes(i) for i in run.items}
        head = partial(head_bytes, view=view)
        parts, bounds = topic_parts(run.topics, unlisted, head, sizes.__getitem__)
        pages = pack(bounds, BUDGET)
        parts, self.item_pages, self.topic_pages = anchors(parts, pages)
        mismatched = [topics[c.slug] for c in view.mismatches if c.slug in topics]
        index = (index_bytes, index_row, INDEX_HEAD)
        lists: list[tuple[Any, ...]] = [
            ("changes", "Changes", view.changes, change_bytes, change_row),
            ("added", "Added", view.added, change_bytes, change_row),
            ("rejects", "Rejects", run.rejects, reject_bytes, reject_row, REJECTS_HEAD),
            ("mismatches", "Topics whose declared and found counts differ", mismatched, *index),
            ("warnings", "Run warnings", report.warnings, warning_bytes, warning_row, UL, UL_END),
            ("topic-index", "Topics", run.topics, *index),
            ("files", "Files", view.files, file_bytes, file_row, FILES_HEAD),
            ("decisions", "Decisions", report.decisions, decision_bytes, decision_row),
            ("conflicts", "Field conflicts in merges", report.conflicts, *_conflicts),
        ]
        self.listings: dict[str, Listing] = {key: listing(view, key, *spec) for key, *spec in lists}
        self.listings[TOPICS] = Listing(
            TOPICS, "Topics and their items", parts, topic_block, pages, 0
        )

    def names(self) -> list[str]:
        """The files of the pages beside the report page, in the publish."""
        return [x.name(n) for x in self.listings.values() for n in range(1, len(x.pages) + 1)]

    def shown(self, prefix: str) -> Shown:
        """What the entries need, for a page whose links to the others start ``prefix``."""
        places, cells = self._for_rows
        return Shown(self.view, Links(prefix, self.item_pages, self.topic_pages), places, cells)

    @cached_property
    def _for_rows(self) -> tuple[Places, dict[str, str]]:
        """Each item's place on each topic, and its cells: made once, by the pages' child."""
        places: Places = {}
        for i in self.view.run.items:
            for t in i.topics:
                places.setdefault(t.slug, {})[i.id] = t
        return places, {i.id: item_cells(i) for i in self.view.run.items}


def entries_html(x: Listing, entries: range, s: Shown) -> str:
    """The HTML of some of a list's entries, with the list's head and tail."""
    rows: list[Any] = [x.entries[k] for k in entries]
    return x.head + "".join(x.row(e, s) for e in rows) + x.tail


__all__ = ["SECTION", "Book", "View", "entries_html"]
