"""ingest.publish.folder: the atomic publish (Staging), fault injection, crash safety, the
lock and stale side folders (Folder)."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from xxhash import xxh3_128_hexdigest

from ingest.errors import OutputLocked, PublishError, UsageError
from ingest.publish import folder as publishing
from ingest.publish.door import FileSum, Marker
from ingest.publish.folder import (
    KEEP_FILES,
    Folder,
    Staging,
    atomic_write_bytes,
    side_path,
    write_file,
)
from ingest.publish.signals import AFTER_SWAP, BEFORE_SWAP, FAULT_ENV, FAULT_POINTS, Stops

CHILD = Path(__file__).with_name("_write_child.py")
SRC = Path(publishing.__file__).resolve().parents[2]
MARKER = Marker(written_by="ingest")

KEEP = {".keep": b"keep me\n"}
OLD = {
    "items.jsonl": b'{"id": 1, "v": "old"}\n',
    "topics.jsonl": b"only in the old set",
    "report.json": b'{"run": "old"}',
}
NEW = {
    "items.jsonl": b'{"id": 1, "v": "new"}\n{"id": 2, "v": "new"}\n',
    "rejects.jsonl": b'{"line": 7}\n',
    "report.json": b'{"run": "new"}',
}


def stage(
    target: Path,
    files: dict[str, bytes],
    keep: dict[str, bytes] | None = None,
    stops: Stops | None = None,
) -> None:
    """``files`` written into a new set beside ``target`` and published (the marker listing
    them), or, on any failure, the set discarded."""
    staging = Staging(target, stops)
    try:
        for name, data in files.items():
            staging.write(name, data)
        staging.publish(MARKER, keep)
    finally:
        staging.discard()


def publish(out: Path, files: dict[str, bytes]) -> None:
    """``files`` published into ``out`` as a run publishes: the folder held (checked,
    locked, cleared of what killed runs left beside it), its keep files carried."""
    with Folder(out) as folder:
        stage(folder.target, files, folder.keep_files())


def snapshot(folder: Path) -> dict[str, bytes]:
    """name -> bytes of every file under ``folder`` but the marker, which must list exactly
    them (the keep files aside), each with its size and digest: a whole set, no mix."""
    files = {}
    for p in sorted(folder.rglob("*")):
        assert not p.is_symlink() and (p.is_file() or p.is_dir()), p
        if p.is_file():
            files[p.relative_to(folder).as_posix()] = p.read_bytes()
    marker = json.loads(files.pop(".ingest"))
    assert marker["written_by"] == "ingest"
    assert marker["files"] == {
        name: {"size": len(data), "xxh3_128": xxh3_128_hexdigest(data)}
        for name, data in files.items()
        if name not in KEEP_FILES
    }
    return files


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".staging-" in p.name or ".old-" in p.name)


def make_old(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    stage(out, OLD, KEEP)
    assert snapshot(out) == OLD | KEEP
    return out


def write_src(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir()
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def child_env(fault: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    if fault is not None:
        env[FAULT_ENV] = fault
    return env


def run_child(*args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(CHILD), *args]
    return subprocess.run(cmd, env=child_env(fault), capture_output=True, text=True, timeout=30)


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --- normal operation -------------------------------------------------------------------------


def test_publish_creates_a_missing_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    publish(out, NEW)
    assert snapshot(out) == NEW
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no lock, no side folder


def test_publish_replaces_the_old_set_and_carries_the_keep_files(tmp_path: Path) -> None:
    out = make_old(tmp_path)
    (out / ".gitkeep").write_bytes(b"")
    publish(out, NEW)
    assert snapshot(out) == NEW | KEEP | {".gitkeep": b""}
    assert not (out / "topics.jsonl").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_publish_exact_bytes_and_mode_preserved(tmp_path: Path) -> None:
    out = make_old(tmp_path)
    out.chmod(0o750)
    files = {
        "report/blob.html": bytes(range(256)) * 4099,
        "rejects.jsonl": b"",
        "report.json": b"\x00\xff",
    }
    publish(out, files)
    assert snapshot(out) == files | KEEP
    assert out.stat().st_mode & 0o777 == 0o750


def test_publish_writes_the_marker_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    real = publishing.write_file

    def spy(path: Path, pieces: object, sync: bool = False) -> FileSum:
        order.append(path.name)
        return real(path, pieces, sync)  # type: ignore[arg-type]

    out = make_old(tmp_path)
    monkeypatch.setattr(publishing, "write_file", spy)
    publish(out, {"report.json": b"{}", "items.jsonl": b"1", "report/a": b"2"})
    assert order[-1] == ".ingest"
    assert sorted(order) == [".ingest", ".keep", "a", "items.jsonl", "report.json"]


def test_publish_rejects_names_that_are_not_plain(tmp_path: Path) -> None:
    bad = ("", ".", "..", "a/b/c/d", "../x", "/abs", "sub/..", "sub/", "a/./b", "nul\0")
    for name in bad:
        with pytest.raises(ValueError, match="plain"):
            stage(tmp_path / "out", {"report.json": b"{}", name: b"x"})
    assert list(tmp_path.iterdir()) == []


def test_files_in_folders_land_with_the_rest(tmp_path: Path) -> None:
    """Files two folders deep (the page cache's entries) are published with the rest, and
    the marker lists them by their paths."""
    files = NEW | {f"report/p{n}.html": f"page {n}".encode() for n in range(3)}
    files |= {"state/pages/ab.zst": b"entry", "state/records.zst": b"records"}
    stage(tmp_path / "out", files)
    assert snapshot(tmp_path / "out") == files
    assert leftovers(tmp_path) == []


def test_an_out_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_bytes(b"not a folder")
    with pytest.raises(UsageError, match="exists and is not a folder") as info:
        publish(out, NEW)
    assert str(out) in str(info.value)
    assert out.read_bytes() == b"not a folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_renameat2_exchange_swaps(tmp_path: Path) -> None:
    assert publishing._RENAMEAT2 is not None  # Linux: the swap is one exchange
    a, b = write_src(tmp_path / "a", {"x": b"1"}), write_src(tmp_path / "b", {"y": b"2"})
    assert publishing._swap(a, b) == a
    assert (a / "y").read_bytes() == b"2" and (b / "x").read_bytes() == b"1"
    assert sorted(p.name for p in a.iterdir()) == ["y"] and sorted(os.listdir(b)) == ["x"]


def test_fallback_without_renameat2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(publishing, "_RENAMEAT2", None)
    out = make_old(tmp_path)
    publish(out, NEW)
    assert snapshot(out) == NEW | KEEP
    assert leftovers(tmp_path) == []


def test_an_interrupted_fallback_is_rolled_back(tmp_path: Path) -> None:
    """A crash between the fallback's two renames: no folder, the old set in .out.old-PID.
    The next run moves it back in place first (its keep file is carried on)."""
    pid = dead_pid()
    old_dir = make_old(tmp_path).rename(side_path(tmp_path / "out", "old", pid))
    write_src(side_path(tmp_path / "out", "staging", pid), NEW)
    publish(tmp_path / "out", {"report.json": b"{}"})
    assert snapshot(tmp_path / "out") == {"report.json": b"{}"} | KEEP
    assert not old_dir.exists() and leftovers(tmp_path) == []


def test_stale_dirs_of_live_pids_only_removed_under_lock(tmp_path: Path) -> None:
    out = make_old(tmp_path)
    alive = side_path(out, "staging", os.getppid())
    dead = side_path(out, "staging", dead_pid())
    for folder in (alive, dead):
        write_src(folder, {"junk": b"partial"})
    stage(out, NEW)  # without the lock: only what a dead process left goes
    assert leftovers(tmp_path) == [alive.name]
    publish(out, NEW)  # with it: all
    assert leftovers(tmp_path) == []
    assert snapshot(out) == NEW


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
@pytest.mark.parametrize("point", BEFORE_SWAP)
def test_injected_error_before_swap_leaves_old_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, action: str, code: int
) -> None:
    out = make_old(tmp_path)
    monkeypatch.setenv(FAULT_ENV, f"{point}:{action}")
    with pytest.raises(PublishError) as info:
        publish(out, NEW)
    message = str(info.value)
    assert message.startswith(f"cannot publish output folder {str(out)!r}: ")
    assert os.strerror(code) in message and "\n" not in message
    assert isinstance(info.value.__cause__, OSError) and info.value.__cause__.errno == code
    assert snapshot(out) == OLD | KEEP
    assert leftovers(tmp_path) == []


def test_injected_error_after_publish_is_cleaned_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removing the old set once the new one is live is best effort: a failure there fails
    nothing, and what is left goes with the next publish."""
    out = make_old(tmp_path)
    monkeypatch.setenv(FAULT_ENV, "after_publish:eio")
    staging = Staging(out)
    for name, data in NEW.items():
        staging.write(name, data)
    staging.publish(MARKER)
    assert snapshot(out) == NEW
    assert leftovers(tmp_path) == [f".out.staging-{os.getpid()}"]
    monkeypatch.delenv(FAULT_ENV)
    publish(out, NEW)
    assert leftovers(tmp_path) == []


def test_unknown_fault_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = make_old(tmp_path)
    monkeypatch.setenv(FAULT_ENV, "after_fsync:explode")
    publish(out, NEW)
    assert snapshot(out) == NEW | KEEP


def test_real_write_error_efbig(tmp_path: Path) -> None:
    out = make_old(tmp_path)
    src = write_src(tmp_path / "src", {"items.jsonl": b"x" * 100_000, "report.json": b"{}"})
    result = run_child("publish", str(src), str(out), "50000")
    assert result.returncode == 3, result.stderr
    assert result.stderr.startswith(f"cannot publish output folder {str(out)!r}: ")
    assert os.strerror(errno.EFBIG) in result.stderr and "items.jsonl" in result.stderr
    assert snapshot(out) == OLD | KEEP
    assert leftovers(tmp_path) == []


def test_a_failure_in_a_files_pieces_fails_the_publish_and_leaves_the_old_set(
    tmp_path: Path,
) -> None:
    """A file is written as its pieces come (the records are made as they are written):
    an error making one fails the publish, and the set is discarded."""

    def pieces() -> Iterator[bytes]:
        yield b"x" * 10
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    out = make_old(tmp_path)
    with Folder(out) as folder, pytest.raises(PublishError, match=os.strerror(errno.ENOSPC)):
        staging = folder.staging()
        try:
            staging.write("items.jsonl", b"1\n")
            staging.write("state/records.zst", pieces())
            staging.publish(MARKER)
        finally:
            staging.discard()
    assert snapshot(out) == OLD | KEEP
    assert leftovers(tmp_path) == []


# --- crashes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fresh", [False, True], ids=["replace", "create"])
@pytest.mark.parametrize("point", FAULT_POINTS)
def test_kill_at_fault_point(tmp_path: Path, point: str, fresh: bool) -> None:
    out = tmp_path / "out" if fresh else make_old(tmp_path)
    before = None if fresh else OLD | KEEP
    src = write_src(tmp_path / "src", NEW)
    result = run_child("publish", str(src), str(out), fault=f"{point}:kill")
    assert result.returncode == 137, result.stderr
    after = snapshot(out) if out.exists() else None
    assert after == ((NEW if fresh else NEW | KEEP) if point in AFTER_SWAP else before)
    publish(out, {"report.json": b"{}"})
    assert snapshot(out) == ({} if fresh else KEEP) | {"report.json": b"{}"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "src"]


@pytest.mark.parametrize("kills", [8, pytest.param(20, marks=pytest.mark.slow)])
def test_sigkill_at_random_moments(tmp_path: Path, kills: int) -> None:
    rng = random.Random(20261129)
    old = {f"report/part{i}.html": rng.randbytes(1 << 18) for i in range(12)}
    old["report.json"] = b"o"
    new = {f"report/part{i}.html": rng.randbytes(1 << 18) for i in range(8, 20)}
    new["report.json"] = b"n"
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
        with pytest.raises(OutputLocked) as info, Folder(out):
            pass
        message = str(info.value)
        assert message.startswith(f"output folder {str(out)!r} is in use by another ingest run")
        assert f"(pid {holder.pid}, started 20" in message and "\n" not in message
    finally:
        holder.kill()
        holder.wait(timeout=30)
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()
    with Folder(out) as folder:
        assert folder.lock_path == tmp_path / ".out.lock"
        assert json.loads(folder.lock_path.read_text())["pid"] == os.getpid()
    assert not out.exists()  # the lock lives next to the folder, not inside it
    assert not folder.lock_path.exists()  # and is gone once released


def test_a_lock_file_removed_under_a_waiter_is_not_locked_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file a waiter opened was removed by the holder's release: the waiter must not
    lock that orphan inode while another process holds a lock on the new file."""
    out = tmp_path / "out"
    lock = tmp_path / ".out.lock"
    orphan_fd = os.open(lock, os.O_RDWR | os.O_CREAT)  # opened early
    os.unlink(lock)  # a holder released and removed it
    real_open, orphans = os.open, [orphan_fd]

    def opening(path: object, *args: object, **kw: object) -> int:
        if Path(str(path)) == lock and orphans:
            return orphans.pop()
        return real_open(path, *args, **kw)  # type: ignore[arg-type]

    with Folder(out):  # a third run locks the new file
        monkeypatch.setattr(os, "open", opening)
        with pytest.raises(OutputLocked), Folder(out):
            pass  # the orphan flocks fine, but is no longer the lock file
        monkeypatch.undo()
        assert orphans == []
    assert not lock.exists()


def test_lock_is_exclusive_within_a_process_and_reusable(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with Folder(out) as folder:
        with pytest.raises(OutputLocked, match=f"pid {os.getpid()}"), Folder(out):
            pass
        stage(folder.target, NEW)
    with Folder(out):
        pass
    assert snapshot(out) == NEW


# --- files carried over -----------------------------------------------------------------------


def test_a_carried_over_file_is_linked_or_copied_where_it_cannot_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of the previous set is hard-linked into the new one; across file systems
    (EXDEV) it is copied, in pieces, with the same bytes; the marker lists it either way."""
    source = tmp_path / "entry"
    data = os.urandom(3 << 20) + b"tail"  # more than one piece
    source.write_bytes(data)
    listed = FileSum(len(data), xxh3_128_hexdigest(data))
    name = "state/pages/ab.zst"

    def carry(out: Path) -> Path:
        staging = Staging(out)
        staging.link(name, source, listed)
        staging.publish(MARKER)
        assert snapshot(out) == {name: data}
        return out / name

    assert carry(tmp_path / "linked").stat().st_ino == source.stat().st_ino

    def no_link(*_: object, **__: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_link)
    assert carry(tmp_path / "copied").stat().st_ino != source.stat().st_ino


def test_pieces_of_any_size_land_in_order(tmp_path: Path) -> None:
    """Small pieces and pieces larger than the write buffer, mixed: the file is all of
    them, in order, and its size and digest are those of all of them."""
    big = bytes(range(256)) * 4099  # over a megabyte, not a whole number of buffers
    pieces = [b"a" * 10, big, b"b" * 20, b"c" * (1 << 20), b"", big, b"d"]
    whole = b"".join(pieces)
    summed = FileSum(len(whole), xxh3_128_hexdigest(whole))
    assert write_file(tmp_path / "f", iter(pieces)) == summed
    assert (tmp_path / "f").read_bytes() == whole
    write_file(tmp_path / "g", big)
    assert (tmp_path / "g").read_bytes() == big
    with pytest.raises(FileExistsError):  # never over a file already there
        write_file(tmp_path / "g", b"")
