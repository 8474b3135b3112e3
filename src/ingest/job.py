"""One run of the batch job: the last publish in, the records out, guarded.

:func:`run_job` is what ``ingest run`` does: refuse an output folder ingest may not replace
and inputs that overlap it (before any input is read), take the folder's lock, open the
publish already there through the one door (a damaged one is refused), and — unless its
pages are byte for byte the inputs, when nothing is to be done — run the steps on an
engine and either publish, or, when the run would remove too much of what the site shows
(or rejected anything under ``--strict``), keep the refused output beside the folder and
leave the folder as it was.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import msgspec
from msgspec import Struct, structs

from ingest import SCHEMA_VERSION, __version__
from ingest.contract import Recomputed, Reused, json_bytes, jsonl
from ingest.errors import PublishError, UsageError
from ingest.extract.discover import InputFile, collect_inputs, read_bytes
from ingest.pipeline.local import Advance, LocalEngine, Spooled
from ingest.pipeline.steps import Begin, Context, Engine, PageCache, Step, run_steps
from ingest.publish.door import STATE_VERSION, FileSum, Marker, Opened, digest, read_regular
from ingest.publish.folder import Folder, Staging, check_apart, check_owned, side_path
from ingest.publish.signals import Stops
from ingest.records import RunOutput, packed
from ingest.report import write_report, write_report_into
from ingest.state import cache
from ingest.state.changes import shrink
from ingest.state.previous import (
    ITEMS,
    RECORDS_FILE,
    TOPICS,
    EarlierTopic,
    PageRef,
    Previous,
    RunSettings,
    State,
    description_key,
    earlier_item,
    line_digests,
    load,
    state_bytes,
)
from ingest.state.windows import earliest, first_days


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
    full: bool = False  # take nothing from the page cache (every page parsed again)


@dataclass(frozen=True, slots=True)
class JobResult:
    """The run's records, and where they went."""

    output: RunOutput | None
    published: bool
    refused: str | None = None  # why the shrink guard (or --strict) refused it
    refused_dir: Path | None = None
    strict: bool = False  # refused by --strict (else by the shrink guard)
    kept: int = 0  # the sequence of the publish still live (0: the folder has none)
    pages: int = 0  # nothing new: the pages, byte for byte those of the live publish
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Watch:
    """What hears of a run as it goes (``ingest run`` shows it): each step as it begins,
    its work as it advances, and each phase a user knows — read, resolve, write, publish —
    as it ends, with its seconds and what it did."""

    begin: Begin | None = None
    advance: Advance | None = None
    phase: Callable[[str, float, str], None] | None = None


def run_job(opts: JobOptions, watch: Watch | None = None, stops: Stops | None = None) -> JobResult:
    """Run the batch job; ``watch`` hears of its steps as they go, and ``stops`` (the
    signal handler) learns which publish is live."""
    if opts.scheduler and opts.engine != "dask":
        raise UsageError("--scheduler goes with --engine dask")
    check_apart(opts.paths, opts.out)
    folder = Folder(opts.out, stops)
    inputs = collect_inputs(opts.paths)
    watch = watch or Watch()
    with folder:
        previous = load(folder.target)
        try:
            this_build = cache.build()
            if _nothing_new(previous, inputs, opts, this_build):
                return JobResult(None, False, kept=previous.sequence, pages=len(inputs))
            stored = previous.stored_pages() if opts.merge else []
            staging = folder.staging()
            try:
                return _run(opts, folder, staging, previous, [*inputs, *stored], this_build, watch)
            finally:
                staging.discard()  # published: swapped away already; refused: gone
        finally:
            previous.close()


def _run(
    opts: JobOptions,
    folder: Folder,
    staging: Staging,
    previous: Previous,
    inputs: list[object],
    this_build: str,
    watch: Watch,
) -> JobResult:
    kept = frozenset(r.sha256 for r in previous.pages)
    staging.folder(cache.FOLDER)
    pages = PageCache(previous.folder, kept, this_build, staging.path, take=not opts.full)
    settings = RunSettings("merge" if opts.merge else "snapshot", opts.crawled_at)
    ctx = Context.building_on(previous, settings, pages)
    with _engine(opts, watch, side_path(folder.target, "results"), staging.path) as engine:
        output = _steps(engine, inputs, ctx, watch)
        written = {p.sha256: p.entry for p in ctx.topics.pages if p.entry is not None}
        del ctx
        return _publish(opts, folder, staging, previous, this_build, watch, engine, output, written)


