"""One run of the batch job: the previous publish in, the records out, guarded.

:func:`run_job` is what ``ingest run`` does: refuse an output folder ingest may not replace
and inputs that overlap it (before any input is read), take the folder's lock, read the
publish already there as the state, run the steps on an engine, and either publish, or —
when the run would remove too much of what the site shows, or rejected anything under
``--strict`` — keep the refused output beside the folder and leave the folder as it was.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from msgspec import structs

from .engines.local import Watch
from .errors import UsageError
from .extract.discover import InputFile, StoredPage, collect_inputs
from .extract.read import read_ahead, read_bytes
from .outputs.folder import FolderWriter
from .outputs.ownership import check_apart
from .outputs.stops import Stops
from .records.run import Content, RunOutput
from .state.guard import shrink
from .state.pages import stored_pages
from .state.previous import Previous, RunSettings
from .state.reuse import cache_files
from .steps import Context
from .steps.cache import next_cache, open_reuse, summary_keys, taken
from .steps.reuse import Reader, Reuse


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
    strict: bool = False  # a run with rejects is refused, not published
    full: bool = False  # take nothing from the previous publish's cache (it is rebuilt)


@dataclass(frozen=True, slots=True)
class JobResult:
    """The run's records, and where they went."""

    output: RunOutput
    published: bool
    refused: str | None = None  # why the shrink guard (or --strict) refused it
    refused_dir: Path | None = None
    strict: bool = False  # refused by --strict (else by the shrink guard)
    kept: int = 0  # refused: the sequence of the publish still live (0: the folder had none)
    warnings: list[str] = field(default_factory=list)  # to print: the cache's trouble


def run_job(opts: JobOptions, watch: Watch | None = None, stops: Stops | None = None) -> JobResult:
    """Run the batch job; ``watch`` hears of its steps as they go, and ``stops`` (the
    signal handler) learns which publish is live."""
    if opts.scheduler and opts.engine != "dask":
        raise UsageError("--scheduler goes with --engine dask")
    check_apart(opts.paths, opts.out)
    writer = FolderWriter(opts.out, stops)
    inputs = collect_inputs(opts.paths)
    with writer:
        previous = writer.previous()
        stored = stored_pages(previous) if opts.merge else []
        # every input asked of the kernel at once: the parse finds them in its cache
        read_ahead(f.path for f in inputs if f.problem is None)
        settings = RunSettings("merge" if opts.merge else "snapshot", opts.crawled_at)
        reuse, warnings = _reuse(opts, previous, stored, _reader(inputs, stored))
        try:
            ctx = Context.building_on(previous, settings, reuse)
            output = _engine(opts, [*inputs, *stored], ctx, watch)
            cache = _after(ctx, output, warnings)
            del ctx  # the run's context (its index, edges, parts...) ends here
            refused = shrink(previous, output)
            if refused is not None and not opts.allow_shrink:
                refused_dir = writer.write_refused(output)
                kept = previous.sequence
                return JobResult(output, False, refused, refused_dir, False, kept, warnings)
            if opts.strict and output.rejects:
                reasons = ", ".join(sorted({r.reason for r in output.rejects}))
                why = f"--strict: {len(output.rejects)} reject(s) ({reasons})"
                refused_dir = writer.write_refused(output)
                return JobResult(output, False, why, refused_dir, True, previous.sequence, warnings)
            previous.forget_records()  # compared and guarded: a rerun's earlier records go
            writer.write(output, previous, _reader(inputs), cache)
        finally:
            if reuse is not None and reuse.store is not None:
                reuse.store.close()
    return JobResult(output, True, warnings=warnings)


def _reuse(
    opts: JobOptions, previous: Previous, stored: list[StoredPage], read: Reader
) -> tuple[Reuse | None, list[str]]:
    """What the run may take from the previous publish's cache (the Dask engine: nothing,
    and it leaves none)."""
    if opts.engine == "dask":
        return None, []
    days = {s.name: s.crawled_at for s in stored}
    return open_reuse(previous.folder, opts.full, days, read, previous.cache_damaged)


def _after(
    ctx: Context, output: RunOutput, warnings: list[str]
) -> tuple[dict[str, Content], dict[str, Path]]:
    """What the run took, into its report; and the files of the cache it leaves (none
    when it kept nothing), made of what they need of the context, which then goes."""
    output.report = structs.replace(output.report, reuse=taken(ctx, output.report.files, warnings))
    output.summary_keys = summary_keys(ctx)
    fill = next_cache(ctx)
    if fill is None or ctx.reuse is None:
        return {}, {}
    return cache_files(fill, ctx.reuse.store, output.report.run.sequence, ctx.reuse.build)


def _engine(opts: JobOptions, inputs: list[object], ctx: Context, watch: Watch | None) -> RunOutput:
    if opts.engine == "dask":
        from .engines.dask import run_dask

        return run_dask(inputs, opts.scheduler, opts.jobs, ctx, watch)
    from .engines.local import run

    return run(inputs, jobs=opts.jobs, watch=watch, ctx=ctx)


def _reader(
    inputs: list[InputFile], stored: list[StoredPage] | None = None
) -> Callable[[str], bytes | None]:
    """The bytes of an input by its name in the records, read again (for the state); with
    ``stored``, of a page the state kept too (an input of the same name replaces it)."""
    paths = {f.name: f.path for f in inputs if f.problem is None}
    kept = {s.name: s.data for s in stored or [] if s.name not in paths}

    def read(name: str) -> bytes | None:
        path = paths.get(name)
        return kept.get(name) if path is None else read_bytes(path)[0]

    return read
