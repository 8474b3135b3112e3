"""The ``--jobs`` workers, through the command line: whatever stops a run (a worker killed,
the run killed outright, Ctrl-C, SIGTERM), at whatever moment of the workers' lives (being
forked, parsing, sending their results), it ends at once: one line, nothing published, no
worker process left behind.

The workers are the run's children, forked at its first pool step (the parse); they are
found as such in /proc (Linux), and so is what each is doing. A run that hangs fails the
test within seconds rather than wait on it: the standard process pool can wait for ever on
a worker killed while it was writing a result (the rest of the message never comes).
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from conftest import ITEM_PAGE, TOPIC_LIST, TOPIC_PAGE, outliving, running
from ingest.cli import main

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").exists(), reason="finds the workers in /proc (Linux)"
)

#: What a run stopped by a lost worker says (exit 2).
LOST = (
    "ingest: error: a worker process of --jobs stopped before it finished (killed, or out of "
    "memory?); nothing was published\n"
)
#: Pages enough for the parse to take a while (about a second on two cores), each chunk of
#: them a result of more than a pipe holds.
PAGES = 600
#: How long a stopped run may take to end before it counts as hanging.
ENDS_WITHIN = 20

Moment = Callable[[subprocess.Popen[bytes]], list[int]]


#: The lines a run says of itself when stderr is no terminal: one as each phase ends, and
#: one with the total.
LOG_LINE = re.compile(
    r"ingest: (?:(?:read|resolved|wrote|published) .+ |done )in [0-9]+\.[0-9]{2} s\n"
)


def _without_log(err: str) -> str:
    """What a run said on stderr besides its log of the phases."""
    return LOG_LINE.sub("", err)


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started, by any of its threads, that are still there."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            found += map(int, (task / "children").read_text().split())
    return found


def _proc(pid: int, name: str) -> str:
    try:
        return Path(f"/proc/{pid}/{name}").read_text()
    except OSError:
        return ""


def _handled(pid: int) -> tuple[set[int], set[int]]:
    """The signals ``pid`` ignores, and those it has a handler of its own for (its SigIgn
    and SigCgt masks); a signal in neither does what it does to any process."""
    masks = dict(line.split(":\t") for line in _proc(pid, "status").splitlines() if "\t" in line)
    ignored, caught = (int(masks.get(k, "0"), 16) for k in ("SigIgn", "SigCgt"))
    return (
        {n for n in range(1, 65) if ignored >> (n - 1) & 1},
        {n for n in range(1, 65) if caught >> (n - 1) & 1},
    )


def _cpu_ticks(pid: int) -> int:
    """The clock ticks ``pid`` has run for, user and system."""
    fields = _proc(pid, "stat").rsplit(")", 1)[-1].split()
    return int(fields[11]) + int(fields[12]) if len(fields) > 12 else 0


def _waiting(
    proc: subprocess.Popen[bytes], ready: Callable[[list[int]], bool], pause: float = 0.0005
) -> list[int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        workers = _children(proc.pid)
        if ready(workers):
            return workers
        time.sleep(pause)
    proc.kill()
    pytest.fail(f"the workers never came to that moment (exit {proc.wait()})")


def forking(proc: subprocess.Popen[bytes]) -> list[int]:
    """The first worker, as soon as it is there: the run is forking the next one, or
    starting the pool's threads."""
    return _waiting(proc, lambda workers: len(workers) >= 1, pause=0)  # it is brief


def parsing(proc: subprocess.Popen[bytes]) -> list[int]:
    """Both workers, once each has parsed for a few clock ticks: the run is waiting for
    their chunks."""
    return _waiting(proc, lambda ws: len(ws) == 2 and all(_cpu_ticks(w) >= 3 for w in ws))


def parsed(proc: subprocess.Popen[bytes]) -> list[int]:
    """Both workers, the read done (its line said, to its end): the run resolves, its pool
    kept for what it hands the workers later (steps apart, the report's pages)."""
    if not _said(proc, "ingest: read ", 60):
        pytest.fail(f"the run did not finish its read (exit {proc.poll()}): {_read[proc.pid]!r}")
    return _waiting(proc, lambda workers: len(workers) == 2)


