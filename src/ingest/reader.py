"""A publish read back as typed records, for a site's own Python code: :func:`read_publish`.

``read_publish("out")`` gives the publish in ``out/`` as a :class:`Publish`: its items,
topics, changes and rejects (lists of the records of :mod:`ingest.records.output`), its
report, and look-ups by id and slug (a topic's items in rank order).

- **One publish.** The folder is opened once and its five files through that handle, so a
  run that swaps the folder meanwhile cannot hand over files of two publishes: all of them
  come from the folder as it was when it was opened (or, when a file of it is already
  gone, the read is tried again on the folder now in place).
- **Forward compatible.** Records are read with subclasses of the output records that
  ignore a field they do not know: a publish of a later minor schema (a field added) is
  read, not refused. A publish of a later *major* schema is refused.
- **Light.** This module imports the records (msgspec) and the standard library only: no
  language model, database driver or page template is loaded by ``import ingest``.

Errors are :class:`~ingest.errors.ReadError`, one line naming the file and line.
"""

from __future__ import annotations

import operator
import os
import types
import typing
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import IO, Annotated, Any, TypeVar, cast

import msgspec

from . import SCHEMA_VERSION
from .errors import ReadError
from .records.output import Change, Item, Out, Reject, Report, Topic

__all__ = ["Change", "Item", "Publish", "PublishedTopic", "Reject", "Report", "Topic"]
__all__ += ["read_publish"]

R = TypeVar("R", bound=Out)
_TRIES = 3
#: The files of a publish this reader reads; the marker (``.ingest``) is read if present.
ITEMS, TOPICS, CHANGES, REJECTS, REPORT = (
    "items.jsonl",
    "topics.jsonl",
    "changes.jsonl",
    "rejects.jsonl",
    "report.json",
)
MARKER = ".ingest"


@dataclass(frozen=True, slots=True)
class PublishedTopic:
    """A topic and its items, in the topic's order (rank order; list-only entries last)."""

    topic: Topic
    items: list[Item]

    @property
    def slug(self) -> str:
        return self.topic.slug

    @property
    def name(self) -> str | None:
        return self.topic.name


@dataclass(frozen=True, slots=True)
class Publish:
    """One publish of ``ingest run``, as its files hold it."""

    folder: Path
    items: list[Item]  # sorted by id
    topics: list[Topic]  # sorted by slug
    changes: list[Change]  # against the publish before it
    rejects: list[Reject]
    report: Report
    _by_id: dict[str, Item] = field(repr=False, compare=False)
    _by_slug: dict[str, Topic] = field(repr=False, compare=False)

    def item(self, item_id: str) -> Item:
        """The item of this id; ``KeyError`` when the publish has none."""
        try:
            return self._by_id[item_id]
        except KeyError:
            raise KeyError(f"no item {item_id!r} in {self.folder}") from None

    def topic(self, slug: str) -> PublishedTopic:
        """The topic of this slug with its items in rank order; ``KeyError`` when none."""
        try:
            topic = self._by_slug[slug]
        except KeyError:
            raise KeyError(f"no topic {slug!r} in {self.folder}") from None
        missing = [i for i in topic.items if i not in self._by_id]
        if missing:
            raise ReadError(
                f"{self.folder / TOPICS}: topic {slug!r} lists item {missing[0]!r}, "
                f"which {ITEMS} does not hold"
            )
        return PublishedTopic(topic, [self._by_id[i] for i in topic.items])


def read_publish(path: str | os.PathLike[str]) -> Publish:
    """The publish in the folder ``path`` (an ``--out`` folder of ``ingest run``)."""
    folder, gone = Path(path), ""
    for _ in range(_TRIES):
        try:
            data = _read_files(folder)
        except FileNotFoundError as e:
            gone = e.filename
            continue  # swapped by a run between our opens: the folder now in place is whole
        return _parse(folder, data)
    raise ReadError(f"{folder / gone}: missing (not a publish of ingest run?)")


