"""The commands behind the command line: each takes the parsed options and returns the
exit code; the library's errors propagate to :mod:`ingest.cli`, which prints them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from . import SCHEMA_VERSION
from .engines.local import Progress
from .errors import UsageError
from .job import JobOptions, JobResult, run_job


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
    with _progress(quiet=args.quiet) as progress:
        result = run_job(opts, progress, args.stops)
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
def _progress(*, quiet: bool) -> Iterator[Callable[[int], Progress | None]]:
    """A progress bar on stderr, only when stderr is a terminal."""
    if quiet or not sys.stderr.isatty():
        yield lambda _total: None
        return
    from rich.console import Console
    from rich.progress import Progress as Bar

    with ExitStack() as stack:

        def start(total: int) -> Progress:
            bar = stack.enter_context(Bar(console=Console(stderr=True), transient=True))
            task = bar.add_task("parsing", total=total)
            return lambda _r: bar.advance(task)

        yield start


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