def sending(proc: subprocess.Popen[bytes]) -> list[int]:
    """Both workers, the first of them writing its chunk's results (into the file it
    leaves them in for the run: a result too large to cross the pool's pipe whole)."""

    def writing(pid: int) -> bool:
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            with contextlib.suppress(OSError):
                if ".results-" in os.readlink(fd):
                    return True
        return False

    def one_sends(workers: list[int]) -> bool:
        workers.sort(key=lambda w: not writing(w))
        return len(workers) == 2 and writing(workers[0])

    return _waiting(proc, one_sends, pause=0)


#: What each run's stderr said so far (by its pid), as :func:`_said` read it.
_read: dict[int, bytes] = {}


def _said(proc: subprocess.Popen[bytes], prefix: str, seconds: float) -> bool:
    """Has the run said a line that starts with ``prefix`` (the whole line, to its end)? Its
    stderr read as it comes, for ``seconds`` at most (False: it ended, or the time is up,
    before it did)."""
    assert proc.stderr is not None
    fd, deadline = proc.stderr.fileno(), time.monotonic() + seconds
    while True:
        text = _read.get(proc.pid, b"")
        if any(line.startswith(prefix.encode()) for line in text.split(b"\n")[:-1]):
            return True
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return False
        chunk = os.read(fd, 65536)
        if not chunk:
            return False
        _read[proc.pid] = text + chunk


def _stderr(proc: subprocess.Popen[bytes]) -> str:
    """All the run said on stderr, to its end (every holder of it gone)."""
    assert proc.stderr is not None
    text = _read.pop(proc.pid, b"")
    while chunk := os.read(proc.stderr.fileno(), 65536):
        text += chunk
    return text.decode()


def _dumps(folder: Path) -> Path:
    folder.mkdir()
    page = TOPIC_PAGE.read_bytes()
    for i in range(PAGES):
        (folder / f"t{i:04}.txt").write_bytes(page)
    return folder


def _running(dumps: Path, out: Path) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """``ingest run DUMPS --out OUT --jobs 2``, started as :func:`conftest.running` does."""
    return running("run", str(dumps), "--out", str(out), "--jobs", "2")


def _ended(proc: subprocess.Popen[bytes], workers: list[int]) -> tuple[int, str, list[int]]:
    """The run's exit code and stderr once it ends, and those of its workers (from
    ``workers`` on) still there when it did, killed now (a run that does not end in time
    fails the test)."""
    seen = set(workers)
    deadline = time.monotonic() + ENDS_WITHIN
    while proc.poll() is None and time.monotonic() < deadline:
        seen.update(_children(proc.pid))  # any forked meanwhile
        time.sleep(0.001)
    if proc.poll() is None:
        pytest.fail(f"the run hangs: still running {ENDS_WITHIN} s after it was stopped")
    left = outliving(sorted(seen), 0)
    return proc.returncode, _stderr(proc), left  # (no worker holds its stderr now)


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("moment", [parsing, sending])
def test_a_worker_killed_during_a_run_exits_2_and_publishes_nothing(
    tmp_path: Path, moment: Moment
) -> None:
    """A worker killed (SIGKILL: the out-of-memory killer) mid-parse, or while it sends
    its results, is one line, exit 2, at once; the other worker is gone with the run, and
    nothing is left beside the folder."""
    out = tmp_path / "out"
    with _running(_dumps(tmp_path / "dumps"), out) as proc:
        workers = moment(proc)
        os.kill(workers[0], signal.SIGKILL)
        code, err, left = _ended(proc, workers)
        assert (code, err) == (2, LOST)
        assert not left, "a worker outlived the run"
        assert not out.exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["dumps"]  # no staging, no lock


def test_the_workers_leave_ctrl_c_to_the_run_and_die_of_sigterm(tmp_path: Path) -> None:
    """Each worker ignores Ctrl-C (the terminal sends it to the whole process group: the
    run alone answers it, stopping its workers) and keeps no handler of SIGTERM (forked
    from the run, it would answer it as the run does, by unwinding, where it should die)."""
    with _running(_dumps(tmp_path / "dumps"), tmp_path / "out") as proc:
        workers = parsing(proc)
        for worker in workers:
            ignored, caught = _handled(worker)
            assert signal.SIGINT in ignored, worker
            assert signal.SIGTERM not in ignored | caught, worker
        assert signal.SIGINT in _handled(proc.pid)[1]  # the run's own answer
        os.killpg(proc.pid, signal.SIGKILL)


