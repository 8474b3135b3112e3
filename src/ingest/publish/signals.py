"""How SIGTERM and Ctrl-C end a command, the truth about which publish is live, and the
faults tests inject at the moments of a publish.

The command line installs a :class:`Stops` as the handler of SIGTERM and SIGINT for the
length of a command. A signal raises :class:`Stopped` where the command is: it unwinds (a
publish not yet swapped in removes its staging folder), and the command line prints the
stop's message and exits 143 (SIGTERM) or 130 (SIGINT). The message names the folder a
run publishes into and says which publish is live there: the previous one until the swap,
the new one from the swap on. The swap and the removal of the previous files after it are
one step no signal cuts (:func:`held`).

``INGEST_FAULT=<point>:<action>`` (:class:`Fault`): at a named point of a publish, ``kill``
exits 137 on the spot (a SIGKILL or power loss), ``term`` and ``int`` send the process a
SIGTERM or a SIGINT, ``enospc`` and ``eio`` raise that error. Unset or unknown: nothing.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

#: The signals that stop a command.
STOPPING = (signal.SIGTERM, signal.SIGINT)


class Stopped(BaseException):
    """A signal stopped the command; ``str()`` is its one-line message, ``code`` the exit
    code (128 + the signal's number: 143 for SIGTERM, 130 for SIGINT)."""

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(message)
        self.code = 128 + signum


class Stops:
    """The handler of SIGTERM and SIGINT while a command runs, knowing which publish of
    ``folder`` is live: a run names the folder it publishes into, and its publish says
    ``live`` the moment the new set is in place."""

    def __init__(self) -> None:
        self.folder: Path | None = None  # the folder a run publishes into, as given
        self.live = False  # its new publish is in place

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        raise Stopped(signum, self.message(signum))

    def message(self, signum: int) -> str:
        """What a stop by ``signum`` says, now."""
        what = "interrupted" if signum == signal.SIGINT else "terminated"
        if self.folder is None:
            return f"{what}; the previous output is left as it was"
        if self.live:
            return f"{what} after publishing: the new publish in {str(self.folder)!r} is live"
        return f"{what} before publishing: {str(self.folder)!r} is left as it was"

    @contextmanager
    def installed(self) -> Iterator[Stops]:
        """This handler for SIGTERM and SIGINT during the block, the ones before it after
        (only the main thread can handle signals: elsewhere nothing is installed)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        before = {s: signal.signal(s, self) for s in STOPPING}
        try:
            yield self
        finally:
            for s, handler in before.items():
                signal.signal(s, handler)


@contextmanager
def held() -> Iterator[None]:
    """SIGTERM and SIGINT wait for the block: one that arrives meanwhile is noted, and
    raised again once the handlers of before are back (they answer it as they would)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        noted.append(signum)

    before = {s: signal.signal(s, note) for s in STOPPING}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)


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
