"""The Dask engine gives byte-identical output to the local engine (2-worker cluster)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import REUSE_LINE, ROOT, SEEDS, outliving, run_subprocess

NAMES = ("items.jsonl", "topics.jsonl", "rejects.jsonl", "changes.jsonl", "report.html")
#: What says how much a run took from the previous publish's cache: the Dask engine takes
#: nothing and keeps no cache (state/reuse*), the local engine does; the rest is the same.


def _report(out: Any) -> dict[str, Any]:
    doc = out.report
    doc["timing"] = {}
    doc.pop("reuse")
    return doc


def _shown(name: str, data: bytes) -> bytes:
    """A file as the engines must agree on it: report.html without its reuse line, the
    state's checksums without the reuse cache's files (the Dask engine leaves none)."""
    if name == "report.html":
        return REUSE_LINE.sub(b"", data)
    if name == "state/manifest.json":
        doc = json.loads(data)
        doc["files"] = {n: v for n, v in doc["files"].items() if not n.startswith("reuse")}
        return json.dumps(doc, sort_keys=True).encode()
    if name == ".ingest":
        return json.dumps({**json.loads(data), "state_manifest": None}).encode()
    return data


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated 1 MB corpus: cross-listing, near-duplicates, four encodings."""
    folder = tmp_path_factory.mktemp("corpus") / "c"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "gen_corpus.py"),
            "--out",
            str(folder),
            "--size",
            "1MB",
        ],
        check=True,
        capture_output=True,
    )
    return folder


@pytest.fixture(scope="module")
def cluster() -> Any:
    from dask.distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as c:
        yield c


def test_seeds_on_a_local_dask_cluster(ingest: Any) -> None:
    local = ingest(SEEDS)
    dask = ingest(SEEDS, args=("--engine", "dask", "--jobs", "2"))
    assert dask.code == 0
    for name in NAMES:
        assert _shown(name, dask.bytes_of(name)) == _shown(name, local.bytes_of(name)), name
    assert _report(dask) == _report(local)


@pytest.mark.slow  # a generated corpus through a scheduler of its own: make test-slow
def test_generated_corpus_through_a_scheduler_address(
    ingest: Any, corpus: Path, cluster: Any
) -> None:
    expected = json.loads((corpus / "expected.json").read_text("utf-8"))
    local = ingest(corpus / "dumps", args=("--jobs", "2"))
    dask = ingest(
        corpus / "dumps", args=("--engine", "dask", "--scheduler", cluster.scheduler_address)
    )
    assert dask.code == 0
    totals = dask.report["totals"]
    assert (totals["listings"], totals["items"], totals["topics"]) == (
        expected["listings"],
        expected["items"],
        expected["topics"],
    )
    assert totals["near_duplicate_merges"] > 0
    for name in NAMES:
        assert _shown(name, dask.bytes_of(name)) == _shown(name, local.bytes_of(name)), name
    assert _report(dask) == _report(local)


def test_scheduler_needs_the_dask_engine(tmp_path: Path) -> None:
    proc = run_subprocess(
        "run", str(SEEDS), "--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:8786"
    )
    assert proc.returncode == 2
    assert "--scheduler goes with --engine dask" in proc.stderr


@pytest.mark.slow  # waits for the connection to time out: make test-slow
def test_unreachable_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    proc = run_subprocess(
        "run",
        str(SEEDS),
        "--out",
        str(tmp_path / "o"),
        "--engine",
        "dask",
        "--scheduler",
        "tcp://127.0.0.1:9",
    )
    assert proc.returncode == 2
    assert "cannot reach the Dask scheduler" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()


def test_a_run_building_on_a_publish_is_the_same_on_dask(tmp_path: Path, cluster: Any) -> None:
    """The Dask engine reads the state too: day 2 on a copy of day 1, both engines, with a
    reworded summary (an id kept by evidence) and --merge of the same pages."""
    from ingest.cli import main

    day1 = tmp_path / "day1"
    assert (
        main(["run", str(SEEDS), "--out", str(day1), "--quiet", "--crawled-at", "2026-11-01"]) == 0
    )
    dumps = tmp_path / "d2"
    dumps.mkdir()
    for seed in SEEDS.iterdir():
        text = seed.read_text("utf-8").replace("是高效 LLM 推理系列的第二篇", "属于该系列的第二篇")
        (dumps / seed.name).write_text(text, "utf-8")
    outs = {}
    for engine in ("local", "dask"):
        out = shutil.copytree(day1, tmp_path / engine)
        extra = (
            ("--engine", "dask", "--scheduler", cluster.scheduler_address)
            if engine == "dask"
            else ()
        )
        assert main(["run", str(dumps), "--out", str(out), "--quiet", "--merge", *extra]) == 0
        outs[engine] = {
            name: _shown(name, p.read_bytes())
            for p in out.rglob("*")
            if p.is_file() and not (name := p.relative_to(out).as_posix()).startswith("state/reuse")
        }
        report = json.loads(outs[engine]["report.json"])
        report.pop("reuse")
        outs[engine]["report.json"] = json.dumps({**report, "timing": {}}).encode()
    assert outs["local"] == outs["dask"]
    assert b'"op":"changed"' in outs["dask"]["changes.jsonl"]


