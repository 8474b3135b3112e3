"""An output folder, replaced as a whole: what ingest may replace, one run at a time, and the
atomic publish.

- **Ownership.** A folder is replaced only when it does not exist, is empty (git keep files
  aside), or holds ingest's marker and nothing but what ingest writes. Anything else is
  refused before a single input is read. A symlink given as the folder is followed and
  stays a link. A keep file (``.keep``, ``.gitkeep``) is carried into each publish, and only
  as a regular file: a link there is refused.
- **One run at a time.** An ``flock`` on ``.NAME.lock`` beside the folder (the folder itself
  is swapped), recording the holder's pid and start time for the message a second run
  gives; the kernel drops it when the holder dies, and the file is removed on release.
- **Atomic publish.** :class:`Staging` writes the new set into ``.NAME.staging-PID`` beside
  the folder (same file system), each file hashed as written and synced, the marker (listing
  every file with its digest) last; then swaps it with the folder in one
  ``renameat2(RENAME_EXCHANGE)`` and removes the old set. A reader, or a SIGKILL, sees the
  previous set or the new one, never a mix; what a killed run leaves beside the folder is
  removed by the next run (:func:`clean_stale`). The swap, the sync and the removal are one
  step no SIGTERM or SIGINT cuts (see :mod:`.signals`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import re
import shutil
import stat
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import msgspec

from ingest.errors import OutputLocked, PublishError, UsageError
from ingest.publish.door import (
    KEEP,
    MARKER,
    RECORDS,
    STATE,
    FileSum,
    Marker,
    is_0_1_report,
    read_marker,
    repair_command,
)
from ingest.publish.signals import Fault, Stops, held

KEEP_FILES = KEEP
#: What ingest writes at the top of an output folder.
OWNED = frozenset({*RECORDS, "report.html", "report", MARKER, STATE, *KEEP_FILES})
_PIECE = 1 << 20
_LOCK_TRIES = 8


def target_of(out_dir: Path, flag: str = "--out") -> Path:
    """The real folder ``out_dir`` names (a symlink followed), checked to be usable."""
    if out_dir.is_symlink() and not out_dir.exists():
        raise UsageError(f"{flag} {str(out_dir)!r} is a symlink to a missing folder")
    target = Path(os.path.realpath(out_dir))
    if target.exists() and not target.is_dir():
        raise UsageError(f"{flag} {str(out_dir)!r} exists and is not a folder")
    if not target.parent.is_dir():
        raise UsageError(f"{flag} {str(out_dir)!r}: parent folder {str(target.parent)!r} missing")
    if target == target.parent:
        raise UsageError(f"{flag} {str(out_dir)!r} is the root folder")
    return target


def check_owned(out_dir: Path, flag: str = "--out", kind: str = "publish") -> Path:
    """Refuse (:class:`UsageError`) a folder ingest may not replace; the real folder."""
    target = target_of(out_dir, flag)
    if not target.exists():
        return target
    entries = sorted(os.listdir(target))
    check_keep_files(out_dir, target, flag)
    if set(entries) <= set(KEEP_FILES):
        return target
    foreign = [e for e in entries if e not in OWNED]
    if MARKER in entries:
        _check_marker(target, flag, kind, mended=not foreign and "items.jsonl" in entries)
    elif set(entries) - set(KEEP_FILES) == set(RECORDS) - {"changes.jsonl"} and _is_0_1(target):
        return target  # a publish of ingest 0.1 (no marker): the door reads it
    elif not foreign and STATE in entries:
        raise UsageError(
            f"{flag} {str(out_dir)!r} holds a publish whose {MARKER} marker is missing; "
            f"mend it from what remains with: {repair_command(target)}"
        )
    if foreign or MARKER not in entries:
        raise UsageError(
            f"{flag} {str(out_dir)!r} "
            + (
                f"is an ingest output but also holds {_listing(target, foreign)}, which ingest "
                "did not write; move them away first"
                if MARKER in entries
                else f"holds {_listing(target, entries)} and is not an ingest output; name a "
                "new or empty folder (ingest replaces the whole folder)"
            )
        )
    return target


def check_keep_files(out_dir: Path, target: Path, flag: str) -> None:
    """Refuse a keep file that is not a regular file (a link, a folder, a FIFO): ingest
    carries only a regular one into a publish."""
    for name in KEEP_FILES:
        try:
            mode = os.lstat(target / name).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise UsageError(
                f"{flag} {str(out_dir)!r}: {name} is not a regular file (a link?); ingest "
                "carries only a regular keep file into a publish: remove it or make it a file"
            )


def _check_marker(target: Path, flag: str, kind: str, mended: bool) -> None:
    try:
        marker = read_marker(target)
    except UsageError:
        marker = None
    if marker is None:
        how = f"; if it is a publish whose marker was damaged: {repair_command(target)}"
        raise UsageError(
            f"{flag} {str(target)!r}: its {MARKER} file is not ingest's marker{how * mended}"
        )
    if marker.kind != kind:
        raise UsageError(
            f"{flag} {str(target)!r} holds ingest's {marker.kind!r} output, not a {kind}"
        )


def _is_0_1(target: Path) -> bool:
    try:
        return is_0_1_report((target / "report.json").read_bytes())
    except OSError:
        return False


def _listing(folder: Path, names: Iterable[str]) -> str:
    shown = [n + ("/" if (folder / n).is_dir() else "") for n in names]
    head = ", ".join(repr(n) for n in shown[:5])
    more = f" and {len(shown) - 5} more" if len(shown) > 5 else ""
    return f"{len(shown)} entr{'y' if len(shown) == 1 else 'ies'} ({head}{more})"


def check_apart(inputs: Iterable[str], out_dir: Path) -> None:
    """Inputs and output never overlap: an input equal to, inside, or holding the output
    folder (symlinks and ``..`` resolved) is a usage error."""
    out = Path(os.path.realpath(out_dir))
    for raw in inputs:
        path = Path(os.path.realpath(raw))
        if path == out or path.is_relative_to(out) or out.is_relative_to(path):
            how = "is" if path == out else ("is inside" if path.is_relative_to(out) else "holds")
            raise UsageError(
                f"input {raw!r} {how} the output folder {str(out_dir)!r}: ingest replaces the "
                "output folder as a whole, so inputs and output must not overlap"
            )


class Folder:
    """An output folder ingest may replace, held for one run: owned (checked at once),
    locked and cleared of what killed runs left beside it (on entering)."""

    def __init__(
        self, out_dir: Path, stops: Stops | None = None, flag: str = "--out", owned: bool = False
    ) -> None:
        """``owned``: the folder was found to be ingest's already (not checked again)."""
        self.given = out_dir
        self.target = target_of(out_dir, flag) if owned else check_owned(out_dir, flag)
        if owned:
            check_keep_files(out_dir, self.target, flag)
        self.lock_path = self.target.parent / f".{self.target.name}.lock"
        self.stops = stops
        self._lock: int | None = None
        if stops is not None:
            stops.folder = out_dir

    def __enter__(self) -> Self:
        self._lock = _lock(self.lock_path, self.given)
        try:
            for folder in (self.target, self.refused_dir):
                with contextlib.suppress(OSError):  # best effort: a publish tries again
                    clean_stale(folder, locked=True)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        if self._lock is not None:
            fd, self._lock = self._lock, None
            with contextlib.suppress(OSError):
                os.unlink(self.lock_path)  # while still locked: a waiting run re-checks
            os.close(fd)
            Fault.from_env().hit("after_unlock", self.target)

    @property
    def refused_dir(self) -> Path:
        return self.target.with_name(f"{self.target.name}.refused")

    def staging(self) -> Staging:
        """A new set for this folder, empty, beside it."""
        return Staging(self.target, self.stops)

    def keep_files(self) -> dict[str, bytes]:
        """The keep files of the publish in place (regular files only, checked at entry)."""
        found = {}
        for name in KEEP_FILES:
            try:
                fd = os.open(self.target / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except FileNotFoundError:
                continue
            except OSError:
                fd = -1
            if fd < 0 or not stat.S_ISREG(os.fstat(fd).st_mode):
                if fd >= 0:
                    os.close(fd)
                check_keep_files(self.given, self.target, "the folder")  # says which, and why
                raise UsageError(f"{str(self.given)!r}: {name} cannot be read")
            with open(fd, "rb") as fh:
                found[name] = fh.read(1 << 20)
        return found


def _lock(path: Path, given: Path) -> int:
    """The lock beside the folder, taken (:class:`OutputLocked` when another run has it)."""
    for _ in range(_LOCK_TRIES):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise PublishError(
                f"cannot lock output folder {str(given)!r}: cannot create {str(path)!r} in "
                f"its parent folder ({e.strerror})"
            ) from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(os.pread(fd, 4096, 0))
            os.close(fd)
            raise OutputLocked(
                f"output folder {str(given)!r} is in use by another ingest run ({holder})"
            ) from None
        try:
            st, own = os.stat(path, follow_symlinks=False), os.fstat(fd)
            still = (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)
        except FileNotFoundError:
            still = False
        if still:
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            with contextlib.suppress(OSError):  # the record is for the message only
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps({"pid": os.getpid(), "started": now}).encode(), 0)
            return fd
        os.close(fd)  # the holder before us removed the file: lock the new one
    raise OutputLocked(f"output folder {str(given)!r}: its lock file keeps changing")


