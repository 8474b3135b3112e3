"""Benchmark ``ingest publish`` into SQLite and PostgreSQL: a first publish, the same folder
again, and a next publish with 1 % of the items changed.

    python bench/publish.py --size 100MB                      # corpus, run, derive, publish
    python bench/publish.py --size 100MB --pg postgresql://postgres@127.0.0.1:5432/test

A is ``ingest run`` of the generated corpus (bench/gen_corpus.py; both cached under
bench/). B is derived from A as a next run would write it: 1 % of A's items differ — 40 %
of those get a reworded summary, 40 % a new Chinese title, 10 % are removed, 10 % are new
items appended to a topic — with changes.jsonl, the report's change counts and
run.sequence made by ingest's own change-set code, published with ingest's own writer
(records, report and marker; no state, which ``ingest publish`` does not read). Each
publish is the real command in a child process; "rows" are the rows it inserted, updated
and deleted in items, topics, item_topics, related, sources and topic_sources, as its
summary line reports them; "peak RSS" is the publish's own, as GNU time
(``/usr/bin/time``) reports it — a child forked straight from this process would count
this process's pages (A, loaded to derive B) in its peak.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from random import Random

from msgspec.structs import replace
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from ingest.contract import Item, ItemTopic
from ingest.job import write_records
from ingest.reader import load_publish
from ingest.records import RunOutput
from ingest.state.changes import changes_against, counts
from ingest.state.previous import load

HERE = Path(__file__).resolve().parent
INGEST = [sys.executable, "-m", "ingest"]
ROWS = re.compile(r"rows (\d+) inserted, (\d+) updated, (\d+) deleted")


TIME = "/usr/bin/time"


def run(cmd: list[str]) -> tuple[float, int | None, str]:
    """Run a child; wall seconds, its peak RSS in MB (None without GNU time), stdout."""
    timed = [TIME, "-f", "maxrss_kb %M", *cmd] if os.path.exists(TIME) else cmd
    t0 = time.perf_counter()
    done = subprocess.run(timed, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd)} failed: {done.stderr.strip()[-500:]}")
    found = re.search(r"^maxrss_kb (\d+)$", done.stderr, re.M)
    return wall, int(found[1]) // 1024 if found else None, done.stdout


def publish_a(size: str, seed: int, work: Path) -> Path:
    corpus = HERE / "corpus" / f"{size}-seed{seed}"
    if not (corpus / "expected.json").is_file():
        gen = [sys.executable, str(HERE / "gen_corpus.py"), "--out", str(corpus), "--size", size]
        run([*gen, "--seed", str(seed)])
    a = work / "a"
    if not (a / "report.json").is_file():
        work.mkdir(parents=True, exist_ok=True)
        wall, _, _ = run([*INGEST, "run", str(corpus / "dumps"), "--out", str(a), "--jobs", "2"])
        print(f"ingest run {corpus.name}: {wall:.1f} s")
    return a


def derive_b(a: Path, b: Path, fraction: float, seed: int) -> int:
    """B: A with ``fraction`` of its items changed, removed or added. Returns that count."""
    run_a = load_publish(a)
    items = {i.id: i for i in run_a.items}
    topic_items = {t.slug: list(t.items) for t in run_a.topics}
    rnd = Random(seed)
    named = {r for i in run_a.items for r in i.related}
    free = sorted(i.id for i in run_a.items if i.topics and not i.related and i.id not in named)
    n = max(10, round(len(items) * fraction))
    picked = rnd.sample(free, n - n // 10)
    reword, retitle, remove = (
        picked[: n * 4 // 10],
        picked[n * 4 // 10 : n * 8 // 10],
        picked[n * 8 // 10 :],
    )
    for k in reword:
        items[k] = replace(items[k], summary_zh=items[k].summary_zh + "（修订）")
    for k in retitle:
        items[k] = replace(items[k], title_zh=(items[k].title_zh or "") + "（新版）")
    for k in remove:
        del items[k]
        for slug in topic_items:
            topic_items[slug] = [x for x in topic_items[slug] if x != k]
    for m in range(n // 10):
        slug = rnd.choice(sorted(topic_items))
        new = _new_item(rnd.choice(reword), items, slug, m)
        items[new.id] = new
        topic_items[slug].append(new.id)
    topics = [replace(t, items=topic_items[t.slug]) for t in run_a.topics]
    new_items = sorted(items.values(), key=lambda i: i.id)
    prev = load(a)  # A as the next run reads it back: the change set is made against it
    try:
        changes = changes_against(prev, new_items, topics, {})
    finally:
        prev.close()
    rep = run_a.report
    report = replace(
        rep,
        run=replace(rep.run, sequence=rep.run.sequence + 1),
        changes=counts(changes),
        totals=replace(rep.totals, items=len(new_items)),
    )
    # records, report and marker: all ``ingest publish`` reads (no state: no run builds on B)
    write_records(b, RunOutput(new_items, topics, run_a.rejects, report, changes))
    return n


def _new_item(template: str, items: dict[str, Item], slug: str, m: int) -> Item:
    base = items[template]
    member = ItemTopic(slug=slug, rank=None, level=None, level_label=None)
    return replace(
        base,
        id=f"zzbench{m:06d}",
        summary_zh=f"新增条目 {m}：" + base.summary_zh,
        topics=[member],
        related=[],
    )


def pg_database(server: str) -> tuple[str, str]:
    """A new database on the server: (its URL, its name)."""
    name = f"ingest_bench_{uuid.uuid4().hex[:10]}"
    _pg_admin(server, f'CREATE DATABASE "{name}"')
    url = make_url(server).set(database=name)
    return url.render_as_string(hide_password=False), name


def _pg_admin(server: str, statement: str) -> None:
    engine = create_engine(
        make_url(server).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT"
    )
    with engine.connect() as conn:
        conn.execute(text(statement))
    engine.dispose()


def measure(backend: str, url: str, a: Path, b: Path) -> list[dict[str, object]]:
    out = []
    for case, folder in (("first", a), ("same again", a), ("1 % changed", b)):
        wall, rss, stdout = run([*INGEST, "publish", str(folder), "--db", url])
        found = ROWS.search(stdout)
        rows = sum(map(int, found.groups())) if found else 0
        out.append({"backend": backend, "case": case, "s": wall, "rows": rows, "rss_mb": rss})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--size", default="100MB")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--changed", type=float, default=0.01, help="fraction of items (0.01)")
    p.add_argument(
        "--pg",
        default=os.environ.get("INGEST_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"),
        help="a PostgreSQL server where a database can be created (and is dropped after)",
    )
    args = p.parse_args()
    work = HERE / "out" / f"publish-{args.size}-seed{args.seed}"
    a = publish_a(args.size, args.seed, work)
    n = derive_b(a, work / "b", args.changed, args.seed)
    items = sum(1 for _ in (a / "items.jsonl").open("rb"))
    size = sum((a / name).stat().st_size for name in ("items.jsonl", "topics.jsonl", "report.json"))
    print(f"A: {items} items, {size / 1e6:.0f} MB of items, topics and report, {a}")
    print(f"B: {n} items differ")
    if not os.path.exists(TIME):
        print(f"(no {TIME}: peak RSS not measured; apt-get install time)")
    db = work / "bench.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    results = measure("sqlite", f"sqlite:///{db}", a, work / "b")
    pg_url, name = pg_database(args.pg)
    try:
        results += measure("postgresql", pg_url, a, work / "b")
    finally:
        _pg_admin(args.pg, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    head = f"{'database':<11} {'publish':<12} {'wall s':>7} {'rows':>8} {'rows/s':>8}"
    print(f"{head} {'peak RSS MB':>12}")
    for r in results:
        rate = f"{r['rows'] / r['s']:,.0f}" if r["rows"] else "-"  # type: ignore[operator]
        print(
            f"{r['backend']:<11} {r['case']:<12} {r['s']:>7.1f} {r['rows']:>8,} {rate:>8} "
            f"{r['rss_mb'] if r['rss_mb'] is not None else '-':>12}"
        )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
