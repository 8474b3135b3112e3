"""A publish read back as typed records, for a site's own Python code: :func:`read_publish`
gives a :class:`Publish` (items, topics, changes, rejects, report; look-ups by id and slug).
Its files come from one opening of the folder, so never from two publishes; a field it does
not know is ignored (a later minor schema is read, a later major one refused); errors are
one-line :class:`~ingest.errors.ReadError`. Light: msgspec and the standard library only."""

from __future__ import annotations

import hashlib
import operator
import os
import re
import types
import typing
from collections.abc import Container, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Annotated, Any, BinaryIO, TypeVar, cast

import msgspec

from ingest import SCHEMA_VERSION
from ingest.contract import Change, Item, Out, Reject, Report, RunInfo, Topic
from ingest.errors import ReadError, UsageError
from ingest.publish.door import Marker, Opened, reading
from ingest.records import RunOutput

__all__ = ["Change", "Item", "Publish", "PublishedTopic", "Reject", "Report", "Topic"]
__all__ += ["read_publish"]

R = TypeVar("R", bound=Out)
S = TypeVar("S", bound=msgspec.Struct)
#: The files of a publish this reader reads, in name order; the marker is read if present.
FILES = CHANGES, ITEMS, REJECTS, REPORT, TOPICS = tuple(
    "changes.jsonl items.jsonl rejects.jsonl report.json topics.jsonl".split()
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
    """The publish in the folder ``path`` (an ``--out`` folder of ``ingest run``), opened
    through the one door (:mod:`ingest.publish.door`): every file whole, or
    :class:`~ingest.errors.ReadError` naming what is not."""
    folder = Path(path)

    def read(opened: Opened) -> tuple[Marker | None, dict[str, bytes]]:
        return opened.marker, {n: opened.read(n) for n in (REPORT, ITEMS, TOPICS, CHANGES, REJECTS)}

    try:
        marker, data = reading(folder, read, check=True)
    except UsageError as e:
        raise ReadError(str(e)) from None
    except ValueError as e:  # a path no file system holds (a NUL byte)
        raise ReadError(f"{str(folder)!r} is no path to a folder ({e})") from None
    if marker is not None:
        _check_version(folder / MARKER, marker.schema_version)
    report = folder / REPORT
    _check_version(report, _decode(report, 1, data[REPORT], _Versioned).schema_version)
    items = _lines(folder / ITEMS, data[ITEMS], _ITEM)
    topics = _lines(folder / TOPICS, data[TOPICS], _TOPIC)
    return Publish(
        folder=folder,
        items=items,
        topics=topics,
        changes=_lines(folder / CHANGES, data[CHANGES], _CHANGE),
        rejects=_lines(folder / REJECTS, data[REJECTS], _REJECT),
        report=_decode(report, 1, data[REPORT], _REPORT),
        _by_id={i.id: i for i in items},
        _by_slug={t.slug: t for t in topics},
    )


class _Versioned(msgspec.Struct):
    """What the version check reads of report.json or the marker (the rest is skipped)."""

    schema_version: str


def _check_version(path: Path, version: str, error: type[Exception] = ReadError) -> None:
    """Refuse a publish of a later major schema; a later minor one is read."""
    ours, theirs = int(SCHEMA_VERSION.split(".")[0]), version.split(".")[0]
    if not theirs.isdigit():
        raise error(f"{path}: schema_version {version!r} is not a version")
    if int(theirs) > ours:
        raise error(
            f"{path}: schema {version} is newer than this ingest reads "
            f"({ours}.x, ingest schema {SCHEMA_VERSION}): upgrade ingest"
        )


def _lines(path: Path, data: bytes, kind: type[R]) -> list[R]:
    """Every line of a JSON Lines file as a record; a bad line is named by its number."""
    try:
        return msgspec.json.Decoder(kind).decode_lines(data)
    except (msgspec.DecodeError, RecursionError):
        pass  # find the line, and say what is wrong with it
    for n, line in enumerate(data.splitlines(), 1):
        _decode(path, n, line, kind)
    raise ReadError(f"{path}: not JSON Lines")  # pragma: no cover - a line failed above


def _decode(path: Path, line: int, data: bytes, kind: type[Any]) -> Any:
    try:
        return msgspec.json.decode(data, type=kind)
    except RecursionError:
        raise ReadError(f"{path}: line {line}: JSON nested too deep") from None
    except msgspec.DecodeError as e:
        msg, _, at = str(e).partition(" - at `$")
        where = at.rstrip("`")
        raise ReadError(f"{path}: line {line}: {msg}{f' (at {where})' if where else ''}") from None


_LENIENT: dict[type, type] = {}


def _lenient(record: type[R]) -> type[R]:
    """A subclass of ``record`` that ignores unknown fields, its nested records likewise."""
    if record not in _LENIENT:
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for f in msgspec.structs.fields(record):
            kind = _swap(f.type)
            if f.default_factory is not msgspec.NODEFAULT:
                fields.append((f.name, kind, msgspec.field(default_factory=f.default_factory)))
            elif f.default is not msgspec.NODEFAULT:
                fields.append((f.name, kind, f.default))
            else:
                fields.append((f.name, kind))
        _LENIENT[record] = msgspec.defstruct(
            record.__name__,
            fields,
            bases=(record,),
            module=__name__,
            frozen=True,
            forbid_unknown_fields=False,
        )
    return cast(type[R], _LENIENT[record])


def _swap(kind: Any) -> Any:
    """``kind`` with every output record in it replaced by its lenient subclass."""
    if isinstance(kind, type) and issubclass(kind, Out):
        return _lenient(kind)
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Annotated:
        return Annotated[(_swap(args[0]), *kind.__metadata__)]
    if origin in (types.UnionType, typing.Union):
        return reduce(operator.or_, map(_swap, args))
    if origin in (list, dict, tuple):
        return origin[tuple(map(_swap, args))]
    return kind  # str, int, a date, a Literal vocabulary, None


_ITEM, _TOPIC, _CHANGE = _lenient(Item), _lenient(Topic), _lenient(Change)
_REJECT, _REPORT = _lenient(Reject), _lenient(Report)


class ReportHead(msgspec.Struct, frozen=True):
    """What a publish keeps of ``report.json``: its versions and what the run built on."""

    schema_version: str
    ingest_version: str
    run: RunInfo


class Published:
    """A publish opened through the door, its five files open and checked whole, read in
    passes a line at a time (``ingest publish``: memory does not grow with the folder). A
    file written in place since (the same inode, another size or time) is refused."""

    def __init__(self, opened: Opened, handles: dict[str, BinaryIO]) -> None:
        self.opened, self.folder, self._handles = opened, opened.folder, handles
        self._seen = {name: _version(f) for name, f in handles.items()}

    def _file(self, name: str) -> BinaryIO:
        f = self._handles[name]
        if _version(f) != self._seen[name]:
            raise UsageError(f"{self.folder / name}: changed while it was being read")
        f.seek(0)
        return f

    def lines(self, name: str) -> Iterator[tuple[int, bytes]]:
        """(line number from 1, the line without its newline), one at a time."""
        for n, raw in enumerate(self._file(name), 1):
            yield n, raw[:-1] if raw.endswith(b"\n") else raw
        self._file(name)  # still as it was: what was read is one version of the file

    def records(
        self, name: str, model: type[S], only: Container[int] | None = None
    ) -> Iterator[tuple[int, bytes, S]]:
        """(line number, line, its record) for each line (or those numbered in ``only``)."""
        for n, line in self.lines(name):
            if only is None or n in only:
                yield n, line, _strict(self.folder / name, n, line, model)

    def head(self) -> ReportHead:
        """``report.json``'s versions and ``run``, read as a stream of JSON events: its other
        members (tens of megabytes) pass by without being built."""
        import ijson

        path = self.folder / REPORT
        try:
            found, keys = _head(ijson.basic_parse(self._file(REPORT), use_float=True))
        except ijson.JSONError as e:
            raise UsageError(f"{path}: not JSON ({' '.join(str(e).split())})") from None
        missing = [k for k in Report.__struct_fields__ if k not in keys]
        if missing:
            raise UsageError(f"{path}: not a report of ingest run (no {', '.join(missing)})")
        try:
            return msgspec.convert(found, ReportHead)
        except msgspec.ValidationError as e:
            raise UsageError(f"{path}: not a report of ingest run: {_where(e)}") from None

    def digest(self) -> str:
        """sha256 of the files' ``sha256sum`` lines, in name order (in the folder:
        ``sha256sum changes.jsonl items.jsonl rejects.jsonl report.json topics.jsonl |
        sha256sum``)."""
        lines = "".join(
            f"{hashlib.file_digest(self._file(n), 'sha256').hexdigest()}  {n}\n"  # type: ignore[arg-type]
            for n in FILES
        )
        return hashlib.sha256(lines.encode()).hexdigest()


def _version(f: BinaryIO) -> tuple[int, int, int]:
    st = os.fstat(f.fileno())
    return st.st_ino, st.st_size, st.st_mtime_ns


def load_publish(folder: Path) -> RunOutput:
    """The whole publish in ``folder`` as the records a run makes (strict: a field of
    another schema is an error), in memory — for tools and tests."""
    with open_published(folder) as pub:
        report = _strict(folder / REPORT, 1, pub._file(REPORT).read(), Report)
        return RunOutput(
            items=[r for _, _, r in pub.records(ITEMS, Item)],
            topics=[r for _, _, r in pub.records(TOPICS, Topic)],
            rejects=[r for _, _, r in pub.records(REJECTS, Reject)],
            report=report,
            changes=[r for _, _, r in pub.records(CHANGES, Change)],
        )


def _head(events: Iterator[tuple[str, Any]]) -> tuple[dict[str, Any], set[str]]:
    """The members of the top-level object that :class:`ReportHead` has, built; and every
    member's name. Events of the other members pass by without being kept."""
    from ijson.common import JSONError, ObjectBuilder

    found: dict[str, Any] = {}
    keys: set[str] = set()
    depth, key, builder = 0, "", None
    for event, value in events:
        if depth == 1 and event == "map_key":
            key = value
            keys.add(key)
            builder = ObjectBuilder() if key in ReportHead.__struct_fields__ else None
            continue
        if depth == 0 and event != "start_map":
            raise JSONError("the top level is not an object")
        if builder is not None:
            builder.event(event, value)
        depth += event in ("start_map", "start_array")
        depth -= event in ("end_map", "end_array")
        if depth == 1 and builder is not None:
            found[key], builder = builder.value, None
    return found, keys


@contextmanager
def open_published(folder: Path) -> Iterator[Published]:
    """The publish in ``folder`` for reading in passes, its files open and checked whole."""
    with ExitStack() as stack:

        def handles(opened: Opened) -> tuple[Opened, dict[str, BinaryIO]]:
            return opened, {n: stack.enter_context(opened.open(n)) for n in FILES}

        opened, found = reading(folder, handles, check=True)  # every file it lists, whole
        if opened.marker is not None:
            _check_version(folder / MARKER, opened.marker.schema_version, UsageError)
        published = Published(opened, found)
        _check_version(folder / REPORT, published.head().schema_version, UsageError)
        yield published


def _strict(path: Path, line: int, data: bytes, model: type[S]) -> S:
    try:
        return msgspec.json.decode(data, type=model)
    except RecursionError:
        raise UsageError(f"{path}: line {line}: JSON nested too deep") from None
    except msgspec.DecodeError as e:
        raise UsageError(
            f"{path}: line {line}: not a record of ingest schema {SCHEMA_VERSION}: {_where(e)}"
        ) from None


def _where(e: msgspec.MsgspecError) -> str:
    """msgspec's message with its path as ours: ``$.sources[0].file`` → ``sources/0/file``."""
    msg, _, at = str(e).partition(" - at `$")
    where = re.sub(r"\[(\d+)\]", r"/\1", at.rstrip("`").replace(".", "/")).strip("/")
    return f"{where or '(record)'}: {msg}"