def _holder(raw: bytes) -> str:
    try:
        info = json.loads(raw)
        return f"pid {int(info['pid'])}, started {info['started']}"
    except (ValueError, TypeError, KeyError):
        return "pid unknown"


def side_path(out_dir: Path, kind: str, pid: int | None = None) -> Path:
    """What a run keeps beside ``out_dir`` while it works: ``staging``, ``old`` or its
    workers' ``results``."""
    return out_dir.parent / f".{out_dir.name}.{kind}-{os.getpid() if pid is None else pid}"


def clean_stale(out_dir: Path, locked: bool) -> None:
    """Remove what earlier runs of ``out_dir`` left beside it. Without the lock only what
    this pid or a dead one left is touched. An ``old`` folder with no ``out_dir`` is a
    fallback swap cut between its two renames: it is moved back into place."""
    pattern = re.compile(rf"\.{re.escape(out_dir.name)}\.(staging|old|pack|results)-(\d+)")
    for entry in os.scandir(out_dir.parent):
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        pid = int(match.group(2))
        if not (locked or pid == os.getpid() or not _alive(pid)):
            continue
        if not entry.is_dir(follow_symlinks=False):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
        elif match.group(1) == "old" and not os.path.lexists(out_dir):
            os.rename(entry.path, out_dir)
        else:
            shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path: Path, pieces: bytes | Iterable[bytes], sync: bool = False) -> FileSum:
    """Create ``path`` (it must not exist), write ``pieces`` through a buffer (``sync``: and
    sync it; a staged set is synced as a whole before its marker); its size and digest."""
    from xxhash import xxh3_128

    h, size = xxh3_128(), 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with open(fd, "wb", buffering=_PIECE, closefd=False) as out:
            for piece in [pieces] if isinstance(pieces, bytes) else pieces:
                h.update(piece)
                size += len(piece)
                out.write(piece)
        if sync:
            os.fsync(fd)
    except OSError as e:
        e.filename = e.filename or str(path)
        raise
    finally:
        os.close(fd)
    return FileSum(size, h.hexdigest())


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace one file atomically: a temporary file beside it, synced, renamed over it."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        write_file(tmp, data, sync=True)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise PublishError(f"cannot write {str(path)!r}: {e.strerror or e}") from e


