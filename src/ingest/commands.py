"""The commands behind the command line: each takes the parsed options and returns the
exit code; the library's errors propagate to :mod:`ingest.cli`, which prints them."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from . import SCHEMA_VERSION
from .engines.local import Watch
from .errors import UsageError
from .job import JobOptions, JobResult, run_job
from .steps import Step

if TYPE_CHECKING:
    from rich.progress import Progress, Task, TaskID


def cmd_run(args: argparse.Namespace) -> int:
    opts = JobOptions(
        paths=args.paths,
        out=Path(args.out),
        jobs=args.jobs,
        engine=args.engine,
        scheduler=args.scheduler,
        merge=args.merge,
        allow_shrink=args.allow_shrink,
        crawled_at=args.crawled_at,
        strict=args.strict,
        full=args.full,
    )
    with _watch(quiet=args.quiet, threaded=opts.engine == "dask") as watch:
        result = run_job(opts, watch, args.stops)
    for warning in result.warnings:
        print(f"ingest: warning: {warning}", file=sys.stderr)
    if result.refused is not None:
        again = "" if result.strict else "; rerun with --allow-shrink to publish it anyway"
        live = (
            f"the previous publish (sequence {result.kept}) stays live in {str(opts.out)!r}"
            if result.kept
            else f"{str(opts.out)!r} holds no publish"
        )
        print(
            f"ingest: refused: {result.refused}; nothing was published: {live}; the refused "
            f"output is in {str(result.refused_dir)!r}{again}",
            file=sys.stderr,
        )
        return 1 if result.strict else 3
    if not args.quiet:
        _summary(result, opts.out)
    return 0


@contextmanager
def _watch(*, quiet: bool, threaded: bool) -> Iterator[Watch | None]:
    """The run's steps on stderr as they go (stdout is the summary's): on a terminal, a
    list of them kept up to date (:class:`_Shown`); otherwise one line as each ends, for a
    log or cron's mail; nothing with ``--quiet``."""
    if quiet:
        yield None
    elif not sys.stderr.isatty():
        yield Watch(end=_said_done)
    else:
        with _Shown(threaded) as shown:
            yield Watch(end=shown.end, begin=shown.begin, advance=shown.advance)


def _said_done(step: Step, seconds: float) -> None:
    """One line as a step ends. A reader of stderr gone (a closed pipe) ends the lines, not
    the run."""
    with suppress(OSError):
        print(f"ingest: {step.name} done in {seconds:.2f} s", file=sys.stderr, flush=True)


class _Shown:
    """The steps on a terminal, drawn by rich: a row for each step from its start, with a
    bar and a count for a step that counts its records (the parse), a spinner for the
    others, and its seconds; a finished step stays, ticked, with its time. Drawn by the
    run's own thread as its work goes (at most every ``EVERY`` seconds): the local engine forks
    only while its process has one thread (:func:`~ingest.engines.forked.can_fork`), so a
    drawing thread would run its background steps in turn. The Dask engine forks nothing
    here: rich's own thread keeps the rows moving while the cluster works (``threaded``)."""

    EVERY = 0.1

    def __init__(self, threaded: bool) -> None:
        self._rows = _rows(threaded)
        self._ids: dict[str, tuple[TaskID, int | None]] = {}  # a step's row, its total
        self._drawn = 0.0

    def __enter__(self) -> _Shown:
        return self  # drawn from the first step on: a run refused before has nothing shown

    def __exit__(self, *_: object) -> None:
        if self._ids:
            self._rows.stop()

    def begin(self, step: Step, total: int | None) -> None:
        if not self._ids:
            self._rows.start()
        counted = total if step.progress else None
        self._ids[step.name] = self._rows.add_task(step.name, total=counted), counted
        self._draw()

    def advance(self, step: Step, done: int) -> None:
        if done:
            self._rows.advance(self._ids[step.name][0], done)
        if time.monotonic() - self._drawn >= self.EVERY:
            self._draw()

    def end(self, step: Step, seconds: float) -> None:
        task, total = self._ids[step.name]
        self._rows.update(task, completed=total or 0, seconds=seconds)
        self._rows.stop_task(task)
        self._draw()

    def _draw(self) -> None:
        self._rows.refresh()
        self._drawn = time.monotonic()


