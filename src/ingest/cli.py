"""Command line: parse options, call the library, turn its errors into one-line messages
(the exit codes: :data:`EPILOG`)."""

from __future__ import annotations

import argparse
import datetime as dt
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from ingest import SCHEMA_VERSION, __version__
from ingest.commands import cmd_check, cmd_publish, cmd_repair, cmd_run, cmd_schema, cmd_validate
from ingest.errors import IngestError
from ingest.normalize.ages import crawl_day
from ingest.publish.signals import STOPPING, Stopped, Stops

EPILOG = """\
exit codes: 0 run completed (rejects are reported in rejects.jsonl, not fatal);
            1 --strict and something was rejected (nothing published), or validate
              found problems;
            2 usage error, unusable path, output locked or not writable, damaged state
              (the message gives the `ingest repair` command that rebuilds it);
            3 refused: the run would remove more than 10 % of the items, or a topic,
              of the publish in --out (see --allow-shrink);
            130/143 interrupted (Ctrl-C) / terminated (SIGTERM); the message says
              which publish is live.
examples:
  ingest run                       # seeds/ into out/
  ingest run dumps/2026-11-29 --out site/data --jobs 2 --crawled-at 2026-11-29
  ingest run dumps/extra --out site/data --merge
  ingest publish out/                        # into ./out.sqlite
  ingest publish out/ --db postgresql://site@db.example:5432/site
  ingest validate out/
  ingest repair out/                         # mend a damaged publish
  ingest schema --write
"""


def entry() -> NoReturn:
    """``ingest`` as a process (the installed command, ``python -m ingest``). SIGTERM and
    SIGINT are ignored outside the command (its own handler answers them within it): one
    arriving as the process exits cannot kill it silently with another exit code than the
    one the command's last line stands for."""
    for s in STOPPING:
        signal.signal(s, signal.SIG_IGN)
    sys.exit(main())


