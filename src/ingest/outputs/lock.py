"""The lock that keeps two runs off one output folder.

``OutputLock`` is an ``flock`` on ``{parent}/.{name}.lock`` (outside ``out_dir``, which gets
swapped); the kernel drops it when the holder dies, so a crashed run never blocks the next.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from ..errors import OutputLocked, PublishError

#: Real paths of out_dirs whose OutputLock this process holds.
_HELD: set[str] = set()
#: Tries to lock when the lock file is replaced under us between open and flock.
_ATTEMPTS = 8


def is_held(out_dir: Path) -> bool:
    """Does this process hold the lock of ``out_dir`` (a real path)?"""
    return str(out_dir) in _HELD


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _describe_holder(raw: bytes) -> str:
    try:
        info = json.loads(raw)
        return f"pid {int(info['pid'])}, started {info['started']}"
    except (ValueError, TypeError, KeyError):
        return "pid unknown"


class OutputLock:
    """Exclusive, non-blocking ``flock`` on ``{parent}/.{name}.lock`` for ``out_dir``.

    ``with OutputLock(out_dir): ...`` raises ``OutputLocked`` if another process (or another
    ``OutputLock`` in this one) holds it. The lock file records the holder's pid and start
    time for that message. It lives beside the folder (the folder itself is swapped on
    publish, so a lock inside it would be swapped away) and is removed on release, so a run
    leaves nothing behind. Removing a flock file is safe because acquiring re-checks, after
    the flock, that the path still names the locked file (else it retries on the new one).
    A killed run leaves the file; the kernel has dropped its lock, and the next run reuses
    the file and removes it.
    """

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        self._target = _real(out_dir)
        self.path = self._target.parent / f".{self._target.name}.lock"
        self._fd: int | None = None

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def acquire(self) -> None:
        if self._fd is not None:
            raise RuntimeError(f"lock '{self.path}' is already held by this object")
        for _ in range(_ATTEMPTS):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _describe_holder(os.pread(fd, 4096, 0))
                os.close(fd)
                raise OutputLocked(
                    f"output folder {str(self.out_dir)!r} is in use by another ingest run "
                    f"({holder})"
                ) from None
            if self._still_named(fd):
                self._hold(fd)
                return
            os.close(fd)  # the holder before us removed the file: lock the new one
        raise OutputLocked(f"output folder {str(self.out_dir)!r}: its lock file keeps changing")

    def _still_named(self, fd: int) -> bool:
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        own = os.fstat(fd)
        return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)

    def _hold(self, fd: int) -> None:
        self._fd = fd
        _HELD.add(str(self._target))
        info = json.dumps({"pid": os.getpid(), "started": _utc_now()}) + "\n"
        with contextlib.suppress(OSError):  # the record is informational; the flock is the lock
            os.ftruncate(fd, 0)
            os.pwrite(fd, info.encode(), 0)

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        _HELD.discard(str(self._target))
        with contextlib.suppress(OSError):
            os.unlink(self.path)  # while still locked: see the class docstring
        os.close(fd)  # closing the only descriptor drops the flock

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise PublishError(
                f"cannot lock output folder {str(self.out_dir)!r}: cannot create "
                f"{str(self.path)!r} in its parent folder ({e.strerror})"
            ) from e
