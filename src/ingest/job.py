"""One run of the batch job: the previous publish in, the records out, guarded.

:func:`run_job` is what ``ingest run`` does: refuse an output folder ingest may not replace
and inputs that overlap it (before any input is read), take the folder's lock, read the
publish already there as the state, run the steps on an engine, and either publish, or —
when the run would remove too much of what the site shows — keep the refused output
beside the folder and leave the folder as it was.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .engines.local import Progress
from .errors import UsageError
from .extract.discover import InputFile, collect_inputs
from .extract.read import read_ahead, read_bytes
from .outputs.folder import FolderWriter
from .outputs.ownership import check_apart
from .records.run import RunOutput
from .state.guard import shrink
from .state.pages import stored_pages
from .state.previous import RunSettings
from .steps import Context


@dataclass(frozen=True, slots=True)
class JobOptions:
    """What ``ingest run`` was asked to do."""

    paths: list[str]
    out: Path
    jobs: int = 1
    engine: Literal["local", "dask"] = "local"
    scheduler: str | None = None
    merge: bool = False
    allow_shrink: bool = False
    crawled_at: dt.date | None = None


@dataclass(frozen=True, slots=True)
class JobResult:
    """The run's records, and where they went."""

    output: RunOutput
    published: bool
    refused: str | None = None  # why the shrink guard refused it
    refused_dir: Path | None = None


def run_job(opts: JobOptions, progress: Callable[[int], Progress | None]) -> JobResult:
    """Run the batch job; ``progress(total)`` gives the per-page progress callback."""
    if opts.scheduler and opts.engine != "dask":
        raise UsageError("--scheduler goes with --engine dask")
    check_apart(opts.paths, opts.out)
    writer = FolderWriter(opts.out)
    inputs = collect_inputs(opts.paths)
    with writer:
        previous = writer.previous()
        stored = stored_pages(previous) if opts.merge else []
        # every input asked of the kernel at once: the parse finds them in its cache
        read_ahead(f.path for f in inputs if f.problem is None)
        settings = RunSettings("merge" if opts.merge else "snapshot", opts.crawled_at)
        output = _engine(  # the run's context (its index, edges, parts...) ends with it
            opts,
            [*inputs, *stored],
            Context.building_on(previous, settings),
            progress(len(inputs) + len(stored)),
        )
        refused = shrink(previous, output)
        if refused is not None and not opts.allow_shrink:
            return JobResult(output, False, refused, writer.write_refused(output))
        previous.forget_records()  # compared and guarded: a rerun's earlier records go
        writer.write(output, previous, _reader(inputs))
    return JobResult(output, True)


def _engine(
    opts: JobOptions, inputs: list[object], ctx: Context, tick: Progress | None
) -> RunOutput:
    if opts.engine == "dask":
        from .engines.dask import run_dask

        return run_dask(inputs, opts.scheduler, opts.jobs, ctx)
    from .engines.local import run

    return run(inputs, jobs=opts.jobs, progress=tick, ctx=ctx)


def _reader(inputs: list[InputFile]) -> Callable[[str], bytes | None]:
    """The bytes of an input by its name in the records, read again for the state."""
    paths = {f.name: f.path for f in inputs if f.problem is None}

    def read(name: str) -> bytes | None:
        path = paths.get(name)
        return None if path is None else read_bytes(path)[0]

    return read
