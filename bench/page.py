"""Benchmark the report's pages: their size and how long headless Chromium takes to open them.

    python bench/page.py --size 25MB --size 100MB   # corpus, a first publish, a next one
    python bench/page.py --page out/report.html     # one page as it is (another version's)

A is ``ingest run`` of the generated corpus (bench/gen_corpus.py; both cached under bench/,
as bench/publish.py keeps them). B is a next publish derived from A the way a re-crawl
changes it: 1 % of the items reworded (half their summary, half their Chinese title), with
the change set and the values before made by ingest's own code, published with ingest's
own writer (records, report and its pages, marker; no state: no run builds on B). For
each: report.html's size and open time (median of three loads, each in a new page), the
pages beside it (how many, the largest, all together) and the open time of the largest. A
page is open when ``load`` has fired, its layout is done and its first screen is painted
(a screenshot of it taken). The goals: every page under 3 MB, opened in under 3 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from random import Random

from msgspec.structs import replace
from playwright.sync_api import Browser, sync_playwright

from ingest.job import write_records
from ingest.reader import load_publish
from ingest.state.changes import changes_against, counts, previous_values
from ingest.state.previous import load

HERE = Path(__file__).resolve().parent
MB = 1_000_000
GOAL_BYTES, GOAL_SECONDS = 3 * MB, 3.0
LOADS = 3


def publish_a(size: str, seed: int, work: Path) -> Path:
    corpus = HERE / "corpus" / f"{size}-seed{seed}"
    if not (corpus / "expected.json").is_file():
        gen = [sys.executable, str(HERE / "gen_corpus.py"), "--out", str(corpus), "--size", size]
        subprocess.run([*gen, "--seed", str(seed)], check=True, capture_output=True)
    a = work / "a"
    if not (a / "report.json").is_file():
        work.mkdir(parents=True, exist_ok=True)
        run = [sys.executable, "-m", "ingest", "run", str(corpus / "dumps"), "--out", str(a)]
        subprocess.run([*run, "--jobs", "2", "--quiet"], check=True)
    return a


def derive_b(a: Path, b: Path, fraction: float, seed: int) -> int:
    """B: A with ``fraction`` of its items reworded. Returns how many."""
    run = load_publish(a)
    rnd = Random(seed)
    items = {i.id: i for i in run.items}
    picked = rnd.sample(sorted(items), max(10, round(len(items) * fraction)))
    for n, k in enumerate(picked):
        item = items[k]
        if n % 2:
            items[k] = replace(item, title_zh=(item.title_zh or "") + "（新版）")
        else:
            cut = len(item.summary_zh) // 2
            reworded = item.summary_zh[:cut] + "，并补充了实践中的注意事项" + item.summary_zh[cut:]
            items[k] = replace(item, summary_zh=reworded)
    new_items = sorted(items.values(), key=lambda i: i.id)
    prev = load(a)  # A as the next run reads it back: the change set is made against it
    try:
        changes = changes_against(prev, new_items, run.topics, {})
        run.previous_values = previous_values(prev, changes)
    finally:
        prev.close()
    report = replace(
        run.report,
        run=replace(run.report.run, sequence=run.report.run.sequence + 1),
        changes=counts(changes),
    )
    run.items, run.report, run.changes = new_items, report, changes
    write_records(b, run)  # the report and its pages are what is measured of B
    return len(picked)


def open_seconds(browser: Browser, page: Path) -> tuple[float, int]:
    """Median seconds to open ``page`` (load fired, layout done, first screen painted), and
    its height in px."""
    times, height = [], 0
    for _ in range(LOADS):
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        t0 = time.perf_counter()
        tab.goto(page.as_uri(), wait_until="load", timeout=600_000)
        height = tab.evaluate("document.scrollingElement.scrollHeight")  # forces the layout
        tab.screenshot()  # the first screen, painted
        times.append(time.perf_counter() - t0)
        tab.close()
    return statistics.median(times), height


def measure(browser: Browser, label: str, main: Path) -> bool:
    """Print the figures of a report page and the pages beside it; True if within goals."""
    beside = sorted((main.parent / "report").glob("*.html"))
    seconds, height = open_seconds(browser, main)
    ok = main.stat().st_size < GOAL_BYTES and seconds < GOAL_SECONDS
    print(
        f"{label}: report.html {main.stat().st_size / MB:.2f} MB, {height:,} px tall, "
        f"opens in {seconds:.2f} s"
    )
    if beside:
        largest = max(beside, key=lambda p: p.stat().st_size)
        total = sum(p.stat().st_size for p in beside)
        big_seconds, _ = open_seconds(browser, largest)
        ok = ok and largest.stat().st_size < GOAL_BYTES and big_seconds < GOAL_SECONDS
        print(
            f"{' ' * len(label)}  report/: {len(beside)} pages, {total / MB:.1f} MB in all; the "
            f"largest {largest.name} {largest.stat().st_size / MB:.2f} MB, opens in "
            f"{big_seconds:.2f} s"
        )
    print(f"{' ' * len(label)}  goal (every page < 3 MB, opens < 3 s): {'ok' if ok else 'MISSED'}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", action="append", default=[], help="corpus size, e.g. 25MB")
    ap.add_argument("--page", type=Path, action="append", default=[], help="a report.html")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fraction", type=float, default=0.01)
    args = ap.parse_args()
    if not args.size and not args.page:
        args.size = ["25MB", "100MB"]
    ok = True
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
        )
        for page in args.page:
            ok &= measure(browser, str(page), page)
        for size in args.size:
            work = HERE / "out" / f"page-{size}-seed{args.seed}"
            a = publish_a(size, args.seed, work)
            ok &= measure(browser, f"{size} first publish", a / "report.html")
            b = work / "b"
            n = derive_b(a, b, args.fraction, args.seed)
            ok &= measure(browser, f"{size} next publish, {n} items reworded", b / "report.html")
        browser.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