class Staging:
    """A new set of files for an output folder, written beside it and then swapped in
    (:meth:`publish`); removed if it is never published (:meth:`discard`)."""

    def __init__(self, target: Path, stops: Stops | None = None) -> None:
        if os.path.lexists(target) and not target.is_dir():
            raise PublishError(f"output path {str(target)!r} exists but is not a folder")
        self.target, self.stops = target, stops
        self.path = side_path(target, "staging")
        self.fault = Fault.from_env()
        self.files: dict[str, FileSum] = {}
        self._folders: set[str] = set()
        try:
            clean_stale(target, locked=False)
            self.path.mkdir()
            if target.is_dir():
                os.chmod(self.path, stat.S_IMODE(os.stat(target).st_mode))
        except OSError as e:
            raise PublishError(_describe(target, e)) from e

    def folder(self, name: str) -> Path:
        """A folder of the set (``state``, ``state/pages``...), made if new."""
        path = self.path / name
        if name not in self._folders:
            path.mkdir(parents=True, exist_ok=True)
            self._folders.add(name)
        return path

    def write(self, name: str, pieces: bytes | Iterable[bytes]) -> None:
        self._guard(name)
        try:
            self.files[name] = write_file(self.path / name, pieces)
            if len(self.files) == 1:
                self.fault.hit("after_stage_write", self.path)
        except OSError as e:
            raise PublishError(_describe(self.target, e)) from e

    def link(self, name: str, source: Path, listed: FileSum) -> None:
        """A file of the previous set, whole (checked as it was opened), hard-linked (or
        copied where the file system cannot link)."""
        self._guard(name)
        try:
            os.link(source, self.path / name, follow_symlinks=False)
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                raise PublishError(_describe(self.target, e)) from e
            with open(source, "rb") as fh:
                self.write(name, iter(lambda: fh.read(_PIECE), b""))
            return
        self.files[name] = listed

    def written(self, name: str, listed: FileSum) -> None:
        """A file another process wrote (and synced) into the set."""
        self.files[name] = listed

    def _guard(self, name: str) -> None:
        parts = name.split("/")
        if any(p in ("", ".", "..") or "\0" in p for p in parts) or len(parts) > 3:
            raise ValueError(f"output file name must be a plain name, got {name!r}")
        if len(parts) > 1:
            self.folder("/".join(parts[:-1]))

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def publish(self, marker: Marker, keep: dict[str, bytes] | None = None) -> None:
        """The marker (listing every file of the set) written last, the set synced and
        swapped into place; :class:`PublishError` with the folder untouched on failure."""
        try:
            for name, data in (keep or {}).items():
                write_file(self.path / name, data)
            _syncfs(self.path)  # every file of the set, and its folders, on disk at once
            self.fault.hit("after_fsync", self.path)
            self.fault.hit("before_manifest", self.path)
            doc = msgspec.structs.replace(marker, files=dict(sorted(self.files.items())))
            write_file(self.path / MARKER, _marker_bytes(doc), sync=True)
            fsync_dir(self.path)
            self.fault.hit("after_manifest_before_publish", self.path)
        except OSError as e:
            self.discard()
            raise PublishError(_describe(self.target, e)) from e
        except BaseException:  # a signal turned into an exception: leave no staging behind
            self.discard()
            raise
        with held():  # a signal from here on is answered once the old set is gone
            try:
                old = _swap(self.path, self.target)
            except OSError as e:
                self.discard()
                raise PublishError(_describe(self.target, e)) from e
            if self.stops is not None:
                self.stops.live = True
            try:
                self.fault.hit("after_swap", old or self.target)
                fsync_dir(self.target.parent)
            except OSError as e:
                raise PublishError(
                    f"published {str(self.target)!r} but could not sync it: {e}"
                ) from e
            finally:
                with contextlib.suppress(OSError):  # the next run's clean_stale retries
                    self.fault.hit("after_publish", old or self.target)
                    if old is not None:
                        shutil.rmtree(old)
        self.fault.hit("after_cleanup", self.target)