def test_a_relative_input_path_is_read_by_workers_elsewhere(tmp_path: Path, cluster: Any) -> None:
    """Workers of a scheduler run in a folder of their own: an input path given relative
    to where ``ingest run`` was started must still name the same files there."""
    shutil.copytree(SEEDS, tmp_path / "dumps")
    assert not (Path.cwd() / "dumps").exists()  # the workers' folder: no such path there
    proc = run_subprocess(
        "run",
        "dumps",
        "--out",
        "o",
        "--engine",
        "dask",
        "--scheduler",
        cluster.scheduler_address,
        "--strict",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "o" / "rejects.jsonl").read_text("utf-8")


def test_the_local_cluster_keeps_tasks_where_their_data_is() -> None:
    """Every step leaves its collection where it was made; a task run elsewhere drags its
    partition after it. The cluster ``--engine dask`` starts steals no work and takes
    moving data for dear."""
    from ingest.engines.cluster import client_for

    def settings(dask_scheduler: Any) -> tuple[bool, float]:
        return "stealing" in dask_scheduler.extensions, dask_scheduler.bandwidth

    with client_for(None, 1) as client:
        try:
            assert client.run_on_scheduler(settings) == (False, 1_000_000)
        finally:
            client.cluster.close()


def test_dask_knows_what_parsed_pages_weigh() -> None:
    """A partition Dask takes for tiny is moved to any free worker, and every record in
    it pickled: the engine tells Dask what pages, listings and components weigh."""
    import pickle

    from dask.sizeof import sizeof

    import ingest.engines.dask  # noqa: F401 - registers the sizes, as in every worker
    from ingest.extract.discover import collect_inputs
    from ingest.extract.pages import extract_page
    from ingest.transform.merge import Component, Resolved

    pages = [extract_page(f) for f in collect_inputs([str(SEEDS)])]
    listings = [x for p in pages for x in p.listings]
    comps = [Component(items=[Resolved("i", {}, listings, [])])]
    for records in (pages, listings, comps):
        assert sizeof(records) >= len(pickle.dumps(records)), type(records[0])


def test_a_partitions_pairs_are_cut_by_key_and_come_back_as_they_went() -> None:
    """Each key's pairs land in one piece, the same for every partition (a stable hash, not
    Python's salted one, of any key, a lone surrogate too); unpickled, the pieces hold every
    pair, and listings that shared a string (a key is its summary here) still share it."""
    import pickle

    from ingest.engines.wire import cut
    from ingest.extract.discover import collect_inputs
    from ingest.extract.pages import extract_page

    listings = [x for f in collect_inputs([str(SEEDS)]) for x in extract_page(f).listings]
    for x in listings:
        x.key = x.summary_zh
    pairs = [(x.key, x) for x in listings] + [(1, "a"), ("a lone surrogate \udcff", None)]
    pieces = [pickle.loads(piece) for piece in cut(pairs, 4)]
    assert sorted(map(repr, (p for piece in pieces for p in piece))) == sorted(map(repr, pairs))
    again = [pickle.loads(piece) for piece in cut(list(reversed(pairs)), 4)]
    for n, piece in enumerate(pieces):
        assert {repr(k) for k, _ in piece} == {repr(k) for k, _ in again[n]}
    assert all(key is x.summary_zh for piece in pieces for key, x in piece if key != 1 and x)


_ENDS_CLEAN = """
import multiprocessing, threading
from ingest.engines.dask import run_dask
from ingest.extract.discover import collect_inputs
inputs = collect_inputs([{seeds!r}])
for _ in range(2):  # a second run in the same process still has what Dask needs
    out = run_dask(inputs, None, 1)
    print(len(out.items), threading.active_count(), len(multiprocessing.active_children()))
"""


