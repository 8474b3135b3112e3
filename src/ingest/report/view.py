"""What the report pages show of a run, and the lists of HTML entries in pages and parts."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from msgspec import structs

from ingest.contract import Change, FileReport, Reject, Topic, TopicCheck
from ingest.records import RunOutput


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: Bytes of entries on a page beside the report page: with its frame and style, every page
#: stays under 3 MB.
BUDGET = 1_000_000
#: A part of a topic's block, at most (a larger topic's block is cut in parts).
PART_BYTES = 500_000
#: Entries of a list the report page shows at most, and their bytes at most (ten lists).
MAIN_ROWS = 30
MAIN_BUDGET = 200_000


class Entry(NamedTuple):
    """One entry of a list: its HTML, and the anchors in it."""

    html: str
    marks: tuple[str, ...] = ()


class Page(NamedTuple):
    n: int  # from 1
    html: str
    last: bool
    marks: list[str]


def _filled(entries: Iterable[Entry], budget: int) -> Iterator[tuple[list[Entry], bool]]:
    """``entries`` in runs of at most ``budget`` bytes (an entry larger than the budget alone
    in its run), each given as soon as it is full, and whether it is the last."""
    held: list[Entry] = []
    used = 0
    for entry in entries:
        size = len(entry.html.encode("utf-8"))
        if held and used + size > budget:
            yield held, False
            held, used = [], 0
        held.append(entry)
        used += size
    yield held, True


def paged(entries: Iterable[Entry], budget: int = BUDGET) -> Iterator[Page]:
    """``entries`` in pages of at most ``budget`` bytes.

    >>> [p[:3] for p in paged([Entry("aaaa"), Entry("bb"), Entry("cccc"), Entry("d")], 6)]
    [(1, 'aaaabb', False), (2, 'ccccd', True)]
    """
    for n, (held, last) in enumerate(_filled(entries, budget), 1):
        if held:
            yield Page(n, "".join(e.html for e in held), last, [m for e in held for m in e.marks])


def first(entries: Iterable[str], rows: int = MAIN_ROWS, budget: int = MAIN_BUDGET) -> list[str]:
    """The first of ``entries`` the report page shows: at most ``rows``, ``budget`` bytes."""
    out: list[str] = []
    used = 0
    for html in entries:
        used += len(html.encode("utf-8"))
        if len(out) == rows or used > budget:
            break
        out.append(html)
    return out


def cut(rows: Iterable[Entry], head: Callable[[int, int], str], tail: str) -> Iterator[Entry]:
    """A block of ``rows`` in parts of at most :data:`PART_BYTES`, each between its
    ``head(index of its first row, index after its last)`` and ``tail``.

    >>> list(cut([Entry("a", ("x",)), Entry("b")], lambda i, j: f"<{i}-{j}>", "."))
    [Entry(html='<0-2>ab.', marks=('x',))]
    """
    start = 0
    for held, _ in _filled(rows, PART_BYTES):
        html = head(start, start + len(held)) + "".join(r.html for r in held) + tail
        yield Entry(html, tuple(m for r in held for m in r.marks))
        start += len(held)


#: Changes in the order the curator reads them: what changed, what went, what came.
OPS = ("changed", "removed", "merged", "added")
MOST_AFFECTED = 3  # the files shown for each reason of rejects


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
    topics: Mapping[str, Topic]
    checks: Mapping[str, TopicCheck]
    glance: list[tuple[str, int]]  # the run in the curator's words
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


def _counted(total: str) -> str:
    """A total's name on the page (``warnings`` counts the files' and the run's, as the
    summary's line does apart)."""
    return "warnings of the files and the run" if total == "warnings" else total.replace("_", " ")


def build_view(run: RunOutput) -> View:
    report, totals, ch = run.report, run.report.totals, run.report.changes.items
    files = sorted(report.files, key=lambda f: not troubled(f))  # stable: in order otherwise
    changes = change_entries(run)
    return View(
        topics={t.slug: t for t in run.topics},
        checks={c.slug: c for c in report.consistency},
        glance=[
            ("resources", totals.items),
            ("topics", totals.topics),
            ("new today", ch.added),
            ("changed", ch.changed),
            ("removed", ch.removed + ch.merged),
            ("could not be read", totals.rejects),
            ("files read", totals.files),
        ],
        pipeline=[(_counted(k), v) for k, v in structs.asdict(totals).items()],
        changes=[e for e in changes if e.change.op != "added"],
        added=[e for e in changes if e.change.op == "added"],
        reasons=reasons(run.rejects),
        mismatches=[c for c in report.consistency if not c.ok],
        files=files,
        troubled=sum(map(troubled, files)),
        statuses=tally(
            "ok, with warnings" if f.status == "ok" and f.warnings else f.status for f in files
        ),
        decision_kinds=tally(d.kind for d in report.decisions),
        conflict_fields=tally(c.field for c in report.conflicts),
        titles={
            i.id: i.title_zh or i.title_original or shorten(i.summary_zh, 60) for i in run.items
        },
    )


def change_entries(run: RunOutput) -> list[ChangeEntry]:
    """Every change, in the order :data:`OPS` (topics before items within each), with the
    values a changed record's fields had and have."""
    out = []
    for c in sorted(run.changes, key=lambda c: (OPS.index(c.op), c.entity != "topic")):
        if c.op == "changed":
            before = {f: v.before for f, v in c.values.items()}
            after = {f: v.after for f, v in c.values.items()}
            out.append(ChangeEntry(c, before, after))
        else:
            out.append(ChangeEntry(c, run.previous_values.get((c.entity, c.id), {}), {}))
    return out


def reasons(rejects: Iterable[Reject]) -> list[Reason]:
    """The reasons of rejects, most frequent first, each with its most affected files."""
    per: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for r in rejects:
        per[r.reason][r.file] += 1
    out = [Reason(why, files.total(), tally(files)[:MOST_AFFECTED]) for why, files in per.items()]
    return sorted(out, key=lambda r: (-r.count, r.reason))


def troubled(f: FileReport) -> bool:
    """A file that needs a look: not read whole, or read with warnings."""
    return f.status != "ok" or bool(f.warnings)


def tally(values: Iterable[str] | Mapping[str, int]) -> list[tuple[str, int]]:
    """(value, count) of ``values`` (or of their counts), most frequent first, then by value.

    >>> tally(["b", "a", "b", "c"])
    [('b', 2), ('a', 1), ('c', 1)]
    """
    return sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0]))