def _marker_bytes(marker: Marker) -> bytes:
    return msgspec.json.format(msgspec.json.encode(marker), indent=1) + b"\n"


def _syncfs(path: Path) -> None:
    """Everything written to the file system that holds ``path``, on disk (``syncfs``: one
    flush for thousands of files, where a sync of each waits on the disk each time)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if _LIBC is None or _LIBC.syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def _libc() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syncfs.argtypes = [ctypes.c_int]
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


def _load_renameat2() -> Any:
    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    return func


_RENAMEAT2 = _load_renameat2()


def _swap(staging: Path, out_dir: Path) -> Path | None:
    """Put ``staging`` in place of ``out_dir``; where the old set now is (None: none)."""
    if not os.path.lexists(out_dir):
        os.rename(staging, out_dir)
        return None
    if _RENAMEAT2 is not None:
        if _RENAMEAT2(-100, os.fsencode(staging), -100, os.fsencode(out_dir), 2) == 0:
            return staging
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(err, os.strerror(err), str(out_dir))
    # no renameat2: between these two renames out_dir does not exist; a crash there leaves
    # the previous set in `old`, which clean_stale moves back on the next run
    old = side_path(out_dir, "old")
    os.rename(out_dir, old)
    try:
        os.rename(staging, out_dir)
    except OSError:
        os.rename(old, out_dir)
        raise
    return old


def _describe(target: Path, e: OSError) -> str:
    reason = e.strerror or str(e)
    where = f" (at {str(e.filename)!r})" if e.filename and str(e.filename) != str(target) else ""
    return f"cannot publish output folder {str(target)!r}: {reason}{where}"
