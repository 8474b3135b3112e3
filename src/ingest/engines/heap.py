"""The C heap of a run's processes: memory freed during the run stays for reuse.

glibc gives a freed block at the top of the heap back to the system once more than a
threshold is free there, and serves blocks above another threshold by ``mmap`` and
``munmap``. Both thresholds adapt to the largest block freed, but numpy's temporaries of
many sizes kept them low: every batch of summary keys signed (83 batches at 100 MB) took
fresh pages from the system and gave them back, 119,000 page faults and half the time of
the signatures. A whole ``--jobs 2`` run took 590,000 page faults; 385,000 with the
thresholds set here (a heap that keeps what it freed for the rest of the process's life:
the run's peak memory is its peak either way, +15 MB measured at 100 MB).

``ingest`` as a process (:func:`ingest.cli.entry`) ends at once when its command is done:
the system takes its memory back whole. An object freed one by one before that costs the
time of freeing it and gives back memory the process would only reuse: the run's resolved
components (every listing of the crawl and the items they resolve to), let go when the
records step is done, took the driver 0.22-0.28 s to free at 100 MB, with the second core
idle, for 35-40 MB less peak memory. Such a process keeps them (:func:`keep`) instead; a
library caller (the tests, a notebook) goes on after the command, and frees them as usual.
"""

from __future__ import annotations

import contextlib
import ctypes

#: ``mallopt`` parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Blocks this large and over are still mapped apart (glibc's own largest adaptive value).
MMAP_AT = 32 << 20
#: Free memory at the top of the heap given back to the system only above this.
TRIM_AT = 1 << 30


def steady_heap() -> bool:
    """Keep freed memory in this process (and the processes it forks from now on); False
    where the C library has no ``mallopt`` (macOS, musl's no-op aside) or refuses."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        mapped = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_AT)
        trimmed = libc.mallopt(_M_TRIM_THRESHOLD, TRIM_AT)
        return bool(mapped == 1 and trimmed == 1)
    return False


#: What is left for the exit, never freed; None: this process goes on after its command.
KEPT: list[object] | None = None


def until_exit() -> None:
    """This process ends with its command: what :func:`keep` is given is never freed."""
    global KEPT
    KEPT = []


def keep(obj: object) -> bool:
    """Leave ``obj`` alive until the process exits, if it ends with its command; False
    when it does not (the caller's reference goes, and ``obj`` with it if it was the last)."""
    if KEPT is None:
        return False
    KEPT.append(obj)
    return True
