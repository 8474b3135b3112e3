"""Subprocess helper for tests/test_write.py (not a test module).

python _write_child.py publish SRC_DIR OUT_DIR [FSIZE_LIMIT]
    publish every file of SRC_DIR into OUT_DIR; prints "ready" right before publishing.
    With FSIZE_LIMIT, RLIMIT_FSIZE is set (SIGXFSZ ignored, so writes fail with EFBIG).
    Exit 0 on success, 3 on PublishError (message on stderr).
python _write_child.py lock OUT_DIR
    hold OutputLock(OUT_DIR), print "locked", then wait until stdin closes.
python _write_child.py apart SRC_DIR OUT_DIR CASE
    publish SRC_DIR's files and "page.html" made apart (by a forked child: it writes the
    pid that made it); CASE "ok", "oserror" (ENOSPC), "bug" (ValueError), "slow" (a page
    that takes a minute), "after a thread" (a file written by a thread listed before it) or
    "manifest meanwhile" (a page that takes a second; report.json says whether it was made
    before the page was done).
    Prints this process's pid, then what the publish raised, then whether a child process
    is left.
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ingest.errors import PublishError
from ingest.outputs.atomic import publish
from ingest.outputs.lock import OutputLock
from ingest.records.run import Alongside, Apart, Content


def _publish(src: Path, out: Path, fsize: int | None) -> int:
    files = {p.name: p.read_bytes() for p in sorted(src.iterdir())}
    if fsize is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    print("ready", flush=True)
    try:
        publish(out, files)
    except PublishError as e:
        print(e, file=sys.stderr)
        return 3
    return 0


def _apart(src: Path, out: Path, case: str) -> int:
    def pieces() -> Iterator[bytes]:
        if case == "oserror":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if case == "bug":
            raise ValueError("a bug in the page")
        if case == "slow":
            time.sleep(60)
        if case == "manifest meanwhile":
            time.sleep(1)
            made.touch()
        yield f"made by {os.getpid()}".encode()

    def manifest() -> Iterator[bytes]:
        yield b"made after the page" if made.exists() else b"made while the page was"

    made = out.parent / "page.made"

    files: dict[str, Content] = {p.name: p.read_bytes() for p in sorted(src.iterdir())}
    print(os.getpid(), flush=True)
    try:
        if case == "after a thread":  # a file written by a thread comes first
            files["pack.bin"] = Alongside(lambda: iter([b"pack"]))
        if case == "manifest meanwhile":
            files["report.json"] = manifest
        publish(out, {**files, "page.html": Apart(pieces)})
        print("published", flush=True)
    except (PublishError, RuntimeError) as e:
        print(f"{type(e).__name__}: {str(e).splitlines()[-1]}", flush=True)
    try:
        left: object = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        left = None
    print(f"left {left}", flush=True)
    return 0


def _lock(out: Path) -> int:
    with OutputLock(out):
        print("locked", flush=True)
        sys.stdin.read()
    return 0


def main(argv: list[str]) -> int:
    if argv[0] == "publish":
        fsize = int(argv[3]) if len(argv) > 3 else None
        return _publish(Path(argv[1]), Path(argv[2]), fsize)
    if argv[0] == "lock":
        return _lock(Path(argv[1]))
    if argv[0] == "apart":
        return _apart(Path(argv[1]), Path(argv[2]), argv[3])
    raise SystemExit(f"unknown mode {argv[0]!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
