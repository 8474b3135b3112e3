"""Read: a file's bytes, once, bounded by a cap, and re-checked after the read.

Files are opened without following links and without blocking, and checked with ``fstat``,
so a symlink or FIFO put in place of a discovered file is refused, never followed or
waited on; a file that changed while it was read is refused (INPUT_CHANGED).

:func:`read_ahead` asks the kernel to read files into its cache before they are read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

#: Files larger than this are refused before they are read (TOO_LARGE).
MAX_FILE_BYTES = 64 * 1024 * 1024

_READ_CHUNK = 1 << 20
_OPEN_FLAGS = (
    os.O_RDONLY
    | os.O_CLOEXEC
    | os.O_NOCTTY
    | os.O_NONBLOCK  # a FIFO swapped in after discovery must not block the run
    | os.O_NOFOLLOW  # nor may a symlink swapped in: links are resolved during discovery
)


def read_bytes(path: Path) -> tuple[bytes | None, tuple[str, str] | None]:
    """Read a file once, bounded by the size cap; re-check it did not change meanwhile.

    The file is opened with O_NOFOLLOW and O_NONBLOCK and checked with ``fstat``, so a
    symlink or FIFO put in its place after discovery is refused, never followed or waited on.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as e:
        return None, ("UNREADABLE", f"cannot open: {e.strerror or e}")
    try:
        before = os.fstat(fd)
        refused = _refusal(before)
        if refused is not None:
            return None, refused
        data = _read_all(fd, MAX_FILE_BYTES + 1)
        after = os.fstat(fd)
    except OSError as e:
        return None, ("UNREADABLE", f"cannot read: {e.strerror or e}")
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        return None, ("TOO_LARGE", f"over the cap of {MAX_FILE_BYTES} bytes")
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or len(
        data
    ) != after.st_size:
        return None, (
            "INPUT_CHANGED",
            f"the file changed while it was read ({before.st_size} bytes before, "
            f"{len(data)} read, {after.st_size} after); skipped",
        )
    return data, None


def _refusal(st: os.stat_result) -> tuple[str, str] | None:
    """Why an open file is refused before a byte of it is read (its ``fstat``: not a
    regular file, or over the size cap); None when it is read."""
    if not stat.S_ISREG(st.st_mode):
        return "NOT_REGULAR_FILE", f"no longer a regular file ({file_type(st.st_mode)})"
    if st.st_size > MAX_FILE_BYTES:
        return "TOO_LARGE", f"{st.st_size} bytes, over the cap of {MAX_FILE_BYTES} bytes"
    return None


def _read_all(fd: int, limit: int) -> bytes:
    buf = bytearray()
    while len(buf) < limit:
        chunk = os.read(fd, min(_READ_CHUNK, limit - len(buf)))
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


#: How many bytes of files :func:`read_ahead` asks for at most: the run holds its pages in
#: memory anyway (about four times their size), so a run of more is rare, and its files past
#: this many are read as the kernel's own read-ahead reads them.
READ_AHEAD_BYTES = 1 << 30


def read_ahead(paths: Iterable[Path], limit: int = READ_AHEAD_BYTES) -> int:
    """Ask the kernel to read each regular file within the size cap into its page cache
    now (``WILLNEED``), in order, until ``limit`` bytes are asked for; the number of files
    asked for. The requests are queued at once and served together, while reading one file
    after another waits on each in turn: 100 MB of files out of the cache take about 1.1 s
    to read so, and 0.2-0.3 s once read ahead. A file that cannot be opened or advised is
    passed over: reading it says why."""
    asked = total = 0
    if not hasattr(os, "posix_fadvise"):  # not on every platform
        return asked
    for path in paths:
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if _refusal(st) is not None:
                continue  # never read: read_bytes refuses it as it is met
            if total + st.st_size > limit:
                break
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            asked, total = asked + 1, total + st.st_size
        except OSError:
            continue
        finally:
            os.close(fd)
    return asked


def file_type(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"
