"""The previous publish, read back from the output folder: what the next run builds on.

A publish folder holds the outputs and, beside them, ``.ingest`` (the marker: written by
ingest, schema and state versions) and ``state/``:

- ``state/manifest.json`` — state version, the publish's sequence, and every page the
  publish was built from: file name, sha256, size, and where its bytes are kept;
- ``state/pages-N.pack`` — the raw bytes of those pages (content-addressed by sha256, so
  an unchanged page is stored once; packs of earlier publishes are carried over by hard
  link), for ``--merge``;
- ``state/earlier.msgpack`` — the records as the next run needs them (:mod:`.earlier`):
  what identity weighs (the summary and original-title keys each item is known by), the
  publish that first had its id, the languages decided, and a digest of each record;
- ``state/reuse.msgpack`` and ``state/reuse-N.pack`` — the reuse cache (:mod:`.reuse`).

Every file of ``state/`` is checked against its checksum before any is used (see
:mod:`.integrity`). State version 1 kept the keys and the first publishes in
``state/evidence.jsonl`` and had no ``earlier.msgpack``: it is read as the records' JSON
and that file; versions 1 and 2 carry no checksums (their pages are checked by sha256).

A publish of schema 1.0 (no marker, no state) is read as items and topics only: ids and
the change set work, ``--merge`` does not (it has no pages).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec
from xxhash import xxh64_intdigest

from .. import SCHEMA_VERSION
from ..errors import UsageError
from ..records.output import ItemEvidence
from .earlier import (
    EARLIER,
    ITEMS,
    STATE,
    TOPICS,
    Earlier,
    EarlierItem,
    EarlierTopic,
    description_key,
    facts,
    read,
)
from .integrity import MARKER, FileSum
from .integrity import checked as checked_state
from .published_files import checked, compared_lines, json_doc, jsonl_docs, read_bytes

__all__ = ["MARKER", "STATE", "STATE_VERSION", "Previous", "RunSettings", "load"]

#: The state this ingest writes, and those it reads (version 1 kept ``evidence.jsonl``, and
#: no ``earlier.msgpack``; version 3 is the first with checksums).
STATE_VERSION = 3
READS = (1, 2, 3)


@dataclass(frozen=True, slots=True)
class PageRef:
    """One page a publish was built from, and where the state keeps its bytes."""

    file: str
    sha256: str
    size: int
    pack: str
    offset: int
    crawled_at: str | None = None  # ISO date the run that read it was given, if any


Entity = Literal["item", "topic"]


@dataclass(slots=True)
class Previous:
    """What an earlier publish left in the output folder (empty for a first publish)."""

    items: dict[str, EarlierItem] = field(default_factory=dict)  # by id
    topics: dict[str, EarlierTopic] = field(default_factory=dict)  # by slug
    sequence: int = 0  # the earlier publish's run.sequence; 0 when there is none
    pages: list[PageRef] = field(default_factory=list)
    folder: Path | None = None  # where it was read from
    has_pages: bool = False  # False for a publish older than schema 1.1
    #: item id → its published_estimate as (earliest, latest), where it had one
    windows: dict[str, tuple[dt.date, dt.date]] = field(default_factory=dict)
    files: dict[str, FileSum] = field(default_factory=dict)  # of state/, as checked
    cache_damaged: str | None = None  # why its reuse cache failed its check, if it did
    #: The records as JSON without their sources, by entity and key: all of them for a
    #: publish read from its JSON; for one read from state/earlier.msgpack, those the
    #: change set asked for (see :meth:`compared`).
    json: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    _lines: dict[str, list[bytes]] = field(default_factory=dict)

    def compared(self, entity: Entity, key: str) -> dict[str, Any]:
        """The record as JSON without its sources (which make no change): as read, or its
        line of the publish's file, read when first asked for."""
        done = self.json.setdefault(entity, {})
        if key not in done:
            earlier = self.items[key] if entity == "item" else self.topics[key]
            done[key] = self._line(entity, key, earlier.line)
        return done[key]

    def _line(self, entity: Entity, key: str, n: int) -> dict[str, Any]:
        name = ITEMS if entity == "item" else TOPICS
        assert self.folder is not None, "a record of no publish"
        if name not in self._lines:
            self._lines[name] = read_bytes(self.folder / name).splitlines()
        field_name = "id" if entity == "item" else "slug"
        path = self.folder / name
        doc = checked(path, n + 1, self._lines[name][n], field_name)
        if doc[field_name] != key:  # the digests of the files said they are the ones named
            raise UsageError(
                f"cannot read the previous publish: {path}: line {n + 1} is not {key!r}"
            )
        doc.pop("sources", None)
        return doc

    def topic_slugs(self) -> dict[str, str]:
        """The slug of each earlier topic by its description key (the smallest slug of a
        key two topics share)."""
        out: dict[str, str] = {}
        for slug in sorted(self.topics, reverse=True):
            if key := self.topics[slug].key:
                out[key] = slug
        return out

    def forget_records(self) -> None:
        """Let go of the earlier items and topics (a large publish's are hundreds of
        megabytes as JSON values) once the change set and the shrink guard are done."""
        self.items, self.topics, self.json, self._lines = {}, {}, {}, {}


@dataclass(frozen=True, slots=True)
class RunSettings:
    """How this run is asked to build on the state."""

    mode: Literal["snapshot", "merge"] = "snapshot"
    crawled_at: dt.date | None = None


def version_tuple(text: str) -> tuple[int, ...]:
    """``"1.1.0"`` → ``(1, 1, 0)``; anything else → ``()``."""
    try:
        return tuple(int(p) for p in text.split("."))
    except ValueError:
        return ()


