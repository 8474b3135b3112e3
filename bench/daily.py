"""Benchmark the daily run: ``ingest run`` over the publish of the day before, against a
fresh run of the same crawl, on a generated corpus.

    python bench/daily.py --size 100MB --rounds 5           # the table of docs/performance.md
    python bench/daily.py --size 25MB --rounds 1 --check    # and compare with --full

Day 1 is the generated corpus (bench/gen_corpus.py), published once into a base folder.
Day 2 is that crawl again: the same pages, 1 % of them changed, or 10 % (a changed page
has one summary reworded in place, in its own encoding: a regenerated summary, the usual
daily change). Each round runs, in turn, a fresh run of day 1 into an empty folder and a
run of each day 2 over a copy of the base publish (the copy is not timed), each in a child
process; the table gives the median wall time of the rounds and its ratio to the fresh
run's, the peak RSS, and the growth of ``state/`` (state/records.zst and the page cache,
state/pages/) over the base publish's. The same pages again publish nothing ("nothing
new": the run only checks that the inputs are the publish's pages). ``--check`` also runs
``--full`` over each day 2 the daily run published and says whether its files are the
daily run's, byte for byte (report.json's ``timing`` and ``reuse`` aside; every file, the
state and the report's pages among them), and says so of a day 2 that published nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
from pathlib import Path
from random import Random
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import HERE, Timed, compiled, corpus, timed

#: Day 2 variants: name → share of pages changed.
DAYS = {"same pages": 0.0, "1 % changed": 0.01, "10 % changed": 0.10}
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
_COMMA = re.compile("，")


def _codec(data: bytes) -> str:
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return codec
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "gb18030"
    return "utf-8"


def reworded(data: bytes, rnd: Random) -> bytes:
    """The page with one summary clause reworded: a comma of its listings (past its first
    fifth, where the header is) becomes another clause."""
    codec = _codec(data)
    text = data.decode(codec)
    commas = [m.start() for m in _COMMA.finditer(text) if m.start() > len(text) // 5]
    if not commas:
        return data + b"\n"
    at = rnd.choice(commas)
    return (text[:at] + "，并且新近" + text[at + 1 :]).encode(codec)


def _done(where: Path) -> Path:
    """The mark of a finished day-2 folder: beside it, never among the pages a run reads."""
    return where.with_name(f"{where.name}.done")


def day_two(dumps: Path, share: float, where: Path, seed: int = 0) -> Path:
    """A copy of ``dumps`` (hard links) with ``share`` of its files reworded."""
    if _done(where).is_file() and where.is_dir():
        return where
    shutil.rmtree(where, ignore_errors=True)
    files = sorted(p for p in dumps.rglob("*") if p.is_file())
    rnd = Random(seed)
    changed = set(rnd.sample(range(len(files)), round(share * len(files))))
    for n, path in enumerate(files):
        target = where / path.relative_to(dumps)
        target.parent.mkdir(parents=True, exist_ok=True)
        if n in changed:
            target.write_bytes(reworded(path.read_bytes(), rnd))
        else:
            os.link(path, target)
    _done(where).write_text(f"{len(changed)} of {len(files)} files changed\n")
    return where


def ingest(paths: Path, out: Path, jobs: int, *extra: str) -> list[str]:
    cmd = [sys.executable, "-m", "ingest", "run", str(paths), "--out", str(out), "--quiet"]
    return [*cmd, "--jobs", str(jobs), *extra]


def state_bytes(folder: Path) -> int:
    """The size of ``state/``: state/records.zst and the page cache (state/pages/*.zst)."""
    return sum(p.stat().st_size for p in (folder / "state").rglob("*") if p.is_file())


#: The marker: it lists every file of the publish (``files``: name → size and digest).
MARKER = ".ingest"


def same_files(a: Path, b: Path) -> bool:
    """Are two publishes the same, byte for byte (report.json's timing and reuse aside)?
    Every file: the records, the report and its pages (report/), the state
    (state/records.zst and the page cache, state/pages/) and the marker."""
    names = _files(a)
    if names != _files(b):
        return False
    for name in names:
        x, y = (a / name).read_bytes(), (b / name).read_bytes()
        if name == "report.json":
            x, y = (_without_reuse(json.loads(d)) for d in (x, y))  # type: ignore[assignment]
        elif name == "report.html":
            x, y = (re.sub(rb'<p class="reuse">.*?</p>\n', b"", d) for d in (x, y))
        elif name == MARKER:
            x, y = (_listed_apart(json.loads(d)) for d in (x, y))  # type: ignore[assignment]
        if x != y:
            return False
    return True


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def _without_reuse(doc: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in doc.items() if k not in ("timing", "reuse")}


def _listed_apart(marker: dict[str, Any]) -> dict[str, Any]:
    """The marker (it lists every file, with its digest), but for report.json's and
    report.html's sums (the two are compared with timing and reuse aside)."""
    files = {k: v for k, v in marker["files"].items() if k not in ("report.json", "report.html")}
    return {**marker, "files": files}


def left_as_it_was(day: Path, base: Path) -> bool:
    """Did the run over the copy of the base publish publish nothing (its inputs byte for
    byte the base's pages: "nothing new")? Each publish has a marker of its own."""
    return (day / MARKER).read_bytes() == (base / MARKER).read_bytes()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--size", default="100MB")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3, help="alternated rounds (default 3)")
    p.add_argument("--check", action="store_true", help="compare each day 2 with --full")
    args = p.parse_args(argv)
    c = corpus(args.size, args.seed)
    work = HERE / "out" / f"daily-{args.size}"
    work.mkdir(parents=True, exist_ok=True)
    days = {
        name: c.dumps if not share else day_two(c.dumps, share, work / f"day2-{share:g}")
        for name, share in DAYS.items()
    }
    compiled()
    base = work / "base"  # made again each time: a cache of another build is not taken
    shutil.rmtree(base, ignore_errors=True)
    timed(ingest(c.dumps, base, args.jobs))
    runs: dict[str, list[Timed]] = {"fresh run": [], **{name: [] for name in days}}
    growth: dict[str, int] = {}
    for _ in range(max(1, args.rounds)):
        shutil.rmtree(work / "fresh", ignore_errors=True)
        runs["fresh run"].append(timed(ingest(c.dumps, work / "fresh", args.jobs)))
        for name, dumps in days.items():
            shutil.rmtree(work / "day", ignore_errors=True)
            shutil.copytree(base, work / "day", copy_function=os.link)
            runs[name].append(timed(ingest(dumps, work / "day", args.jobs)))
            growth[name] = state_bytes(work / "day") - state_bytes(base)
            if args.check and len(runs[name]) == 1:
                if left_as_it_was(work / "day", base):  # nothing new: no output to compare
                    print(f"{name}: nothing new: the base publish was left as it was")
                    continue
                shutil.rmtree(work / "full", ignore_errors=True)
                shutil.copytree(base, work / "full", copy_function=os.link)
                timed(ingest(dumps, work / "full", args.jobs, "--full"))
                print(f"{name}: same output as --full: {same_files(work / 'day', work / 'full')}")
    fresh = statistics.median(t.wall for t in runs["fresh run"])
    print(
        f"\n{c.size} corpus (seed {c.seed}): {c.mb:.1f} MB, "
        f"{sum(c.expected['files'].values())} files; ingest run --jobs {args.jobs}; "
        f"medians of {args.rounds} alternated rounds; state/ of the base publish "
        f"{state_bytes(base) / 1e6:.0f} MB"
    )
    print("| run | wall s | × fresh | peak RSS MB | state/ growth MB |\n|---|---|---|---|---|")
    for name, done in runs.items():
        wall = statistics.median(t.wall for t in done)
        rss = statistics.median(t.rss for t in done)
        grew = f"{growth[name] / 1e6:+.1f}" if name in growth else "—"
        print(f"| {name} | {wall:.2f} | {wall / fresh:.2f} | {rss:.0f} | {grew} |")
    for name, dumps in days.items():
        if dumps != c.dumps:
            print(f"{name}: {_done(dumps).read_text().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
