"""The folder checked before the database is touched, in one pass over each file.

Every line is parsed by its output model, and what a database would refuse, or hold
wrongly, is refused here in one line naming the file: keys out of order or twice (the
change set walks ``items.jsonl`` and the database side by side, both in key order), an id
or slug a record names that is not in the folder, an item and a topic that disagree on
who belongs to the topic.

What is kept is small: per topic, its items as their line numbers in ``items.jsonl``
(4 bytes an entry; they give the ``position`` of each ``item_topics`` row), the ``merged`` pairs of
``changes.jsonl``, the counts and the files' digest. While ``topics.jsonl`` is read, the
items' ids are held too (to turn the topics' ids into line numbers).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from pathlib import Path

from ...errors import UsageError
from ...records.output import Change, Item, Reject, Topic
from ..published import Published, ReportHead

#: slug → line numbers (from 1) in items.jsonl of the topic's items, in the topic's order.
Members = dict[str, "array[int]"]


@dataclass(slots=True)
class Checked:
    """What the database writer needs of a checked folder besides its files."""

    head: ReportHead
    digest: str
    items: int
    topics: int
    rejects: int
    merged: dict[str, str]  # old id → the id it was merged into, from changes.jsonl
    members: Members


def check(pub: Published) -> Checked:
    """The folder's records parsed and their references checked; :class:`UsageError`
    (one line, naming the file) at the first thing wrong."""
    head = pub.head()
    ordinal, claimed = _items(pub)
    members = _topics(pub, ordinal)
    _agree(pub.folder, ordinal, claimed, members)
    merged = {}
    for _, _, change in pub.records("changes.jsonl", Change):
        if change.op == "merged" and change.into is not None:
            merged[change.id] = change.into
    rejects = sum(1 for _ in pub.records("rejects.jsonl", Reject))
    return Checked(head, pub.digest(), len(ordinal), len(members), rejects, merged, members)


def _items(pub: Published) -> tuple[dict[str, int], Members]:
    """id → its line number; slug → line numbers of the items that list the topic."""
    where = pub.folder / "items.jsonl"
    ordinal: dict[str, int] = {}
    claimed: Members = {}
    forward: dict[str, str] = {}  # related id not seen yet → the first item naming it
    previous = ""
    for n, _, item in pub.records("items.jsonl", Item):
        _in_order(where, n, "id", previous, item.id)
        previous = item.id
        ordinal[item.id] = n
        _unique(f"{pub.folder}: item {item.id}: topics", [t.slug for t in item.topics])
        for t in item.topics:
            claimed.setdefault(t.slug, array("I")).append(n)
        for other in item.related:
            if other not in ordinal:
                forward.setdefault(other, item.id)
    for other, item_id in forward.items():
        if other not in ordinal:
            raise UsageError(
                f"{pub.folder}: item {item_id}: related {other!r} is not in the folder"
            )
    return ordinal, claimed


def _topics(pub: Published, ordinal: dict[str, int]) -> Members:
    where = pub.folder / "topics.jsonl"
    members: Members = {}
    previous = ""
    for n, _, topic in pub.records("topics.jsonl", Topic):
        _in_order(where, n, "slug", previous, topic.slug)
        previous = topic.slug
        _unique(f"{pub.folder}: topic {topic.slug}: items", topic.items)
        found = array("I")
        for item_id in topic.items:
            if item_id not in ordinal:
                raise UsageError(
                    f"{pub.folder}: topic {topic.slug}: item {item_id!r} is not in the folder"
                )
            found.append(ordinal[item_id])
        members[topic.slug] = found
    return members


def _agree(folder: Path, ordinal: dict[str, int], claimed: Members, members: Members) -> None:
    """Items and topics name the same (item, topic) pairs."""
    unknown = sorted(claimed.keys() - members.keys())
    odd: list[tuple[int, str]] = []
    for slug in sorted(claimed.keys() | members.keys()):
        mine, theirs = set(claimed.get(slug, ())), set(members.get(slug, ()))
        odd += [(n, slug) for n in mine ^ theirs]
    if not odd:
        return
    ids = {n: item_id for item_id, n in ordinal.items()}
    pairs = sorted((ids[n], slug) for n, slug in odd)
    if unknown:
        [(item_id, slug)] = [p for p in pairs if p[1] == unknown[0]][:1]
        raise UsageError(f"{folder}: item {item_id}: topic {slug!r} is not in the folder")
    item_id, slug = pairs[0]
    raise UsageError(
        f"{folder}: item {item_id} and topic {slug} disagree on membership "
        f"({len(pairs)} such pair(s))"
    )


def _in_order(where: Path, line: int, key: str, previous: str, this: str) -> None:
    """Keys strictly ascending in code point order, as ``ingest run`` writes them."""
    if previous and this <= previous:
        how = "appears twice" if this == previous else f"comes after {previous!r}"
        raise UsageError(
            f"{where}: line {line}: {key} {this!r} {how}; a publish lists each once, "
            f"sorted by {key}"
        )


def _unique(where: str, keys: list[str]) -> None:
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise UsageError(f"{where}: {key!r} appears twice")
        seen.add(key)
