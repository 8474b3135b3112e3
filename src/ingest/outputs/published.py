"""A published folder read back: ``items.jsonl``, ``topics.jsonl``, ``rejects.jsonl``,
``changes.jsonl`` and ``report.json``, line by line.

The five files are opened once, through one handle on the folder, so a run that swaps the
folder meanwhile (``atomic.publish``) cannot hand us files of two different publishes:
either all five open from the same folder, or the opening is tried again. The open files
are then read as often as a reader needs, each time from the start and one line at a time,
so memory does not grow with the folder. Every line is parsed by the output models; a line
that is not one is a one-line error naming the file and line. ``report.json`` is read as a
stream of JSON events (ijson): only its head (the versions and ``run``) is built.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Container, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from io import BufferedReader
from pathlib import Path
from typing import Any, TypeVar

import ijson
import msgspec
from ijson.common import ObjectBuilder

from ..errors import UsageError
from ..records.output import Change, Item, Reject, Report, RunInfo, Topic
from ..records.run import FILES, RunOutput
from ..records.serial import decoder

_TRIES = 3
M = TypeVar("M", bound=msgspec.Struct)


class ReportHead(msgspec.Struct, frozen=True):
    """What a publish keeps of ``report.json``: its versions and what the run built on."""

    schema_version: str
    ingest_version: str
    run: RunInfo


#: The members of ``report.json`` that :class:`ReportHead` holds; the others are skipped.
_HEAD = frozenset(ReportHead.__struct_fields__)


class Published:
    """The five files of one publish, open; :func:`open_publish` makes one."""

    def __init__(self, folder: Path, handles: dict[str, BufferedReader]) -> None:
        self.folder = folder
        self._handles = handles
        self._seen = {name: _version(f) for name, f in handles.items()}

    def _file(self, name: str) -> BufferedReader:
        """The open file, from its start; refused if it was written since it was opened
        (``ingest run`` never does: it swaps whole folders; an editor in place might)."""
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
        self, name: str, model: type[M], only: Container[int] | None = None
    ) -> Iterator[tuple[int, bytes, M]]:
        """(line number, line, the record it holds) for each line of a ``.jsonl`` file, or
        for the lines numbered in ``only`` (the others are not parsed)."""
        path = self.folder / name
        for n, line in self.lines(name):
            if only is None or n in only:
                yield n, line, _model(path, n, line, model)

    def head(self) -> ReportHead:
        """``report.json``'s versions and ``run``, read without building the rest."""
        path = self.folder / "report.json"
        try:
            found, keys = _head(ijson.basic_parse(self._file("report.json"), use_float=True))
        except ijson.JSONError as e:
            raise UsageError(f"{path}: not JSON ({_one_line(e)})") from None
        missing = [k for k in Report.__struct_fields__ if k not in keys]
        if missing:
            raise UsageError(f"{path}: not a report of ingest run (no {', '.join(missing)})")
        try:
            return msgspec.convert(found, ReportHead)
        except msgspec.ValidationError as e:
            raise UsageError(f"{path}: not a report of ingest run: {_where(e)}") from None

    def digest(self) -> str:
        """sha256 of the files' ``sha256sum`` lines, in name order: in the folder,
        ``sha256sum changes.jsonl items.jsonl rejects.jsonl report.json topics.jsonl |
        sha256sum``."""
        lines = "".join(
            f"{hashlib.file_digest(self._file(name), 'sha256').hexdigest()}  {name}\n"
            for name in sorted(FILES)
        )
        return hashlib.sha256(lines.encode()).hexdigest()


@contextmanager
def open_publish(folder: Path) -> Iterator[Published]:
    """The publish in ``folder``, its files open until the block ends; :class:`UsageError`
    when it is not one."""
    for _ in range(_TRIES):
        with ExitStack() as stack:
            try:
                handles = _open_all(folder, stack)
            except FileNotFoundError:
                continue  # swapped by a run between our opens: the new folder is complete
            yield Published(folder, handles)
            return
    missing = [name for name in FILES if not (folder / name).is_file()]
    raise UsageError(f"{folder}: not a publish of ingest run (missing {', '.join(missing)})")


