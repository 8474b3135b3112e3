"""The SQLite database file: made by this publish or found, and removed only when this
publish made it and it holds no committed publish.

A publish makes a new file with ``O_EXCL``, so of two publishes to a new path exactly one
made it. When a publish fails, the file is removed only if this publish made it, and then
only under the file's write lock and only while it holds no table: a publish that another
process committed into it meanwhile is never removed. A publish that waited for the lock
checks, once it holds it, that the path is still the file it opened: if the maker removed
it meanwhile, it says so and writes nothing (publishing into a file no path leads to would
report a publish no site can read; SQLite itself mostly refuses to, as a "disk I/O error",
which is then told as what it is).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ...errors import PublishError

COMPANIONS = ("-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)
class SqliteFile:
    path: Path
    made: bool  # by this publish, with O_EXCL
    identity: tuple[int, int]  # (device, inode) of the file as found or made


def claim(path: Path, where: str) -> SqliteFile:
    """The database file at ``path``: made here if there is none."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        made = False
    except OSError as e:
        raise PublishError(
            f"{where}: cannot create the database file in {str(path.parent)!r} ({e.strerror})"
        ) from e
    else:
        os.close(fd)
        made = True
    return SqliteFile(path, made, _identity(path, where))


def still_there(file: SqliteFile, where: str) -> None:
    """Under the write lock: the path still leads to the file this publish opened."""
    if gone(file):
        raise PublishError(
            f"{where}: the database file was removed or replaced while this publish waited "
            "for it (the publish that made it failed); nothing written; publish again"
        )


def gone(file: SqliteFile) -> bool:
    """The path no longer leads to the file this publish found or made."""
    try:
        return _identity(file.path, "") != file.identity
    except PublishError:
        return True


def remove_if_unused(file: SqliteFile) -> None:
    """After a failed publish: the file goes if this publish made it and it holds no
    table, checked and removed under its write lock (no wait: a publish holding the lock
    is using the file, which then stays)."""
    if not file.made:
        return
    try:
        conn = sqlite3.connect(file.path, timeout=0, isolation_level=None)
    except sqlite3.Error:
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables == 0 and _identity(file.path, "") == file.identity:
            for suffix in ("", *COMPANIONS):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{file.path}{suffix}").unlink()
    except (sqlite3.Error, OSError, PublishError):
        pass  # in use, or not ours to judge: it stays
    finally:
        conn.close()


def _identity(path: Path, where: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError as e:
        raise PublishError(f"{where}: cannot read the database file ({e.strerror})") from e
    return st.st_dev, st.st_ino
