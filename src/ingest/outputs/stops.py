"""How SIGTERM and Ctrl-C end a command, and the truth about which publish is live.

The command line installs a :class:`Stops` as the handler of SIGTERM and SIGINT for the
length of a command. A signal raises :class:`Stopped` where the command is: it unwinds (a
publish not yet swapped in removes its staging folder), and the command line prints the
stop's message and exits 143 (SIGTERM) or 130 (SIGINT). The message names the folder a
run publishes into and says which publish is live there: the previous one until the
swap, the new one from the swap on (:func:`~ingest.outputs.atomic.publish` says when).

The swap and the removal of the previous files after it are one step that no signal cuts
(:func:`held`): a signal that arrives meanwhile is answered once both are done, so the
previous publish is never left beside the folder by a stop.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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
