"""The C heap of a run's processes: memory freed during the run stays for reuse.

glibc gives a freed block at the top of the heap back to the system once more than a
threshold is free there, and serves blocks above another threshold by ``mmap`` and
``munmap``. Both thresholds adapt to the largest block freed, but numpy's temporaries of
many sizes kept them low: every batch of summary keys signed (83 batches at 100 MB) took
fresh pages from the system and gave them back, 119,000 page faults and half the time of
the signatures. A whole ``--jobs 2`` run took 590,000 page faults; 385,000 with the
thresholds set here (a heap that keeps what it freed for the rest of the process's life:
the run's peak memory is its peak either way, +15 MB measured at 100 MB).
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
