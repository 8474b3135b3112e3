"""The Dask engine (``--engine dask``) publishes what the local engine publishes, on a local
cluster of its own or through a scheduler's address; the cluster it starts ends with the
run, however the run ends."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import zstandard

from conftest import ROOT, SEEDS, outliving, run_python, run_subprocess, running

pytest.importorskip("distributed")


#: The lines a run says of itself when stderr is no terminal: one as each phase ends, and
#: one with the total.
LOG_LINE = re.compile(
    r"ingest: (?:(?:read|resolved|wrote|published) .+ |done )in [0-9]+\.[0-9]{2} s\n"
)
#: What distributed says when a local cluster's scheduler finds port 8787 taken (another
#: cluster's, another run's): :func:`test_a_local_cluster_takes_no_fixed_port` holds the
#: run to saying nothing of it; the other tests, run beside other clusters, look past it.
PORT_TAKEN = re.compile(
    r"\S+/distributed/node\.py:[0-9]+: UserWarning: Port 8787 is already in use\.\n"
    r"Perhaps you already have a cluster running\?\n"
    r"Hosting the HTTP server on port [0-9]+ instead\n"
    r"  warnings\.warn\(\n"
)


def _without_log(err: str) -> str:
    """What a run said on stderr besides its log of the phases (and a port taken)."""
    return PORT_TAKEN.sub("", LOG_LINE.sub("", err))


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started, by any of its threads (a local cluster's workers are
    started by the thread its event loop runs in), that are still there."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += map(int, (task / "children").read_text().split())
        except OSError:  # a thread that ended meanwhile
            continue
    return found


def _published(folder: Path) -> dict[str, Any]:
    """A publish as the engines must agree on it: every file, byte for byte, but
    report.json without its timing, the marker with the names of the files it lists (not
    their sums: report.json's holds the timing), and the state's files by what they hold
    (decoded: a worker elsewhere may compress them with another zstd)."""
    shown: dict[str, Any] = {}
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        name, data = p.relative_to(folder).as_posix(), p.read_bytes()
        if name == "report.json":
            report = json.loads(data)
            assert isinstance(report.pop("timing"), dict)
            shown[name] = report
        elif name == ".ingest":
            marker = json.loads(data)
            shown[name] = {**marker, "files": sorted(marker["files"])}
        elif name.startswith("state/"):
            shown[name] = msgspec.msgpack.decode(zstandard.ZstdDecompressor().decompress(data))
        else:
            shown[name] = data
    return shown


def _same(local: Path, dask: Path) -> None:
    left, right = _published(local), _published(dask)
    assert sorted(left) == sorted(right)
    assert any(name.startswith("state/pages/") for name in right)  # one entry a page
    for name in left:
        assert left[name] == right[name], name


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated 1 MB corpus: cross-listing, near-duplicates, four encodings."""
    folder = tmp_path_factory.mktemp("corpus") / "c"
    generate = [sys.executable, str(ROOT / "bench" / "gen_corpus.py"), "--out", str(folder)]
    subprocess.run([*generate, "--size", "1MB"], check=True, capture_output=True)
    return folder


@pytest.fixture(scope="module")
def cluster() -> Any:
    from dask.distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as c:
        yield c


def _run(inputs: Path | str, out: Path | str, *args: str, cwd: Path | None = None) -> None:
    """``ingest run`` in a process of its own: a run that hangs fails the test in time
    (never holding up the session's other tests)."""
    proc = run_subprocess("run", str(inputs), "--out", str(out), "--quiet", *args, cwd=cwd)
    assert (proc.returncode, _without_log(proc.stderr)) == (0, ""), proc.stderr


def test_seeds_on_a_local_dask_cluster(tmp_path: Path) -> None:
    _run(SEEDS, tmp_path / "local")
    _run(SEEDS, tmp_path / "dask", "--engine", "dask", "--jobs", "2")
    _same(tmp_path / "local", tmp_path / "dask")


@pytest.mark.slow  # a generated corpus through a scheduler of its own: make test-slow
def test_generated_corpus_through_a_scheduler_address(
    tmp_path: Path, corpus: Path, cluster: Any
) -> None:
    expected = json.loads((corpus / "expected.json").read_text("utf-8"))
    _run(corpus / "dumps", tmp_path / "local", "--jobs", "2")
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler_address)
    _run(corpus / "dumps", tmp_path / "dask", *dask)
    totals = json.loads((tmp_path / "dask" / "report.json").read_text("utf-8"))["totals"]
    assert (totals["listings"], totals["items"], totals["topics"]) == (
        expected["listings"],
        expected["items"],
        expected["topics"],
    )
    assert totals["near_duplicate_merges"] > 0
    _same(tmp_path / "local", tmp_path / "dask")


