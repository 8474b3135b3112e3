"""Fault injection for tests: ``INGEST_FAULT=<point>:<action>`` at a named publish point.

``kill`` exits 137 on the spot (a SIGKILL or power loss), ``term`` sends the process a
SIGTERM, ``enospc`` and ``eio`` raise that error. Unset or unknown: nothing happens.
"""

from __future__ import annotations

import errno
import os
import signal
from dataclasses import dataclass
from pathlib import Path

#: Environment variable for fault injection, ``<point>:<action>``.
FAULT_ENV = "INGEST_FAULT"
FAULT_POINTS = (
    "after_stage_write",
    "after_fsync",
    "before_manifest",
    "after_manifest_before_publish",
    "after_publish",
)
_FAULT_ERRNOS = {"enospc": errno.ENOSPC, "eio": errno.EIO}
_KILL_EXIT = 137


@dataclass(frozen=True)
class Fault:
    """The fault requested by ``INGEST_FAULT``; a no-op when unset or unknown."""

    point: str | None = None
    action: str | None = None

    @classmethod
    def from_env(cls) -> Fault:
        point, _, action = os.environ.get(FAULT_ENV, "").partition(":")
        if point in FAULT_POINTS and (action in ("kill", "term") or action in _FAULT_ERRNOS):
            return cls(point, action)
        return cls()

    def hit(self, point: str, path: Path) -> None:
        if point != self.point or self.action is None:
            return
        if self.action == "kill":
            os._exit(_KILL_EXIT)
        if self.action == "term":
            os.kill(os.getpid(), signal.SIGTERM)  # delivered before kill() returns
            return
        code = _FAULT_ERRNOS[self.action]
        raise OSError(code, os.strerror(code), str(path))
