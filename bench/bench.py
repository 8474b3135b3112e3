"""Benchmark ``ingest run`` against the floor, in one run, on a generated corpus.

The floor (a) is the least any tool must do: read and decode every file, cut topic pages
into listings with one regex, and write each listing as a JSON line. Then (b) is
``ingest run`` on the same corpus. Both run as child processes, so wall time and peak RSS
are measured the same way. ingest's counts are checked against the corpus's expected.json.

    python bench/bench.py --size 100MB --jobs 2            # one size
    python bench/bench.py --sizes 25MB,50MB,100MB --jobs 2 # and the growth t(2n)/t(n)

Corpora are generated (deterministically) under bench/corpus/ unless they exist.
"""

from __future__ import annotations

import argparse
import codecs
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPLIT = re.compile(r"\s(?=[0-9]+\. \[)")


# --------------------------------------------------------------------------- the floor


def _decode(data: bytes) -> str:
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(codec)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("gb18030")


def floor(corpus: Path, out: Path) -> int:
    """Read + decode every file, one regex split of topic pages, one JSON line a listing."""
    n = 0
    with open(out, "w", encoding="utf-8") as fh:
        for path in sorted(corpus.rglob("*")):
            if not path.is_file():
                continue
            text = _decode(path.read_bytes())
            if not text.lstrip("\ufeff").startswith("# "):
                continue
            for piece in SPLIT.split(text)[1:]:
                fh.write(json.dumps({"file": path.name, "listing": piece}, ensure_ascii=False))
                fh.write("\n")
                n += 1
    return n


# --------------------------------------------------------------------------- measuring


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """Run a child; return wall seconds, its peak RSS in MB, and its stdout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"bench: {' '.join(cmd)} exited {code}: {err.strip()[-500:]}")
    return wall, usage.ru_maxrss // 1024, out


def corpus_for(size: str, seed: int) -> Path:
    folder = HERE / "corpus" / f"{size}-seed{seed}"
    if not (folder / "expected.json").is_file():
        print(f"generating {size} corpus in {folder} ...", file=sys.stderr)
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_corpus.py"),
                "--out",
                str(folder),
                "--size",
                size,
                "--seed",
                str(seed),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return folder


def bench_one(size: str, seed: int, jobs: int, engine: list[str]) -> dict[str, float]:
    folder = corpus_for(size, seed)
    dumps = folder / "dumps"
    expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    mb = expected["bytes"] / 1e6
    work = HERE / "out" / size
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "ingest", ignore_errors=True)  # a cold run: no earlier publish
    fa, rss_a, out_a = timed(
        [sys.executable, __file__, "--floor", str(dumps), str(work / "floor.jsonl")]
    )
    fb, rss_b, _ = timed(
        [
            sys.executable,
            "-m",
            "ingest",
            "run",
            str(dumps),
            "--out",
            str(work / "ingest"),
            "--jobs",
            str(jobs),
            "--quiet",
            *engine,
        ]
    )
    report = json.loads((work / "ingest" / "report.json").read_text(encoding="utf-8"))
    totals = report["totals"]
    check = {k: (totals[k], expected[k]) for k in ("listings", "items", "topics")}
    row = {
        "MB": mb,
        "floor_s": fa,
        "ingest_s": fb,
        "ratio": fb / fa,
        "floor_MBps": mb / fa,
        "ingest_MBps": mb / fb,
        "listings_per_s": totals["listings"] / fb,
        "floor_rss_MB": rss_a,
        "ingest_rss_MB": rss_b,
    }
    print(
        f"\n== {size} corpus (seed {seed}): {mb:.1f} MB, {expected['listings']} listings, "
        f"{sum(expected['files'].values())} files; ingest --jobs {jobs} {' '.join(engine)}"
    )
    print(
        f"floor  (a): {fa:7.2f} s  {mb / fa:7.1f} MB/s  peak RSS {rss_a:5d} MB  "
        f"({out_a.strip()} listings cut)"
    )
    print(
        f"ingest (b): {fb:7.2f} s  {mb / fb:7.1f} MB/s  peak RSS {rss_b:5d} MB  "
        f"{totals['listings'] / fb:9.0f} listings/s"
    )
    print(f"ratio b/a : {fb / fa:7.2f}")
    print(f"ingest timing (report.json): {report['timing']}")
    for k, (got, want) in check.items():
        status = "ok" if got == want else "MISMATCH"
        print(f"check {k:9s}: ingest {got:8d}  expected {want:8d}  {status}")
    row["counts_ok"] = float(all(g == w for g, w in check.values()))
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--size", default="25MB")
    p.add_argument("--sizes", help="comma-separated sizes, each double the one before")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--engine", default="local", choices=["local", "dask"])
    p.add_argument("--floor", nargs=2, metavar=("CORPUS", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.floor:
        print(floor(Path(args.floor[0]), Path(args.floor[1])))
        return 0
    engine = [] if args.engine == "local" else ["--engine", args.engine]
    sizes = args.sizes.split(",") if args.sizes else [args.size]
    rows = [bench_one(s, args.seed, args.jobs, engine) for s in sizes]
    if len(rows) > 1:
        print(
            "\ngrowth: "
            + ", ".join(
                f"t({b['MB']:.0f})/t({a['MB']:.0f}) = {b['ingest_s'] / a['ingest_s']:.2f}"
                for a, b in itertools.pairwise(rows)
            )
        )
    return 0 if all(r["counts_ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
