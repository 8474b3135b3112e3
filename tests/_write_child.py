"""Subprocess helper for tests/test_write.py and tests/test_publish_cli.py (not a test module).

python _write_child.py publish SRC_DIR OUT_DIR [FSIZE_LIMIT]
    publish every file under SRC_DIR (names relative to it) into OUT_DIR as a run does:
    the folder held (checked, locked, cleared of what killed runs left), a staging written,
    the keep files carried, the marker last, one swap; prints "ready" right before.
    With FSIZE_LIMIT, RLIMIT_FSIZE is set (SIGXFSZ ignored, so writes fail with EFBIG).
    Exit 0 on success, 3 on PublishError (message on stderr).
python _write_child.py lock OUT_DIR
    hold OUT_DIR's lock (a Folder), print "locked", then wait until stdin closes.
"""

from __future__ import annotations

import resource
import signal
import sys
from pathlib import Path

from ingest.errors import PublishError
from ingest.publish.door import Marker
from ingest.publish.folder import Folder


def _publish(src: Path, out: Path, fsize: int | None) -> int:
    files = {
        p.relative_to(src).as_posix(): p.read_bytes() for p in sorted(src.rglob("*")) if p.is_file()
    }
    if fsize is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    print("ready", flush=True)
    try:
        with Folder(out) as folder:
            staging = folder.staging()
            try:
                for name, data in files.items():
                    staging.write(name, data)
                staging.publish(Marker(written_by="ingest"), folder.keep_files())
            finally:
                staging.discard()
    except PublishError as e:
        print(e, file=sys.stderr)
        return 3
    return 0


def _lock(out: Path) -> int:
    with Folder(out):
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