def _rows(threaded: bool) -> Progress:
    """rich's progress display on stderr, as :class:`_Shown` fills it; drawn by a thread of
    its own only when ``threaded``. It leaves stdout and stderr as they are."""
    from rich.console import Console, RenderableType
    from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, SpinnerColumn
    from rich.progress import Progress as Rows
    from rich.text import Text

    class Column(ProgressColumn):
        def __init__(self, shown: Callable[[Task], RenderableType]) -> None:
            super().__init__()
            self.shown = shown

        def render(self, task: Task) -> RenderableType:
            return self.shown(task)

    def done(task: Task) -> bool:
        return "seconds" in task.fields

    def seconds(task: Task) -> Text:
        return Text(f"{task.fields.get('seconds', task.elapsed or 0.0):.2f} s", "progress.elapsed")

    spinner, bar, count = SpinnerColumn(), BarColumn(), MofNCompleteColumn()
    return Rows(
        Column(lambda t: Text("✓", "progress.spinner") if done(t) else spinner.render(t)),
        Column(lambda t: Text(t.description)),
        Column(lambda t: Text() if t.total is None else bar.render(t)),
        Column(lambda t: Text() if t.total is None else count.render(t)),
        Column(seconds),
        console=Console(stderr=True),
        auto_refresh=threaded,
        redirect_stdout=False,
        redirect_stderr=False,
    )


def _summary(result: JobResult, out_dir: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    t = result.output.report.totals
    c = result.output.report.changes.items
    table = Table(title=f"ingest → {out_dir}", show_header=False)
    rows = [
        ("files", t.files),
        ("listings", t.listings),
        ("items", t.items),
        ("topics", t.topics),
        ("aligned titles", t.aligned_titles),
        ("merges", t.merges),
        ("near-duplicate merges", t.near_duplicate_merges),
        ("rejects", t.rejects),
        ("warnings", t.warnings),
        (
            "items added / changed / removed / merged",
            f"{c.added} / {c.changed} / {c.removed} / {c.merged}",
        ),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    Console(soft_wrap=True).print(table)


def cmd_validate(args: argparse.Namespace) -> int:
    from .schema import validate_dir  # pydantic and jsonschema: not loaded by a run

    folder = Path(args.dir)
    if not folder.is_dir():
        raise UsageError(f"{args.dir!r} is not a folder")
    problems = validate_dir(folder)
    for p in problems:
        print(p)
    if problems:
        print(f"ingest: {len(problems)} problem(s) in {folder}", file=sys.stderr)
        return 1
    print(f"{folder}: valid (schema {SCHEMA_VERSION})")
    return 0


def cmd_repair(args: argparse.Namespace) -> int:
    from .outputs.repair import repair

    done = repair(Path(args.dir), args.stops)
    if done.damage is None:
        print(f"{args.dir}: the state is whole; nothing to repair")
        return 0
    print(f"ingest: repaired the state of {args.dir!r} ({done.damage}): {'; '.join(done.done)}")
    for line in done.lost:
        print(f"ingest: repair could not keep {line}", file=sys.stderr)
    return 1 if done.lost else 0


def cmd_schema(args: argparse.Namespace) -> int:
    from .schema import schemas, write_schemas

    if not args.write:
        for name, data in schemas().items():
            print(f"--- {name}")
            print(data.decode(), end="")
        return 0
    for path in write_schemas(Path(args.dir)):
        print(f"wrote {path}")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from .outputs.database import DatabaseWriter, default_url
    from .outputs.published import open_publish

    folder = Path(args.dir)
    writer = DatabaseWriter(args.db or default_url(folder), args.lock_timeout, say=_say)
    with open_publish(folder) as pub:
        outcome = writer.write(pub)
    for warning in outcome.warnings:
        _say(f"warning: {warning}")
    if not args.quiet:
        print(writer.summary(folder))
    return 0


def _say(line: str) -> None:
    print(f"ingest: {line}", file=sys.stderr, flush=True)
