"""Write single files durably: create-and-fsync, a streamed write through a small buffer, and
an atomic replace (temp file in the same folder, fsync, rename, fsync the folder)."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import PublishError
from ..records.run import Content

__all__ = ["atomic_write_bytes", "fsync_dir", "read_pieces", "write_file"]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_FLUSH = 1 << 20


def write_file(path: Path, data: Content, mode: int = 0o666) -> None:
    """Create ``path`` (must not exist), write all of ``data`` and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        if isinstance(data, bytes):
            _write_all(fd, data)
        else:
            _write_pieces(fd, data())
        os.fsync(fd)
    except OSError as e:
        e.filename = e.filename or str(path)
        raise
    finally:
        os.close(fd)


def read_pieces(path: Path) -> Iterator[bytes]:
    """The bytes of ``path`` a megabyte at a time (a copy never holds a whole file)."""
    with open(path, "rb") as fh:
        while piece := fh.read(_FLUSH):
            yield piece


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_pieces(fd: int, pieces: Iterable[bytes]) -> None:
    """Write pieces through a buffer of about a megabyte (few system calls, little memory)."""
    buf = bytearray()
    for piece in pieces:
        buf += piece
        if len(buf) >= _FLUSH:
            _write_all(fd, bytes(buf))
            buf.clear()
    _write_all(fd, bytes(buf))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace one file atomically: temp file in the same folder, fsync, rename, fsync folder.

    Raises ``PublishError`` (the previous file left intact) on any OSError.
    """
    path = Path(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        write_file(tmp, data)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        reason = e.strerror or str(e)
        raise PublishError(f"cannot write {str(path)!r}: {reason}") from e