def _publish(
    opts: JobOptions,
    folder: Folder,
    staging: Staging,
    previous: Previous,
    this_build: str,
    watch: Watch,
    engine: Engine,
    output: RunOutput,
    written: dict[str, tuple[int, str]],
) -> JobResult:
    """The run's output published, or refused (kept beside the folder)."""
    output.report = structs.replace(output.report, reuse=_reuse(output, previous, staging, opts))
    refused = shrink(previous, output)
    why, strict = (
        (refused, False) if refused is not None and not opts.allow_shrink else (None, False)
    )
    if why is None and opts.strict and output.rejects:
        reasons = ", ".join(sorted({r.reason for r in output.rejects}))
        why, strict = f"--strict: {len(output.rejects)} reject(s) ({reasons})", True
    if why is not None:
        refused_dir = _write_refused(folder, output, watch)
        return JobResult(output, False, why, refused_dir, strict, previous.sequence)
    t0 = time.perf_counter()
    _write_publish(staging, output, previous, submit=getattr(engine, "submit", None))
    _entries(staging, output, previous, written)
    size = sum(f.size for f in staging.files.values())
    _phase(watch, "write", t0, f"{_n(len(staging.files), 'file')}, {size / 1e6:,.1f} MB")
    t0 = time.perf_counter()
    staging.publish(_marker(this_build), folder.keep_files())
    seq = output.report.run.sequence
    _phase(watch, "publish", t0, f"{str(opts.out)!r} (sequence {seq})")
    return JobResult(output, True)


@contextmanager
def _engine(
    opts: JobOptions, watch: Watch, spool: Path | None = None, staging: Path | None = None
) -> Iterator[Engine]:
    """The engine of the run, alive until the block ends (the publish may use its
    workers): the local one (its workers' results in ``spool``), or one on a Dask cluster
    (a scheduler's workers must see the inputs, and ``staging``, as this process does)."""
    if opts.engine == "dask":
        from ingest.pipeline.dask import DaskEngine, check_reach, connected

        with connected(opts.scheduler, opts.jobs) as client:
            if opts.scheduler and staging is not None:
                check_reach(client, staging, [os.path.abspath(p) for p in opts.paths])
            yield DaskEngine(max(1, opts.jobs * 4))
    else:
        with LocalEngine(opts.jobs, watch.advance, spool) as engine:
            yield engine


def compute(opts: JobOptions, inputs: list[object], ctx: Context) -> RunOutput:
    """The output of the steps on ``inputs`` (a run's, without its publish)."""
    with _engine(opts, Watch()) as engine:
        return _steps(engine, inputs, ctx, Watch())


def _steps(engine: Engine, inputs: list[object], ctx: Context, watch: Watch) -> RunOutput:
    timing: dict[str, float] = {}

    def ended(step: Step, seconds: float) -> None:
        timing[step.name] = round(seconds, 4)
        if step.name == "topics" and watch.phase is not None:  # the pages read, and told
            watch.phase("read", timing["parse"] + seconds, _read(ctx))

    done = run_steps(engine, inputs, ctx, watch.begin, ended)
    assert done.output is not None
    done.output.report.timing.update(timing)
    if watch.phase is not None:
        t = done.output.report.totals
        resolved = sum(s for n, s in timing.items() if n not in ("parse", "topics"))
        said = f"{_n(t.listings, 'listing')} into {_n(t.items, 'item')}"
        said += f" and {_n(t.topics, 'topic')}"
        watch.phase("resolve", resolved, said)
    return done.output


def _read(ctx: Context) -> str:
    """What the read phase did: the pages read, and how many the page cache gave (a page
    of bytes the previous publish kept, whose entry no process wrote again)."""
    pages = ctx.topics.pages
    written = {p.sha256 for p in pages if p.entry is not None}
    taken = ctx.cache.kept - written if ctx.cache.take else frozenset()
    kept = sum(1 for p in pages if p.sha256 in taken)
    return _n(len(pages), "file") + (f" ({kept:,} from the page cache)" if kept else "")


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _phase(watch: Watch, name: str, t0: float, detail: str) -> None:
    if watch.phase is not None:
        watch.phase(name, time.perf_counter() - t0, detail)