def test_a_local_cluster_takes_no_fixed_port(tmp_path: Path) -> None:
    """The cluster a run starts listens where the system puts it: a run beside another
    (a cluster, a notebook's dashboard, a second run) on port 8787 is as quiet as alone."""
    with socket.socket() as taken:
        with contextlib.suppress(OSError):  # taken already: by another process
            taken.bind(("127.0.0.1", 8787))
            taken.listen()
        proc = run_subprocess(
            "run", str(SEEDS), "--out", str(tmp_path / "o"), "--quiet", "--engine", "dask",
            "--jobs", "1",
        )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (0, "")


def test_scheduler_needs_the_dask_engine(tmp_path: Path) -> None:
    proc = run_subprocess(
        "run", str(SEEDS), "--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:8786"
    )
    assert proc.returncode == 2
    assert proc.stderr == "ingest: error: --scheduler goes with --engine dask\n"


@pytest.mark.slow  # waits for the connection to time out: make test-slow
def test_unreachable_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "o"
    proc = run_subprocess(
        "run", str(SEEDS), "--out", str(out), "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9"
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        "ingest: error: cannot reach the Dask scheduler at 'tcp://127.0.0.1:9': "
    )
    assert proc.stderr.count("\n") == 1, proc.stderr  # one line, no traceback, no log
    assert not out.exists()


def test_a_run_building_on_a_publish_is_the_same_on_dask(tmp_path: Path, cluster: Any) -> None:
    """The Dask engine reads the previous publish too: day 2 on a copy of day 1, both
    engines, with a reworded summary (an id kept by evidence), --merge, and the pages of
    day 1 taken from its page cache on the workers (the report says which, alike)."""
    day1 = tmp_path / "day1"
    _run(SEEDS, day1, "--crawled-at", "2026-11-01")
    dumps = tmp_path / "d2"
    dumps.mkdir()
    for seed in SEEDS.iterdir():
        text = seed.read_text("utf-8").replace("是高效 LLM 推理系列的第二篇", "属于该系列的第二篇")
        (dumps / seed.name).write_text(text, "utf-8")
    outs = {}
    for engine in ("local", "dask"):
        out = shutil.copytree(day1, tmp_path / engine)
        dask = ("--engine", "dask", "--scheduler", cluster.scheduler_address)
        _run(dumps, out, "--merge", *(dask if engine == "dask" else ()))
        outs[engine] = out
    _same(outs["local"], outs["dask"])
    assert b'"op":"changed"' in (outs["dask"] / "changes.jsonl").read_bytes()
    reuse = json.loads((outs["dask"] / "report.json").read_text("utf-8"))["reuse"]
    assert reuse["pages_reused"] > 0 and reuse["pages_parsed"] > 0


