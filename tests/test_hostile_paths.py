"""Hostile entries in the input folder, through the real command line (BAD_INPUTS G5, G6).

Each hostile entry is rejected with a reason code and a one-line message in rejects.jsonl
and report.json, the run goes on, and the good files are parsed. A folder named like a dump
file (``x.txt/``) inside an input folder is rejected NOT_REGULAR_FILE and not read; given
directly on the command line, it is walked (the user asked for it).
"""

from __future__ import annotations

import builtins
import errno
import os
import threading
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    ITEM_PAGE,
    SEEDS,
    TOPIC_LIST,
    TOPIC_PAGE,
    Out,
    every_string,
    run_subprocess,
    write_files,
)
from ingest.extract import discover as read
from ingest.extract.discover import read_bytes

GOOD = {
    "000.txt": TOPIC_PAGE,  # at the top
    "sub/deeper/001.txt": TOPIC_LIST,  # nested
    "sub/more/004.txt": ITEM_PAGE,  # deeper still
}


def make_good(folder: Path) -> None:
    for name, seed in GOOD.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(seed.read_bytes())


def outcome(out: Out) -> dict[str, tuple[str, str | None, int]]:
    """file -> (status, reason of its file-level reject, listings) from report and rejects."""
    reasons = {r["file"]: r["reason"] for r in out.rejects if r["locator"] == "file"}
    return {
        f["file"]: (f["status"], reasons.get(f["file"]), f["listings"]) for f in out.report["files"]
    }


def assert_one_line_messages(out: Out) -> None:
    for r in out.rejects:
        assert r["message"] and "\n" not in r["message"] and "\r" not in r["message"], r


def test_hostile_entries_are_rejected_and_the_run_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    make_good(folder)
    (folder / "x.txt").mkdir()  # a folder named like a dump file, with a good page inside
    (folder / "x.txt" / "004.txt").write_bytes(ITEM_PAGE.read_bytes())
    outside = write_files(tmp_path / "outside", {"secret.txt": TOPIC_PAGE.read_bytes()})
    os.symlink(outside / "secret.txt", folder / "escape.txt")  # a file outside the folder
    os.symlink("../../outside", folder / "sub" / "up")  # a folder outside, relative link
    os.symlink("deeper", folder / "sub" / "inner")  # a folder inside: still not followed
    os.symlink("nowhere.txt", folder / "dangling.txt")
    os.symlink("loop.txt", folder / "loop.txt")
    os.mkfifo(folder / "fifo.txt")  # opening it would block for ever
    os.mkfifo(tmp_path / "direct.fifo")  # a FIFO named on the command line
    (folder / "new\nline.txt").write_bytes(ITEM_PAGE.read_bytes())
    (folder / "evil\u202etxt.exe").write_bytes(ITEM_PAGE.read_bytes())
    (folder / "sub" / "tab\tdir").mkdir()
    (folder / "sub" / "tab\tdir" / "p.txt").write_bytes(ITEM_PAGE.read_bytes())
    bad_name = os.fsencode(folder) + b"/latin1-\xe9t\xe9.txt"  # not UTF-8
    with open(bad_name, "wb") as fh:
        fh.write(ITEM_PAGE.read_bytes())
    out_dir = tmp_path / "out"
    proc = run_subprocess("run", str(folder), str(tmp_path / "direct.fifo"), "--out", str(out_dir))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = Out(out_dir, proc.returncode)
    assert outcome(out) == {
        "000.txt": ("ok", None, 44),
        "sub/deeper/001.txt": ("ok", None, 19),
        "sub/more/004.txt": ("ok", None, 7),
        "x.txt": ("rejected", "NOT_REGULAR_FILE", 0),
        "escape.txt": ("rejected", "SYMLINK_OUTSIDE", 0),
        "sub/up": ("rejected", "SYMLINK_OUTSIDE", 0),
        "sub/inner": ("rejected", "NOT_REGULAR_FILE", 0),
        "dangling.txt": ("rejected", "UNREADABLE", 0),
        "loop.txt": ("rejected", "UNREADABLE", 0),
        "fifo.txt": ("rejected", "NOT_REGULAR_FILE", 0),
        "direct.fifo": ("rejected", "NOT_REGULAR_FILE", 0),
        "new\\nline.txt": ("rejected", "UNSAFE_FILE_NAME", 0),
        "evil\\u202etxt.exe": ("rejected", "UNSAFE_FILE_NAME", 0),
        "sub/tab\\tdir/p.txt": ("rejected", "UNSAFE_FILE_NAME", 0),
        "latin1-\\xe9t\\xe9.txt": ("rejected", "UNSAFE_FILE_NAME", 0),
    }
    assert_one_line_messages(out)
    messages = {r["file"]: r["message"] for r in out.rejects}
    assert "'new\\nline.txt'" in messages["new\\nline.txt"]  # repr-escaped, one line
    assert "'evil\\u202etxt.exe'" in messages["evil\\u202etxt.exe"]
    assert messages["fifo.txt"] == "not a regular file (a FIFO)"
    assert messages["sub/inner"] == "a symlink to a folder is not followed"
    assert repr(str(outside / "secret.txt")) in messages["escape.txt"]
    t = out.report["totals"]
    assert (t["files"], t["items"], t["rejects"]) == (15, 47, 12)
    assert "folder named like a dump file" in messages["x.txt"]
    assert len(out.items) == 47 and out.topics[0]["slug"] == "model-serving-compute"
    # No record carries a raw control or format character taken from a name.
    docs = [out.items, out.topics, out.rejects, out.report]
    for text in every_string(docs):
        assert not any(unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in text), text


