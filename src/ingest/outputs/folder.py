"""The folder writer: a run's files and its state published into one output folder.

Entering it refuses a folder ingest may not replace (see :mod:`.ownership`), takes the
folder's lock and removes what killed runs left beside the folder, before any input is
read. :meth:`FolderWriter.write` publishes the outputs, the marker and the state (every
file of it sealed with its checksum, see :mod:`ingest.state.integrity`) in one atomic
swap; :meth:`FolderWriter.write_refused` puts a run the shrink guard (or ``--strict``)
refused beside the folder, for inspection, and leaves the folder as it was.
"""

from __future__ import annotations

import contextlib
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Self

from ..records.run import Closing, Content, RunOutput
from ..state.earlier import with_earlier
from ..state.integrity import Seal
from ..state.pages import InputReader, state_files
from ..state.previous import MARKER, STATE, Previous, load
from .atomic import publish
from .beside import clean_stale
from .faults import Fault
from .lock import OutputLock
from .ownership import check_owned, marker, sealed_marker
from .render import render
from .stops import Stops


class FolderWriter:
    """Publishes every file ``render`` makes (the JSONL files, ``report.html``,
    ``report.json``), ``.ingest`` and ``state/`` into ``out_dir``."""

    def __init__(self, out_dir: Path, stops: Stops | None = None) -> None:
        self.target = check_owned(out_dir)
        self._lock = OutputLock(self.target)
        self._stops = stops
        if stops is not None:
            stops.folder = out_dir

    def __enter__(self) -> Self:
        self._lock.acquire()
        try:
            for folder in (self.target, self.refused_dir):  # a killed run's, or an old set
                with contextlib.suppress(OSError):  # best effort: a publish tries again
                    clean_stale(folder)
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._lock.release()
        Fault.from_env().hit("after_unlock", self.target)

    def previous(self) -> Previous:
        """The publish now in the folder, as the state this run builds on."""
        return load(self.target)

    def write(
        self,
        run: RunOutput,
        previous: Previous,
        read_input: InputReader,
        cache: tuple[dict[str, Content], dict[str, Path]] = ({}, {}),
    ) -> None:
        """Publish ``run``, its state, and ``cache``: the reuse cache's files and the
        earlier packs it carries over (see ingest.state.reuse)."""
        seal = Seal()  # every file of state/ hashed as written (see ingest.state.integrity)
        state, links = state_files(run, previous, read_input, seal)
        files = with_earlier(render(run), run)  # after the records' files, with their digests
        files = {n: seal.sealed(n, c) if n.startswith(f"{STATE}/") else c for n, c in files.items()}
        made, carried = cache
        for name, content in made.items():  # the reuse cache (see ingest.state.reuse)
            files[name] = seal.sealed(name, content)
        for name, path in carried.items():  # its earlier packs, checked as the state was read
            seal.known(name, previous.files[path.name])
        sealed = Closing(partial(sealed_marker, seal))  # after the manifest
        publish(self.target, {**files, **state, MARKER: sealed}, {**links, **carried}, self._stops)

    @property
    def refused_dir(self) -> Path:
        return self.target.with_name(f"{self.target.name}.refused")

    def write_refused(self, run: RunOutput) -> Path:
        """Publish ``run`` beside the folder (``NAME.refused``); the folder is untouched."""
        target = check_owned(self.refused_dir, "the refused output", kind="refused")
        publish(target, {**render(run), MARKER: marker("refused")})
        return target
