"""Benchmark ``ingest run`` against the floor, in one run, on a generated corpus.

The floor (a) is the least any tool must do: read and decode every file, cut topic pages
into listings with one regex, and write each listing as a JSON line. Then (b) is
``ingest run`` on the same corpus. Both run as child processes, so wall time and peak RSS
are measured the same way. ingest's counts are checked against the corpus's expected.json.

    python bench/bench.py --size 100MB --jobs 2            # one size
    python bench/bench.py --sizes 25MB,50MB,100MB --jobs 2 # and the growth t(2n)/t(n)
    python bench/bench.py --size 100MB --tree --rerun      # memory of the process tree, and
                                                           # the daily run onto its publish
    python bench/bench.py --sizes 25MB,50MB,100MB --repeat 3   # medians of three rounds
    python bench/bench.py --size 100MB --repeat 5 --cold   # each run with the files out of
                                                           # the page cache (root only)

Corpora are generated (deterministically) under bench/corpus/ unless they exist.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

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


class TreeMemory:
    """The peak PSS of a process and its descendants, read from ``/proc`` every 50 ms by a
    thread (Linux). A child's peak RSS counts the pages it shares with its parent again;
    PSS shares them out, so the sum is what the run took. Reading costs the run a little."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_mb = pid, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak_mb

    def _poll(self) -> None:
        while not self._done.wait(0.05):
            kb = sum(_pss_kb(p) for p in _tree(self.pid))
            self.peak_mb = max(self.peak_mb, kb // 1024)


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for children in Path(f"/proc/{p}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in children.read_text().split()]
    return found


def _pss_kb(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


class Timed(NamedTuple):
    """What :func:`timed` measured of a child (its waited-for descendants included)."""

    wall: float  # seconds
    rss: int  # MB: the peak RSS of the child or of its largest descendant
    out: str  # its stdout
    tree: int | None  # MB: the peak PSS of its process tree, when asked
    user: float  # CPU seconds in the program's own code
    sys: float  # CPU seconds in the kernel on its behalf (page faults among them)
    faults: int  # minor page faults: first touches of memory and copies on write

    @property
    def cpu(self) -> float:
        """CPU seconds in all: its code and the kernel."""
        return self.user + self.sys

    @property
    def busy(self) -> float:
        """How many cores it kept busy on average."""
        return self.cpu / self.wall if self.wall else 0.0


def timed(cmd: list[str], tree: bool = False) -> Timed:
    """Run a child and measure it (see :class:`Timed`)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    memory = TreeMemory(proc.pid) if tree else None
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    peak_tree = memory.stop() if memory else None
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"bench: {' '.join(cmd)} exited {code}: {err.strip()[-500:]}")
    return Timed(
        wall,
        usage.ru_maxrss // 1024,
        out,
        peak_tree,
        usage.ru_utime,
        usage.ru_stime,
        usage.ru_minflt,
    )


def corpus_for(size: str, seed: int) -> Path:
    """The corpus of ``size`` and ``seed`` under bench/corpus/, generated unless it is there
    from this version of the generator."""
    folder = HERE / "corpus" / f"{size}-seed{seed}"
    if _generated_by(folder / "expected.json") != _generator_version():
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


def _generated_by(expected: Path) -> int | None:
    try:
        version = json.loads(expected.read_text(encoding="utf-8"))["generator_version"]
    except (OSError, ValueError, KeyError):
        return None
    return int(version)


def _generator_version() -> int:
    text = (HERE / "gen_corpus.py").read_text(encoding="utf-8")
    found = re.search(r"^GENERATOR_VERSION = ([0-9]+)$", text, re.M)
    assert found is not None
    return int(found.group(1))


class Corpus(NamedTuple):
    """A generated corpus and where its runs write."""

    size: str
    seed: int
    dumps: Path
    expected: dict[str, Any]
    work: Path

    @property
    def mb(self) -> float:
        return float(self.expected["bytes"]) / 1e6


def corpus(size: str, seed: int) -> Corpus:
    folder = corpus_for(size, seed)
    expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    work = HERE / "out" / size
    work.mkdir(parents=True, exist_ok=True)
    return Corpus(size, seed, folder / "dumps", expected, work)


def compiled() -> None:
    """Compile ingest's modules to bytecode, as pip does when it installs a wheel. The
    editable install (``make``) leaves that to the first import, and where
    PYTHONDONTWRITEBYTECODE is set every run would compile all of them again as it starts,
    a cost no installed ingest pays."""
    import compileall

    import ingest

    compileall.compile_dir(Path(ingest.__file__).parent, quiet=1)


def ingest_cmd(c: Corpus, jobs: int, engine: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "ingest", "run", str(c.dumps), "--out", str(c.work / "ingest")]
    return [*cmd, "--jobs", str(jobs), "--quiet", *engine]


#: Written "3", the kernel drops its clean page cache (and dentries and inodes): root only.
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_caches() -> None:
    """Put every file out of the page cache, as after a reboot or hours of other work."""
    os.sync()
    DROP_CACHES.write_text("3\n", encoding="ascii")


def one_round(
    c: Corpus, jobs: int, engine: list[str], tree: bool, cold: bool = False
) -> tuple[Timed, Timed]:
    """The floor (a), then a cold ``ingest run`` (b: no earlier publish); with ``cold``,
    each with the corpus's files out of the page cache (else the floor reads them in, and
    ingest finds them there)."""
    shutil.rmtree(c.work / "ingest", ignore_errors=True)
    if cold:
        drop_caches()
    a = timed([sys.executable, __file__, "--floor", str(c.dumps), str(c.work / "floor.jsonl")])
    if cold:
        drop_caches()
    return a, timed(ingest_cmd(c, jobs, engine), tree)


def median_run(runs: list[Timed]) -> Timed:
    """The run of median wall time (of an even number, the faster of the middle two)."""
    return sorted(runs, key=lambda t: t.wall)[(len(runs) - 1) // 2]


def show(
    c: Corpus, rounds: list[tuple[Timed, Timed]], jobs: int, engine: list[str], opts: Any
) -> dict[str, float]:
    """Print a corpus's figures (of several rounds: each median, and the range) and check
    the last run's counts against the corpus's: every listing read, exactly one item per
    resource, every topic, and no reject (every page of the corpus is valid)."""
    a, b = median_run([r[0] for r in rounds]), median_run([r[1] for r in rounds])
    report = json.loads((c.work / "ingest" / "report.json").read_text(encoding="utf-8"))
    totals = report["totals"]
    check = {k: (totals[k], c.expected[k]) for k in ("listings", "items", "topics", "rejects")}
    head = f"ingest --jobs {jobs} {' '.join(engine)}".rstrip()
    if opts.cold:
        head += "; files out of the page cache before each run"
    if len(rounds) > 1:
        head += f"; the median of {len(rounds)} rounds"
    print(
        f"\n== {c.size} corpus (seed {c.seed}): {c.mb:.1f} MB, {c.expected['listings']} "
        f"listings, {sum(c.expected['files'].values())} files; {head}"
    )
    print(
        f"floor  (a): {a.wall:7.2f} s  {c.mb / a.wall:7.1f} MB/s  peak RSS {a.rss:5d} MB  "
        f"({a.out.strip()} listings cut){_range_text([r[0] for r in rounds])}"
    )
    print(
        f"ingest (b): {b.wall:7.2f} s  {c.mb / b.wall:7.1f} MB/s  peak RSS {b.rss:5d} MB  "
        f"{totals['listings'] / b.wall:9.0f} listings/s{_tree_text(b.tree)}"
        f"{_range_text([r[1] for r in rounds])}"
    )
    ratios = sorted(r[1].wall / r[0].wall for r in rounds)
    spread = f"  (each round: {ratios[0]:.2f}-{ratios[-1]:.2f})" if len(rounds) > 1 else ""
    print(f"ratio b/a : {b.wall / a.wall:7.2f}{spread}")
    for name, t in (("floor  (a)", a), ("ingest (b)", b)):
        print(f"cpu {name}: {_cpu_text(t)}")
    cores = os.cpu_count() or 1
    print(f"cpu bound : {_bound_text(a, b, cores)}")
    print(f"cpu goal  : {_budget_text(a, b, cores)}")
    print(f"ingest timing (report.json of the last run): {report['timing']}")
    if opts.rerun:
        r = timed(ingest_cmd(c, jobs, engine), opts.tree)  # onto the publish (b) left
        print(
            f"rerun  (c): {r.wall:7.2f} s  onto (b)'s publish  peak RSS {r.rss:5d} MB"
            + _tree_text(r.tree)
        )
    for k, (got, want) in check.items():
        status = "ok" if got == want else "MISMATCH"
        print(f"check {k:9s}: ingest {got:8d}  expected {want:8d}  {status}")
    return {
        "MB": c.mb,
        "ingest_s": b.wall,
        "counts_ok": float(all(g == w for g, w in check.values())),
    }


def _range_text(runs: list[Timed]) -> str:
    if len(runs) < 2:
        return ""
    walls = sorted(t.wall for t in runs)
    return f"  (range {walls[0]:.2f}-{walls[-1]:.2f} s)"


def _cpu_text(t: Timed) -> str:
    """Where a child's time went: its code, the kernel (page faults: a first touch of memory
    or a copy on write costs microseconds on a virtual machine), and how many cores it kept
    busy on average."""
    return (
        f"user {t.user:6.2f} s + sys {t.sys:5.2f} s = {t.busy:4.2f} cores busy;  "
        f"{t.faults / 1000:6.0f}k page faults"
    )


def least_ratio(a: Timed, b: Timed, cores: int) -> float:
    """The least b/a ingest's CPU allows: its CPU seconds (code and kernel) spread over every
    core with none ever idle, against the floor's wall time. A ratio above the goal while
    this is below it can be closed by using the cores better; one whose bound is above it
    only by less work."""
    return b.cpu / cores / a.wall if a.wall else 0.0


def _bound_text(a: Timed, b: Timed, cores: int) -> str:
    least = least_ratio(a, b, cores)
    return (
        f"ingest's CPU on {cores} core(s), all busy all the time: "
        f"{least * a.wall:.2f} s, b/a at least {least:.2f}"
    )


#: The goal: ingest within this many times the floor's wall time.
GOAL = 3.0


def cpu_budget(a: Timed, b: Timed, cores: float, goal: float = GOAL) -> tuple[float, float]:
    """The CPU seconds (code and kernel) ingest may spend to finish within ``goal`` × the
    floor's wall with ``cores`` busy all the time, and the share of its CPU over that (0
    when under): how much less work the goal asks, at a given use of the cores."""
    budget = goal * a.wall * cores
    cut = max(0.0, 1 - budget / b.cpu) if b.cpu else 0.0
    return budget, cut


def _budget_text(a: Timed, b: Timed, cores: int) -> str:
    """The CPU the goal leaves at this run's own use of the cores, and with all of them."""
    as_run, cut = cpu_budget(a, b, b.busy)
    every, least = cpu_budget(a, b, cores)
    return (
        f"{GOAL:g}x the floor leaves {as_run:.2f} s of CPU at this run's {b.busy:.2f} cores "
        f"busy ({cut:.0%} less than ingest's {b.cpu:.2f} s), {every:.2f} s with "
        f"all {cores} busy ({least:.0%} less)"
    )


