"""Write single files durably: create-and-fsync, a streamed write through a small buffer, and
an atomic replace (temp file in the same folder, fsync, rename, fsync the folder)."""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path

from ..engines.forked import Forked, forked
from ..errors import PublishError
from ..records.run import Alongside, Apart, Content, pieces_of

__all__ = [
    "Writing",
    "WritingApart",
    "atomic_write_bytes",
    "fsync_dir",
    "read_pieces",
    "write_file",
]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: The size of the buffer a file is written through, and of the pieces a copy reads.
_PIECE = 1 << 20


def write_file(path: Path, data: Content, mode: int = 0o666) -> None:
    """Create ``path`` (must not exist), write all of ``data`` and fsync it. Pieces go
    through a buffer of about a megabyte (few system calls, little memory); a piece larger
    than the buffer is written as it is."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        with open(fd, "wb", buffering=_PIECE, closefd=False) as out:
            for piece in [data] if isinstance(data, bytes) else pieces_of(data):
                out.write(piece)
        os.fsync(fd)
    except OSError as e:
        e.filename = e.filename or str(path)
        raise
    finally:
        os.close(fd)


def read_pieces(path: Path) -> Iterator[bytes]:
    """The bytes of ``path`` a megabyte at a time (a copy never holds a whole file)."""
    with open(path, "rb") as fh:
        while piece := fh.read(_PIECE):
            yield piece


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


class Writing:
    """A file written by a thread of its own (see :class:`Alongside`): ``wait`` joins it and
    raises what writing raised; ``stop`` makes it stop at its next piece and joins it."""

    def __init__(self, path: Path, data: Alongside) -> None:
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._write, args=(path, data), daemon=True)
        self._thread.start()

    def _write(self, path: Path, data: Alongside) -> None:
        def pieces() -> Iterator[bytes]:
            for piece in data.pieces():
                if self._stop.is_set():
                    raise _Stopped
                yield piece

        try:
            write_file(path, pieces)
        except BaseException as e:  # the waiting thread raises it
            self._error = e

    def wait(self) -> None:
        self._thread.join()
        if self._error is not None and not isinstance(self._error, _Stopped):
            raise self._error

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _write_apart(path: Path, data: Apart) -> None:
    """The files of ``data``'s folder beside ``path`` (plain names in that folder, which the
    publish made), then ``data``'s own file at ``path``."""
    if data.folder is not None and data.beside is not None:
        folder = path.parent / data.folder

        def write(name: str, pieces: Iterable[bytes]) -> None:
            if name in ("", ".", "..") or "/" in name or "\0" in name:
                raise ValueError(f"a file of {data.folder}/ must have a plain name, got {name!r}")
            write_file(folder / name, lambda: pieces)

        data.beside(write)
    write_file(path, data)


class _Stopped(Exception):
    """The publish stopped: a thread writing alongside ends at its next piece."""


class WritingApart:
    """A file (and the files made with it) written by a forked child (see :class:`Apart`);
    written here, in turn, where forking is not safe (a process of several threads) or no
    child can be had."""

    def __init__(self, path: Path, data: Apart) -> None:
        self._child: Forked[None] | None = forked(partial(_write_apart, path, data))
        if self._child is None:
            _write_apart(path, data)

    def wait(self) -> None:
        if self._child is not None:
            self._child.result()
            self._child = None

    def stop(self) -> None:
        if self._child is not None:
            self._child.stop()
