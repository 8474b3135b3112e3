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
from collections.abc import Sequence
from typing import NoReturn

from . import SCHEMA_VERSION, __version__
from .commands import cmd_publish, cmd_run, cmd_schema, cmd_validate
from .errors import IngestError

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
  ingest publish out/                        # into ./out.sqlite
  ingest publish out/ --db postgresql://site@db.example:5432/site
  ingest validate out/
  ingest schema --write
"""


class _Terminated(BaseException):
    """SIGTERM arrived: unwind (the staging folder is removed), publish nothing."""


def _on_term(signum: int, frame: object) -> None:
    raise _Terminated


def entry() -> NoReturn:
    """``ingest`` as a process (the installed command, ``python -m ingest``)."""
    sys.exit(main())


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
    r.set_defaults(func=cmd_run)
    v = sub.add_parser(
        "validate",
        help="check an output folder against the schemas",
        description="Validate items, topics, rejects and report against the "
        "JSON Schemas, and check ordering, references and totals.",
    )
    v.add_argument("dir", nargs="?", default="out/", metavar="DIR", help="default: out/")
    v.set_defaults(func=cmd_validate)
    s = sub.add_parser(
        "schema",
        help="print or write the JSON Schemas",
        description="Generate the JSON Schemas of the output from the models.",
    )
    s.add_argument("--write", action="store_true", help="write them into --dir")
    s.add_argument("--dir", default="schemas/", metavar="DIR", help="default: schemas/")
    s.set_defaults(func=cmd_schema)
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


def _date(s: str) -> dt.date:
    try:
        return dt.date.fromisoformat(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {s!r}") from None


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
    p.set_defaults(func=cmd_publish)


if __name__ == "__main__":
    sys.exit(main())
