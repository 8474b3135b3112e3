"""Inputs read ahead (``ingest.extract.read.read_ahead``): the kernel is asked to read them
into its page cache at once, so the parse does not wait on the disk file after file.

Whether a file's pages are in the cache is read with ``fincore`` (util-linux); a file is
put out of the cache with ``fsync`` and ``POSIX_FADV_DONTNEED``, and each test first checks
that it is out, so that a file found in the cache afterwards was read ahead.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import SEEDS, run_python
from ingest.extract import read
from ingest.extract.read import read_ahead

SIZE = 256 * 1024


def cached(path: Path) -> int:
    """The bytes of ``path`` in the page cache."""
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


def out_of_cache(*paths: Path) -> None:
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # dirty pages are not dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        assert cached(path) == 0, f"{path} is still in the cache: this test cannot tell"


def files(folder: Path, *names: str) -> list[Path]:
    paths = []
    for name in names:
        path = folder / name
        path.write_bytes(os.urandom(SIZE))
        paths.append(path)
    out_of_cache(*paths)
    return paths


def in_cache_soon(path: Path, seconds: float = 10.0) -> bool:
    """Is all of ``path`` in the cache within ``seconds`` (the reads are queued, not done)?"""
    end = time.monotonic() + seconds
    while cached(path) < SIZE:
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def test_files_read_ahead_are_in_the_cache_before_anyone_reads_them(tmp_path: Path) -> None:
    paths = files(tmp_path, "a.txt", "b.txt", "c.txt")
    assert read_ahead(paths) == 3
    assert all(in_cache_soon(p) for p in paths)


def test_no_more_bytes_are_asked_for_than_the_limit(tmp_path: Path) -> None:
    a, b, c = files(tmp_path, "a.txt", "b.txt", "c.txt")
    assert read_ahead([a, b, c], limit=2 * SIZE) == 2
    assert in_cache_soon(a) and in_cache_soon(b)
    assert cached(c) == 0


def test_a_file_over_the_size_cap_is_not_read_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It is refused TOO_LARGE unread: reading it ahead would only take the cache."""
    big, small = files(tmp_path, "big.txt", "small.txt")
    big.write_bytes(os.urandom(SIZE + 1))
    out_of_cache(big)
    monkeypatch.setattr(read, "MAX_FILE_BYTES", SIZE)
    assert read_ahead([big, small]) == 1
    assert in_cache_soon(small)
    assert cached(big) == 0


def test_what_is_not_a_regular_file_is_passed_over_without_waiting(tmp_path: Path) -> None:
    (a,) = files(tmp_path, "a.txt")
    fifo, link, folder = tmp_path / "fifo", tmp_path / "link", tmp_path / "folder"
    os.mkfifo(fifo)  # no writer: a blocking open would wait for ever
    link.symlink_to(a)  # a link put in place of a file is not followed
    folder.mkdir()
    t0 = time.monotonic()
    assert read_ahead([fifo, link, folder, tmp_path / "gone.txt", a]) == 1
    assert time.monotonic() - t0 < 5
    assert in_cache_soon(a)


#: Records the inputs a run asks the kernel to read ahead, before any is parsed.
RECORDED = """
import json, os, sys
import ingest.extract.pages as pages
import ingest.job as job
parsed = []
real_parse = pages.parse_file
def parse_file(*args, **kwargs):
    parsed.append(True)
    return real_parse(*args, **kwargs)
pages.parse_file = parse_file
def read_ahead(paths):
    paths = list(paths)
    with open(os.environ["READ_AHEAD_LOG"], "w") as fh:
        json.dump({"files": sorted(p.name for p in paths), "parsed": len(parsed)}, fh)
    return len(paths)
job.read_ahead = read_ahead
from ingest.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_run_asks_for_every_input_ahead_before_it_parses_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "read-ahead.json"
    monkeypatch.setenv("READ_AHEAD_LOG", str(log))
    proc = run_python("-c", RECORDED, "run", str(SEEDS), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    said = json.loads(log.read_text())
    assert said == {"files": sorted(p.name for p in SEEDS.iterdir()), "parsed": 0}