def main(argv: Sequence[str] | None = None) -> int:
    args, unknown = _parser().parse_known_args(argv)
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.stops = Stops()  # SIGTERM and SIGINT
    try:
        with args.stops.installed():
            code: int = args.func(args)
    except IngestError as e:
        print(f"ingest: error: {e}", file=sys.stderr)
        return 2
    except Stopped as e:
        print(f"ingest: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:  # Python's own handler, before ours was installed or after
        print(f"ingest: {args.stops.message(signal.SIGINT)}", file=sys.stderr)
        return 130
    return code


REPAIR_HELP = """\
Mend the publish in DIR (default: out/) when a command refused it as damaged, from what
remains of it: every file still whole (its checksum as the marker lists it) is kept, and
the rest is made again — the state from the records and the page entries, damaged records
(and the report) from the pages the state keeps (an ingest 0.2 publish: from its page
packs), building on the publish's own ids. The mended publish goes in atomically. Says
each thing it could not keep.

exit codes: 0 the publish is whole (it was, or is now, with nothing lost);
            1 mended, but something could not be kept (said on stderr);
            2 cannot repair (not a publish, nothing left to make it from, output locked).
"""

CHECK_HELP = """\
Run the pages of a fixture and compare their records with the ones it expects: a site's
regression test on its own pages, across upgrades of ingest. FIXTURE holds pages/ (any
shape ingest run reads), expected/ (items.jsonl, topics.jsonl, rejects.jsonl) and,
optionally, fixture.json: {"crawled_at": "YYYY-MM-DD"} (the day relative ages are read
on). Nothing is written but by --update. The difference reads as a review: per record,
per field, the value expected and the one found, what differs marked [-gone-]{+new+}.

exit codes: 0 the records are the expected ones (or --update wrote them);
            1 they differ (said on stdout);
            2 usage error: no fixture there, expected/ unreadable, a link out of it.
"""

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

One publish at a time per database: a publish that finds another one at work says so on
stderr and waits up to --lock-timeout seconds, then gives up (exit 2, nothing written).
"""


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
    r.add_argument(
        "--strict",
        action="store_true",
        help="refuse to publish a run with rejects: exit 1, --out left as it was, the "
        "refused output in NAME.refused/ beside it",
    )
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
        help="the day the pages were saved, as YYYY-MM-DD only, no later than tomorrow: "
        "dates the relative ages (published_estimate); a page's bytes keep the day they "
        "were first crawled, and each crawl only narrows an item's window",
    )
    r.add_argument(
        "--full",
        action="store_true",
        help="compute everything again: take nothing the previous publish's run computed "
        "(the same output; the cache in DIR/state is rebuilt)",
    )
    r.add_argument(
        "--quiet",
        action="store_true",
        help="print nothing on success: neither the steps as they go (stderr) nor the summary",
    )
    r.set_defaults(func=cmd_run)
    v = sub.add_parser(
        "validate",
        help="check an output folder against the schemas",
        description="Validate items, topics, rejects and report against the "
        "JSON Schemas, and check ordering, references and totals.",
    )
    v.add_argument("dir", nargs="?", default="out/", metavar="DIR", help="default: out/")
    v.set_defaults(func=cmd_validate)
    rep = sub.add_parser(
        "repair",
        help="mend a damaged publish from what remains of it",
        description=REPAIR_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rep.add_argument("dir", nargs="?", default="out/", metavar="DIR", help="default: out/")
    rep.set_defaults(func=cmd_repair)
    s = sub.add_parser(
        "schema",
        help="print or write the JSON Schemas",
        description="Generate the JSON Schemas of the output from the models.",
    )
    s.add_argument("--write", action="store_true", help="write them into --dir")
    s.add_argument("--dir", default="schemas/", metavar="DIR", help="default: schemas/")
    s.set_defaults(func=cmd_schema)
    pub = sub.add_parser(
        "publish",
        help="load an output folder into SQLite or PostgreSQL",
        description=PUBLISH_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pub.add_argument("dir", nargs="?", default="out/", metavar="DIR", help="default: out/")
    pub.add_argument("--db", metavar="URL", help="default: sqlite:///DIR.sqlite beside DIR")
    pub.add_argument(
        "--lock-timeout",
        type=_seconds,
        default=60,
        metavar="SECONDS",
        help="how long to wait for another publish to the same database (default: 60)",
    )
    pub.add_argument("--quiet", action="store_true", help="print nothing on success")
    pub.set_defaults(func=cmd_publish)
    chk = sub.add_parser(
        "check",
        help="compare a fixture's pages with the records it expects",
        description=CHECK_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chk.add_argument("fixture", metavar="FIXTURE", help="the fixture folder")
    chk.add_argument(
        "--update",
        action="store_true",
        help="write expected/ from what the pages give now (after a deliberate change)",
    )
    chk.set_defaults(func=cmd_check)
    for command in sub.choices.values():  # an unknown option is told with its command's usage
        command.set_defaults(command_parser=command)
    return p


def _positive(s: str) -> int:
    try:
        n = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {s!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def _seconds(s: str) -> float:
    try:
        n = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {s!r}") from None
    if not 0 <= n <= 86400:
        raise argparse.ArgumentTypeError("must be from 0 to 86400 seconds")
    return n


def _date(s: str) -> dt.date:
    """A crawl day (:func:`~ingest.normalize.ages.crawl_day`), no later than tomorrow by
    this machine's clock (a zone ahead may be a day on; a later day dates ages wrong)."""
    day = crawl_day(s)
    if day is None:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {s!r}")
    tomorrow = dt.date.today() + dt.timedelta(days=1)
    if day > tomorrow:
        raise argparse.ArgumentTypeError(
            f"{s} is after tomorrow ({tomorrow}): the day the pages were saved cannot be "
            "in the future"
        )
    return day


if __name__ == "__main__":
    sys.exit(main())
