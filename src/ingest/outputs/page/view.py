"""What the report's pages show, gathered from a run's records: plain values, in the order
a curator reads them (what changed, what went wrong, the topics, the files, the decisions).

Everything here is a pure function of the :class:`RunOutput`; nothing reads the clock, so
the same run gives the same pages, byte for byte. Texts stay raw: the rows escape them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from msgspec import structs

from ...records.output import Change, FileReport, Item, Reject, Topic, TopicCheck
from ...records.run import RunOutput
from ...records.serial import to_builtins
from .text import shorten

#: Levels in the order the pages show them; ``None`` (a list-only entry) last.
LEVELS: tuple[str | None, ...] = ("beginner", "intermediate", "advanced", None)
#: Changes in the order the curator reads them: what changed, what went, what came.
OPS = ("changed", "removed", "merged", "added")
#: The files most affected shown for each reason of rejects.
MOST_AFFECTED = 3


@dataclass(frozen=True, slots=True)
class ChangeEntry:
    """A change, with the values its fields had and have (``changed``), or the title an
    item that went had (``removed``, ``merged``: as ``before["title"]``)."""

    change: Change
    before: Mapping[str, Any]
    after: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Reason:
    """One reason of rejects: how many, and the files with most of them."""

    reason: str
    count: int
    files: list[tuple[str, int]]


@dataclass(frozen=True, slots=True)
class View:
    run: RunOutput
    items: Mapping[str, Item]
    topics: Mapping[str, Topic]
    checks: Mapping[str, TopicCheck]
    glance: list[tuple[str, int]]
    pipeline: list[tuple[str, int]]
    changes: list[ChangeEntry]  # changed, removed, merged
    added: list[ChangeEntry]
    reasons: list[Reason]
    mismatches: list[TopicCheck]
    files: list[FileReport]  # those that need a look first
    troubled: int  # how many of ``files`` need a look
    statuses: list[tuple[str, int]]
    decision_kinds: list[tuple[str, int]]
    conflict_fields: list[tuple[str, int]]
    titles: Mapping[str, str]  # item id → the title a curator knows it by


def build_view(run: RunOutput) -> View:
    """Gather what the pages show from ``run``."""
    report = run.report
    items = {i.id: i for i in run.items}
    topics = {t.slug: t for t in run.topics}
    files = sorted(report.files, key=lambda f: not troubled(f))  # stable: in order otherwise
    changes = change_entries(run, items, topics)
    return View(
        run=run,
        items=items,
        topics=topics,
        checks={c.slug: c for c in report.consistency},
        glance=glance(run),
        pipeline=[(k.replace("_", " "), v) for k, v in structs.asdict(report.totals).items()],
        changes=[e for e in changes if e.change.op != "added"],
        added=[e for e in changes if e.change.op == "added"],
        reasons=reasons(run.rejects),
        mismatches=[c for c in report.consistency if not c.ok],
        files=files,
        troubled=sum(map(troubled, files)),
        statuses=tally(_status(f) for f in files),
        decision_kinds=tally(d.kind for d in report.decisions),
        conflict_fields=tally(c.field for c in report.conflicts),
        titles={i.id: display_title(i) for i in run.items},
    )


def glance(run: RunOutput) -> list[tuple[str, int]]:
    """The run in the curator's words: what the site shows, and what this publish did."""
    t, ch = run.report.totals, run.report.changes.items
    return [
        ("resources", t.items),
        ("topics", t.topics),
        ("new today", ch.added),
        ("changed", ch.changed),
        ("removed", ch.removed + ch.merged),
        ("could not be read", t.rejects),
        ("files read", t.files),
    ]


def change_entries(
    run: RunOutput, items: Mapping[str, Item], topics: Mapping[str, Topic]
) -> list[ChangeEntry]:
    """Every change, in the order :data:`OPS` (topics before items within each), with the
    values a changed record's fields had and have."""
    order = {op: n for n, op in enumerate(OPS)}
    found = sorted(run.changes, key=lambda c: (order[c.op], c.entity != "topic"))
    out = []
    for c in found:
        before = run.previous_values.get((c.entity, c.id), {})
        after: Mapping[str, Any] = {}
        if c.op == "changed":
            record = items.get(c.id) if c.entity == "item" else topics.get(c.id)
            now = {} if record is None else to_builtins(record)
            after = {f: now.get(f) for f in c.fields}
        out.append(ChangeEntry(c, before, after))
    return out


def reasons(rejects: Iterable[Reject]) -> list[Reason]:
    """The reasons of rejects, most frequent first, each with its most affected files."""
    per: dict[str, Counter[str]] = {}
    for r in rejects:
        per.setdefault(r.reason, Counter())[r.file] += 1
    out = [Reason(reason, sum(files.values()), _most(files)) for reason, files in per.items()]
    return sorted(out, key=lambda r: (-r.count, r.reason))


def _most(files: Counter[str]) -> list[tuple[str, int]]:
    return sorted(files.items(), key=lambda kv: (-kv[1], kv[0]))[:MOST_AFFECTED]


def troubled(f: FileReport) -> bool:
    """A file that needs a look: not read whole, or read with warnings."""
    return f.status != "ok" or bool(f.warnings)


def _status(f: FileReport) -> str:
    return "ok, with warnings" if f.status == "ok" and f.warnings else f.status


def tally(values: Iterable[str]) -> list[tuple[str, int]]:
    """(value, count), most frequent first, then by value.

    >>> tally(["b", "a", "b", "c"])
    [('b', 2), ('a', 1), ('c', 1)]
    """
    return sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0]))


def display_title(item: Item) -> str:
    """The title a curator knows the item by: Chinese, else original, else its summary."""
    return item.title_zh or item.title_original or shorten(item.summary_zh, 60)


def levels_on(topic: Topic, items: Mapping[str, Item]) -> list[tuple[str | None, int]]:
    """How many of a topic's items are at each level on it, in :data:`LEVELS` order."""
    counts: Counter[str | None] = Counter()
    for item_id in topic.items:
        item = items.get(item_id)
        place = (
            None if item is None else next((t for t in item.topics if t.slug == topic.slug), None)
        )
        counts[None if place is None else place.level] += 1
    return [(lv, counts[lv]) for lv in LEVELS if counts[lv]]