def test_a_relative_input_path_is_read_by_workers_elsewhere(tmp_path: Path, cluster: Any) -> None:
    """Workers of a scheduler run in a folder of their own: an input path given relative
    to where ``ingest run`` was started must still name the same files there (and a
    relative --out the same folder, where they write the pages' cache entries)."""
    shutil.copytree(SEEDS, tmp_path / "dumps")
    assert not (Path.cwd() / "dumps").exists()  # the workers' folder: no such path there
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler_address)
    _run("dumps", "o", *dask, "--strict", cwd=tmp_path)
    assert not (tmp_path / "o" / "rejects.jsonl").read_text("utf-8")
    assert len(list((tmp_path / "o" / "state" / "pages").iterdir())) == len(list(SEEDS.iterdir()))


_ENDS = """
import multiprocessing, sys, tempfile
from pathlib import Path
from ingest.cli import main

def read(path):
    try:
        return Path(path).read_text()
    except OSError:  # gone meanwhile
        return ""

def children():
    tasks = Path("/proc/self/task").glob("*")
    found = [c for task in tasks for c in read(task / "children").split()]
    return [c for c in found if "resource_tracker" not in read(f"/proc/{c}/cmdline")]

with tempfile.TemporaryDirectory() as tmp:
    for n in range(2):  # a second run in the same process starts a cluster of its own
        args = ["run", sys.argv[1], "--out", f"{tmp}/o{n}", "--quiet", "--engine", "dask"]
        code = main([*args, "--jobs", "2"])
        print(code, len(children()), len(multiprocessing.active_children()))
"""


def test_a_local_cluster_ends_with_its_run() -> None:
    """The cluster ``--engine dask`` starts and its worker processes end with the run that
    started it (multiprocessing's resource tracker, one a process, is no worker)."""
    proc = run_python("-c", _ENDS, str(SEEDS))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["0 0 0"] * 2, (proc.stdout, proc.stderr)


def _on_the_cluster(proc: subprocess.Popen[bytes]) -> tuple[list[int], bytes]:
    """The run's children (its cluster's workers among them) once its read is done on the
    cluster (the resolve follows there; its line said, to its end), and what it said on
    stderr until then."""
    assert proc.stderr is not None
    fd, said, deadline = proc.stderr.fileno(), b"", time.monotonic() + 60
    while not any(line.startswith(b"ingest: read ") for line in said.split(b"\n")[:-1]):
        left = deadline - time.monotonic()
        chunk = os.read(fd, 65536) if left > 0 and select.select([fd], [], [], left)[0] else b""
        if not chunk:
            pytest.fail(f"the run did not finish its read (exit {proc.poll()}): {said!r}")
        said += chunk
    workers = [c for c in _children(proc.pid) if b"spawn_main" in _cmdline(c)]
    assert len(workers) == 2, workers
    return _children(proc.pid), said


def _rest(proc: subprocess.Popen[bytes]) -> bytes:
    """What the run says on stderr from now to its end (every holder of it gone)."""
    assert proc.stderr is not None
    said = b""
    while chunk := os.read(proc.stderr.fileno(), 65536):
        said += chunk
    return said


def _running(corpus: Path, out: Path) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """``ingest run`` of the corpus on a local cluster of two workers, started as
    :func:`conftest.running` does."""
    cmd = ["run", str(corpus / "dumps"), "--out", str(out), "--engine", "dask", "--jobs", "2"]
    return running(*cmd)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
