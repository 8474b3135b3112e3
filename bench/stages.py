"""Where the time goes: each step of ``ingest run`` timed alone, in one process.

    python bench/stages.py bench/corpus/25MB-seed0/dumps
    python bench/stages.py bench/corpus/25MB-seed0/dumps --repeat 5   # parsing five times

Loops over the same list of steps both engines run (``ingest.pipeline.steps.STEPS``) on
the local engine with one process, then renders the output (the JSON files and report.html
with the pages beside it, each timed), and prints each step's seconds and share. Generate
a corpus first with bench/gen_corpus.py (or run bench/bench.py, which does).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold import forget_texts
from ingest.contract import json_bytes, jsonl
from ingest.extract.discover import InputFile, collect_inputs
from ingest.extract.pages import parse_bytes
from ingest.pipeline.local import LocalEngine
from ingest.pipeline.steps import Context, Step, run_steps
from ingest.records import PAGE
from ingest.report import render_pages


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("corpus", help="a folder of dumps")
    p.add_argument("--jobs", type=int, default=1, help="processes for pool steps (default 1)")
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="parse every page this many times, memos emptied each time, and show the "
        "fastest and the median (a machine whose speed drifts shows its drift)",
    )
    args = p.parse_args(argv)
    times: dict[str, float] = {}

    def timed(step: Step, seconds: float) -> None:
        times[step.name] = seconds

    inputs = collect_inputs([args.corpus])
    with LocalEngine(args.jobs) as engine:  # a fresh run's context: no previous publish
        ctx = run_steps(engine, inputs, Context(), end=timed)
    out = ctx.output
    assert out is not None
    t = time.perf_counter()
    page = render_pages(out)[PAGE]  # report/ first: report.html links into its pages
    times["render report.html"] = time.perf_counter() - t
    t = time.perf_counter()
    for records in (out.items, out.topics, out.rejects, out.changes):
        b"".join(jsonl(records))
    json_bytes(out.report, indent=2)
    times["render JSON"] = time.perf_counter() - t
    total = sum(times.values())
    for name, seconds in times.items():
        print(f"{seconds:8.2f} s {100 * seconds / total:5.1f} %  {name}")
    totals = out.report.totals
    print(
        f"{total:8.2f} s in all: {totals.listings} listings, {totals.items} items, "
        f"{len(ctx.langs)} distinct original titles; report.html {len(page):,} bytes"
    )
    per_kind(inputs, args.repeat)
    return 0


def per_kind(inputs: list[InputFile], repeat: int = 1) -> None:
    """Parsing alone (decode, detect, parse, normalize; bytes already in memory), per page
    kind: the cost a listing of each kind adds. The texts the run above left in ingest's
    memos are forgotten first, each time: a parse worker starts without them."""
    data = [(f.name, f.path.read_bytes()) for f in inputs if f.problem is None]
    runs: list[dict[str, float]] = []
    listings: dict[str, int] = {}
    files: dict[str, int] = {}
    for _ in range(repeat):
        forget_texts()
        seconds: dict[str, float] = {}
        listings.clear()
        files.clear()
        for name, raw in data:
            t = time.perf_counter()
            result = parse_bytes(name, raw)
            kind = result.format or "rejected"
            seconds[kind] = seconds.get(kind, 0.0) + time.perf_counter() - t
            listings[kind] = listings.get(kind, 0) + result.listings_read
            files[kind] = files.get(kind, 0) + 1
        runs.append(seconds)
    shown = f", fastest and median of {repeat}" if repeat > 1 else ""
    print(f"\nparsing per page kind (one process, bytes in memory, memos empty{shown}):")
    for kind in sorted(runs[0]):
        per = sorted(1e6 * run[kind] / max(1, listings[kind]) for run in runs)
        spread = f" (median {statistics.median(per):.1f})" if repeat > 1 else ""
        print(
            f"  {kind:12} {files[kind]:6} files {listings[kind]:8} listings "
            f"{min(run[kind] for run in runs):7.2f} s {per[0]:8.1f} µs a listing{spread}"
        )


if __name__ == "__main__":
    sys.exit(main())
