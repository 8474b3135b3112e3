"""What runs keep beside an output folder while they work, and what killed runs left there.

A run writes its new set into ``.NAME.staging-PID`` beside the folder, swaps it in (the
previous set is then in that folder until it is removed), and keeps the previous set in
``.NAME.old-PID`` where the swap is two renames. A run killed meanwhile leaves them; the
next run over the folder removes them as it starts (:func:`clean_stale`), so nothing stays
beside the folder. A ``.NAME.pack-PID`` file (a page pack ingest 0.1 wrote ahead there) is
removed the same way.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

from .lock import is_held


def side_path(out_dir: Path, kind: str, pid: int | None = None) -> Path:
    """What a run of this process (or ``pid``) keeps beside ``out_dir`` while it works:
    ``staging``, ``old`` or ``pack`` (the names :func:`clean_stale` knows)."""
    return out_dir.parent / f".{out_dir.name}.{kind}-{os.getpid() if pid is None else pid}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale(out_dir: Path) -> None:
    """Remove the staging/old folders and pack files earlier runs of ``out_dir`` left.

    Without the lock only folders of this pid or of dead pids are touched. When this process
    holds ``OutputLock(out_dir)`` no other run can be publishing, so all of them are stale
    (this also covers a recycled pid). An ``old`` folder with no ``out_dir`` means a fallback
    swap was interrupted between its two renames: it is moved back into place.
    """
    pattern = re.compile(rf"\.{re.escape(out_dir.name)}\.(staging|old|pack)-(\d+)")
    locked = is_held(out_dir)
    for entry in os.scandir(out_dir.parent):
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        pid = int(match.group(2))
        if match.group(1) == "pack":  # a page pack an ingest 0.1 run wrote ahead
            if pid != os.getpid() and (locked or not _pid_alive(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue
        if not (locked or pid == os.getpid() or not _pid_alive(pid)):
            continue
        if match.group(1) == "old" and not os.path.lexists(out_dir):
            os.rename(entry.path, out_dir)
        else:
            shutil.rmtree(entry.path, ignore_errors=True)