def test_the_local_workers_die_with_a_run_killed_outright(tmp_path: Path, corpus: Path) -> None:
    """A run killed outright (kill -9, the out-of-memory killer) while its steps are on
    its local cluster takes the cluster's workers with it: one left would hold the run's
    stderr open (a pipeline that never ends) and its memory."""
    with _running(corpus, tmp_path / "out") as proc:
        children, _ = _on_the_cluster(proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert not outliving(children), f"children {children} outlived the run"  # (killed now)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize(
    ("sig", "group", "code", "what"),
    [(signal.SIGINT, True, 130, "interrupted"), (signal.SIGTERM, False, 143, "terminated")],
    ids=["ctrl-c", "sigterm"],
)
def test_a_stopped_dask_run_ends_cleanly(
    tmp_path: Path, corpus: Path, sig: signal.Signals, group: bool, code: int, what: str
) -> None:
    """Ctrl-C (SIGINT to the terminal's process group: the run and its local cluster's
    workers, which leave it to the run) or SIGTERM (to the run alone) while its steps are
    on the cluster: one line saying the publish in --out is left as it was (no worker's
    traceback, no log of the cluster's), nothing published, and no process of the
    cluster left behind."""
    out = tmp_path / "out"
    with _running(corpus, out) as proc:
        children, said = _on_the_cluster(proc)
        if group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        proc.wait(timeout=30)
        alive = outliving(children)  # (killed now: nothing else holds its stderr)
        err = (said + _rest(proc)).decode()
        assert (proc.returncode, _without_log(err)) == (
            code,
            f"ingest: {what} before publishing: {str(out)!r} is left as it was\n",
        )
        assert not alive, f"children {children} outlived the run"
        assert not out.exists()


#: Loaded by each worker of a cluster: the first worker to write a page's cache entry dies
#: half way through it (its process ends at once, as kill -9 ends it), once in the cluster
#: (or, with no flag file to make, every time).
_DIES_WRITING = """
import os
from pathlib import Path
import ingest.state.cache as cache

FLAG = Path({flag!r})
_write_file = getattr(cache.write_file, "original", cache.write_file)  # loaded once or twice

def write_file(path, pieces, sync=False):
    try:
        os.close(os.open(FLAG, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return _write_file(path, pieces, sync)
    except FileNotFoundError:  # every time
        pass
    with open(path, "xb") as out:
        out.write(pieces[: len(pieces) // 2])
    os._exit(1)

write_file.original = _write_file
cache.write_file = write_file
"""


def _beside_a_dying_worker(
    out: Path, corpus: Path, preload: list[str], kill: bool
) -> tuple[int, str]:
    """``ingest run`` of the corpus through a scheduler whose two workers each have a nanny
    (a worker that dies is started again, its tasks run again, as on a real cluster): its
    exit code and what it said besides its log; ``kill``: one worker is killed (SIGKILL)
    once the run has read every page (what it held, the pages it parsed, is parsed again
    for the steps after)."""
    from dask.distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", preload=preload,
        silence_logs=logging.CRITICAL,
    ) as cluster, Client(cluster) as client:  # fmt: skip
        pids = list(client.run(os.getpid).values())
        cmd = ["run", str(corpus / "dumps"), "--out", str(out), "--engine", "dask"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "ingest", *cmd, "--scheduler", cluster.scheduler_address],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        with proc:
            said = ""
            assert proc.stderr is not None
            while kill and not said.startswith("ingest: read "):
                said = proc.stderr.readline()
                assert said, "the run ended before its read was done"
            if kill:
                os.kill(pids[0], signal.SIGKILL)
            _, err = proc.communicate(timeout=120)
        client.wait_for_workers(2, timeout=30)  # the dead were started again
    return proc.returncode, _without_log(said + err)


def _dies_writing(tmp_path: Path, once: bool) -> list[str]:
    preload = tmp_path / "dies_writing.py"
    flag = tmp_path / "died" if once else tmp_path / "no such folder" / "died"
    preload.write_text(_DIES_WRITING.format(flag=str(flag)), "utf-8")
    return [str(preload)]


@pytest.mark.slow  # clusters of their own: make test-slow
def test_a_worker_killed_mid_run_publishes_the_same_bytes(tmp_path: Path, corpus: Path) -> None:
    """A worker process killed while the run's steps are on it: Dask runs its tasks again on
    the worker left (and the one started again), and the run publishes the bytes the local
    engine publishes — never a mix of two attempts."""
    _run(corpus / "dumps", tmp_path / "local")
    assert _beside_a_dying_worker(tmp_path / "dask", corpus, [], kill=True) == (0, "")
    _same(tmp_path / "local", tmp_path / "dask")


