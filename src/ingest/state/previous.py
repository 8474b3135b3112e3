"""The previous publish, read back from the output folder: what the next run builds on.

A publish folder holds the outputs and, beside them, ``.ingest`` (the marker: written by
ingest, schema and state versions) and ``state/``:

- ``state/manifest.json`` — state version, the publish's sequence, and every page the
  publish was built from: file name, sha256, size, and where its bytes are kept;
- ``state/evidence.jsonl`` — per item: the summary and original-title keys it is known
  by and the publish that first had its id (:class:`~ingest.records.output.ItemEvidence`);
- ``state/pages-N.pack`` — the raw bytes of those pages (content-addressed by sha256, so
  an unchanged page is stored once; packs of earlier publishes are carried over by hard
  link), for ``--merge``;
- ``state/earlier.msgpack`` — the records as the next run needs them (:mod:`.earlier`):
  what identity weighs, the languages decided, and a digest of each record.

A publish of schema 1.0 (no marker, no state) is read as items and topics only: ids and
the change set work, ``--merge`` does not (it has no pages).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import msgspec
from xxhash import xxh64_intdigest

from .. import SCHEMA_VERSION
from ..errors import UsageError
from ..records.output import ItemEvidence, ItemId, Slug
from .earlier import (
    EARLIER,
    ITEMS,
    STATE,
    TOPICS,
    Earlier,
    EarlierItem,
    EarlierTopic,
    facts,
    read,
)

__all__ = ["MARKER", "STATE", "STATE_VERSION", "Previous", "RunSettings", "load"]

MARKER = ".ingest"
STATE_VERSION = 1


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
            self._lines[name] = _read_bytes(self.folder / name).splitlines()
        field_name = "id" if entity == "item" else "slug"
        path = self.folder / name
        doc = _checked(path, n + 1, self._lines[name][n], field_name)
        if doc[field_name] != key:  # the digests of the files said they are the ones named
            raise UsageError(
                f"cannot read the previous publish: {path}: line {n + 1} is not {key!r}"
            )
        doc.pop("sources", None)
        return doc

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
    report = _json(folder / "report.json", _ReportHead)
    version = str(report.get("schema_version", ""))
    if version_tuple(version)[:2] > version_tuple(SCHEMA_VERSION)[:2]:
        raise UsageError(
            f"the publish in {str(folder)!r} has schema {version}, newer than this ingest's "
            f"{SCHEMA_VERSION}: upgrade ingest, or point --out at another folder"
        )
    prev = Previous(folder=folder)
    prev.sequence = int((report.get("run") or {}).get("sequence", 1))
    manifest_path = folder / STATE / "manifest.json"
    if manifest_path.is_file():
        _read_state(prev, folder, _json(manifest_path))
    earlier = _earlier(folder) if prev.has_pages else None
    if earlier is not None:
        prev.items = {e.id: e for e in earlier.items}
        prev.topics = {t.slug: t for t in earlier.topics}
    else:
        _from_json(prev, folder)
    return prev


def _read_state(prev: Previous, folder: Path, manifest: dict[str, Any]) -> None:
    if manifest.get("state_version") != STATE_VERSION:
        raise UsageError(
            f"{str(folder / STATE)!r} has state version {manifest.get('state_version')!r}; "
            f"this ingest reads version {STATE_VERSION}: point --out at another folder"
        )
    try:
        prev.pages = [PageRef(**p) for p in manifest["pages"]]
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{str(folder / STATE)!r} is damaged ({e}); cannot build on it") from e
    prev.has_pages = True


def _earlier(folder: Path) -> Earlier | None:
    """The state's earlier records, if they name the records' files as they are now (an
    older publish has none; files changed since are read as JSON)."""
    path = folder / STATE / EARLIER
    if not path.is_file():
        return None
    earlier = read(path)
    files = (xxh64_intdigest(_read_bytes(folder / name)) for name in (ITEMS, TOPICS))
    return earlier if tuple(files) == (earlier.items_file, earlier.topics_file) else None


def _from_json(prev: Previous, folder: Path) -> None:
    """The earlier records from their JSON (no digests: each is compared field by field),
    and what the next run needs of them from the state's evidence, if it has any."""
    evidence: dict[str, ItemEvidence] = {}
    if prev.has_pages:
        try:
            lines = _jsonl(folder / STATE / "evidence.jsonl", "id")
            evidence = {e.id: e for e in (msgspec.convert(d, ItemEvidence) for d in lines)}
        except (KeyError, TypeError, ValueError) as e:
            raise UsageError(f"{str(folder / STATE)!r} is damaged ({e}); cannot build on it") from e
    items = {str(d["id"]): d for d in _compared(folder / ITEMS, "id")}
    topics = {str(d["slug"]): d for d in _compared(folder / TOPICS, "slug")}
    prev.json = {"item": items, "topic": topics}
    for n, (item_id, doc) in enumerate(sorted(items.items())):
        prev.items[item_id] = _earlier_item(item_id, doc, evidence.get(item_id), prev, n)
    prev.topics = {slug: EarlierTopic(slug, None, n) for n, slug in enumerate(sorted(topics))}


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


class _ReportHead(msgspec.Struct):
    """What a run reads of the previous report: its schema and sequence (the rest of its
    tens of megabytes is skipped by the decoder, not built)."""

    schema_version: Any = ""
    run: Any = None


def _json(path: Path, head: type[msgspec.Struct] | None = None) -> dict[str, Any]:
    """A JSON object (msgspec reads one four times faster than the json module); only the
    fields of ``head``, when given."""
    try:
        data = path.read_bytes()
        doc: Any = msgspec.json.decode(data, type=head) if head else msgspec.json.decode(data)
    except (OSError, msgspec.DecodeError) as e:
        raise UsageError(f"cannot read the previous publish: {str(path)!r}: {e}") from e
    if head is not None:
        return msgspec.structs.asdict(doc)
    if not isinstance(doc, dict):
        raise UsageError(f"cannot read the previous publish: {str(path)!r} is not an object")
    return doc


def _compared(path: Path, key: str) -> Iterator[dict[str, Any]]:
    """Earlier records as the change set compares them: without their sources, which make
    no change (see state.changes) and are nine in ten of an item's values; each is let go
    as its line is read (at 100 MB they held the re-run's driver 200 MB higher)."""
    for doc in _jsonl(path, key):
        doc.pop("sources", None)
        yield doc


def _jsonl(path: Path, key: str) -> Iterator[dict[str, Any]]:
    for n, line in enumerate(_read_bytes(path).splitlines(), 1):
        yield _checked(path, n, line, key)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read the previous publish: {str(path)!r}: {e}") from e


def _checked(path: Path, n: int, line: bytes, key: str) -> dict[str, Any]:
    """Line ``n`` of a JSON Lines file of the publish: an object with its ``key``."""
    try:
        doc = msgspec.json.decode(line)
    except msgspec.DecodeError as e:
        raise UsageError(f"cannot read the previous publish: {path}: line {n}: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get(key), str):
        raise UsageError(f"cannot read the previous publish: {path}: line {n}: no {key!r}")
    if not _KEYS[key].fullmatch(doc[key]):  # whole: the contract's "$" lets a "\n" end it
        raise UsageError(
            f"cannot read the previous publish: {path}: line {n}: {key} {doc[key]!r} is "
            "not one ingest writes"
        )
    return doc


#: What an id and a slug are (the contract's patterns), matched whole.
_KEYS = {
    "id": re.compile(get_args(ItemId)[1].pattern),
    "slug": re.compile(get_args(Slug)[1].pattern),
}
