"""Command line: parse options, call the library, turn its errors into one-line messages.

Exit codes: 0 the run completed (rejects are reported, not fatal); 1 under ``--strict``
when anything was rejected (or ``validate`` found problems); 2 usage errors, unusable
paths, a held lock or a failed write; 3 the shrink guard refused to publish.
"""

from __future__ import annotations

import argparse
import datetime as dt
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from . import SCHEMA_VERSION, __version__
from .errors import IngestError, UsageError
from .job import JobOptions, JobResult, Progress, run_job
from .schema import schemas, validate_dir, write_schemas

EPILOG = """\
exit codes: 0 run completed (rejects are reported in rejects.jsonl, not fatal);
            1 --strict and something was rejected, or validate found problems;
            2 usage error, unusable path, output locked or not writable;
            3 refused: the run would remove more than 10 % of the items, or a topic,
              of the publish in --out (see --allow-shrink).
examples:
  ingest run                       # seeds/ into out/
  ingest run dumps/2026-11-29 --out site/data --jobs 2 --crawled-at 2026-11-29
  ingest run dumps/extra --out site/data --merge
  ingest validate out/
  ingest schema --write
"""


class _Terminated(BaseException):
    """SIGTERM arrived: unwind (the staging folder is removed), publish nothing."""


def _on_term(signum: int, frame: object) -> None:
    raise _Terminated


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_term) if main_thread else None
    try:
        code: int = args.func(args)
    except IngestError as e:
        print(f"ingest: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ingest: interrupted; the previous output is left as it was", file=sys.stderr)
        return 130
    except _Terminated:
        print("ingest: terminated; the previous output is left as it was", file=sys.stderr)
        return 143
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    return code


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ingest",
        description="Turn raw dumps of scraped curation pages into canonical, deduplicated, "
        "bilingual JSON records.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--version", action="version", version=f"ingest {__version__} (schema {SCHEMA_VERSION})"
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    r = sub.add_parser(
        "run",
        help="parse dumps and publish them into out/",
        description="Parse dump files and folders; publish items, topics, rejects, the "
        "changes against the previous publish and a report into the output folder, "
        "atomically. The publish already in the folder is the state the run builds on: "
        "ids of resources it had survive re-crawls.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        default=["seeds/"],
        help="input files or folders (default: seeds/)",
    )
    r.add_argument(
        "--out",
        default="out/",
        metavar="DIR",
        help="output folder (default: out/): new, empty, or an earlier ingest publish; "
        "a symlink is followed",
    )
    r.add_argument(
        "--jobs",
        type=_positive,
        default=1,
        metavar="N",
        help="parse files in N processes (default: 1); output is identical",
    )
    r.add_argument("--strict", action="store_true", help="exit 1 when anything was rejected")
    r.add_argument(
        "--engine",
        choices=["local", "dask"],
        default="local",
        help="local processes (default) or a Dask cluster (optional extra 'dask')",
    )
    r.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --engine dask: a running scheduler, e.g. tcp://10.0.0.5:8786; "
        "without it, a local cluster of --jobs workers",
    )
    r.add_argument(
        "--merge",
        action="store_true",
        help="add these dumps to the publish in --out (a newer version of a page replaces "
        "the older); what they do not mention stays. Default: the dumps are the whole crawl",
    )
    r.add_argument(
        "--allow-shrink",
        action="store_true",
        help="publish even when the run removes more than 10 %% of the items, or a topic",
    )
    r.add_argument(
        "--crawled-at",
        type=_date,
        metavar="YYYY-MM-DD",
        help="the day the pages were saved: fills published_estimate from relative ages",
    )
    r.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    r.set_defaults(func=_cmd_run)
    v = sub.add_parser(
        "validate",
        help="check an output folder against the schemas",
        description="Validate items, topics, rejects and report against the "
        "JSON Schemas, and check ordering, references and totals.",
    )
    v.add_argument("dir", nargs="?", default="out/", metavar="DIR", help="default: out/")
    v.set_defaults(func=_cmd_validate)
    s = sub.add_parser(
        "schema",
        help="print or write the JSON Schemas",
        description="Generate the JSON Schemas of the output from the models.",
    )
    s.add_argument("--write", action="store_true", help="write them into --dir")
    s.add_argument("--dir", default="schemas/", metavar="DIR", help="default: schemas/")
    s.set_defaults(func=_cmd_schema)
    return p


def _positive(s: str) -> int:
    try:
        n = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {s!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def _date(s: str) -> dt.date:
    try:
        return dt.date.fromisoformat(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {s!r}") from None


def _cmd_run(args: argparse.Namespace) -> int:
    opts = JobOptions(
        paths=args.paths,
        out=Path(args.out),
        jobs=args.jobs,
        engine=args.engine,
        scheduler=args.scheduler,
        merge=args.merge,
        allow_shrink=args.allow_shrink,
        crawled_at=args.crawled_at,
    )
    with _progress(quiet=args.quiet) as progress:
        result = run_job(opts, progress)
    if result.refused is not None:
        print(
            f"ingest: refused: {result.refused}; {str(opts.out)!r} is left as it was; the "
            f"refused output is in {str(result.refused_dir)!r}; rerun with --allow-shrink "
            "to publish it anyway",
            file=sys.stderr,
        )
        return 3
    if not args.quiet:
        _summary(result, opts.out)
    rejects = result.output.rejects
    if args.strict and rejects:
        reasons = sorted({r.reason for r in rejects})
        print(
            f"ingest: --strict: {len(rejects)} reject(s) ({', '.join(reasons)}); "
            f"see {opts.out / 'rejects.jsonl'}",
            file=sys.stderr,
        )
        return 1
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


def _cmd_validate(args: argparse.Namespace) -> int:
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


def _cmd_schema(args: argparse.Namespace) -> int:
    if not args.write:
        for name, data in schemas().items():
            print(f"--- {name}")
            print(data.decode(), end="")
        return 0
    for path in write_schemas(Path(args.dir)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