def test_a_local_cluster_ends_with_its_run() -> None:
    """The cluster ``--engine dask`` starts, its worker processes and the threads watching
    them end with the run, and so does the thread distributed keeps for large messages:
    the publish that follows forks the page's child only from a process of one thread."""
    proc = subprocess.run(
        [sys.executable, "-c", _ENDS_CLEAN.format(seeds=str(SEEDS))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    runs = [line.split() for line in proc.stdout.splitlines()]
    assert len(runs) == 2 and all(int(items) > 0 for items, _, _ in runs), proc.stdout
    assert [(threads, children) for _, threads, children in runs] == [("1", "0")] * 2


_FORKED_WORKERS = """
import signal, sys
from ingest import cli  # the run's modules, imported as the run has them
from ingest.engines.cluster import connected
from ingest.outputs.stops import Stops
stops = Stops()  # as ``ingest run`` has them while it runs
signal.signal(signal.SIGTERM, stops)
signal.signal(signal.SIGINT, stops)
with connected(None, 2) as client:
    def worker() -> tuple[bool, bool, bool]:  # sent by value: it imports nothing
        term, interrupt = signal.getsignal(15), signal.getsignal(2)
        return "ingest.steps.functions" in sys.modules, term == 0, interrupt == 1
    print(sorted(set(client.run(worker).values())))
    client.restart()  # each nanny starts its worker again, forked as well
    print(sorted(set(client.run(worker).values())))
"""


def test_local_workers_are_forked_and_die_of_sigterm_as_any_process() -> None:
    """On Linux the local cluster's workers are forked from the run, which has imported
    Dask and the step functions already (spawned, each would import them again, and two
    take about twice as long to start), and so is a worker its nanny restarts. A forked worker keeps
    neither the run's SIGTERM handler (the cluster's close terminates it, and the handler
    unwinds the run alone) nor Ctrl-C (the run closes the cluster)."""
    proc = subprocess.run(
        [sys.executable, "-c", _FORKED_WORKERS], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["[(True, True, True)]"] * 2, proc.stdout


_DRIVER_KILLED = """
import os, signal, time
from ingest.engines.cluster import connected
with connected(None, 2) as client:
    workers = sorted(client.run(os.getpid).values())
    holder = os.fork()  # every descriptor of the run, held as a worker forked after another
    if holder == 0:  # holds those of the workers forked before it
        time.sleep(60)
        os._exit(0)
    print(*workers, holder, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers (Linux)")
def test_the_local_workers_die_with_the_run() -> None:
    """A run killed outright (kill -9, the out-of-memory killer) takes its local cluster's
    workers with it. Each forked worker inherits the descriptors of the run, among them the
    pipe whose closing tells a worker forked before it that the run is gone: two workers
    forked after both pipes were made would hold each other's and outlive the run, holding its
    stderr open (a pipeline never ends) and the output folder's lock."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _DRIVER_KILLED], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 3, pids
    proc.wait(timeout=20)
    outlived = outliving(pids[:2])
    os.kill(pids[2], signal.SIGKILL)  # the holder: the test's own
    assert not outlived, f"workers {outlived} outlived the run"


def _workers_of(pid: int) -> list[str]:
    """The processes ``pid``'s other threads than its main one started (a local cluster's
    workers: the run's own children are forked by its main thread)."""
    found: list[str] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            if task.name != str(pid):
                found += (task / "children").read_text().split()
    return found


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
def test_ctrl_c_stops_a_dask_run_cleanly(tmp_path: Path, corpus: Path) -> None:
    """Ctrl-C (SIGINT to the terminal's process group: the run and its local cluster's
    workers) while the workers run: the run says it was interrupted and exits 130, at once,
    with no worker's traceback, and publishes nothing."""
    out = tmp_path / "out"
    run = ["run", str(corpus), "--out", str(out), "--engine", "dask", "--jobs", "2", "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ingest", *run],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while len(_workers_of(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)  # the workers are forked: the run is in its engine
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err, err
    assert not (out / "items.jsonl").exists()


_MASKS = """
import os, signal, threading
seen = set()
def held() -> None:  # registered first: runs before the cluster's hook gives the mask back
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    main = threading.current_thread() is threading.main_thread()
    seen.add((main, {signal.SIGINT, signal.SIGTERM} <= mask))
os.register_at_fork(after_in_parent=held)
from ingest.engines.cluster import connected
with connected(None, 1) as client:
    pid = os.fork()  # the process's own fork, from its main thread
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
print(sorted(seen))
"""


def test_a_worker_is_forked_with_ctrl_c_and_sigterm_held() -> None:
    """A signal landing between the fork of a worker and its handlers stopped the worker
    half made (and the cluster's start): Dask's thread that forks holds SIGINT and SIGTERM
    until then. The main thread does not: what a signal held across its own fork raises
    would surface in a fork hook, where Python drops it (a SIGTERM lost, the run going on)."""
    proc = subprocess.run(
        [sys.executable, "-c", _MASKS], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "[(False, True), (True, False)]", proc.stdout


def test_a_local_cluster_whose_client_fails_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """No client, no one to close the cluster: client_for closes it before raising."""
    import dask.distributed
    import distributed

    from ingest.engines.cluster import client_for

    closed: list[bool] = []
    real_close = distributed.LocalCluster.close

    def close(self: Any, *args: Any, **kwargs: Any) -> Any:
        closed.append(True)
        return real_close(self, *args, **kwargs)

    def no_client(*args: Any, **kwargs: Any) -> Any:
        raise OSError("no client today")

    monkeypatch.setattr(distributed.LocalCluster, "close", close)
    monkeypatch.setattr(distributed, "Client", no_client)
    monkeypatch.setattr(dask.distributed, "Client", no_client)
    with pytest.raises(OSError, match="no client today"):
        client_for(None, 1)
    assert closed