def test_folder_named_like_a_file_given_directly_is_walked(ingest: Any, tmp_path: Path) -> None:
    folder = tmp_path / "x.txt"
    make_good(folder)
    out = ingest(folder)
    assert out.code == 0 and out.rejects == []
    assert sorted(f["file"] for f in out.report["files"]) == [
        "000.txt",
        "sub/deeper/001.txt",
        "sub/more/004.txt",
    ]
    assert len(out.items) == 47


def grows_on_first_read(path: Path, extra: bytes, reads: dict[str, int]) -> Any:
    """An ``os.read`` for which ``path`` grows by ``extra`` right after its first read (a
    scraper still writing it); ``reads`` gets the bytes read of each file, by real path."""
    real_read, real_open = os.read, builtins.open

    def read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        name = os.readlink(f"/proc/self/fd/{fd}")
        if name == str(path) and name not in reads:
            time.sleep(0.01)  # a coarse-mtime filesystem still sees a new time
            with real_open(path, "ab") as fh:
                fh.write(extra)
        reads[name] = reads.get(name, 0) + len(data)
        return data

    return read


def test_unreadable_and_changing_files(
    ingest: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests run as root (mode 000 is no obstacle), so EACCES is simulated at open; a
    scraper still writing a file is simulated by appending to it in the middle of the read."""
    folder = tmp_path / "in"
    make_good(folder)
    write_files(folder, {"locked.txt": ITEM_PAGE.read_bytes(), "growing.txt": b""})
    (folder / "growing.txt").write_bytes(TOPIC_LIST.read_bytes())
    (folder / "private").mkdir()
    (folder / "private" / "hidden.txt").write_bytes(ITEM_PAGE.read_bytes())
    locked, growing, private = folder / "locked.txt", folder / "growing.txt", folder / "private"

    real_os_open, real_open, real_scandir = os.open, builtins.open, os.scandir

    def denied(path: Any) -> bool:
        return os.fspath(path) == str(locked)

    def fake_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if denied(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_os_open(path, *args, **kwargs)

    def fake_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(path, (str, Path)) and denied(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_open(path, *args, **kwargs)

    reads: dict[str, int] = {}
    fake_read = grows_on_first_read(growing, "\n新写入的一行。\n".encode(), reads)

    def fake_scandir(path: Any = ".") -> Any:
        if os.fspath(path) == str(private):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "open", fake_os_open)
    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "read", fake_read)
    monkeypatch.setattr(os, "scandir", fake_scandir)
    out = ingest(folder)
    monkeypatch.undo()
    assert out.code == 0 and str(growing) in reads
    assert outcome(out) == {
        "000.txt": ("ok", None, 44),
        "sub/deeper/001.txt": ("ok", None, 19),
        "sub/more/004.txt": ("ok", None, 7),
        "locked.txt": ("rejected", "UNREADABLE", 0),
        "growing.txt": ("rejected", "INPUT_CHANGED", 0),
        "private": ("rejected", "UNREADABLE", 0),
    }
    messages = {r["file"]: r["message"] for r in out.rejects}
    assert messages["locked.txt"] == "cannot open: Permission denied"
    assert messages["private"] == "cannot list folder 'private': Permission denied"
    assert messages["growing.txt"].startswith("the file changed while it was read")
    assert_one_line_messages(out)
    assert len(out.items) == 47


def test_a_file_that_grew_past_the_cap_after_discovery_is_refused_as_it_is_read(
    ingest: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Discovery passed both files (under its cap); by the time each is read, one is over
    the cap when opened and the other grows past it while read: both are TOO_LARGE, and
    never more than the cap and a byte of either is read."""
    page = TOPIC_PAGE.read_bytes()
    folder = write_files(tmp_path / "in", {"ok.txt": page, "grown.txt": page + b"\n" * 100})
    grown, growing = folder / "grown.txt", folder / "growing.txt"
    growing.write_bytes(page)
    cap = len(page) + 50
    monkeypatch.setattr(read, "MAX_FILE_BYTES", cap)  # discovery keeps its own (64 MiB)
    reads: dict[str, int] = {}
    monkeypatch.setattr(os, "read", grows_on_first_read(growing, b"\n" * 100, reads))
    out = ingest(folder)
    monkeypatch.undo()
    assert outcome(out) == {
        "grown.txt": ("rejected", "TOO_LARGE", 0),
        "growing.txt": ("rejected", "TOO_LARGE", 0),
        "ok.txt": ("ok", None, 44),
    }
    messages = {r["file"]: r["message"] for r in out.rejects}
    assert messages["grown.txt"] == f"{len(page) + 100} bytes, over the cap of {cap} bytes"
    assert messages["growing.txt"] == f"over the cap of {cap} bytes"
    assert str(grown) not in reads and reads[str(growing)] <= cap + 1


def test_a_fifo_swapped_in_after_discovery_is_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "late.txt"
    os.mkfifo(fifo)
    result: list[tuple[bytes | None, tuple[str, str] | None]] = []
    reader = threading.Thread(target=lambda: result.append(read_bytes(fifo)))
    reader.start()
    reader.join(timeout=5)
    if reader.is_alive():  # blocked in open(): release it before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=5)
    assert result == [(None, ("NOT_REGULAR_FILE", "no longer a regular file (a FIFO)"))]
    link = tmp_path / "link.txt"
    os.symlink(TOPIC_PAGE, link)  # a symlink swapped in for a file is not followed
    data, problem = read_bytes(link)
    assert data is None and problem is not None and problem[0] == "UNREADABLE"


def test_two_inputs_with_the_same_name_are_a_usage_error(tmp_path: Path) -> None:
    a = write_files(tmp_path / "a", {"x.txt": TOPIC_PAGE.read_bytes()})
    b = write_files(tmp_path / "b", {"x.txt": ITEM_PAGE.read_bytes()})
    proc = run_subprocess("run", str(a), str(b), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "'x.txt'" in proc.stderr and str(a / "x.txt") in proc.stderr
    assert not (tmp_path / "out").exists()


def test_the_same_file_reached_twice_is_read_once(ingest: Any) -> None:
    out = ingest(SEEDS, TOPIC_PAGE, SEEDS)
    assert out.code == 0 and len(out.report["files"]) == 3 and len(out.items) == 47