def _tree_text(peak: int | None) -> str:
    return "" if peak is None else f"  process tree peak PSS {peak:5d} MB"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--size", default="25MB")
    p.add_argument("--sizes", help="comma-separated sizes, each double the one before")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--engine", default="local", choices=["local", "dask"])
    p.add_argument(
        "--tree",
        action="store_true",
        help="also the peak PSS of ingest's process tree (its forked children included), "
        "read from /proc every 50 ms (Linux; costs the run a little)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="N rounds, each running every size (floor, then ingest) in turn, and the "
        "median of each figure: a machine whose speed drifts drifts for every size alike",
    )
    p.add_argument(
        "--rerun",
        action="store_true",
        help="then ingest again onto its own publish (the daily run; the same pages: "
        "nothing new, the publish left as it is)",
    )
    p.add_argument(
        "--cold",
        action="store_true",
        help="drop the page cache before each timed run, so both read their files from "
        "the disk (root only: writes /proc/sys/vm/drop_caches)",
    )
    p.add_argument("--floor", nargs=2, metavar=("CORPUS", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.floor:
        print(floor(Path(args.floor[0]), Path(args.floor[1])))
        return 0
    engine = [] if args.engine == "local" else ["--engine", args.engine]
    sizes = args.sizes.split(",") if args.sizes else [args.size]
    if args.cold:
        try:
            drop_caches()
        except OSError as e:
            print(f"bench.py: --cold cannot drop the page cache: {e}", file=sys.stderr)
            return 2
    corpora = [corpus(s, args.seed) for s in sizes]
    compiled()
    rounds: list[list[tuple[Timed, Timed]]] = [[] for _ in corpora]
    for _ in range(max(1, args.repeat)):
        for c, done in zip(corpora, rounds, strict=True):
            done.append(one_round(c, args.jobs, engine, args.tree, args.cold))
    rows = [show(c, r, args.jobs, engine, args) for c, r in zip(corpora, rounds, strict=True)]
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