def test_a_worker_terminated_between_pool_steps_dies_quietly(tmp_path: Path) -> None:
    """A worker given SIGTERM after the read dies of it, as any process does, without a
    word (never the run's own answer to SIGTERM, which is the run's to give). The run then
    goes on and publishes (the worker's work was done), or, needing its workers again,
    says it lost one, in one line, and publishes nothing: never a traceback."""
    out = tmp_path / "out"
    with _running(_dumps(tmp_path / "dumps"), out) as proc:
        workers = parsed(proc)
        os.kill(workers[0], signal.SIGTERM)
        assert not outliving(workers[:1]), "the worker outlived its SIGTERM"
        code, err, left = _ended(proc, workers)
        assert (code, _without_log(err), left) in ((0, "", []), (2, LOST, [])), err
        assert (out / "items.jsonl").exists() == (code == 0)


@pytest.mark.parametrize("moment", [parsing, sending])
def test_the_workers_die_with_a_run_killed_outright(tmp_path: Path, moment: Moment) -> None:
    """The run killed outright (kill -9, as the out-of-memory killer kills the largest
    process) while its workers parse, or while one of them is blocked sending its results,
    takes them with it: one left waiting for work, or for a reader, for ever would hold the
    run's stderr open (a pipeline that never ends) and its share of the memory."""
    dumps, out = _dumps(tmp_path / "dumps"), tmp_path / "out"
    with _running(dumps, out) as proc:
        workers = moment(proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=ENDS_WITHIN)
        assert not outliving(workers), f"workers {workers} outlived the run"  # (killed now)
        _stderr(proc)  # its stderr ends: nothing else holds it
    # what its workers left is beside the folder, never in /tmp, and the next run removes it
    assert [p.name for p in tmp_path.iterdir() if ".results-" in p.name] == [
        f".out.results-{proc.pid}"
    ]
    assert main(["run", str(dumps), "--out", str(out), "--quiet"]) == 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


#: Ctrl-C: SIGINT to the terminal's process group (the run and its workers, which leave it
#: to the run); SIGTERM to the run alone (``kill PID``, ``timeout``), or to its process
#: group (``kill -- -PGID``, systemd stopping a service): the workers die of it, the run
#: answers it.
STOPS = {
    "ctrl-c": (signal.SIGINT, True, 130, "interrupted"),
    "sigterm": (signal.SIGTERM, False, 143, "terminated"),
    "sigterm-group": (signal.SIGTERM, True, 143, "terminated"),
}


@pytest.mark.parametrize(
    ("stop", "moment"),
    [
        *(
            (stop, moment)
            for stop in ("ctrl-c", "sigterm")
            for moment in (forking, parsed, sending)
        ),
        ("sigterm-group", parsed),
    ],
)
def test_a_stopped_run_leaves_no_worker_and_the_publish_as_it_was(
    tmp_path: Path, stop: str, moment: Moment
) -> None:
    """Ctrl-C or SIGTERM (:data:`STOPS`) as the workers are forked, while one sends its
    results, or while they wait for the run's next pool step: one line saying the publish
    in --out is the one live, which is left byte for byte, at once. Never a signal lost
    (the run going on to publish), never a traceback (the run's, or a worker's that did
    not leave the signal to the run); every worker is gone by the time the run exits, and
    nothing is left beside the folder."""
    out, earlier = tmp_path / "out", tmp_path / "earlier"
    earlier.mkdir()
    for page in (TOPIC_LIST, ITEM_PAGE):  # not the page the dumps hold: it is parsed anew
        (earlier / page.name).write_bytes(page.read_bytes())
    assert main(["run", str(earlier), "--out", str(out), "--quiet"]) == 0
    before = _files(out)
    with _running(_dumps(tmp_path / "dumps"), out) as proc:
        workers = moment(proc)
        sig, group, code, what = STOPS[stop]
        if group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        got, err, left = _ended(proc, workers)
        assert (got, _without_log(err)) == (
            code,
            f"ingest: {what} before publishing: {str(out)!r} is left as it was\n",
        )
        assert not left, "a worker outlived the run"
        assert _files(out) == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["dumps", "earlier", "out"]
