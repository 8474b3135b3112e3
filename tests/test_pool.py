"""The ``--jobs`` pool: results in order, and it stops cleanly whatever stops it.

``multiprocessing.Pool`` can hang for ever when its workers are killed while one is
sending a result: the lock on its result queue stays held by a dead process. These tests
kill workers at work and stop the pool mid-way, and fail on a hang (a timeout) rather than
wait on it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest

from conftest import ROOT, TOPIC_PAGE, outliving, proc_state
from ingest.engines.pool import pmap
from ingest.errors import WorkerLost


def _slow_square(x: int) -> int:
    time.sleep(0.001 * (x % 7))  # uneven: chunks finish out of order
    return x * x


def _die_on_13(x: int, run: int) -> int:
    if x == 13 and os.getpid() != run:  # a worker's (the first chunk is a worker's), not
        os.kill(os.getpid(), signal.SIGKILL)  # the run's: as the out-of-memory killer would
    return x


def _fail_on(x: int, bad: int) -> int:
    if x == bad:
        raise ValueError(f"{bad} is not allowed")
    return x


def _pid(x: int) -> int:
    time.sleep(0.001)
    return os.getpid()


@contextmanager
def _within(seconds: int) -> Iterator[None]:
    """Fail with TimeoutError, instead of waiting for ever, if the block hangs."""

    def late(*_: object) -> None:
        raise TimeoutError(f"still waiting after {seconds} s: the pool hangs")

    previous = signal.signal(signal.SIGALRM, late)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            state = proc_state(int(entry.name))
            if state is not None and state[1] == pid and state[0] != "Z":
                out.append(int(entry.name))
    return out


def _workers(pid: int, name: str = "ingest-worker") -> list[int]:
    """The --jobs workers among the children of ``pid`` (by the name they give themselves:
    a run has other children, e.g. the one standing by for the languages step)."""
    out = []
    for child in _children(pid):
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == name:
                out.append(child)
        except OSError:
            continue
    return out


def test_results_come_in_input_order() -> None:
    items = list(range(300))
    with _within(30):
        assert list(pmap(_slow_square, items, 2)) == [x * x for x in items]


def test_a_worker_killed_at_work_stops_the_run_with_a_clear_error() -> None:
    before = set(_children(os.getpid()))  # what earlier tests left (a fork server, ...)
    with _within(30), pytest.raises(WorkerLost, match="stopped before it finished"):
        list(pmap(partial(_die_on_13, run=os.getpid()), list(range(400)), 2))
    assert set(_children(os.getpid())) <= before


@pytest.mark.parametrize(
    ("bad", "where"), [(5, "a worker process failed"), (99, "a step function failed")]
)
def test_a_bug_in_the_function_names_it(bad: int, where: str) -> None:
    """In a worker (the first chunk) or here (the last): told alike, with the traceback."""
    before = set(_children(os.getpid()))
    with _within(30), pytest.raises(RuntimeError, match=f"(?s){where}.*{bad} is not allowed"):
        list(pmap(partial(_fail_on, bad=bad), list(range(100)), 2))
    assert set(_children(os.getpid())) <= before


def test_this_process_works_beside_the_workers() -> None:
    """Two jobs: one worker and this process, each with a share of the items."""
    with _within(30):
        pids = list(pmap(_pid, list(range(200)), 2))
    assert os.getpid() in pids and len(set(pids)) == 2
    assert pids[0] != os.getpid() and pids[-1] == os.getpid()  # front: the worker's


def test_stopping_half_way_leaves_no_worker_behind() -> None:
    before = set(_children(os.getpid()))
    with _within(30):
        results = pmap(_slow_square, list(range(2000)), 2)
        assert next(results) == 0
        results.close()  # as an exception (SIGTERM, Ctrl-C) leaving the consumer does
    assert set(_children(os.getpid())) <= before


def test_a_worker_killed_during_a_run_exits_2_and_publishes_nothing(tmp_path: Path) -> None:
    """Through the command line: a worker killed mid-parse (OOM) is one line, exit 2."""
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    page = TOPIC_PAGE.read_bytes()
    for i in range(1500):
        (dumps / f"t{i:04}.txt").write_bytes(page)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ingest", "run", str(dumps), "--out", str(out), "--jobs", "2"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not _workers(proc.pid):
        time.sleep(0.01)
    workers = _workers(proc.pid)
    assert workers, "the run finished before a worker could be killed"
    os.kill(workers[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "worker process of --jobs stopped" in err and "Traceback" not in err, err
    assert not out.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_the_workers_die_with_a_run_killed_outright(tmp_path: Path) -> None:
    """Through the command line: the run killed mid-parse (kill -9, as the out-of-memory
    killer kills the largest process) takes its --jobs worker and its other children with
    it. A forked worker holds the run's end of its own pipe, so it never saw the pipe close:
    it waited for its next chunk for ever, holding the run's stderr (a pipeline never
    ended) and the output folder's lock."""
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    page = TOPIC_PAGE.read_bytes()
    for i in range(1500):
        (dumps / f"t{i:04}.txt").write_bytes(page)
    run = [sys.executable, "-m", "ingest", "run", str(dumps), "--out", str(tmp_path / "out")]
    proc = subprocess.Popen([*run, "--jobs", "2"], cwd=ROOT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not _workers(proc.pid):
        time.sleep(0.01)
    children = _children(proc.pid)
    assert _workers(proc.pid), "the run finished before it could be killed mid-parse"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=20)
    assert not outliving(children), f"children {children} outlived the run"