@pytest.mark.slow
def test_a_worker_dying_while_it_writes_a_cache_entry_leaves_no_half_entry(
    tmp_path: Path, corpus: Path
) -> None:
    """A worker that dies half way through writing a page's cache entry: the task runs
    again elsewhere and the publish holds the whole entry (the half one is never taken for
    the entry another process wrote first)."""
    _run(corpus / "dumps", tmp_path / "local")
    preload = _dies_writing(tmp_path, once=True)
    assert _beside_a_dying_worker(tmp_path / "dask", corpus, preload, kill=False) == (0, "")
    assert (tmp_path / "died").exists()  # a worker did die writing
    _same(tmp_path / "local", tmp_path / "dask")
    assert run_subprocess("validate", str(tmp_path / "dask")).returncode == 0


@pytest.mark.slow
def test_a_task_that_kills_every_worker_ends_the_run_in_one_line(
    tmp_path: Path, corpus: Path
) -> None:
    """A task whose worker dies each time it runs (Dask gives up after its allowed
    failures): one line, exit 2, and the publish already in --out left as it was."""
    out = tmp_path / "out"
    _run(SEEDS, out)
    before = _published(out)
    code, said = _beside_a_dying_worker(out, corpus, _dies_writing(tmp_path, once=False), False)
    assert (code, said) == (
        2,
        "ingest: error: a task of the run killed the Dask worker running it each time it "
        "was tried (out of memory?); nothing was published\n",
    )
    assert _published(out) == before


@contextmanager
def _worker_without(hidden: Path) -> Iterator[str]:
    """A scheduler and one worker (under its nanny) that sees an empty folder at ``hidden``
    (a tmpfs over it in a mount namespace of its own), as a worker on another machine
    would: the scheduler's address."""
    info = hidden.parent / "scheduler.json"
    dask = str(Path(sys.executable).parent / "dask")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen(
        [dask, "scheduler", "--scheduler-file", str(info), "--port", "0",
         "--dashboard-address", ":0"], **quiet,
    )  # fmt: skip
    worker = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         'mount -t tmpfs none "$0" && exec "$1" worker --scheduler-file "$2" --nworkers 1 '
         "--nthreads 1 --dashboard-address :0", str(hidden), dask, str(info)], **quiet,
    )  # fmt: skip
    try:
        from dask.distributed import Client

        deadline = time.monotonic() + 60
        while not info.exists():
            assert time.monotonic() < deadline and scheduler.poll() is None
            time.sleep(0.05)
        with Client(scheduler_file=str(info), timeout="30s") as client:
            client.wait_for_workers(1, timeout=60)
            yield str(client.scheduler.address)
    finally:
        for proc in (worker, scheduler):
            proc.terminate()
            proc.wait(timeout=30)


@pytest.mark.slow  # a cluster of its own: make test-slow
@pytest.mark.parametrize("hidden", ["inputs", "output"])
def test_a_worker_that_does_not_see_the_folders_is_one_line(tmp_path: Path, hidden: str) -> None:
    """A worker elsewhere that does not see the inputs, or the folder beside --out where it
    would write the pages' cache entries, as ``ingest run`` sees them: one line naming the
    path, exit 2, before any page is read (it was a traceback, or every page rejected)."""
    (tmp_path / "inputs").mkdir()
    dumps = shutil.copytree(SEEDS, tmp_path / "inputs" / "dumps")
    (tmp_path / "output").mkdir()
    out = tmp_path / "output" / "out"
    with _worker_without(tmp_path / hidden) as address:
        proc = run_subprocess(
            "run", str(dumps), "--out", str(out), "--engine", "dask", "--scheduler", address
        )
    seen = str(dumps) if hidden == "inputs" else f"{tmp_path}/output/.out.staging-"
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("ingest: error: the Dask worker tcp://"), proc.stderr
    assert f" does not see {seen!r}"[:-1] in proc.stderr and proc.stderr.count("\n") == 1
    assert not out.exists() and list((tmp_path / "output").iterdir()) == []
