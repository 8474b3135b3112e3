"""The commands behind the command line: each takes the parsed options and returns the
exit code; the library's errors propagate to :mod:`ingest.cli`, which prints them."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.job import JobOptions, JobResult, Watch, run_job
from ingest.pipeline.steps import Step

if TYPE_CHECKING:
    from rich.progress import Progress, Task, TaskID


def cmd_run(args: argparse.Namespace) -> int:
    # Every field of JobOptions is an option of `ingest run`, by the same name.
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(JobOptions)}
    opts = JobOptions(**given | {"out": Path(args.out)})
    with _watch(quiet=args.quiet) as watch:
        result = run_job(opts, watch, args.stops)
    for warning in result.warnings:
        print(f"ingest: warning: {warning}", file=sys.stderr)
    if result.output is None:
        if not args.quiet:
            print(
                f"ingest: nothing new: the {result.pages} page(s) are byte for byte those of "
                f"the publish in {str(opts.out)!r} (sequence {result.kept}), which is left "
                "as it is"
            )
        return 0
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
def _watch(*, quiet: bool) -> Iterator[Watch | None]:
    """The run on stderr as it goes (stdout is the summary's): on a terminal, a row for
    each phase (:class:`_Shown`); otherwise one line as each phase ends and one with the
    total, for a log or cron's mail; nothing with ``--quiet``."""
    if quiet:
        yield None
    elif not sys.stderr.isatty():
        started = time.perf_counter()
        yield Watch(phase=_said)
        _said("done", time.perf_counter() - started, "")
    else:
        with _Shown() as shown:
            yield Watch(begin=shown.begin, advance=shown.advance, phase=shown.phase)


def _said(name: str, seconds: float, detail: str) -> None:
    """One line as a phase ends; a reader of stderr gone (a closed pipe) ends the lines,
    not the run."""
    with suppress(OSError):
        what = " ".join(w for w in (_DONE.get(name, name), detail) if w)
        print(f"ingest: {what} in {seconds:.2f} s", file=sys.stderr, flush=True)


_DONE = {"read": "read", "resolve": "resolved", "write": "wrote", "publish": "published"}


class _Shown:
    """The run's phases on a terminal, drawn by rich (its own thread keeps them moving): a
    row for each from its start — read with a bar of the files, resolve saying the step at
    work — and, once done, what it did and its seconds."""

    def __init__(self) -> None:
        self._rows = _rows()
        self._ids: dict[str, TaskID] = {}

    def __enter__(self) -> _Shown:
        return self  # drawn from the first step on: a run refused before has nothing shown

    def __exit__(self, *_: object) -> None:
        if self._ids:
            self._rows.stop()

    def _row(self, phase: str, total: int | None = None) -> TaskID:
        if not self._ids:
            self._rows.start()
        if phase not in self._ids:
            self._ids[phase] = self._rows.add_task(phase, total=total)
        return self._ids[phase]

    def begin(self, step: Step, total: int | None) -> None:
        task = self._row(step.phase, total if step.phase == "read" else None)
        if step.phase != "read":
            self._rows.update(task, description=f"{step.phase}: {step.name}")
        if step.name == "assemble":  # the last step: the writing begins after it
            self._row("write")

    def advance(self, step: Step, done: int) -> None:
        if done:
            self._rows.advance(self._row(step.phase), done)

    def phase(self, name: str, seconds: float, detail: str) -> None:
        task = self._row(name)
        total = self._rows.tasks[self._ids[name]].total
        self._rows.update(task, description=f"{name} {detail}".strip(), completed=total or 0)
        self._rows.update(task, seconds=seconds)
        self._rows.stop_task(task)
        if name == "write":
            self._row("publish")


def _rows() -> Progress:
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
        Column(lambda t: Text() if t.total is None or done(t) else bar.render(t)),
        Column(lambda t: Text() if t.total is None or done(t) else count.render(t)),
        Column(seconds),
        console=Console(stderr=True),
        redirect_stdout=False,
        redirect_stderr=False,
    )


def _summary(result: JobResult, out_dir: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    assert result.output is not None
    r = result.output.report
    t, c, run_warnings = r.totals, r.changes.items, len(r.warnings)
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
        ("warnings of the files / of the run", f"{t.warnings - run_warnings} / {run_warnings}"),
        (
            "items added / changed / removed / merged",
            f"{c.added} / {c.changed} / {c.removed} / {c.merged}",
        ),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    Console(soft_wrap=True).print(table)


def cmd_validate(args: argparse.Namespace) -> int:
    from ingest.schema import validate_dir  # pydantic and jsonschema: not loaded by a run

    folder = Path(args.dir)
    declared, problems = validate_dir(folder)
    for p in problems:
        print(p)
    if problems:
        print(f"ingest: {len(problems)} problem(s) in {folder}", file=sys.stderr)
        return 1
    print(f"{folder}: valid (schema {declared})")
    return 0


def cmd_repair(args: argparse.Namespace) -> int:
    from ingest.repair import repair

    done = repair(Path(args.dir), args.stops)
    if done.damage is None:
        print(f"{args.dir}: the publish is whole; nothing to repair")
        return 0
    print(f"ingest: repaired the publish in {args.dir!r} ({done.damage}): {'; '.join(done.done)}")
    for line in done.lost:
        print(f"ingest: repair could not keep {line}", file=sys.stderr)
    return 1 if done.lost else 0


def cmd_check(args: argparse.Namespace) -> int:
    from ingest.check import check

    folder = Path(args.fixture)
    diff = check(folder, update=args.update)
    if args.update:
        changed = sum(diff.counts.values())
        print(f"ingest: wrote {folder / 'expected'}: {changed} record(s) changed")
        return 0
    print(diff.text())
    return 0 if diff.equal else 1


def cmd_schema(args: argparse.Namespace) -> int:
    from ingest.schema import schemas, write_schemas

    if not args.write:
        for name, data in schemas().items():
            print(f"--- {name}")
            print(data.decode(), end="")
        return 0
    for path in write_schemas(Path(args.dir)):
        print(f"wrote {path}")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from ingest.database import DatabaseWriter, default_url
    from ingest.reader import open_published

    folder = Path(args.dir)
    writer = DatabaseWriter(args.db or default_url(folder), args.lock_timeout, say=_say)
    with open_published(folder) as pub:
        outcome = writer.write(pub)
    for warning in outcome.warnings:
        _say(f"warning: {warning}")
    if not args.quiet:
        print(writer.summary(folder))
    return 0


def _say(line: str) -> None:
    print(f"ingest: {line}", file=sys.stderr, flush=True)