def load_publish(folder: Path) -> RunOutput:
    """The whole run published in ``folder``, in memory (for tools and tests; ``ingest
    publish`` reads the folder in passes instead)."""
    with open_publish(folder) as pub:
        report = _model(folder / "report.json", 1, pub._file("report.json").read(), Report)
        return RunOutput(
            items=[r for _, _, r in pub.records("items.jsonl", Item)],
            topics=[r for _, _, r in pub.records("topics.jsonl", Topic)],
            rejects=[r for _, _, r in pub.records("rejects.jsonl", Reject)],
            report=report,
            changes=[r for _, _, r in pub.records("changes.jsonl", Change)],
        )


def _version(f: BufferedReader) -> tuple[int, int]:
    st = os.fstat(f.fileno())
    return st.st_size, st.st_mtime_ns


def _open_all(folder: Path, stack: ExitStack) -> dict[str, BufferedReader]:
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        raise UsageError(f"{folder}: no such folder") from None
    except OSError as e:
        raise UsageError(f"{folder}: not a readable folder ({e.strerror})") from e
    try:
        return {name: stack.enter_context(_open_in(dir_fd, name)) for name in FILES}
    except IsADirectoryError as e:
        raise UsageError(f"{folder}: {e.filename} is a folder") from e
    except PermissionError as e:
        raise UsageError(f"{folder}: cannot read {e.filename} ({e.strerror})") from e
    finally:
        os.close(dir_fd)


def read_consistent(folder: Path, names: Iterable[str]) -> dict[str, bytes | None]:
    """The bytes of each of ``names`` in ``folder`` (None: not there), all of one publish:
    each file is opened through one handle on the folder, so a run that swaps the folder
    meanwhile cannot give us files of two publishes. A file not found is missing only if
    the folder is still the one the handle holds (else a swap removed the old set under
    us, and the read is tried again on the new one)."""
    for _ in range(_TRIES):
        try:
            dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as e:
            raise UsageError(f"{folder}: not a readable folder ({e.strerror})") from e
        try:
            found = {name: _read_in(folder, dir_fd, name) for name in names}
            if None not in found.values() or _still_named(folder, dir_fd):
                return found
        finally:
            os.close(dir_fd)
    raise UsageError(f"{folder}: the folder was replaced again and again while it was read")


def _read_in(folder: Path, dir_fd: int, name: str) -> bytes | None:
    try:
        with _open_in(dir_fd, name) as f:
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise UsageError(f"{folder}: cannot read {name} ({e.strerror})") from e


def _still_named(folder: Path, dir_fd: int) -> bool:
    try:
        now = os.stat(folder)
    except OSError:
        return False
    held = os.fstat(dir_fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _open_in(dir_fd: int, name: str) -> BufferedReader:
    def opener(path: str, flags: int) -> int:
        return os.open(path, flags, dir_fd=dir_fd)

    try:
        return open(name, "rb", opener=opener)
    except OSError as e:
        e.filename = name
        raise


def _head(events: Iterator[tuple[str, Any]]) -> tuple[dict[str, Any], set[str]]:
    """The members of the top-level object named in :data:`_HEAD`, built; and every
    member's name. Events of the other members pass by without being kept."""
    found: dict[str, Any] = {}
    keys: set[str] = set()
    depth, key, builder = 0, "", None
    for event, value in events:
        if depth == 1 and event == "map_key":
            key = value
            keys.add(key)
            builder = ObjectBuilder() if key in _HEAD else None
            continue
        if depth == 0 and event != "start_map":
            raise ijson.JSONError("the top level is not an object")
        if builder is not None:
            builder.event(event, value)
        depth += event in ("start_map", "start_array")
        depth -= event in ("end_map", "end_array")
        if depth == 1 and builder is not None:
            found[key], builder = builder.value, None
    return found, keys


def _model(path: Path, line: int, data: bytes, model: type[M]) -> M:
    try:
        record: M = decoder(model).decode(data)
    except msgspec.DecodeError as e:
        raise UsageError(
            f"{path}: line {line}: not a record of ingest schema 1.1: {_where(e)}"
        ) from None
    return record


def _where(e: msgspec.MsgspecError) -> str:
    """msgspec's message with its path as ours: ``$.sources[0].file`` → ``sources/0/file``."""
    msg, _, at = str(e).partition(" - at `$")
    where = _AT.sub(r"/\1", at.rstrip("`").replace(".", "/")).strip("/") or "(record)"
    return f"{where}: {msg}"


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split()) or type(e).__name__


#: An index in msgspec's path of an error (``$.sources[0].file``), a step of ours (``/0``).
_AT = re.compile(r"\[(\d+)\]")
