"""Fault injection for tests: ``INGEST_FAULT=<point>:<action>`` at a named publish point.

``kill`` exits 137 on the spot (a SIGKILL or power loss), ``term`` and ``int`` send the
process a SIGTERM or a SIGINT, ``enospc`` and ``eio`` raise that error. Unset or unknown:
nothing happens.
"""

from __future__ import annotations

import errno
import os
import signal
from dataclasses import dataclass
from pathlib import Path

#: Environment variable for fault injection, ``<point>:<action>``.
FAULT_ENV = "INGEST_FAULT"
#: The points before the swap: the previous publish is live there.
BEFORE_SWAP = (
    "after_stage_write",
    "after_fsync",
    "before_manifest",
    "after_manifest_before_publish",
)
#: The points from the swap on, in order: the new publish is live. ``after_swap``: the
#: previous files beside the folder, the folder not synced yet; ``after_publish``: synced,
#: the previous files not yet removed; ``after_cleanup``: removed, the publish returning;
#: ``after_unlock``: a run's writer left, the lock given back (hit by ``ingest run`` only).
AFTER_SWAP = ("after_swap", "after_publish", "after_cleanup", "after_unlock")
FAULT_POINTS = BEFORE_SWAP + AFTER_SWAP
_FAULT_ERRNOS = {"enospc": errno.ENOSPC, "eio": errno.EIO}
_FAULT_SIGNALS = {"term": signal.SIGTERM, "int": signal.SIGINT}
_KILL_EXIT = 137


@dataclass(frozen=True)
class Fault:
    """The fault requested by ``INGEST_FAULT``; a no-op when unset or unknown."""

    point: str | None = None
    action: str | None = None

    @classmethod
    def from_env(cls) -> Fault:
        point, _, action = os.environ.get(FAULT_ENV, "").partition(":")
        if point in FAULT_POINTS and (action == "kill" or action in _FAULT_SIGNALS | _FAULT_ERRNOS):
            return cls(point, action)
        return cls()

    def hit(self, point: str, path: Path) -> None:
        if point != self.point or self.action is None:
            return
        if self.action == "kill":
            os._exit(_KILL_EXIT)
        if self.action in _FAULT_SIGNALS:
            os.kill(os.getpid(), _FAULT_SIGNALS[self.action])  # delivered before kill() returns
            return
        code = _FAULT_ERRNOS[self.action]
        raise OSError(code, os.strerror(code), str(path))