def _read_files(folder: Path) -> dict[str, bytes]:
    """The publish's files, all opened through one handle on the folder before any is read."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ReadError(f"{folder}: no such folder") from None
    except OSError as e:
        raise ReadError(f"{folder}: not a readable folder ({e.strerror})") from None
    try:
        with ExitStack() as stack:
            handles = {
                name: stack.enter_context(_open_in(dir_fd, name))
                for name in (REPORT, ITEMS, TOPICS, CHANGES, REJECTS)
            }
            with suppress(FileNotFoundError):  # a publish of schema 1.0 has no marker
                handles[MARKER] = stack.enter_context(_open_in(dir_fd, MARKER))
            return {name: f.read() for name, f in handles.items()}
    except (IsADirectoryError, PermissionError) as e:
        raise ReadError(f"{folder / str(e.filename)}: cannot read ({e.strerror})") from None
    finally:
        os.close(dir_fd)


def _open_in(dir_fd: int, name: str) -> IO[bytes]:
    def opener(path: str, flags: int) -> int:
        return os.open(path, flags | os.O_CLOEXEC, dir_fd=dir_fd)

    try:
        return open(name, "rb", opener=opener)
    except OSError as e:
        e.filename = name
        raise


def _parse(folder: Path, data: dict[str, bytes]) -> Publish:
    if MARKER in data:
        _check_version(folder / MARKER, data[MARKER])
    _check_version(folder / REPORT, data[REPORT])
    items = _lines(folder / ITEMS, data[ITEMS], _ITEM)
    topics = _lines(folder / TOPICS, data[TOPICS], _TOPIC)
    return Publish(
        folder=folder,
        items=items,
        topics=topics,
        changes=_lines(folder / CHANGES, data[CHANGES], _CHANGE),
        rejects=_lines(folder / REJECTS, data[REJECTS], _REJECT),
        report=_decode(folder / REPORT, 1, data[REPORT], _REPORT),
        _by_id={i.id: i for i in items},
        _by_slug={t.slug: t for t in topics},
    )


class _Versioned(msgspec.Struct):
    """What the version check reads of report.json or the marker (the rest is skipped)."""

    schema_version: str


def _check_version(path: Path, data: bytes) -> None:
    """Refuse a publish of a later major schema; a later minor one is read."""
    head = _decode(path, 1, data, _Versioned)
    ours, theirs = int(SCHEMA_VERSION.split(".")[0]), _major(head.schema_version)
    if theirs is None:
        raise ReadError(f"{path}: schema_version {head.schema_version!r} is not a version")
    if theirs > ours:
        raise ReadError(
            f"{path}: schema {head.schema_version} is newer than this ingest reads "
            f"({ours}.x, ingest schema {SCHEMA_VERSION}): upgrade ingest"
        )


def _major(version: str) -> int | None:
    head = version.split(".")[0]
    return int(head) if head.isdigit() else None


def _lines(path: Path, data: bytes, kind: type[R]) -> list[R]:
    """Every line of a JSON Lines file as a record; a bad line is named by its number."""
    try:
        return msgspec.json.Decoder(kind).decode_lines(data)
    except msgspec.DecodeError:
        pass  # find the line, and say what is wrong with it
    for n, line in enumerate(data.splitlines(), 1):
        _decode(path, n, line, kind)
    raise ReadError(f"{path}: not JSON Lines")  # pragma: no cover - a line failed above


def _decode(path: Path, line: int, data: bytes, kind: type[Any]) -> Any:
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.DecodeError as e:
        msg, _, at = str(e).partition(" - at `$")
        where = at.rstrip("`")
        raise ReadError(f"{path}: line {line}: {msg}{f' (at {where})' if where else ''}") from None


# --------------------------------------------------------------------------- lenient records


def _lenient(record: type[R], made: dict[type, type]) -> type[R]:
    """A subclass of ``record`` that ignores unknown fields, its nested records likewise."""
    if record not in made:
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for f in msgspec.structs.fields(record):
            kind = _swap(f.type, made)
            if f.default_factory is not msgspec.NODEFAULT:
                fields.append((f.name, kind, msgspec.field(default_factory=f.default_factory)))
            elif f.default is not msgspec.NODEFAULT:
                fields.append((f.name, kind, f.default))
            else:
                fields.append((f.name, kind))
        made[record] = msgspec.defstruct(
            record.__name__,
            fields,
            bases=(record,),
            module=__name__,
            frozen=True,
            forbid_unknown_fields=False,
        )
    return cast(type[R], made[record])


def _swap(kind: Any, made: dict[type, type]) -> Any:
    """``kind`` with every output record in it replaced by its lenient subclass."""
    if isinstance(kind, type) and issubclass(kind, Out):
        return _lenient(kind, made)
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Annotated:
        return Annotated[(_swap(args[0], made), *kind.__metadata__)]
    if origin in (types.UnionType, typing.Union):
        return reduce(operator.or_, (_swap(a, made) for a in args))
    if origin in (list, dict, tuple):
        return origin[tuple(_swap(a, made) for a in args)]
    return kind  # str, int, a date, a Literal vocabulary, None


def _lenient_records() -> Iterator[type[Out]]:
    made: dict[type, type] = {}
    return (_lenient(r, made) for r in (Item, Topic, Change, Reject, Report))


_ITEM, _TOPIC, _CHANGE, _REJECT, _REPORT = cast(
    tuple[type[Item], type[Topic], type[Change], type[Reject], type[Report]],
    tuple(_lenient_records()),
)
