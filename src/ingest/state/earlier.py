"""The publish's records as the next run reads them: ``state/earlier.msgpack``.

A run needs three things of the publish it replaces: the facts identity weighs to find an
item again (its summary and original-title keys, link, kind, places...), the languages it
decided, and, for the change set, whether each record changed. Per item the file keeps its
:class:`Facts`, the publish that first had its id, its original title and language, its
line in ``items.jsonl`` and a digest of its JSON without ``sources``, and its
``published_estimate`` (the window the next crawl narrows, :mod:`.ages`); per topic its
line in ``topics.jsonl`` and digest. The next run reads this one file (0.1 s at 100 MB)
instead of decoding ``items.jsonl`` and keying every summary again (about 1 s); a record
whose digest is the same as its new one has not changed, and only a record whose digest
differs has its line read and compared field by field.

A publish without the file (state version 1, or schema 1.0), or whose records' files
changed since it was written, is read from its JSON (:mod:`.previous`): digests unknown,
every record compared field by field.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import cast

import msgspec
from msgspec import Struct, structs
from xxhash import xxh64, xxh64_intdigest

from ..errors import UsageError
from ..normalize.text import key_of, match_key
from ..records.output import Item, ItemEvidence, Topic
from ..records.run import Content, Pieces, RunOutput

#: The file, in ``state/``; the files whose lines it names.
EARLIER = "earlier.msgpack"
STATE = "state"
ITEMS, TOPICS = "items.jsonl", "topics.jsonl"

Place = tuple[str, int, str | None]  # (slug, rank, level label)


class Facts(Struct, frozen=True, array_like=True, gc=False):
    """What identity compares of an item, this run's or the previous publish's (a Struct:
    a claim carries one from a Dask worker to the driver, and pickles in C)."""

    keys: tuple[str, ...]  # summary match keys (the first is its own summary's)
    titles: tuple[str, ...]  # original-title match keys
    url: str | None
    kind: str | None  # kind label
    places: tuple[Place, ...]
    summary: str
    title: str | None
    source: str


class EarlierItem(Struct, frozen=True, array_like=True, gc=False):
    """An item of the previous publish, as the next run needs it."""

    id: str
    since: int  # the publish that first had its id
    facts: Facts
    title_original: str | None
    original_language: str | None
    digest: int | None  # of its JSON without sources (see digest); None: not known
    line: int  # its line in items.jsonl, from 0


class EarlierTopic(Struct, frozen=True, array_like=True, gc=False):
    """A topic of the previous publish, as the next run needs it."""

    slug: str
    digest: int | None
    line: int  # its line in topics.jsonl, from 0
    key: str = ""  # its description's match key: a topic-list joins a topic by it


class Earlier(Struct, frozen=True, gc=False):
    """The whole file: its records, and the digests of the two files whose lines they name
    (the file is used only while those are the files it was written with)."""

    items_file: int  # xxh64 of items.jsonl
    topics_file: int  # xxh64 of topics.jsonl
    items: list[EarlierItem]
    topics: list[EarlierTopic]
    #: item id → its published_estimate (earliest, latest), for the items that have one;
    #: None in a file written before it was kept (the records are read as JSON then)
    windows: dict[str, tuple[dt.date, dt.date]] | None = None


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.msgpack.Decoder(Earlier)
#: Where a record's sources begin in its JSON: its last field (checked below), so all
#: before it is what the change set compares. A string's quotes are escaped and a source
#: has no field of that name: the last match in a line is the record's own field.
_SOURCES = b',"sources":'
assert Item.__struct_fields__[-1] == Topic.__struct_fields__[-1] == "sources"


def digest(record: Item | Topic) -> int:
    """A digest of the record as JSON without its sources (which make no change): records
    of the same digest have the same fields (the change set's fast path). The same as
    :func:`line_digest` of the record's line in a publish."""
    return line_digest(_ENCODER.encode(structs.replace(record, sources=[])))


def line_digest(line: bytes) -> int:
    """The digest of a record from its JSON line (see :func:`digest`)."""
    return xxh64_intdigest(line[: line.rfind(_SOURCES)])


def _line_digests(lines: bytes) -> Iterator[int]:
    """:func:`line_digest` of each of ``lines`` (each ended by a line break), on views of
    them (a publish's items are tens of megabytes: nothing is copied)."""
    view, start = memoryview(lines), 0
    while (end := lines.find(b"\n", start)) != -1:
        yield xxh64_intdigest(view[start : lines.rfind(_SOURCES, start, end)])
        start = end + 1
    assert start == len(lines), "a JSON Lines piece whose last line has no line break"


def description_key(description: str | None) -> str:
    """The key a topic-list joins a topic by: its description's match key."""
    return match_key(description) if description else ""


def facts(
    summary: str,
    title_original: str | None,
    title_zh: str | None,
    url: str | None,
    kind_label: str | None,
    places: Iterable[Place],
    evidence: ItemEvidence | None,
    own: str | None = None,
) -> Facts:
    """The facts of a published item: its own summary's key (``own``, when the run has it)
    first, then the earlier keys its evidence remembers; its original-title keys from the
    evidence (else its title's)."""
    own = key_of(summary) if own is None else own  # remembered: a run keys it again
    seen = evidence.keys if evidence else []
    if seen and seen[0] == own and seen.count(own) == 1:  # the usual case: its own first
        keys = tuple(seen)
    else:
        keys = (own, *(k for k in seen if k != own))
    if evidence is not None:
        titles = tuple(evidence.titles)
    else:
        titles = (match_key(title_original),) if title_original else ()
    return Facts(
        keys=keys,
        titles=titles,
        url=url,
        kind=kind_label,
        places=tuple(places),
        summary=summary,
        title=title_zh or title_original,
        source="previous publish",
    )


class Witness:
    """The pieces of a JSON Lines file as they are written, and once they all are, the
    file's xxh64 and each line's :func:`line_digest`."""

    def __init__(self, pieces: Pieces) -> None:
        self._pieces, self._hash, self._done = pieces, xxh64(), False
        self._digests: list[int] = []

    def __call__(self) -> Iterator[bytes]:
        for piece in self._pieces():  # jsonl's pieces are whole lines
            self._hash.update(piece)
            self._digests.extend(_line_digests(piece))
            yield piece
        self._done = True

    def digest(self) -> int:
        assert self._done, "a file's digest was asked for before it was written"
        return self._hash.intdigest()

    def line_digests(self) -> list[int]:
        assert self._done, "a file's digests were asked for before it was written"
        return self._digests


def with_earlier(files: dict[str, Content], run: RunOutput) -> dict[str, Content]:
    """``files`` (a publish's, as rendered), and :data:`EARLIER` after them: made once
    ``items.jsonl`` and ``topics.jsonl`` are written, from what was written."""
    seen = {name: Witness(cast(Pieces, files[name])) for name in (ITEMS, TOPICS)}
    made: Content = partial(_earlier_bytes, run, seen[ITEMS], seen[TOPICS])
    return {**files, **seen, f"{STATE}/{EARLIER}": made}


def _earlier_bytes(run: RunOutput, items: Witness, topics: Witness) -> list[bytes]:
    return [written(run, items, topics)]


def written(run: RunOutput, items: Witness, topics: Witness) -> bytes:
    """The file a publish of ``run`` leaves for the next run, ``items`` and ``topics``:
    its records' files, written."""
    by_id = {e.id: e for e in run.evidence}
    sequence, keys = run.report.run.sequence, run.summary_keys
    item_digests, topic_digests = items.line_digests(), topics.line_digests()
    assert len(item_digests) == len(run.items) and len(topic_digests) == len(run.topics)
    return msgspec.msgpack.encode(
        Earlier(
            items.digest(),
            topics.digest(),
            [
                _item(item, n, by_id.get(item.id), d, sequence, keys.get(item.id))
                for n, (item, d) in enumerate(zip(run.items, item_digests, strict=True))
            ],
            [
                EarlierTopic(t.slug, d, n, description_key(t.description))
                for n, (t, d) in enumerate(zip(run.topics, topic_digests, strict=True))
            ],
            {
                i.id: (i.published_estimate.earliest, i.published_estimate.latest)
                for i in run.items
                if i.published_estimate is not None
            },
        )
    )


def _item(
    item: Item, line: int, ev: ItemEvidence | None, dig: int, sequence: int, own: str | None
) -> EarlierItem:
    places = ((t.slug, t.rank, t.level_label) for t in item.topics if t.rank is not None)
    found = facts(
        item.summary_zh,
        item.title_original,
        item.title_zh,
        item.url,
        item.kind_label,
        places,
        ev,
        own,
    )
    since = ev.since if ev is not None else max(sequence, 1)
    return EarlierItem(
        item.id, since, found, item.title_original, item.original_language, dig, line
    )


def read(path: Path) -> Earlier:
    """The file, checked whole against its types."""
    try:
        return _DECODER.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError) as e:  # ValidationError is a DecodeError
        raise UsageError(f"cannot read the previous publish: {str(path)!r} is damaged: {e}") from e
