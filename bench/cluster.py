"""The Dask engine through a scheduler and worker processes, against the local engine.

For each size, in alternated rounds: ``ingest run --jobs 2`` (the local engine), then
``ingest run --engine dask --scheduler ADDRESS`` against a scheduler and two worker
processes started for that run alone (``dask scheduler``; ``dask worker --nworkers 2
--nthreads 1``: each worker under a nanny, as on a real cluster). Printed: the wall time
of each, the peak memory of the local run's largest process, of the Dask run's driver (the
``ingest run`` process) and of each worker (VmHWM, read before the workers stop), as
medians of the rounds; then the driver's growth from the smallest size to the largest.

    python bench/cluster.py                          # 25 and 100 MB, one round
    python bench/cluster.py --sizes 25MB,100MB --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from bench import Corpus, compiled, corpus, timed


class Round(NamedTuple):
    local_wall: float
    local_peak: int  # MB
    dask_wall: float
    driver_peak: int  # MB
    worker_peaks: list[int]  # MB, largest first


@contextlib.contextmanager
def cluster(workers: int) -> Iterator[tuple[str, list[int]]]:
    """A scheduler and ``workers`` worker processes of their own: its address and the
    workers' pids; all stopped at the end of the block."""
    from dask.distributed import Client

    with tempfile.TemporaryDirectory() as tmp:
        info = str(Path(tmp) / "scheduler.json")
        dask = [str(Path(sys.executable).parent / "dask")]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": tmp}
        scheduler = subprocess.Popen(
            [*dask, "scheduler", "--scheduler-file", info, "--port", "0",
             "--dashboard-address", ":0"], **quiet,
        )  # fmt: skip
        worker = subprocess.Popen(
            [*dask, "worker", "--scheduler-file", info, "--nworkers", str(workers),
             "--nthreads", "1", "--dashboard-address", ":0", "--memory-limit", "0"], **quiet,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not Path(info).exists():
                if time.monotonic() > deadline:
                    raise SystemExit("bench: the Dask scheduler did not start")
                time.sleep(0.1)
            with Client(scheduler_file=info, timeout="30s") as client:
                client.wait_for_workers(workers, timeout=60)
                pids = sorted(client.run(os.getpid).values())
                yield client.scheduler.address, pids
        finally:
            for proc in (worker, scheduler):
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def peak_mb(pid: int) -> int:
    """The peak resident memory of a live process (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return 0


def run_cmd(c: Corpus, out: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ingest",
        "run",
        str(c.dumps),
        "--out",
        str(out),
        "--quiet",
        *args,
    ]


def one_round(c: Corpus) -> Round:
    out = c.work / "cluster"
    shutil.rmtree(out, ignore_errors=True)
    local = timed(run_cmd(c, out, "--jobs", "2"))
    shutil.rmtree(out)
    with cluster(2) as (address, workers):
        dask = timed(run_cmd(c, out, "--engine", "dask", "--scheduler", address))
        peaks = sorted((peak_mb(p) for p in workers), reverse=True)
    shutil.rmtree(out)
    return Round(local.wall, local.rss, dask.wall, dask.rss, peaks)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="25MB,100MB", help="comma-separated corpus sizes")
    ap.add_argument("--rounds", type=int, default=1, help="rounds per size (medians shown)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    compiled()
    med = statistics.median
    drivers: list[tuple[str, float]] = []
    print("| corpus | local --jobs 2: wall, peak | Dask, 2 workers: wall | driver peak "
          "| worker peaks | Dask / local wall |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        c = corpus(size, args.seed)
        rounds = [one_round(c) for _ in range(args.rounds)]
        lw, lp = med(r.local_wall for r in rounds), med(r.local_peak for r in rounds)
        dw, dp = med(r.dask_wall for r in rounds), med(r.driver_peak for r in rounds)
        wp = [int(med(r.worker_peaks[i] for r in rounds)) for i in range(2)]
        drivers.append((size, dp))
        print(
            f"| {size} ({c.mb:,.0f} MB) | {lw:.2f} s, {lp:,.0f} MB | {dw:.2f} s | {dp:,.0f} MB "
            f"| {', '.join(f'{p:,} MB' for p in wp)} | {dw / lw:.2f}x |"
        )
    if len(drivers) > 1:
        (small, a), (large, b) = drivers[0], drivers[-1]
        print(f"\ndriver peak, {large} against {small}: {b / a:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
