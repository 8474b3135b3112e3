"""Subprocess helper for tests/test_write.py (not a test module).

python _write_child.py publish SRC_DIR OUT_DIR [FSIZE_LIMIT]
    publish every file of SRC_DIR into OUT_DIR; prints "ready" right before publishing.
    With FSIZE_LIMIT, RLIMIT_FSIZE is set (SIGXFSZ ignored, so writes fail with EFBIG).
    Exit 0 on success, 3 on PublishError (message on stderr).
python _write_child.py lock OUT_DIR
    hold OutputLock(OUT_DIR), print "locked", then wait until stdin closes.
"""

from __future__ import annotations

import resource
import signal
import sys
from pathlib import Path

from ingest.errors import PublishError
from ingest.outputs.atomic import publish
from ingest.outputs.lock import OutputLock


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
    raise SystemExit(f"unknown mode {argv[0]!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
