"""ingest.outputs.atomic and .lock: atomic publish, fault injection, crash safety, the lock."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.errors import OutputLocked, PublishError
from ingest.outputs import atomic as write
from ingest.outputs.atomic import atomic_write_bytes, publish
from ingest.outputs.faults import AFTER_SWAP, BEFORE_SWAP
from ingest.outputs.lock import OutputLock
from ingest.records.run import Alongside, Apart, FileSink

CHILD = Path(__file__).with_name("_write_child.py")
SRC = Path(write.__file__).resolve().parents[2]
PRE_SWAP_POINTS = BEFORE_SWAP
#: The points ``publish`` itself hits (``after_unlock`` is a run's).
PUBLISH_POINTS = [p for p in write.FAULT_POINTS if p != "after_unlock"]

OLD = {
    ".keep": b"keep me\n",
    "items.jsonl": b'{"id": 1, "v": "old"}\n',
    "stale.txt": b"only in the old set",
    "report.json": b'{"run": "old"}',
}
NEW = {
    "items.jsonl": b'{"id": 1, "v": "new"}\n{"id": 2, "v": "new"}\n',
    "rejects.jsonl": b'{"line": 7}\n',
    "report.json": b'{"run": "new"}',
}
NEW_WITH_KEEP = {**NEW, ".keep": OLD[".keep"]}


def snapshot(folder: Path) -> dict[str, bytes]:
    """name -> bytes of everything in ``folder``; fails on anything that is not a plain file."""
    entries = list(folder.iterdir())
    assert all(p.is_file() and not p.is_symlink() for p in entries), entries
    return {p.name: p.read_bytes() for p in entries}


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".staging-" in p.name or ".old-" in p.name)


def make_old(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    for name, data in OLD.items():
        (out / name).write_bytes(data)
    return out


def write_src(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def child_env(fault: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != write.FAULT_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    if fault is not None:
        env[write.FAULT_ENV] = fault
    return env


def run_child(*args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(CHILD), *args]
    return subprocess.run(cmd, env=child_env(fault), capture_output=True, text=True, timeout=30)


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --- normal operation -------------------------------------------------------------------------


def test_publish_creates_missing_out_dir(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "out"
    publish(out, NEW)
    assert snapshot(out) == NEW
    assert leftovers(out.parent) == []


def test_publish_replaces_old_set_and_keeps_keep_file(tmp_path: Path) -> None:
    out = make_old(tmp_path)
    (out / ".gitkeep").write_bytes(b"")
    publish(out, NEW)
    assert snapshot(out) == {**NEW_WITH_KEEP, ".gitkeep": b""}
    assert not (out / "stale.txt").exists()
    assert leftovers(tmp_path) == []


def test_publish_exact_bytes_and_mode_preserved(tmp_path: Path) -> None:
    out = make_old(tmp_path)
    out.chmod(0o750)
    files = {"blob.bin": bytes(range(256)) * 4099, "empty": b"", "report.json": b"\x00\xff"}
    publish(out, files)
    assert snapshot(out) == {**files, ".keep": OLD[".keep"]}
    assert out.stat().st_mode & 0o777 == 0o750


def test_publish_writes_manifest_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    real = write.write_file

    def spy(path: Path, data: bytes, mode: int = 0o666) -> None:
        order.append(path.name)
        real(path, data, mode)

    monkeypatch.setattr(write, "write_file", spy)
    publish(make_old(tmp_path), {"report.json": b"{}", "a": b"1", "b": b"2"})
    assert order[-1] == "report.json" and sorted(order) == [".keep", "a", "b", "report.json"]


def test_publish_rejects_non_plain_names(tmp_path: Path) -> None:
    for bad in ("", ".", "..", "a/b/c", "../x", "/abs", "sub/..", "sub/"):
        with pytest.raises(ValueError):
            publish(tmp_path / "out", {bad: b"x"})
    assert not (tmp_path / "out").exists()


def test_a_folder_filled_apart_is_published_with_the_rest(tmp_path: Path) -> None:
    """A file made apart writes the files of its folder first, naming them itself; the
    folder and its files come out whole, and a name that is not plain is refused."""

    def fill(write: FileSink) -> None:
        for n in range(3):
            write(f"p{n}.html", [b"page ", str(n).encode()])

    out = tmp_path / "out"
    publish(out, {**NEW, "index.html": Apart(lambda: [b"i"], "pages", fill)})
    assert snapshot(out / "pages") == {f"p{n}.html": f"page {n}".encode() for n in range(3)}
    assert (out / "index.html").read_bytes() == b"i"
    for folder, name in (("a/b", "p.html"), ("..", "p.html"), ("pages", "../x"), ("pages", "")):

        def bad(write: FileSink, name: str = name) -> None:
            write(name, [b"x"])

        with pytest.raises((ValueError, RuntimeError), match="plain"):  # also from the child
            publish(tmp_path / "other", {"i.html": Apart(lambda: [b""], folder, bad)})
    assert leftovers(tmp_path) == [] and not (tmp_path / "other").exists()


def test_out_dir_is_a_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_bytes(b"not a folder")
    with pytest.raises(PublishError, match="not a directory") as info:
        publish(out, NEW)
    assert str(out) in str(info.value)
    assert out.read_bytes() == b"not a folder"
    assert leftovers(tmp_path) == []


def test_renameat2_exchange_swaps(tmp_path: Path) -> None:
    a, b = write_src(tmp_path / "a", {"x": b"1"}), write_src(tmp_path / "b", {"y": b"2"})
    assert write._exchange(a, b) is True
    assert snapshot(a) == {"y": b"2"} and snapshot(b) == {"x": b"1"}


def test_fallback_without_renameat2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write, "_RENAMEAT2", None)
    out = make_old(tmp_path)
    publish(out, NEW)
    assert snapshot(out) == NEW_WITH_KEEP
    assert leftovers(tmp_path) == []


def test_interrupted_fallback_is_rolled_back(tmp_path: Path) -> None:
    # A crash between the fallback's two renames: out/ missing, old set in .out.old-<pid>.
    pid = dead_pid()
    old_dir = make_old(tmp_path).rename(tmp_path / f".out.old-{pid}")
    write_src(tmp_path / f".out.staging-{pid}", NEW)
    publish(tmp_path / "out", {"report.json": b"{}"})
    assert snapshot(tmp_path / "out") == {"report.json": b"{}", ".keep": OLD[".keep"]}
    assert not old_dir.exists() and leftovers(tmp_path) == []


def test_stale_dirs_of_live_pids_only_removed_under_lock(tmp_path: Path) -> None:
    out = make_old(tmp_path)
    alive = tmp_path / f".out.staging-{os.getppid()}"
    dead = tmp_path / f".out.staging-{dead_pid()}"
    for folder in (alive, dead):
        write_src(folder, {"junk": b"partial"})
    publish(out, NEW)
    assert leftovers(tmp_path) == [alive.name]
    with OutputLock(out):
        publish(out, NEW)
    assert leftovers(tmp_path) == []
    assert snapshot(out) == NEW_WITH_KEEP


def test_atomic_write_bytes(tmp_path: Path) -> None:
    target = tmp_path / "schema.json"
    atomic_write_bytes(target, b"one")
    atomic_write_bytes(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["schema.json"]
    with pytest.raises(PublishError, match="missing"):
        atomic_write_bytes(tmp_path / "missing" / "x.json", b"{}")


# --- injected errors --------------------------------------------------------------------------


@pytest.mark.parametrize("action,code", [("enospc", errno.ENOSPC), ("eio", errno.EIO)])
@pytest.mark.parametrize("point", PRE_SWAP_POINTS)
def test_injected_error_before_swap_leaves_old_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, action: str, code: int
) -> None:
    out = make_old(tmp_path)
    monkeypatch.setenv(write.FAULT_ENV, f"{point}:{action}")
    with pytest.raises(PublishError) as info:
        publish(out, NEW)
    message = str(info.value)
    assert str(out) in message and os.strerror(code) in message and "\n" not in message
    assert isinstance(info.value.__cause__, OSError) and info.value.__cause__.errno == code
    assert snapshot(out) == OLD
    assert leftovers(tmp_path) == []


def test_injected_error_after_publish_is_cleaned_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = make_old(tmp_path)
    monkeypatch.setenv(write.FAULT_ENV, "after_publish:eio")
    publish(out, NEW)  # removing the old contents is best effort
    assert snapshot(out) == NEW_WITH_KEEP
    assert leftovers(tmp_path) == [f".out.staging-{os.getpid()}"]
    monkeypatch.delenv(write.FAULT_ENV)
    publish(out, NEW)
    assert leftovers(tmp_path) == []


def test_unknown_fault_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = make_old(tmp_path)
    monkeypatch.setenv(write.FAULT_ENV, "after_fsync:explode")
    publish(out, NEW)
    assert snapshot(out) == NEW_WITH_KEEP


def test_real_write_error_efbig(tmp_path: Path) -> None:
    out = make_old(tmp_path)
    src = write_src(tmp_path / "src", {"big.jsonl": b"x" * 100_000, "report.json": b"{}"})
    result = run_child("publish", str(src), str(out), "50000")
    assert result.returncode == 3, result.stderr
    assert str(out) in result.stderr and os.strerror(errno.EFBIG) in result.stderr
    assert snapshot(out) == OLD
    assert leftovers(tmp_path) == []


# --- crashes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fresh", [False, True], ids=["replace", "create"])
@pytest.mark.parametrize("point", PUBLISH_POINTS)
def test_kill_at_fault_point(tmp_path: Path, point: str, fresh: bool) -> None:
    out = tmp_path / "out" if fresh else make_old(tmp_path)
    before = None if fresh else OLD
    src = write_src(tmp_path / "src", NEW)
    result = run_child("publish", str(src), str(out), fault=f"{point}:kill")
    assert result.returncode == 137, result.stderr
    after = snapshot(out) if out.exists() else None
    expected_new = NEW if fresh else NEW_WITH_KEEP
    if point in AFTER_SWAP:
        assert after == expected_new
    else:
        assert after == before
    publish(out, {"report.json": b"{}"})
    assert snapshot(out) == ({} if fresh else {".keep": OLD[".keep"]}) | {"report.json": b"{}"}
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("kills", [8, pytest.param(20, marks=pytest.mark.slow)])
def test_sigkill_at_random_moments(tmp_path: Path, kills: int) -> None:
    rng = random.Random(20261129)
    old = {f"part{i}.jsonl": rng.randbytes(1 << 18) for i in range(12)} | {"report.json": b"o"}
    new = {f"part{i}.jsonl": rng.randbytes(1 << 18) for i in range(8, 20)} | {"report.json": b"n"}
    src = write_src(tmp_path / "src", new)
    out = tmp_path / "out"
    start = time.perf_counter()
    publish(out, old)
    budget = max(time.perf_counter() - start, 0.002) * 1.5
    killed = 0
    for _ in range(kills):
        publish(out, old)
        proc = subprocess.Popen(
            [sys.executable, str(CHILD), "publish", str(src), str(out)],
            env=child_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0, budget))
        proc.send_signal(signal.SIGKILL)
        rc = proc.wait(timeout=30)
        proc.stdout.close()
        assert rc in (0, -signal.SIGKILL)
        killed += rc == -signal.SIGKILL
        assert snapshot(out) in (old, new)
    assert killed > 0
    publish(out, old)
    assert snapshot(out) == old and leftovers(tmp_path) == []


# --- lock -------------------------------------------------------------------------------------


def test_lock_held_by_other_process_then_released_by_sigkill(tmp_path: Path) -> None:
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, str(CHILD), "lock", str(out)],
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        with pytest.raises(OutputLocked) as info, OutputLock(out):
            pass
        message = str(info.value)
        assert f"pid {holder.pid}, started " in message and f"'{out}'" in message
        assert "\n" not in message
    finally:
        holder.kill()
        holder.wait(timeout=30)
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()
    with OutputLock(out) as lock:
        assert lock.path == tmp_path / ".out.lock"
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()
    assert not out.exists()  # the lock lives next to out_dir, not inside it
    assert not lock.path.exists()  # and is gone once released


def test_a_lock_file_removed_under_a_waiter_is_not_locked_twice(tmp_path: Path) -> None:
    """The file a waiter opened was removed by the holder's release: the waiter must not
    lock that orphan inode while another process holds a lock on the new file."""
    out = tmp_path / "out"
    orphan_fd = os.open(tmp_path / ".out.lock", os.O_RDWR | os.O_CREAT)  # opened early
    os.unlink(tmp_path / ".out.lock")  # a holder released and removed it
    with OutputLock(out):  # a third run locks the new file
        lock = OutputLock(out)
        real_open = lock._open
        calls = iter([orphan_fd])
        lock._open = lambda: next(calls, None) or real_open()  # type: ignore[method-assign]
        with pytest.raises(OutputLocked):
            lock.acquire()  # the orphan flocks fine, but is no longer the lock file
    assert not (tmp_path / ".out.lock").exists()


def test_lock_is_exclusive_within_a_process_and_reusable(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with OutputLock(out):
        with pytest.raises(OutputLocked, match=f"pid {os.getpid()}"), OutputLock(out):
            pass
        publish(out, NEW)
    with OutputLock(out):
        pass
    assert snapshot(out) == NEW


def test_a_carried_over_file_is_copied_where_it_cannot_be_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of the previous set is hard-linked into the new one; across file systems
    (EXDEV) it is copied, in pieces, with the same bytes."""
    source = tmp_path / "pack"
    data = os.urandom(3 << 20) + b"tail"  # more than one piece
    source.write_bytes(data)

    def no_link(*_: object, **__: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(write.os, "link", no_link)
    publish(tmp_path / "out", {"report.json": b"{}"}, {"state/pages-1.pack": source})
    copied = tmp_path / "out" / "state" / "pages-1.pack"
    assert copied.read_bytes() == data and copied.stat().st_ino != source.stat().st_ino


# --- a file written alongside -----------------------------------------------------------------


def test_a_file_written_alongside_lands_with_the_others(tmp_path: Path) -> None:
    pack = [bytes([n]) * 70_000 for n in range(40)]
    publish(tmp_path / "out", {**NEW, "state/pack": Alongside(lambda: iter(pack))})
    assert (tmp_path / "out" / "state" / "pack").read_bytes() == b"".join(pack)
    assert {p.name for p in (tmp_path / "out").iterdir()} == {*NEW, "state"}


def test_a_failure_alongside_fails_the_publish_and_leaves_the_old_set(tmp_path: Path) -> None:
    def pieces() -> Iterator[bytes]:
        yield b"x" * 10
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    out = make_old(tmp_path)
    with pytest.raises(PublishError, match=os.strerror(errno.ENOSPC)):
        publish(out, {**NEW, "state/pack": Alongside(pieces)})
    assert snapshot(out) == OLD
    assert leftovers(tmp_path) == []


def test_a_file_written_alongside_stops_when_the_publish_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error in this thread's files stops the thread's file at its next piece: nothing
    is written into a staging folder that is gone."""
    started, given = threading.Event(), []

    def pieces() -> Iterator[bytes]:
        started.set()
        for n in range(100_000):
            given.append(n)
            time.sleep(0.001)
            yield b"y"

    def waiting(*args: object) -> None:
        started.wait(5)
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(write, "write_file", waiting)
    threads = threading.active_count()
    out = make_old(tmp_path)
    with pytest.raises(PublishError):
        publish(out, {**NEW, "state/pack": Alongside(pieces)})
    assert 0 < len(given) < 100_000
    assert snapshot(out) == OLD
    assert leftovers(tmp_path) == []
    assert threading.active_count() == threads  # the thread is gone


# --- a file made apart ------------------------------------------------------------------------


def _apart(tmp_path: Path, case: str, fault: str | None = None) -> tuple[list[str], Path]:
    out = make_old(tmp_path)
    src = write_src(tmp_path / "src", NEW)
    done = run_child("apart", str(src), str(out), case, fault=fault)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines(), out


def test_a_file_made_apart_is_made_by_a_child_and_lands_with_the_others(tmp_path: Path) -> None:
    (pid, said, left), out = _apart(tmp_path, "ok")
    assert said == "published" and left == "left None"
    made_by = (out / "page.html").read_text()
    assert made_by.startswith("made by ") and made_by != f"made by {pid}"
    assert snapshot(out) == {**NEW_WITH_KEEP, "page.html": made_by.encode()}


def test_a_file_made_apart_is_forked_before_any_thread_starts(tmp_path: Path) -> None:
    """A file written by a thread comes first in the set: the page's child is still forked
    first (a process with a thread forks none, and would write the page in turn)."""
    (pid, said, left), out = _apart(tmp_path, "after a thread")
    assert said == "published" and left == "left None"
    made_by = (out / "page.html").read_text()
    assert made_by.startswith("made by ") and made_by != f"made by {pid}"
    assert (out / "pack.bin").read_bytes() == b"pack"


def test_the_manifest_is_made_while_a_file_apart_is_but_written_after_it(tmp_path: Path) -> None:
    """report.json's bytes are made while the page's child works (the run's last second
    waited for it idle), and still land last."""
    (_, said, left), out = _apart(tmp_path, "manifest meanwhile")
    assert said == "published" and left == "left None"
    assert (out / "report.json").read_bytes() == b"made while the page was"
    assert (out / "page.html").stat().st_mtime_ns <= (out / "report.json").stat().st_mtime_ns


def test_a_disk_error_apart_fails_the_publish_as_one_here(tmp_path: Path) -> None:
    (_, said, left), out = _apart(tmp_path, "oserror")
    assert said.startswith("PublishError: cannot publish output folder") and left == "left None"
    assert os.strerror(errno.ENOSPC) in said
    assert snapshot(out) == OLD and leftovers(tmp_path) == []


def test_a_bug_apart_fails_the_publish_with_its_traceback(tmp_path: Path) -> None:
    (_, said, left), out = _apart(tmp_path, "bug")
    assert said == "RuntimeError: ValueError: a bug in the page" and left == "left None"
    assert snapshot(out) == OLD and leftovers(tmp_path) == []


def test_a_publish_that_fails_here_stops_the_child_making_a_file_apart(tmp_path: Path) -> None:
    t0 = time.monotonic()
    (_, said, left), out = _apart(tmp_path, "slow", fault="after_stage_write:eio")
    assert said.startswith("PublishError") and left == "left None"
    assert time.monotonic() - t0 < 30  # the child (a minute of work) was stopped, not waited for
    assert snapshot(out) == OLD and leftovers(tmp_path) == []


def test_pieces_of_any_size_land_in_order(tmp_path: Path) -> None:
    """Small pieces and pieces larger than the write buffer, mixed: the file is all of
    them, in order."""
    from ingest.outputs.files import write_file

    big = bytes(range(256)) * 4099  # over a megabyte, not a whole number of buffers
    pieces = [b"a" * 10, big, b"b" * 20, b"c" * (1 << 20), b"", big, b"d"]
    write_file(tmp_path / "f", lambda: iter(pieces))
    assert (tmp_path / "f").read_bytes() == b"".join(pieces)
    write_file(tmp_path / "g", big)
    assert (tmp_path / "g").read_bytes() == big
