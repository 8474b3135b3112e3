"""A published folder read back: ``items.jsonl``, ``topics.jsonl``, ``rejects.jsonl``,
``changes.jsonl`` and ``report.json`` → the :class:`RunOutput` that wrote them.

The five files are opened through one handle on the folder, so a run that swaps the folder
meanwhile (``atomic.publish``) cannot hand us files of two different publishes: either all
five open from the same folder, or the read is tried again. Every line is parsed by the
output models; a line that is not one is a one-line error naming the file and line. The
references between records are checked too (an item's topics and related ids, a topic's
items), since a database refuses rows that point nowhere.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TypeVar

import msgspec

from ..errors import UsageError
from ..records.output import Change, Item, Out, Reject, Report, Topic
from ..records.run import FILES, RunOutput
from ..records.serial import decoder

_TRIES = 3
M = TypeVar("M", bound=Out)


def load_publish(folder: Path) -> RunOutput:
    """The run published in ``folder``; :class:`UsageError` when it is not one."""
    for _ in range(_TRIES):
        try:
            data = _read_all(folder)
        except FileNotFoundError:
            continue  # swapped by a run between our opens: the new folder is complete
        run = _parse(folder, data)
        check_references(run, folder)
        return run
    missing = [name for name in FILES if not (folder / name).is_file()]
    raise UsageError(f"{folder}: not a publish of ingest run (missing {', '.join(missing)})")


def _read_all(folder: Path) -> dict[str, bytes]:
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        raise UsageError(f"{folder}: no such folder") from None
    except OSError as e:
        raise UsageError(f"{folder}: not a readable folder ({e.strerror})") from e
    try:
        with ExitStack() as stack:
            handles = {n: stack.enter_context(_open_in(dir_fd, n)) for n in FILES}
            return {name: f.read() for name, f in handles.items()}
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


def _open_in(dir_fd: int, name: str) -> IO[bytes]:
    def opener(path: str, flags: int) -> int:
        return os.open(path, flags, dir_fd=dir_fd)

    try:
        return open(name, "rb", opener=opener)
    except OSError as e:
        e.filename = name
        raise


def _parse(folder: Path, data: dict[str, bytes]) -> RunOutput:
    report = _one(folder / "report.json", data["report.json"], Report)
    return RunOutput(
        items=list(_lines(folder / "items.jsonl", data["items.jsonl"], Item)),
        topics=list(_lines(folder / "topics.jsonl", data["topics.jsonl"], Topic)),
        rejects=list(_lines(folder / "rejects.jsonl", data["rejects.jsonl"], Reject)),
        report=report,
        changes=list(_lines(folder / "changes.jsonl", data["changes.jsonl"], Change)),
    )


def _lines(path: Path, data: bytes, model: type[M]) -> Iterator[M]:
    for n, line in enumerate(data.splitlines(), 1):
        yield _model(path, n, line, model)


def _one(path: Path, data: bytes, model: type[M]) -> M:
    return _model(path, 1, data, model)


def _model(path: Path, line: int, data: bytes, model: type[M]) -> M:
    try:
        record: M = decoder(model).decode(data)
    except msgspec.DecodeError as e:
        msg, _, at = str(e).partition(" - at `$")
        where = _AT.sub(r"/\1", at.rstrip("`").replace(".", "/")).strip("/") or "(record)"
        raise UsageError(
            f"{path}: line {line}: not a record of ingest schema 1.1: {where}: {msg}"
        ) from None
    return record


#: An index in msgspec's path of an error (``$.sources[0].file``), a step of ours (``/0``).
_AT = re.compile(r"\[(\d+)\]")


def check_references(run: RunOutput, folder: Path) -> None:
    """Keys are unique, every id a record names is a record of the folder, and items and
    topics agree on who belongs to which topic."""
    ids = _unique(f"{folder}/items.jsonl", [i.id for i in run.items])
    slugs = _unique(f"{folder}/topics.jsonl", [t.slug for t in run.topics])
    for item in run.items:
        _known(folder, f"item {item.id}: related", item.related, ids)
        _known(folder, f"item {item.id}: topic", [t.slug for t in item.topics], slugs)
        _unique(f"{folder}: item {item.id}: topics", [t.slug for t in item.topics])
    for topic in run.topics:
        _known(folder, f"topic {topic.slug}: item", topic.items, ids)
        _unique(f"{folder}: topic {topic.slug}: items", topic.items)
    from_items = {(i.id, m.slug) for i in run.items for m in i.topics}
    from_topics = {(i, tp.slug) for tp in run.topics for i in tp.items}
    odd = sorted(from_items ^ from_topics)
    if odd:
        item_id, slug = odd[0]
        raise UsageError(
            f"{folder}: item {item_id} and topic {slug} disagree on membership "
            f"({len(odd)} such pair(s))"
        )


def _unique(where: str, keys: list[str]) -> set[str]:
    found = set(keys)
    if len(found) != len(keys):
        [dup, *_] = [k for k, n in Counter(keys).items() if n > 1]
        raise UsageError(f"{where}: {dup!r} appears twice")
    return found


def _known(folder: Path, what: str, refs: list[str], known: set[str]) -> None:
    for ref in refs:
        if ref not in known:
            raise UsageError(f"{folder}: {what} {ref!r} is not in the folder")
