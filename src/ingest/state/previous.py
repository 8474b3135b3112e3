"""The previous publish, read back from the output folder: what the next run builds on.

A publish folder holds the outputs and, beside them, ``.ingest`` (the marker: written by
ingest, schema and state versions) and ``state/``:

- ``state/manifest.json`` — state version, the publish's sequence, and every page the
  publish was built from: file name, sha256, size, and where its bytes are kept;
- ``state/evidence.jsonl`` — per item: the summary and original-title keys it is known
  by and the publish that first had its id (:class:`~ingest.records.output.ItemEvidence`);
- ``state/pages-N.pack`` — the raw bytes of those pages (content-addressed by sha256, so
  an unchanged page is stored once; packs of earlier publishes are carried over by hard
  link), for ``--merge``.

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

from .. import SCHEMA_VERSION
from ..errors import UsageError
from ..records.output import ItemEvidence, ItemId, Slug

MARKER = ".ingest"
STATE = "state"
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


@dataclass(slots=True)
class Previous:
    """What an earlier publish left in the output folder (empty for a first publish)."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # id → item as JSON, no sources
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)  # slug → topic, no sources
    sequence: int = 0  # the earlier publish's run.sequence; 0 when there is none
    evidence: dict[str, ItemEvidence] = field(default_factory=dict)  # id → what it is known by
    pages: list[PageRef] = field(default_factory=list)
    folder: Path | None = None  # where it was read from
    has_pages: bool = False  # False for a publish older than schema 1.1

    def forget_records(self) -> None:
        """Let go of the earlier items and topics (a large publish's are hundreds of
        megabytes as JSON values) once the change set and the shrink guard are done."""
        self.items = {}
        self.topics = {}


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
    """Read the publish in ``folder`` (a folder ingest owns, or missing) as state."""
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
    prev.items = {str(d["id"]): d for d in _compared(folder / "items.jsonl", "id")}
    prev.topics = {str(d["slug"]): d for d in _compared(folder / "topics.jsonl", "slug")}
    prev.sequence = int((report.get("run") or {}).get("sequence", 1))
    manifest_path = folder / STATE / "manifest.json"
    if manifest_path.is_file():
        _read_state(prev, folder, _json(manifest_path))
    return prev


def _read_state(prev: Previous, folder: Path, manifest: dict[str, Any]) -> None:
    if manifest.get("state_version") != STATE_VERSION:
        raise UsageError(
            f"{str(folder / STATE)!r} has state version {manifest.get('state_version')!r}; "
            f"this ingest reads version {STATE_VERSION}: point --out at another folder"
        )
    try:
        prev.pages = [PageRef(**p) for p in manifest["pages"]]
        evidence = _jsonl(folder / STATE / "evidence.jsonl", "id")
        prev.evidence = {e.id: e for e in (msgspec.convert(d, ItemEvidence) for d in evidence)}
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{str(folder / STATE)!r} is damaged ({e}); cannot build on it") from e
    prev.has_pages = True


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
    try:
        lines = path.read_bytes().splitlines()
    except OSError as e:
        raise UsageError(f"cannot read the previous publish: {str(path)!r}: {e}") from e
    decode = msgspec.json.decode
    for n, line in enumerate(lines, 1):
        try:
            doc = decode(line)
        except msgspec.DecodeError as e:
            raise UsageError(f"cannot read the previous publish: {path}: line {n}: {e}") from e
        if not isinstance(doc, dict) or not isinstance(doc.get(key), str):
            raise UsageError(f"cannot read the previous publish: {path}: line {n}: no {key!r}")
        if not _KEYS[key].fullmatch(doc[key]):  # whole: the contract's "$" lets a "\n" end it
            raise UsageError(
                f"cannot read the previous publish: {path}: line {n}: {key} {doc[key]!r} is "
                "not one ingest writes"
            )
        yield doc


#: What an id and a slug are (the contract's patterns), matched whole.
_KEYS = {
    "id": re.compile(get_args(ItemId)[1].pattern),
    "slug": re.compile(get_args(Slug)[1].pattern),
}
