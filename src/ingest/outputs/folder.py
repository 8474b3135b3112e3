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

from ..extract.discover import InputFile
from ..records.run import Content, RunOutput
from ..state.earlier import with_earlier
from ..state.pages import InputReader, state_files
from ..state.previous import MARKER, Previous, load
from .ahead import PackAhead, pack_ahead
from .atomic import publish, side_path
from .lock import OutputLock
from .ownership import check_owned, marker
from .render import render


class FolderWriter:
    """Publishes every file ``render`` makes (the JSONL files, ``report.html``,
    ``report.json``), ``.ingest`` and ``state/`` into ``out_dir``."""

    def __init__(self, out_dir: Path) -> None:
        self.target = check_owned(out_dir)
        self._lock = OutputLock(self.target)
        self._ahead: PackAhead | None = None

    def __enter__(self) -> Self:
        self._lock.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self._ahead is not None:
                self._ahead.discard()
        finally:
            self._lock.release()

    def previous(self) -> Previous:
        """The publish now in the folder, as the state this run builds on."""
        return load(self.target)

    def pack_ahead(self, inputs: list[InputFile], previous: Previous) -> None:
        """Start writing the state's new page pack now, beside the folder, while the run
        goes on (see :mod:`.ahead`); :meth:`write` takes it if it fits."""
        if self.target.parent.is_dir():
            self._ahead = pack_ahead(inputs, previous, side_path(self.target, "pack"))

    def write(
        self,
        run: RunOutput,
        previous: Previous,
        read_input: InputReader,
        cache: tuple[dict[str, Content], dict[str, Path]] = ({}, {}),
    ) -> None:
        """Publish ``run``, its state, and ``cache``: the reuse cache's files and the
        earlier packs it carries over (see ingest.state.reuse)."""
        ahead = None if self._ahead is None else self._ahead.take
        state, links = state_files(run, previous, read_input, ahead)
        files = with_earlier(render(run), run)  # after the records' files, with their digests
        everything = {**files, MARKER: marker(), **state, **cache[0]}
        publish(self.target, everything, {**links, **cache[1]})

    @property
    def refused_dir(self) -> Path:
        return self.target.with_name(f"{self.target.name}.refused")

    def write_refused(self, run: RunOutput) -> Path:
        """Publish ``run`` beside the folder (``NAME.refused``); the folder is untouched."""
        target = check_owned(self.refused_dir, "the refused output", kind="refused")
        publish(target, {**render(run), MARKER: marker("refused")})
        return target