# --------------------------------------------------------------------------- nothing new


def _nothing_new(previous: Previous, inputs: list[InputFile], opts: JobOptions, build: str) -> bool:
    """Are the inputs byte for byte the pages of the live publish, under the same names, and
    was it made by this build (its records are then what this run would make)? With
    ``--merge``: are they all among its pages? A crawl day that would date a page earlier
    than its recorded first crawl (or date one never dated) is something new."""
    opened = previous.opened
    if opened is None or opened.legacy or previous.build != build or opts.full:
        return False
    if any(f.problem is not None for f in inputs) or _unread_files(opened):
        return False  # a file rejected unread (a link out, a FIFO) is known by no bytes
    if opts.strict and opened.files.get("rejects.jsonl", FileSum(1, "")).size:  # unlisted: some
        return False  # the run that publishes them is refused, as --strict asks
    pages = {r.file: r for r in previous.pages}
    if not opts.merge and len(pages) != len(inputs):
        return False
    if any(previous.entry_path(r.sha256) is None for r in previous.pages):
        return False  # a page whose entry is gone (ingest repair could not keep it)
    if any(f.name not in pages or _size(f.path) != pages[f.name].size for f in inputs):
        return False
    today = opts.crawled_at
    days = first_days(previous.pages)
    if today is not None and any(days.get(r.sha256, dt.date.max) > today for r in previous.pages):
        return False
    with ThreadPoolExecutor(max(2, opts.jobs)) as threads:
        found = threads.map(_sha256, (f.path for f in inputs))
        return all(h == pages[f.name].sha256 for f, h in zip(inputs, found, strict=True))


class _FileNamed(Struct):
    sha256: str


class _Files(Struct):
    files: list[_FileNamed]


def _unread_files(opened: Opened) -> bool:
    """Did the publish's run reject a file it could not read (one without its bytes)?"""
    return any(
        not f.sha256 for f in msgspec.json.decode(opened.read("report.json"), type=_Files).files
    )


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def _sha256(path: Path) -> str | None:
    data, _ = read_bytes(path)
    return None if data is None else hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- publishing


def _records_files(output: RunOutput) -> Iterator[tuple[str, Iterable[bytes]]]:
    yield "items.jsonl", jsonl(output.items)
    yield "topics.jsonl", jsonl(output.topics)
    yield "rejects.jsonl", jsonl(output.rejects)
    yield "changes.jsonl", jsonl(output.changes)


def _write_publish(
    staging: Staging,
    output: RunOutput,
    previous: Previous,
    kept: Mapping[str, bytes] | None = None,
    entries: AbstractSet[str] | None = None,
    submit: Callable[..., Spooled[dict[str, tuple[int, str]]] | None] | None = None,
) -> None:
    """The publish's files into ``staging``: the records (each line digested for the next
    run; ``kept``: files written as the bytes given), the report and its pages (by a
    worker, with ``submit``, while the rest is written), the state (``entries``: the pages
    it may list, those whose entries it has); report.json last."""
    kept = kept or {}
    pages = None if submit is None else submit(write_report_into, staging.path, packed(output))
    digests: dict[str, list[int]] = {ITEMS: [], TOPICS: []}
    for name, pieces in _records_files(output):
        staging.write(name, _digested([kept[name]] if name in kept else pieces, digests.get(name)))
    if pages is None:
        write_report(output, staging.write)
    state = _state(output, previous, digests)
    if entries is not None:
        state = structs.replace(state, pages=[p for p in state.pages if p.sha256 in entries])
    staging.write(RECORDS_FILE, state_bytes(state))
    if pages is not None:
        for name, (size, sum_) in pages.result().items():
            staging.written(name, FileSum(size, sum_))
    report = kept.get("report.json") or json_bytes(output.report, indent=2) + b"\n"
    staging.write("report.json", report)


def _digested(pieces: Iterable[bytes], into: list[int] | None) -> Iterator[bytes]:
    for piece in pieces:
        if into is not None:
            into.extend(line_digests(piece))
        yield piece


