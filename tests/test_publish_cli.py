"""Atomic publish, exclusive runs, full disk and SIGTERM through ``ingest run`` (BAD_INPUTS
H1, H2, H3, H5; P4, P6, P12).

The previous output is a run on the topic page alone; the new one a run on all seeds that
builds on it, so the two differ in every file but the (empty) rejects and the topic page's
page cache entry. After any fault the output folder must hold exactly one of them, whole
(every file, state included, byte for byte and as its marker lists it; report.json
without its ``timing``), and the next normal run must succeed and leave nothing behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from xxhash import xxh3_128_hexdigest

from conftest import ROOT, SEEDS, TOPIC_PAGE, outliving, proc_state
from ingest.cli import main
from ingest.publish import folder as publishing
from ingest.publish.signals import AFTER_SWAP, BEFORE_SWAP, FAULT_ENV, FAULT_POINTS, Stops

CHILD = Path(__file__).with_name("_write_child.py")
PRE_SWAP = BEFORE_SWAP
Snapshot = dict[str, object]


def snapshot(folder: Path) -> Snapshot:
    """Every file under ``folder``: bytes, except report.json parsed without ``timing``
    and the marker parsed without report.json's sum (the timing is in it). The folder
    must be a whole publish: its marker lists every other file, with its size and digest."""
    files: dict[str, bytes] = {}
    for p in sorted(folder.rglob("*")):
        assert not p.is_symlink(), p
        if not p.is_dir():
            files[p.relative_to(folder).as_posix()] = p.read_bytes()
    marker = json.loads(files[".ingest"])
    assert marker["files"] == {
        name: {"size": len(data), "xxh3_128": xxh3_128_hexdigest(data)}
        for name, data in files.items()
        if name != ".ingest"
    }, folder
    del marker["files"]["report.json"]
    report = json.loads(files["report.json"])
    assert isinstance(report.pop("timing"), dict)
    return {**files, ".ingest": marker, "report.json": report}


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if any(k in p.name for k in _SIDE))


#: What a run leaves beside the folder while it works: its staging, the old set.
_SIDE = (".staging-", ".old-")


def env(fault: str | None = None) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    e["PYTHONDONTWRITEBYTECODE"] = "1"
    if fault is not None:
        e[FAULT_ENV] = fault
    return e


def start(out: Path, fault: str | None = None, *args: str, **kw: object) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "ingest", "run", str(SEEDS), "--out", str(out), "--quiet"]
    return subprocess.Popen(
        [*cmd, *args],
        cwd=ROOT,
        env=env(fault),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,  # type: ignore[call-overload]
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def run_in_process(out: Path) -> int:
    return main(["run", str(SEEDS), "--out", str(out), "--quiet"])


@pytest.fixture(scope="module")
def refs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Snapshot, Snapshot]:
    base = tmp_path_factory.mktemp("refs")
    assert main(["run", str(TOPIC_PAGE), "--out", str(base / "prev"), "--quiet"]) == 0
    shutil.copytree(base / "prev", base / "new")
    before = inodes(base / "new")
    assert run_in_process(base / "new") == 0
    prev, new = snapshot(base / "prev"), snapshot(base / "new")
    # the topic page's cache entry is carried over (a hard link of the previous one); all
    # else is written anew, the state's records too, and the empty rejects byte for byte
    entry = f"state/pages/{hashlib.sha256(TOPIC_PAGE.read_bytes()).hexdigest()}.zst"
    assert [k for k in prev if prev[k] == new.get(k)] == ["rejects.jsonl", entry]
    after = inodes(base / "new")
    assert [k for k in after if after[k] == before.get(k)] == [entry]
    assert "state/records.zst" in after and len(new) > len(prev)
    return base / "prev", prev, new


def inodes(folder: Path) -> dict[str, int]:
    return {
        p.relative_to(folder).as_posix(): p.stat().st_ino
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def previous_output(refs: tuple[Path, Snapshot, Snapshot], folder: Path) -> Path:
    folder.mkdir()
    out = folder / "out"
    shutil.copytree(refs[0], out)
    return out


def core(snap: Snapshot) -> Snapshot:
    """The records a site loads: the same whatever publish the run built on."""
    return {k: snap[k] for k in ("items.jsonl", "topics.jsonl", "rejects.jsonl")}


def assert_recovers(out: Path, new: Snapshot) -> None:
    """The next run succeeds (on whichever whole publish the fault left: it publishes the
    seeds' records, or finds them already live), and nothing is left beside the folder."""
    assert run_in_process(out) == 0
    after = snapshot(out)
    assert core(after) == core(new) and "state/records.zst" in after
    assert leftovers(out.parent) == []


# --------------------------------------------------------------------------- H1: kill


def test_kill_at_every_fault_point(tmp_path: Path, refs: tuple[Path, Snapshot, Snapshot]) -> None:
    _, prev, new = refs
    cases = [(p, True) for p in FAULT_POINTS] + [
        (p, False) for p in ("after_stage_write", "after_publish")
    ]
    procs = {}
    for point, replace in cases:
        folder = tmp_path / f"{point}-{'replace' if replace else 'create'}"
        out = previous_output(refs, folder) if replace else folder / "out"
        folder.mkdir(exist_ok=True)
        procs[point, replace] = (out, start(out, f"{point}:kill"))
    for (point, replace), (out, proc) in procs.items():
        code, err = finish(proc)
        assert (code, err) == (137, ""), (point, replace)
        if point in AFTER_SWAP and replace:
            assert snapshot(out) == new, point
        elif point in AFTER_SWAP:
            assert core(snapshot(out)) == core(new), point
        elif replace:
            assert snapshot(out) == prev, point
        else:
            assert not out.exists(), point
        assert_recovers(out, new)


# --------------------------------------------------------------------------- H2: full disk


@pytest.mark.parametrize("point", PRE_SWAP)
def test_injected_enospc_exits_2_and_keeps_the_previous_output(
    tmp_path: Path,
    refs: tuple[Path, Snapshot, Snapshot],
    point: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, prev, new = refs
    out = previous_output(refs, tmp_path / "w")
    monkeypatch.setenv(FAULT_ENV, f"{point}:enospc")
    assert run_in_process(out) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ingest: error: cannot publish output folder {str(out)!r}: ")
    assert "No space left on device" in err and err.count("\n") == 1
    assert snapshot(out) == prev and leftovers(out.parent) == []
    monkeypatch.delenv(FAULT_ENV)
    assert_recovers(out, new)


@pytest.mark.parametrize(
    "engine", [("--jobs", "1"), ("--jobs", "2"), ("--engine", "dask", "--jobs", "2")]
)
def test_a_disk_full_of_the_pages_cache_entries_exits_2_in_one_line(
    tmp_path: Path, engine: tuple[str, ...]
) -> None:
    """A disk that fills while the pages' cache entries are written (by the run, by its
    workers, by Dask's: a 8 kB tmpfs, in a mount namespace of the run's own) is the run's
    end in one line, exit 2 — it was a worker's traceback — and leaves nothing there."""
    disk = tmp_path / "disk"
    disk.mkdir()
    run = [sys.executable, "-m", "ingest", "run", str(SEEDS), "--out", f"{disk}/out", "--quiet"]
    script = 'mount -t tmpfs -o size=8k none "$0" && "$@"; code=$?; ls -A "$0"; exit $code'
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(disk), *run,
         *engine],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    said = "".join(line for line in proc.stderr.splitlines(True) if " in " not in line[-9:])
    assert proc.returncode == 2, proc.stderr
    assert (
        said
        == (f"ingest: error: cannot write a page's cache entry in '{disk}/.out.staging-")
        + said.split(".out.staging-")[1]
    ), proc.stderr
    assert said.endswith("': No space left on device\n") and said.count("\n") == 1
    assert proc.stdout == ""  # nothing left on the disk


def test_enospc_after_publish_keeps_the_new_output(
    tmp_path: Path,
    refs: tuple[Path, Snapshot, Snapshot],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A failure removing the previous set, once the new one is live, fails nothing:
    removing it is best effort (whatever is left goes with the next run)."""
    _, _, new = refs
    out = previous_output(refs, tmp_path / "w")
    monkeypatch.setenv(FAULT_ENV, "after_publish:enospc")
    assert run_in_process(out) == 0
    assert capsys.readouterr().err == ""
    assert snapshot(out) == new
    monkeypatch.delenv(FAULT_ENV)
    assert_recovers(out, new)


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes then fail with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))


def test_real_file_size_limit(tmp_path: Path, refs: tuple[Path, Snapshot, Snapshot]) -> None:
    _, prev, new = refs
    out = previous_output(refs, tmp_path / "w")
    code, err = finish(start(out, None, preexec_fn=_limit_file_size))
    assert code == 2
    assert err.startswith(f"ingest: error: cannot publish output folder {str(out)!r}: ")
    assert "File too large (at " in err and "items.jsonl" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert snapshot(out) == prev and leftovers(out.parent) == []
    assert_recovers(out, new)


# --------------------------------------------------------------------------- H3: lock


def test_second_run_on_a_locked_output_fails_fast(
    tmp_path: Path, refs: tuple[Path, Snapshot, Snapshot]
) -> None:
    _, prev, new = refs
    out = previous_output(refs, tmp_path / "w")
    child_env = env()
    child_env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT / "src"), child_env.get("PYTHONPATH")])
    )
    holder = subprocess.Popen(
        [sys.executable, str(CHILD), "lock", str(out)],
        env=child_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        began = time.monotonic()
        code, err = finish(start(out))
        assert time.monotonic() - began < 30  # it does not wait for the lock
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
    assert code == 2
    assert err.startswith(f"ingest: error: output folder {str(out)!r} is in use by another ")
    assert f"(pid {holder.pid}, started 20" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert snapshot(out) == prev and leftovers(out.parent) == []
    assert_recovers(out, new)


# --------------------------------------------------------------------------- H5: SIGTERM


TERMINATED = (-signal.SIGTERM, 128 + signal.SIGTERM)


@pytest.mark.parametrize("action", ["term", pytest.param("int", marks=pytest.mark.slow)])
def test_a_signal_at_every_point_says_truly_which_publish_is_live(
    tmp_path: Path, refs: tuple[Path, Snapshot, Snapshot], action: str
) -> None:
    """SIGTERM (143) or SIGINT (130) at each fault point: before the swap the previous
    publish stays and the message says so; from the swap on the new one is live, the
    message says that, and the previous set is not left beside the folder (the signal is
    answered once it is gone)."""
    _, prev, new = refs
    procs = {}
    for point in FAULT_POINTS:
        out = previous_output(refs, tmp_path / point)
        procs[point] = (out, start(out, f"{point}:{action}"))
    what, code = ("terminated", 143) if action == "term" else ("interrupted", 130)
    for point, (out, proc) in procs.items():
        got, err = finish(proc)
        if point in AFTER_SWAP:
            said = f"ingest: {what} after publishing: the new publish in {str(out)!r} is live\n"
        else:
            said = f"ingest: {what} before publishing: {str(out)!r} is left as it was\n"
        assert (got, err) == (code, said), point
        assert snapshot(out) == (new if point in AFTER_SWAP else prev), point
        assert leftovers(out.parent) == [], point
        assert_recovers(out, new)


@pytest.mark.parametrize("point", ["after_stage_write", "after_swap", "after_cleanup"])
def test_python_s_own_ctrl_c_is_told_as_truly(
    tmp_path: Path,
    refs: tuple[Path, Snapshot, Snapshot],
    point: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Where Python's own SIGINT handler is in place (before ingest's is installed, or
    after it is taken back), the KeyboardInterrupt it raises is told as truly."""
    _, prev, new = refs
    out = previous_output(refs, tmp_path / "w")
    monkeypatch.setattr(Stops, "installed", lambda self: contextlib.nullcontext(self))
    monkeypatch.setenv(FAULT_ENV, f"{point}:int")
    ours = signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever ran before
    try:
        assert run_in_process(out) == 130
    finally:
        signal.signal(signal.SIGINT, ours)
    live = point != "after_stage_write"
    said = (
        f"after publishing: the new publish in {str(out)!r} is live"
        if live
        else f"before publishing: {str(out)!r} is left as it was"
    )
    assert capsys.readouterr().err == f"ingest: interrupted {said}\n"
    assert snapshot(out) == (new if live else prev) and leftovers(out.parent) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["term", "int"])
def test_a_signal_the_moment_the_swap_is_done_is_told_as_truly(
    tmp_path: Path,
    refs: tuple[Path, Snapshot, Snapshot],
    sig: signal.Signals,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The swap and the run's learning that the new publish is live are one step no signal
    cuts: a signal that arrives the moment the new set is in place is answered once the
    previous set is gone, and says the new publish is live."""
    _, _, new = refs
    out = previous_output(refs, tmp_path / "w")
    swap = publishing._swap

    def swap_then_signal(staging: Path, target: Path) -> Path | None:
        old = swap(staging, target)
        os.kill(os.getpid(), sig)
        return old

    monkeypatch.setattr(publishing, "_swap", swap_then_signal)
    assert run_in_process(out) == 128 + sig
    what = "terminated" if sig == signal.SIGTERM else "interrupted"
    said = f"ingest: {what} after publishing: the new publish in {str(out)!r} is live\n"
    assert capsys.readouterr().err == said
    assert snapshot(out) == new and leftovers(out.parent) == []


def test_what_a_kill_after_the_swap_leaves_goes_with_the_next_run_even_a_refused_one(
    tmp_path: Path, refs: tuple[Path, Snapshot, Snapshot]
) -> None:
    """A SIGKILL between the swap and the removal leaves the previous set beside the
    folder; the next run removes it as it starts, whatever it then does (here --strict
    refuses it: nothing is published, the refused output goes beside as it should)."""
    _, _, new = refs
    out = previous_output(refs, tmp_path / "w")
    assert finish(start(out, "after_swap:kill")) == (137, "")
    assert snapshot(out) == new and any(".staging-" in n for n in leftovers(out.parent))
    bad = tmp_path / "bad"
    shutil.copytree(SEEDS, bad)
    (bad / "empty.txt").write_bytes(b"")
    assert main(["run", str(bad), "--out", str(out), "--quiet", "--strict"]) == 1
    assert snapshot(out) == new and leftovers(out.parent) == []
    assert sorted(p.name for p in out.parent.iterdir()) == ["out", "out.refused"]


@pytest.mark.parametrize("point", ["after_stage_write", "after_manifest_before_publish"])
def test_sigterm_turned_into_an_exception_leaves_no_staging(
    tmp_path: Path,
    refs: tuple[Path, Snapshot, Snapshot],
    point: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ingest's own SIGTERM handler raises, so a graceful stop aborts the publish: the
    staging folder goes at once, not at the next run, and the output is untouched."""
    _, prev, new = refs
    out = previous_output(refs, tmp_path / "w")
    monkeypatch.setenv(FAULT_ENV, f"{point}:term")
    assert run_in_process(out) == 143
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored after the run
    assert capsys.readouterr().err.count("\n") == 1
    assert snapshot(out) == prev and leftovers(out.parent) == []
    monkeypatch.delenv(FAULT_ENV)
    assert_recovers(out, new)


def test_sigterm_while_parsing_in_worker_processes(
    tmp_path: Path, refs: tuple[Path, Snapshot, Snapshot]
) -> None:
    """SIGTERM while the pages are parsed in the worker processes of --jobs: the run says
    the previous publish is left, leaves it, and no worker outlives it."""
    _, prev, new = refs
    out = previous_output(refs, tmp_path / "w")
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    page = TOPIC_PAGE.read_bytes()
    for i in range(600):  # other bytes each (none in the page cache): all are parsed
        (dumps / f"t{i:04}.txt").write_bytes(page + b"\n" * (i % 7) + b" " * (i // 7))
    cmd = [sys.executable, "-m", "ingest", "run", str(dumps), "--out", str(out), "--quiet"]
    proc = subprocess.Popen(
        [*cmd, "--jobs", "2"], cwd=ROOT, env=env(), stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while len(workers := children(proc.pid)) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, "the run finished before its workers started"
        time.sleep(0.01)
    time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be stopped"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode in TERMINATED
    assert err == f"ingest: terminated before publishing: {str(out)!r} is left as it was\n"
    assert outliving(workers) == []
    assert snapshot(out) == prev and leftovers(out.parent) == []
    assert_recovers(out, new)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            state = proc_state(int(entry.name))
            if state is not None and state[1] == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("moments", [(1, 2, 5, 6), pytest.param(range(8), marks=pytest.mark.slow)])
def test_a_signal_at_any_moment_of_a_run_says_truly_which_publish_is_live(
    tmp_path: Path, refs: tuple[Path, Snapshot, Snapshot], moments: Iterable[int]
) -> None:
    """SIGTERM and SIGINT at moments spread over a run, from the lock taken to past its
    end: whatever the folder holds afterwards (the previous publish or the new one) is
    what the one line said, and nothing is left beside it."""
    _, prev, new = refs

    def locked(out: Path) -> tuple[subprocess.Popen[str], float]:
        proc = start(out)
        lock = out.parent / f".{out.name}.lock"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(OSError):
                if f'"pid": {proc.pid}' in lock.read_text():
                    break
            time.sleep(0.005)
        return proc, time.monotonic()

    proc, began = locked(previous_output(refs, tmp_path / "timed"))
    assert finish(proc) == (0, "")
    rest = time.monotonic() - began  # from the lock taken to the end
    for k in moments:  # odd: SIGTERM, even: SIGINT
        out = previous_output(refs, tmp_path / f"at{k}")
        proc, _ = locked(out)
        time.sleep(rest * k / 6)
        sig = signal.SIGTERM if k % 2 else signal.SIGINT
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        code, err = finish(proc)
        what = "terminated" if sig == signal.SIGTERM else "interrupted"
        after = f"ingest: {what} after publishing: the new publish in {str(out)!r} is live\n"
        if code == 0 or err == after:
            live = new
        else:
            assert err == f"ingest: {what} before publishing: {str(out)!r} is left as it was\n"
            live = prev
        assert code in (0, 128 + sig), (k, code, err)
        assert snapshot(out) == live, (k, err)
        assert leftovers(out.parent) == [], k


AT_EXIT = """
import atexit, os, signal, sys
from ingest.cli import entry
sig = getattr(signal, sys.argv.pop(1))
atexit.register(lambda: os.kill(os.getpid(), sig))
entry()
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_as_the_process_exits_leaves_the_commands_exit_code(
    tmp_path: Path, refs: tuple[Path, Snapshot, Snapshot], sig: str
) -> None:
    """A signal after the command has said how it ended (here: as the interpreter exits)
    cannot turn a published run into a silent death by that signal."""
    _, _, new = refs
    out = previous_output(refs, tmp_path / "run")
    args = ["run", str(SEEDS), "--out", str(out), "--quiet"]
    proc = subprocess.run(
        [sys.executable, "-c", AT_EXIT, sig, *args],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert snapshot(out) == new
