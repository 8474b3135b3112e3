"""Crash-safe output: publish a whole folder at once, and replace single files atomically.

``publish`` writes every file into a staging folder next to ``out_dir`` (same parent, so same
filesystem), fsyncs each file and the folder, then swaps staging and ``out_dir`` in one atomic
``renameat2(RENAME_EXCHANGE)`` and removes the old contents. A reader (or a SIGKILL) therefore
sees either the complete previous set of files or the complete new set, never a mix. Leftovers
of a killed run are removed at the start of the next one. ``INGEST_FAULT=<point>:<action>``
injects a crash (``kill``: exit 137 on the spot), a SIGTERM sent to itself (``term``) or an
error (``enospc``, ``eio``) at a named point, for tests. An exception of any kind before the swap
(an OSError, or a KeyboardInterrupt or SystemExit raised by a signal handler) removes the
staging folder; the previous output is never touched before the swap. The swap, the sync of
the parent and the removal of the old contents are one step no SIGTERM or SIGINT cuts (see
:mod:`.stops`): a signal then is answered once the old contents are gone, and the caller's
:class:`~.stops.Stops` knows from the swap on that the new set is live.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path

from ..errors import PublishError
from ..records.run import Alongside, Apart, Closing, Content, content_bytes
from .beside import clean_stale, side_path
from .faults import FAULT_ENV, FAULT_POINTS, Fault
from .files import (
    Writing,
    WritingApart,
    atomic_write_bytes,
    fsync_dir,
    read_pieces,
    write_file,
)
from .stops import Stops, held

__all__ = [
    "FAULT_ENV",
    "FAULT_POINTS",
    "KEEP_FILES",
    "MANIFEST",
    "atomic_write_bytes",
    "clean_stale",
    "publish",
    "side_path",
]

#: Written last among the files, so its presence in staging means the set is complete.
MANIFEST = "report.json"
#: Git keep files carried over from the previous ``out_dir`` so the folder stays tracked.
KEEP_FILES = (".keep", ".gitkeep")

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _load_renameat2() -> Callable[..., int] | None:
    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    return func


_RENAMEAT2 = _load_renameat2()


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths; False when the kernel, libc or filesystem cannot."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def _describe(target: Path, e: OSError) -> str:
    reason = e.strerror or str(e)
    where = f" (at {str(e.filename)!r})" if e.filename and str(e.filename) != str(target) else ""
    return f"cannot publish output folder {str(target)!r}: {reason}{where}"


def _check_names(names: Iterable[str]) -> None:
    """Plain file names, or ``folder/name`` one level down (both parts plain)."""
    for name in names:
        parts = name.split("/")
        if len(parts) > 2 or any(p in ("", ".", "..") or "\0" in p for p in parts):
            raise ValueError(f"output file name must be a plain file name, got {name!r}")


def _filled_apart(files: Mapping[str, Content]) -> list[str]:
    """The folders whose files the children of files made apart write (plain names)."""
    folders = [d.folder for d in files.values() if isinstance(d, Apart) and d.folder is not None]
    for folder in folders:
        if "/" in folder:
            raise ValueError(f"output folder name must be a plain name, got {folder!r}")
    return folders


def _keep_files(out_dir: Path, files: Mapping[str, Content]) -> dict[str, bytes]:
    found = {}
    for name in KEEP_FILES:
        path = out_dir / name
        if name not in files and path.is_file():
            found[name] = path.read_bytes()
    return found


def _stage(
    staging: Path,
    out_dir: Path,
    files: Mapping[str, Content],
    links: Mapping[str, Path],
    fault: Fault,
) -> None:
    """Write the complete new set into ``staging``; the manifest goes last."""
    os.mkdir(staging)
    if out_dir.is_dir():
        os.chmod(staging, stat.S_IMODE(os.stat(out_dir).st_mode))
    named = {n.split("/")[0] for n in [*files, *links] if "/" in n}
    folders = sorted(named.union(_filled_apart(files)))  # a child apart writes into its own
    for folder in folders:
        os.mkdir(staging / folder)
    for name, source in links.items():
        _link_or_copy(source, staging / name)
    others = {n: d for n, d in files.items() if n != MANIFEST} | _keep_files(out_dir, files)
    aside: list[Writing | WritingApart] = []  # started first: they take longest
    try:
        for n, d in others.items():  # children before threads: a process with a thread
            if isinstance(d, Apart):  # forks none
                aside.append(WritingApart(staging / n, d))
        for n, d in others.items():
            if isinstance(d, Alongside):
                aside.append(Writing(staging / n, d))
        here = [(n, d) for n, d in others.items() if not isinstance(d, Alongside | Apart | Closing)]
        for count, (name, data) in enumerate(here, start=1):
            write_file(staging / name, data)
            if count == 1:
                fault.hit("after_stage_write", staging)
        if not here:
            fault.hit("after_stage_write", staging)
        # the manifest is made while the files aside are finished (the report page's child
        # outlasts the others: at 100 MB, 0.24 s of work that would wait for it); written last
        manifest = content_bytes(files[MANIFEST]) if MANIFEST in files else None
        for w in aside:
            w.wait()
    finally:
        for w in aside:
            w.stop()  # a no-op for one that is done
    for name, closing in others.items():  # made from what the others were, once they are
        if isinstance(closing, Closing):
            write_file(staging / name, closing)
    for folder in folders:
        fsync_dir(staging / folder)
    fault.hit("after_fsync", staging)
    fault.hit("before_manifest", staging)
    if manifest is not None:
        write_file(staging / MANIFEST, manifest)
    fsync_dir(staging)


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link to a file of the previous set (its data is already on disk), or a copy
    where the file system cannot link."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            e.filename = e.filename or str(source)
            raise
        write_file(target, partial(read_pieces, source))


def _swap(staging: Path, out_dir: Path) -> Path | None:
    """Put ``staging`` in place of ``out_dir``; return where the old contents now are."""
    if not os.path.lexists(out_dir):
        os.rename(staging, out_dir)
        return None
    if _exchange(staging, out_dir):
        return staging
    # Fallback (no renameat2): between these two renames out_dir does not exist. A crash
    # there leaves the previous set in `old`; clean_stale moves it back on the next run.
    old = side_path(out_dir, "old")
    os.rename(out_dir, old)
    try:
        os.rename(staging, out_dir)
    except OSError:
        os.rename(old, out_dir)
        raise
    return old


def publish(
    out_dir: Path,
    files: Mapping[str, Content],
    links: Mapping[str, Path] | None = None,
    stops: Stops | None = None,
) -> None:
    """Atomically replace the contents of ``out_dir`` with ``files`` (name -> bytes; a name
    is a plain file name or ``folder/name``) and ``links`` (name -> an existing file, hard
    linked into place: files of the previous set carried over without copying them).

    Keep files (``.keep``, ``.gitkeep``) already in ``out_dir`` are carried over. The swap is
    one ``renameat2(RENAME_EXCHANGE)``; where that is unavailable (ENOSYS/EINVAL, no libc
    symbol) it falls back to two renames, which leave a short window in which ``out_dir`` is
    missing (a crash there is repaired by the next run). Removing the old contents after the
    swap is best effort (what is left, the next run removes). ``stops.live`` is set the
    moment the new set is in place. Raises ``PublishError`` (``out_dir`` untouched, staging
    removed) on any OSError before the swap; ``ValueError`` for a file name that is not a
    plain name.
    """
    target = _real(out_dir)
    if os.path.lexists(target) and not target.is_dir():
        raise PublishError(f"output path {str(target)!r} exists but is not a directory")
    if not target.name:
        raise PublishError(f"output path {str(target)!r} cannot be replaced")
    links = links or {}
    _check_names([*files, *links, *_filled_apart(files)])
    fault = Fault.from_env()
    staging = side_path(target, "staging")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        clean_stale(target)
        _stage(staging, target, files, links, fault)
        fault.hit("after_manifest_before_publish", staging)
    except OSError as e:
        shutil.rmtree(staging, ignore_errors=True)
        raise PublishError(_describe(target, e)) from e
    except BaseException:  # e.g. SIGTERM turned into an exception: leave no staging behind
        shutil.rmtree(staging, ignore_errors=True)
        raise
    with held():  # a signal from here on is answered once the old contents are gone
        try:
            old = _swap(staging, target)
        except OSError as e:
            shutil.rmtree(staging, ignore_errors=True)
            raise PublishError(_describe(target, e)) from e
        if stops is not None:
            stops.live = True
        _finish(target, old, fault)
    fault.hit("after_cleanup", target)


def _finish(target: Path, old: Path | None, fault: Fault) -> None:
    """Sync the swap, and remove the old contents (if the sync fails too)."""
    try:
        fault.hit("after_swap", old or target)
        fsync_dir(target.parent)
    except OSError as e:
        raise PublishError(f"published {str(target)!r} but could not sync it: {e.strerror}") from e
    finally:
        with contextlib.suppress(OSError):  # best effort: the next run's clean_stale retries
            fault.hit("after_publish", old or target)
            if old is not None:
                shutil.rmtree(old)
