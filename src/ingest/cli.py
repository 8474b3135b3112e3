"""Command line: parse options, call the library, turn its errors into one-line messages.

Exit codes: 0 the run completed (rejects are reported, not fatal); 1 under ``--strict``
when anything was rejected (or ``validate`` found problems); 2 usage errors, unusable
paths, a held lock or a failed write.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from . import SCHEMA_VERSION, __version__
from .engines.local import run
from .errors import IngestError, UsageError
from .extract.discover import collect_inputs
from .outputs.atomic import atomic_write_bytes
from .outputs.folder import FolderWriter
from .records.output import RunOutput
from .schema import schemas, validate_dir

EPILOG = """\
exit codes: 0 run completed (rejects are reported in rejects.jsonl, not fatal);
            1 --strict and something was rejected, or validate found problems;
            2 usage error, unusable path, output locked or not writable.
examples:
  ingest run                       # seeds/ into out/
  ingest run dumps/2026-11-29 --out site/data --jobs 2 --strict
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
        help="parse dumps and write out/",
        description="Parse dump files and folders; write items, topics, rejects "
        "and a report into the output folder, atomically.",
    )
    r.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        default=["seeds/"],
        help="input files or folders (default: seeds/)",
    )
    r.add_argument("--out", default="out/", metavar="DIR", help="output folder (default: out/)")
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
    _add_publish(sub)
    return p


def _positive(s: str) -> int:
    try:
        n = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {s!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def _cmd_run(args: argparse.Namespace) -> int:
    out_dir = Path(args.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out {args.out!r} exists and is not a folder")
    if not out_dir.parent.is_dir():
        raise UsageError(f"--out {args.out!r}: parent folder {str(out_dir.parent)!r} missing")
    if args.scheduler and args.engine != "dask":
        raise UsageError("--scheduler goes with --engine dask")
    inputs = collect_inputs(args.paths)
    with FolderWriter(out_dir) as writer, _progress(len(inputs), quiet=args.quiet) as tick:
        if args.engine == "dask":
            from .engines.dask import run_dask

            result = run_dask(inputs, args.scheduler, args.jobs)
        else:
            result = run(inputs, jobs=args.jobs, progress=tick)
        writer.write(result)
    if not args.quiet:
        _summary(result, out_dir)
    if args.strict and result.rejects:
        reasons = sorted({r.reason for r in result.rejects})
        print(
            f"ingest: --strict: {len(result.rejects)} reject(s) ({', '.join(reasons)}); "
            f"see {out_dir / 'rejects.jsonl'}",
            file=sys.stderr,
        )
        return 1
    return 0


@contextmanager
def _progress(total: int, *, quiet: bool) -> Iterator[Callable[[object], None] | None]:
    """A progress bar on stderr, only when stderr is a terminal."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("parsing", total=total)
        yield lambda _r: bar.advance(task)


def _summary(result: RunOutput, out_dir: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    t = result.report.totals
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
    generated = schemas()
    if not args.write:
        for name, data in generated.items():
            print(f"--- {name}")
            print(data.decode(), end="")
        return 0
    folder = Path(args.dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create {args.dir!r}: {e.strerror}") from e
    for name, data in generated.items():
        atomic_write_bytes(folder / name, data)
        print(f"wrote {folder / name}")
    return 0


PUBLISH_HELP = """\
Load the publish in DIR (default: out/) into the database a site reads, in one
transaction: rows are added, updated and deleted by comparing the database with DIR, so
readers see the previous publish or this one, a database several runs behind catches up,
and publishing the same DIR again changes nothing. An older database schema is migrated;
a newer one, or a database that is not ingest's, is refused (exit 2, nothing written).

--db URL:
  sqlite:///PATH                     a file (relative: sqlite:///out.sqlite; absolute:
                                     sqlite:////srv/site/ingest.sqlite)
  postgresql://USER@HOST:PORT/DB     an existing PostgreSQL database (psycopg 3)
Without --db: sqlite:/// a file beside DIR named after it, out/ -> ./out.sqlite (never
inside DIR, which each run replaces).
"""


def _add_publish(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "publish",
        help="load an output folder into SQLite or PostgreSQL",
        description=PUBLISH_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dir", nargs="?", default="out/", metavar="DIR", help="default: out/")
    p.add_argument("--db", metavar="URL", help="default: sqlite:///DIR.sqlite beside DIR")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(func=_cmd_publish)


def _cmd_publish(args: argparse.Namespace) -> int:
    from .outputs.database import DatabaseWriter, default_url
    from .outputs.published import load_publish

    folder = Path(args.dir)
    with DatabaseWriter(args.db or default_url(folder)) as writer:
        writer.write(load_publish(folder))
    if not args.quiet:
        print(writer.summary(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
