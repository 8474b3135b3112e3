"""The report's pages as a whole (:class:`Book`), made in the child that writes them: first
the pages beside the report page — the topics' (where each item's and topic's row lands),
then every other list's — then the report page, which shows the first entries of each
list and links to all its pages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from typing import Any

from ...records.output import Topic
from ...records.run import FileSink, RunOutput
from .changes import CONFLICTS_HEAD, change_row, conflict_row, decision_row
from .chart import Chart, build_chart
from .pager import Entry, first, paged
from .rows import (
    FILES_HEAD,
    INDEX_HEAD,
    REJECTS_HEAD,
    TOPICS,
    Links,
    Places,
    Shown,
    file_row,
    index_row,
    reject_row,
    warning_row,
)
from .sections import item_cells, topic_blocks
from .text import TABLE_TAIL
from .view import View, build_view

UL, UL_END = '<ul class="warnings">\n', "</ul>\n"


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


class Book:
    """The report page and the pages beside it, for one run."""

    def __init__(self, run: RunOutput) -> None:
        self.run = run
        self.pages: dict[str, int] = {}  # list → how many pages it has, once written
        self.anchors: dict[str, int] = {}  # "item-ID" / "topic-SLUG" → its page of topics

    @cached_property
    def view(self) -> View:
        return build_view(self.run)

    @cached_property
    def chart(self) -> Chart:
        return build_chart(self.run.topics, self.view.items)

    @cached_property
    def lists(self) -> list[Listing]:
        """Every list but the topics' blocks, in the report page's order."""
        view, report = self.view, self.run.report
        mismatched = [view.topics[c.slug] for c in view.mismatches if c.slug in view.topics]
        index = (index_row, INDEX_HEAD, TABLE_TAIL)
        return [
            Listing("changes", "Changes", "changes", view.changes, change_row),
            Listing("added", "Added", "changes", view.added, change_row),
            Listing("rejects", "Rejects", "problems", self.run.rejects, *_rejects),
            Listing("mismatches", _MISMATCHES, "problems", mismatched, *index),
            Listing(
                "warnings", "Run warnings", "problems", report.warnings, warning_row, UL, UL_END
            ),
            Listing("topic-index", "Topics", "topics", self.run.topics, *index),
            Listing("files", "Files", "files", view.files, file_row, FILES_HEAD, TABLE_TAIL),
            Listing("decisions", "Decisions", "decisions", report.decisions, decision_row),
            Listing("conflicts", _CONFLICTS, "decisions", report.conflicts, *_conflicts),
        ]

    def shown(self, prefix: str) -> Shown:
        """What the entries need, for a page whose links to the others start ``prefix``."""
        places, cells = self._for_rows
        return Shown(self.view, Links(prefix, self.anchors), places, cells)

    @cached_property
    def _for_rows(self) -> tuple[Places, dict[str, str]]:
        """Each item's place on each topic, and its cells in a topic's table."""
        places: Places = {}
        for i in self.run.items:
            for t in i.topics:
                places.setdefault(t.slug, {})[i.id] = t
        return places, {i.id: item_cells(i) for i in self.run.items}

    def write_pages(self, write: FileSink, frame: Callable[..., Iterator[bytes]]) -> None:
        """Every page beside the report page, through ``write(name, pieces)``; ``frame``
        makes a page of a list around its entries' HTML."""
        s = self.shown("")
        seen: set[str] = set()
        blocks = chain.from_iterable(topic_blocks(t, ids, s, seen) for t, ids in self._topics())
        topics = Listing(TOPICS, "Topics and their items", "topics", [], _no_row)
        self._write(topics, blocks, write, frame)
        for x in self.lists:
            self._write(x, (Entry(x.row(e, s)) for e in x.entries), write, frame)

    def _write(
        self,
        x: Listing,
        entries: Iterator[Entry],
        write: FileSink,
        frame: Callable[..., Iterator[bytes]],
    ) -> None:
        count = 0
        for page in paged(entries):
            self.anchors.update(dict.fromkeys(page.marks, page.n))
            body = x.head + page.html + x.tail
            write(f"{x.key}-{page.n}.html", frame(x, page.n, page.last, body))
            count = page.n
        self.pages[x.key] = count

    def _topics(self) -> list[tuple[Topic | None, Sequence[str]]]:
        """Each topic and its items, then the items on no topic (if any)."""
        listed = {i for t in self.run.topics for i in t.items}
        unlisted = [i.id for i in self.run.items if i.id not in listed]
        return [*((t, t.items) for t in self.run.topics), *([(None, unlisted)] if unlisted else [])]

    def first(self, x: Listing, s: Shown) -> list[str]:
        """The entries of ``x`` the report page shows (see :func:`.pager.first`)."""
        return first(x.row(e, s) for e in x.entries)


def _no_row(entry: Any, s: Shown) -> str:
    raise AssertionError("the topics' blocks are made by topic_blocks")


_MISMATCHES = "Topics whose declared and found counts differ"
_CONFLICTS = "Field conflicts in merges"
_rejects = (reject_row, REJECTS_HEAD, TABLE_TAIL)
_conflicts = (conflict_row, CONFLICTS_HEAD, TABLE_TAIL)
