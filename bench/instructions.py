"""Instructions a listing, counted by callgrind: a figure the machine's speed does not move.

Wall time on a shared machine drifts (the same 100 MB run can take 10 s, then 17 s, within an
hour), so a change worth a few per cent cannot be seen in seconds. Instructions can: this
runs the parse of every page of one kind under valgrind's callgrind twice, once reading
the bytes only and once parsing them too (decode, detect, parse, normalize; memos empty,
as a parse worker starts), and prints the difference over the listings read.

    python bench/instructions.py bench/corpus/25MB-seed0/dumps                 # topic pages
    python bench/instructions.py bench/corpus/25MB-seed0/dumps --kind item-page

Needs valgrind (``apt-get install valgrind``); about a minute on the 25 MB corpus. The
count includes the page's sha256, which valgrind runs without the CPU's SHA instructions
(about 19,000 a topic-page listing, where it costs the machine nearly nothing).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ingest.extract.discover import collect_inputs, read_bytes
from ingest.extract.pages import parse_bytes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", help="a folder of dumps")
    ap.add_argument("--kind", default="topic-page", help="page kind (default topic-page)")
    ap.add_argument("--child", choices=("read", "parse"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _child(Path(args.corpus), args.child)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    paths, listings = pages_of_kind(args.corpus, args.kind)
    if not listings:
        print(f"no listings on {args.kind} pages under {args.corpus}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        chosen = Path(tmp) / "pages"
        chosen.write_text("\n".join(map(str, paths)), encoding="utf-8")
        read, parsed = (_counted(chosen, mode, Path(tmp)) for mode in ("read", "parse"))
    per = (parsed - read) / listings
    print(f"{args.kind}: {len(paths)} files, {listings} listings, {per:,.0f} instructions each")
    return 0


def pages_of_kind(corpus: str, kind: str) -> tuple[list[Path], int]:
    """The readable files of ``corpus`` that parse as ``kind``, and their listings read."""
    paths, listings = [], 0
    for f in collect_inputs([corpus]):
        data, _ = read_bytes(f.path)
        if data is None:
            continue
        result = parse_bytes(f.name, data)
        if result.format == kind:
            paths.append(f.path)
            listings += result.listings_read
    return paths, listings


def _counted(chosen: Path, mode: str, tmp: Path) -> int:
    """The instructions of a child that reads (and, for ``parse``, parses) the pages."""
    out = tmp / f"callgrind.{mode}"
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
    subprocess.run([*cmd, __file__, str(chosen), "--child", mode], check=True, capture_output=True)
    return summary(out.read_text(encoding="utf-8", errors="replace"))


def summary(callgrind_out: str) -> int:
    """The total instructions a callgrind output file gives (its ``summary:`` line)."""
    m = re.search(r"^(?:summary|totals): (\d+)", callgrind_out, re.MULTILINE)
    if m is None:
        raise ValueError("no summary line: not a callgrind output file")
    return int(m.group(1))


def _child(chosen: Path, mode: str) -> int:
    """Under valgrind: read every chosen page, and parse each for ``parse``."""
    import gc

    gc.disable()  # the count is the parse's own work, not the collector's
    pages = [(p.name, read_bytes(p)[0] or b"") for p in map(Path, chosen.read_text().split("\n"))]
    if mode == "parse":
        for name, data in pages:
            parse_bytes(name, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
