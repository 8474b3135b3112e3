"""The folder writer: a run's files and its state published into one output folder.

Entering it refuses a folder ingest may not replace (see :mod:`.ownership`) and takes the
folder's lock, before any input is read. :meth:`FolderWriter.write` publishes the outputs,
the marker and the state in one atomic swap; :meth:`FolderWriter.write_refused` puts a
run the shrink guard refused beside the folder, for inspection, and leaves the folder as
it was.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Self

from ..records.run import RunOutput
from ..state.earlier import with_earlier
from ..state.pages import InputReader, state_files
from ..state.previous import MARKER, Previous, load
from .atomic import publish
from .lock import OutputLock
from .ownership import check_owned, marker
from .render import render


class FolderWriter:
    """Publishes every file ``render`` makes (the JSONL files, ``report.html``,
    ``report.json``), ``.ingest`` and ``state/`` into ``out_dir``."""

    def __init__(self, out_dir: Path) -> None:
        self.target = check_owned(out_dir)
        self._lock = OutputLock(self.target)

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

    def previous(self) -> Previous:
        """The publish now in the folder, as the state this run builds on."""
        return load(self.target)

    def write(self, run: RunOutput, previous: Previous, read_input: InputReader) -> None:
        state, links = state_files(run, previous, read_input)
        files = with_earlier(render(run), run)  # after the records' files, with their digests
        publish(self.target, {**files, MARKER: marker(), **state}, links)

    @property
    def refused_dir(self) -> Path:
        return self.target.with_name(f"{self.target.name}.refused")

    def write_refused(self, run: RunOutput) -> Path:
        """Publish ``run`` beside the folder (``NAME.refused``); the folder is untouched."""
        target = check_owned(self.refused_dir, "the refused output", kind="refused")
        publish(target, {**render(run), MARKER: marker("refused")})
        return target
