"""The folder writer: a run's files published into one output folder, atomically, under a lock."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Self

from ..records.output import RunOutput
from .atomic import publish
from .lock import OutputLock
from .render import render


class FolderWriter:
    """Publishes every file ``render`` makes (the JSONL files, ``report.html``, ``report.json``)."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self._lock = OutputLock(out_dir)

    def __enter__(self) -> Self:
        self._lock.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._lock.release()

    def write(self, run: RunOutput) -> None:
        publish(self.out_dir, render(run))
