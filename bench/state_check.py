"""What checking a publish's state costs a run: every file of ``state/`` read against its
checksum (``ingest.state.integrity.checked``) before the run reads an input.

    .venv/bin/python bench/state_check.py OUT [--repeat 7]

OUT is a folder ``ingest run`` published into (e.g. ``ingest run
bench/corpus/100MB-seed0/dumps --out /tmp/o100``). Prints the size of its state and the
median, fastest and slowest of the checks (warm: the files in the page cache, as a daily
run finds the state the day before left).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from ingest.state.integrity import checked
from ingest.state.previous import READS


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--repeat", type=int, default=7)
    opts = p.parse_args(argv)
    found = checked(opts.out, READS)
    if found is None or not found.files:
        print(f"{opts.out}: no state with checksums to check", file=sys.stderr)
        return 2
    size = sum(f.size for f in found.files.values())
    times = []
    for _ in range(opts.repeat):
        began = time.perf_counter()
        checked(opts.out, READS)
        times.append(time.perf_counter() - began)
    print(
        f"state of {opts.out}: {len(found.files)} files, {size / 1e6:.1f} MB; check "
        f"median {statistics.median(times):.3f} s (min {min(times):.3f}, max {max(times):.3f}, "
        f"{opts.repeat} runs)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