def load(folder: Path) -> Previous:
    """Read the publish in ``folder`` (a folder ingest owns, or missing) as state: from
    ``state/earlier.msgpack`` when it is there and names the files that are (see
    :mod:`.earlier`), else from the records' JSON."""
    if not (folder / "report.json").is_file():
        return Previous()
    report = json_doc(folder / "report.json", _ReportHead)
    version = str(report.get("schema_version", ""))
    if version_tuple(version)[:2] > version_tuple(SCHEMA_VERSION)[:2]:
        raise UsageError(
            f"the publish in {str(folder)!r} has schema {version}, newer than this ingest's "
            f"{SCHEMA_VERSION}: upgrade ingest, or point --out at another folder"
        )
    prev = Previous(folder=folder)
    prev.sequence = int((report.get("run") or {}).get("sequence", 1))
    found = checked_state(folder, READS)  # every file of state/, before any is used
    state = 0 if found is None else _state_version(folder, found.manifest)
    if found is not None:
        _read_pages(prev, folder, found.manifest)
        prev.files, prev.cache_damaged = found.files, found.cache_damaged
    earlier = read(folder / STATE / EARLIER) if state >= 2 else None
    if earlier is not None and earlier.windows is not None and _names_the_files(earlier, folder):
        prev.items = {e.id: e for e in earlier.items}
        prev.topics = {t.slug: t for t in earlier.topics}
        prev.windows = earlier.windows
    else:
        _from_json(prev, folder, _evidence(folder, state, earlier))
    return prev


def _state_version(folder: Path, manifest: dict[str, Any]) -> int:
    version = manifest.get("state_version")
    if version not in READS or not isinstance(version, int):
        raise UsageError(
            f"{str(folder / STATE)!r} has state version {version!r}; this ingest reads "
            f"versions {READS[0]} to {READS[-1]}: point --out at another folder"
        )
    return version


def _read_pages(prev: Previous, folder: Path, manifest: dict[str, Any]) -> None:
    try:
        prev.pages = [PageRef(**p) for p in manifest["pages"]]
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{str(folder / STATE)!r} is damaged ({e}); cannot build on it") from e
    prev.has_pages = True


def _names_the_files(earlier: Earlier, folder: Path) -> bool:
    """Are the records' files those the state was written with (not edited since)?"""
    files = (xxh64_intdigest(read_bytes(folder / name)) for name in (ITEMS, TOPICS))
    return tuple(files) == (earlier.items_file, earlier.topics_file)


def _evidence(folder: Path, state: int, earlier: Earlier | None) -> dict[str, ItemEvidence]:
    """What a publish read from its JSON knows its items by: a state of version 1 keeps it
    in ``evidence.jsonl``, one of version 2 in ``earlier.msgpack`` (the records are read
    as JSON when their files changed since); a publish of schema 1.0 has none."""
    if earlier is not None:
        return {
            e.id: ItemEvidence(
                id=e.id, since=e.since, keys=[*e.facts.keys], titles=[*e.facts.titles]
            )
            for e in earlier.items
        }
    if state != 1:
        return {}
    try:
        lines = jsonl_docs(folder / STATE / "evidence.jsonl", "id")
        return {e.id: e for e in (msgspec.convert(d, ItemEvidence) for d in lines)}
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{str(folder / STATE)!r} is damaged ({e}); cannot build on it") from e


def _from_json(prev: Previous, folder: Path, evidence: dict[str, ItemEvidence]) -> None:
    """The earlier records from their JSON (no digests: each is compared field by field),
    and what the next run needs of them, with ``evidence``."""
    items = {str(d["id"]): d for d in compared_lines(folder / ITEMS, "id")}
    topics = {str(d["slug"]): d for d in compared_lines(folder / TOPICS, "slug")}
    prev.json = {"item": items, "topic": topics}
    for n, (item_id, doc) in enumerate(sorted(items.items())):
        prev.items[item_id] = _earlier_item(item_id, doc, evidence.get(item_id), prev, n)
        if (window := _window(folder / ITEMS, item_id, doc)) is not None:
            prev.windows[item_id] = window
    prev.topics = {
        slug: EarlierTopic(slug, None, n, description_key(topics[slug].get("description")))
        for n, slug in enumerate(sorted(topics))
    }


def _earlier_item(
    item_id: str, doc: dict[str, Any], ev: ItemEvidence | None, prev: Previous, line: int
) -> EarlierItem:
    places = (
        (t["slug"], t["rank"], t.get("level_label"))
        for t in doc.get("topics", [])
        if t.get("rank") is not None
    )
    title = doc.get("title_original")
    found = facts(
        doc.get("summary_zh") or "",
        title,
        doc.get("title_zh"),
        doc.get("url"),
        doc.get("kind_label"),
        places,
        ev,
    )
    since = ev.since if ev is not None else max(prev.sequence, 1)
    return EarlierItem(item_id, since, found, title, doc.get("original_language"), None, line)


def _window(path: Path, item_id: str, doc: dict[str, Any]) -> tuple[dt.date, dt.date] | None:
    """An earlier item's published_estimate as (earliest, latest), if it has one."""
    found = doc.get("published_estimate")
    if found is None:
        return None
    try:
        return dt.date.fromisoformat(found["earliest"]), dt.date.fromisoformat(found["latest"])
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(
            f"cannot read the previous publish: {str(path)!r}: item {item_id!r} has a "
            f"published_estimate that is not two dates: {found!r}"
        ) from e


class _ReportHead(msgspec.Struct):
    """What a run reads of the previous report: its schema and sequence (the rest of its
    tens of megabytes is skipped by the decoder, not built)."""

    schema_version: Any = ""
    run: Any = None
