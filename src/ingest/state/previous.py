"""The last publish, read back through the one door: what the next run builds on.

Besides its records, a publish keeps in ``state/``:

- ``state/records.zst`` — the records as the next run needs them (a zstd frame of
  MessagePack): per item the facts identity weighs to find it again (its summary and
  original-title keys, link, kind, places...), the publish that first had its id, its
  original title and language, its ``published_estimate``, and a digest and the line of its
  JSON (a record whose digest is its new one's has not changed; only one that differs has
  its line read and compared); per topic its digest, line and description key; and every
  page the publish was built from (file, sha256, size, the day its bytes were first crawled);
- ``state/pages/SHA256.zst`` — one entry per page: its bytes and what it produced
  (:mod:`.cache`).

Every file is listed in the marker with its digest and checked as the publish is opened
(:mod:`ingest.publish.door`): a damaged publish is refused before any input is read. A
publish of an older ingest (no ``state/records.zst``) is read from its records' JSON; the
pages of ingest 0.2's state (packs) are read for ``--merge``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import msgspec
import zstandard
from msgspec import Struct
from xxhash import xxh64_intdigest

from ingest import SCHEMA_VERSION
from ingest.contract import Item, ItemEvidence, ItemId, Slug, Topic
from ingest.errors import UsageError
from ingest.normalize.text import key_of, match_key
from ingest.publish.door import (
    KEEP,
    STATE,
    Damaged,
    NotAPublish,
    Opened,
    decode_json,
    open_publish,
    packed_pages,
)
from ingest.records import Facts, Place
from ingest.state import cache

RECORDS_FILE = f"{STATE}/records.zst"
ITEMS, TOPICS = "items.jsonl", "topics.jsonl"
Entity = Literal["item", "topic"]
Window = tuple[dt.date, dt.date]  # (earliest, latest)


class PageRef(Struct, frozen=True, array_like=True, gc=False):
    """A page a publish was built from."""

    file: str
    sha256: str
    size: int
    crawled_at: str | None = None  # ISO day its bytes were first crawled, if a run was told


class EarlierItem(Struct, frozen=True, array_like=True, gc=False):
    """An item of the previous publish, as the next run needs it."""

    id: str
    since: int  # the publish that first had its id
    facts: Facts
    title_original: str | None
    original_language: str | None
    digest: int | None  # of its JSON without sources (see line_digest); None: not known
    line: int  # its line in items.jsonl, from 0
    window: Window | None = None  # its published_estimate


class EarlierTopic(Struct, frozen=True, array_like=True, gc=False):
    slug: str
    digest: int | None
    line: int
    key: str = ""  # its description's match key: a topic-list joins a topic by it


class State(Struct, frozen=True, gc=False):
    sequence: int
    items: list[EarlierItem]
    topics: list[EarlierTopic]
    pages: list[PageRef]


@dataclass(frozen=True, slots=True)
class RunSettings:
    """How this run is asked to build on the state."""

    mode: Literal["snapshot", "merge"] = "snapshot"
    crawled_at: dt.date | None = None


@dataclass(frozen=True, slots=True)
class StoredPage:
    """A page an earlier publish kept, read again by ``--merge``: from its entry in the
    page cache, or (ingest 0.2's state) its bytes."""

    name: str
    sha256: str
    crawled_at: dt.date | None = None
    data: bytes | None = None


@dataclass(slots=True)
class Previous:
    """What the publish in the output folder leaves the next run (empty: none there)."""

    items: dict[str, EarlierItem] = field(default_factory=dict)  # by id
    topics: dict[str, EarlierTopic] = field(default_factory=dict)  # by slug
    sequence: int = 0
    pages: list[PageRef] = field(default_factory=list)
    opened: Opened | None = None
    build: str = ""  # of the ingest that wrote it
    legacy_manifest: bytes | None = None  # ingest 0.2's state manifest: its packed pages
    json: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    _lines: dict[str, list[bytes]] = field(default_factory=dict)

    @property
    def folder(self) -> Path | None:
        return None if self.opened is None else self.opened.folder

    @property
    def has_pages(self) -> bool:
        return self.opened is not None and (
            not self.opened.legacy or self.legacy_manifest is not None
        )

    @property
    def windows(self) -> dict[str, Window]:
        return {i.id: i.window for i in self.items.values() if i.window is not None}

    def known_languages(self) -> dict[str, str | None]:
        return {
            i.title_original: i.original_language for i in self.items.values() if i.title_original
        }

    def compared(self, entity: Entity, key: str) -> dict[str, Any]:
        """A record as JSON without its sources (which make no change): as read, or its
        line of the publish's file, read when first asked for."""
        done = self.json.setdefault(entity, {})
        if key not in done:
            earlier = self.items[key] if entity == "item" else self.topics[key]
            name, field_name = (ITEMS, "id") if entity == "item" else (TOPICS, "slug")
            if self.opened is None:  # known by its state alone (repair): its text is gone
                return {}
            if name not in self._lines:
                self._lines[name] = list(self.opened.lines(name))
            doc = _record(self.opened.path(name), earlier.line + 1, self._lines[name], field_name)
            if doc[field_name] != key:
                raise Damaged(self.opened.folder, f"{name} line {earlier.line + 1} is not {key!r}")
            doc.pop("sources", None)
            done[key] = doc
        return done[key]

    def topic_slugs(self) -> dict[str, str]:
        """The slug of each earlier topic by its description key (the smallest slug of a
        key two topics share)."""
        out: dict[str, str] = {}
        for slug in sorted(self.topics, reverse=True):
            if key := self.topics[slug].key:
                out[key] = slug
        return out

    def entry_path(self, sha256: str) -> Path | None:
        """Where the publish keeps the entry of a page of these bytes (None: it keeps none)."""
        name = cache.entry_name(sha256)
        if self.opened is None or name not in self.opened.files:
            return None
        return self.opened.path(name)

    def stored_pages(self) -> list[StoredPage]:
        """Every page the publish was built from, for ``--merge``: from its entries (an
        ingest 0.2 publish: from its packs, each page checked by its sha256)."""
        if not self.has_pages or self.opened is None:
            raise UsageError(
                "--merge needs the pages of the previous publish, and "
                + (
                    f"the publish in {str(self.folder)!r} keeps none (it was written by "
                    "ingest 0.1): run once without --merge first"
                    if self.opened is not None
                    else "there is no publish there yet: run once without --merge first"
                )
            )
        if self.legacy_manifest is not None:
            stored = []
            try:
                found = list(packed_pages(self.legacy_manifest, self._pack))
            except ValueError as e:
                raise Damaged(self.opened.folder, str(e)) from None
            for file, sha256, _, day, data in found:
                if data is None:
                    raise Damaged(self.opened.folder, f"page {file!r} is not in its pack")
                crawled = dt.date.fromisoformat(day) if day else None
                stored.append(StoredPage(file, sha256, crawled, data))
            return stored
        return [
            StoredPage(
                r.file, r.sha256, dt.date.fromisoformat(r.crawled_at) if r.crawled_at else None
            )
            for r in self.pages
        ]

    def _pack(self, name: str) -> bytes:
        assert self.opened is not None
        return self.opened.read(f"{STATE}/{name}")

    def close(self) -> None:
        if self.opened is not None:
            self.opened.close()


def load(folder: Path) -> Previous:
    """The publish in ``folder`` as state (empty when there is none: a folder missing or
    empty). :class:`~ingest.publish.door.Damaged` when it is damaged."""
    if not folder.is_dir() or not set(p.name for p in folder.iterdir()) - set(KEEP):
        return Previous()
    opened = open_publish(folder, check=True)
    try:
        marker = opened.marker
        if marker is not None and _newer(marker.schema_version):
            raise UsageError(
                f"the publish in {str(folder)!r} has schema {marker.schema_version}, newer "
                f"than this ingest's {SCHEMA_VERSION}: upgrade ingest, or point --out elsewhere"
            )
        if opened.legacy:
            return _from_json(opened)
        state = _decode_state(opened)
        return Previous(
            items={i.id: i for i in state.items},
            topics={t.slug: t for t in state.topics},
            sequence=state.sequence,
            pages=state.pages,
            opened=opened,
            build=marker.build if marker else "",
        )
    except BaseException:
        opened.close()
        raise


def _newer(version: str) -> bool:
    def parts(v: str) -> tuple[int, ...]:
        try:
            return tuple(int(p) for p in v.split("."))[:2]
        except ValueError:
            return ()

    return parts(version) > parts(SCHEMA_VERSION)


_STATE = msgspec.msgpack.Decoder(State)


def decode_state(data: bytes) -> State | None:
    """The state in ``data``; None when it does not read as one."""
    try:
        return _STATE.decode(cache.unpacked(data))
    except (zstandard.ZstdError, msgspec.DecodeError, RecursionError, ValueError):
        return None


def _decode_state(opened: Opened) -> State:
    state = decode_state(opened.read(RECORDS_FILE))
    if state is None:
        raise Damaged(opened.folder, f"{RECORDS_FILE} does not read as the state")
    return state


def state_bytes(state: State) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(msgspec.msgpack.encode(state))


#: Where a record's sources begin in its JSON: its last field, so all before it is what
#: the change set compares (a string's quotes are escaped: the last match is the field).
_SOURCES = b',"sources":'
assert Item.__struct_fields__[-1] == Topic.__struct_fields__[-1] == "sources"


def line_digest(line: bytes) -> int:
    """A digest of a record's JSON line without its sources (which make no change):
    records of the same digest have the same fields."""
    return xxh64_intdigest(line[: line.rfind(_SOURCES)])


def line_digests(lines: bytes) -> Iterator[int]:
    """:func:`line_digest` of each line of a piece of a JSON Lines file."""
    view, start = memoryview(lines), 0
    while (end := lines.find(b"\n", start)) != -1:
        yield xxh64_intdigest(view[start : lines.rfind(_SOURCES, start, end)])
        start = end + 1


def facts(
    summary: str,
    title_original: str | None,
    title_zh: str | None,
    url: str | None,
    kind_label: str | None,
    places: Iterable[Place],
    evidence: ItemEvidence | None,
) -> Facts:
    """The facts of a published item: its own summary's key first, then the earlier keys
    its evidence remembers; its original-title keys from the evidence (else its title's)."""
    own = key_of(summary)
    seen = evidence.keys if evidence else []
    keys = (
        tuple(seen)
        if seen[:1] == [own] and seen.count(own) == 1
        else (own, *(k for k in seen if k != own))
    )
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


def earlier_item(
    item: Item, line: int, digest: int | None, ev: ItemEvidence | None, sequence: int
) -> EarlierItem:
    """An item of a publish as the next run reads it back."""
    places = ((t.slug, t.rank, t.level_label) for t in item.topics if t.rank is not None)
    found = facts(
        item.summary_zh, item.title_original, item.title_zh, item.url, item.kind_label, places, ev
    )
    e = item.published_estimate
    return EarlierItem(
        item.id,
        ev.since if ev is not None else max(sequence, 1),
        found,
        item.title_original,
        item.original_language,
        digest,
        line,
        None if e is None else (e.earliest, e.latest),
    )


def description_key(description: str | None) -> str:
    return match_key(description) if description else ""


# --------------------------------------------------------------------------- older publishes


def _from_json(opened: Opened) -> Previous:
    """A publish of an older ingest, from its records' JSON (no digests: each record is
    compared field by field); its pages, where its state kept them, in packs."""
    prev = Previous(opened=opened)
    report = decode_json(
        opened.read("report.json"),
        dict[str, Any],
        f"cannot read the previous publish: {opened.path('report.json')}",
    )
    run = report.get("run") if isinstance(report.get("run"), dict) else {}
    prev.sequence = int(run.get("sequence", 1)) if isinstance(run.get("sequence", 1), int) else 1
    since = _legacy_since(opened)
    items = {}
    for n, doc in enumerate(_docs(opened, ITEMS, "id")):
        since_ = since.get(doc["id"], max(prev.sequence, 1))
        items[doc["id"]] = _earlier_of(doc, n, since_, opened.path(ITEMS))
        doc.pop("sources", None)
        prev.json.setdefault("item", {})[doc["id"]] = doc
    prev.items = dict(sorted(items.items()))
    for n, doc in enumerate(_docs(opened, TOPICS, "slug")):
        slug = doc["slug"]
        prev.topics[slug] = EarlierTopic(slug, None, n, description_key(doc.get("description")))
        doc.pop("sources", None)
        prev.json.setdefault("topic", {})[slug] = doc
    with contextlib.suppress(UsageError):  # none: a publish that keeps no pages
        prev.legacy_manifest = opened.read(f"{STATE}/manifest.json")
    return prev


def _earlier_of(doc: dict[str, Any], line: int, since: int, path: Path) -> EarlierItem:
    places = [
        (t["slug"], t["rank"], t.get("level_label"))
        for t in doc.get("topics") or []
        if isinstance(t, dict) and isinstance(t.get("rank"), int)
    ]
    title = doc.get("title_original")
    found = facts(
        doc.get("summary_zh") or "",
        title,
        doc.get("title_zh"),
        doc.get("url"),
        doc.get("kind_label"),
        places,
        None,
    )
    window = None
    if (e := doc.get("published_estimate")) is not None:
        try:
            window = (dt.date.fromisoformat(e["earliest"]), dt.date.fromisoformat(e["latest"]))
        except (KeyError, TypeError, ValueError):
            raise UsageError(
                f"cannot read the previous publish: {str(path)!r}: item {doc['id']!r} has a "
                f"published_estimate that is not two dates: {e!r}"
            ) from None
    return EarlierItem(
        doc["id"], since, found, title, doc.get("original_language"), None, line, window
    )


def _docs(opened: Opened, name: str, key: str) -> Iterator[dict[str, Any]]:
    lines = list(opened.lines(name))
    for n in range(len(lines)):
        yield _record(opened.path(name), n + 1, lines, key)


def _record(path: Path, n: int, lines: list[bytes], key: str) -> dict[str, Any]:
    """Line ``n`` of a JSON Lines file of the publish: an object with its ``key``, an id or
    slug of the contract's pattern."""
    where = f"cannot read the previous publish: {path}: line {n}"
    if n > len(lines):
        raise UsageError(f"cannot read the previous publish: {path}: it has no line {n}")
    doc: dict[str, Any] = decode_json(lines[n - 1], dict[str, Any], where)
    if not isinstance(doc.get(key), str):
        raise UsageError(f"{where}: no {key!r}")
    if not _KEYS[key].fullmatch(doc[key]):
        raise UsageError(f"{where}: {key} {doc[key]!r} is not one ingest writes")
    return doc


#: What an id and a slug are (the contract's patterns), matched whole.
_KEYS = {
    "id": re.compile(get_args(ItemId)[1].pattern),
    "slug": re.compile(get_args(Slug)[1].pattern),
}


def _legacy_since(opened: Opened) -> dict[str, int]:
    """The publish that first had each id, from ingest 0.2's ``state/earlier.msgpack``."""
    try:
        data = opened.read(f"{STATE}/earlier.msgpack")
        items = msgspec.msgpack.decode(data)["items"]
        return {str(i[0]): int(i[1]) for i in items}
    except (UsageError, msgspec.DecodeError, KeyError, TypeError, ValueError, IndexError):
        return {}


__all__ = ["NotAPublish", "Previous", "load"]
