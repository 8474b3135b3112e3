"""Outputs: writers behind one interface. The command line only chooses which.

A writer is entered before any input is read (so it can refuse early: a folder that is
not ingest's, a locked output), receives the finished run once, and is left at the end.
"""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, Self

from ..records.output import RunOutput


class Writer(Protocol):
    """Where a run's records go: a folder published atomically, a database, ..."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def write(self, run: RunOutput) -> None: ...