def _state(output: RunOutput, previous: Previous, digests: dict[str, list[int]]) -> State:
    """What the next run needs of this publish (see :mod:`ingest.state.previous`)."""
    sequence = output.report.run.sequence
    evidence = {e.id: e for e in output.evidence}
    items = [
        earlier_item(item, n, d, evidence.get(item.id), sequence)
        for n, (item, d) in enumerate(zip(output.items, digests[ITEMS], strict=True))
    ]
    topics = [
        EarlierTopic(t.slug, d, n, description_key(t.description))
        for n, (t, d) in enumerate(zip(output.topics, digests[TOPICS], strict=True))
    ]
    crawled = {(r.file, r.sha256): r.crawled_at for r in previous.pages}
    first = first_days(previous.pages)  # an input's bytes are dated by their first crawl
    today = output.report.run.crawled_at
    pages = []
    for f in output.report.files:
        if f.sha256:
            if f.origin == "state":
                day = crawled.get((f.file, f.sha256))
            else:
                found = earliest(first.get(f.sha256), today)
                day = None if found is None else found.isoformat()
            pages.append(PageRef(f.file, f.sha256, f.bytes, day))
    return State(sequence, items, topics, sorted(pages, key=lambda r: (r.file, r.sha256)))


def _entries(
    staging: Staging, output: RunOutput, previous: Previous, written: dict[str, tuple[int, str]]
) -> None:
    """Each page's entry: written by the process that parsed it, or the previous publish's,
    carried over (a hard link). An entry written for a page the publish does not keep (one
    a newer version replaced) goes."""
    wanted = {f.sha256 for f in output.report.files if f.sha256}
    for path in (staging.path / cache.FOLDER).iterdir():
        if path.name.removesuffix(".zst") not in wanted:
            path.unlink()
    for sha256 in sorted(wanted):
        name = cache.entry_name(sha256)
        if sha256 in written:
            staging.written(name, FileSum(*written[sha256]))
            continue
        made = read_regular(staging.path / name)
        if made is not None:  # the same bytes parsed under another name, a page since replaced
            staging.written(name, FileSum(len(made), digest(made)))
            continue
        earlier = previous.entry_path(sha256)
        if earlier is None or previous.opened is None:
            raise PublishError(f"no page cache entry for the page of sha256 {sha256} was written")
        staging.link(name, earlier, previous.opened.files[name])


def _reuse(output: RunOutput, previous: Previous, staging: Staging, opts: JobOptions) -> Reused:
    """What the run took from the page cache, and why it parsed each page it parsed."""
    recomputed, reused = [], 0
    for f in output.report.files:
        if not f.sha256:
            continue
        if not (staging.path / cache.entry_name(f.sha256)).exists():
            reused += 1
            continue
        if opts.full:
            why = "full"
        elif previous.opened is None or previous.opened.legacy:
            why = "cache-missing"
        elif previous.entry_path(f.sha256) is None:
            why = "new-bytes"
        else:
            why = "other-version"
        recomputed.append(Recomputed(file=f.file, reason=why))  # type: ignore[arg-type]
    return Reused(
        pages_reused=reused,
        pages_parsed=len(recomputed),
        groups_reused=0,
        groups_recomputed=len(output.items),
        recomputed=recomputed,
        warnings=[],
    )


def _marker(this_build: str, kind: str = "publish") -> Marker:
    return Marker(
        written_by="ingest",
        kind=kind,
        schema_version=SCHEMA_VERSION,
        state_version=STATE_VERSION,
        ingest_version=__version__,
        build=this_build,
    )


def _write_refused(folder: Folder, output: RunOutput, watch: Watch) -> Path:
    """The refused output, beside the folder (``NAME.refused``); never a publish."""
    target = check_owned(folder.refused_dir, "the refused output", kind="refused")
    write_records(target, output, "refused")
    return target


def write_records(target: Path, output: RunOutput, kind: str = "publish") -> None:
    """``output``'s records, report and report pages published into ``target`` with a
    marker of ``kind`` and no state (a refused run's output; a tool's publish)."""
    staging = Staging(target)
    try:
        for name, pieces in _records_files(output):
            staging.write(name, pieces)
        write_report(output, staging.write)
        staging.write("report.json", json_bytes(output.report, indent=2) + b"\n")
        staging.publish(_marker("", kind=kind))
    finally:
        staging.discard()
