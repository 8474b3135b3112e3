"""``map`` in worker processes and this one, results in input order, and safe to stop at
any moment.

``jobs`` processes work: ``jobs - 1`` workers take chunks of items from the front, and this
process, between taking their results, works through chunks from the back itself (it would
otherwise only decode what the workers send, a third process on ``jobs`` cores; the items
it works on itself are never encoded, sent and decoded).

Each worker has a pipe of its own and works on one chunk at a time; nothing is shared
between processes but those pipes. ``multiprocessing.Pool`` shares a lock on its result
queue among its workers: a worker killed while it sends a result (``Pool.terminate`` on
SIGTERM kills them where they stand) leaves that lock held for ever, and the next
``terminate`` waits on it for ever. Here stopping is: kill the workers, close the pipes.
A worker that dies on its own (the out-of-memory killer) stops the run with
:class:`WorkerLost` instead of leaving it waiting for a result that never comes.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar, cast

from ..errors import WorkerLost
from .forked import can_fork, die_with_parent, name_process

T = TypeVar("T")
R = TypeVar("R")

#: Items a worker is given at a time: at most this many, and at least eight chunks a worker.
MAX_CHUNK = 64


def pmap(func: Callable[[T], R], items: Sequence[T], jobs: int) -> Iterator[R]:
    """``map(func, items)`` in ``jobs`` processes, this one and ``jobs - 1`` workers, results
    in input order."""
    size = max(1, min(MAX_CHUNK, len(items) // (jobs * 8)))
    chunks = [items[i : i + size] for i in range(0, len(items), size)]
    ctx = _start_method()
    parent = os.getpid() if ctx.get_start_method() == "fork" else None  # else a fork server's
    workers: dict[Connection, Any] = {}
    try:
        for _ in range(min(jobs - 1, len(chunks))):
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(theirs, func, parent), daemon=True)
            workers[ours] = proc  # before it starts: a stop from here on kills it too
            proc.start()
            theirs.close()
        yield from _results(chunks, workers, func)
    finally:
        started = [proc for proc in workers.values() if proc.pid is not None]
        for proc in started:
            proc.kill()  # only a worker still at work is still alive
        for conn in workers:
            conn.close()
        for proc in started:
            proc.join()


def _results(
    chunks: list[Sequence[Any]], workers: dict[Connection, Any], func: Callable[[Any], Any]
) -> Iterator[Any]:
    """Hand out the chunks from the front, a worker one at a time, while this process works
    through chunks from the back an item at a time (a worker's result is taken as soon as it
    is sent: a worker waits on its pipe until then); yield the results in order."""
    todo = deque(enumerate(chunks))
    busy = {conn for conn in workers if _give(conn, todo)}
    done: dict[int, list[Any]] = {}
    mine: tuple[int, Sequence[Any], list[Any]] | None = None
    nxt = 0
    while nxt < len(chunks):
        for ready in wait(list(busy), timeout=0 if (mine or todo) else None):
            conn = cast(Connection, ready)
            data = _receive(conn, workers[conn])
            if not _give(conn, todo):  # the worker starts on its next chunk at once,
                busy.discard(conn)  # while its result is read here
            index, ok, payload = pickle.loads(data)
            if not ok:
                raise RuntimeError(f"a worker process failed:\n{payload}")
            done[index] = payload
        if mine is None and todo:
            index, chunk = todo.pop()
            mine = (index, chunk, [])
        if mine is not None:
            index, chunk, out = mine
            out.append(_here(func, chunk[len(out)]))
            if len(out) == len(chunk):
                done[index], mine = out, None
        while nxt in done:
            yield from done.pop(nxt)
            nxt += 1


def _here(func: Callable[[Any], Any], item: Any) -> Any:
    try:
        return func(item)
    except Exception as e:  # as a worker's bug is told: the run stops and says where
        raise RuntimeError(f"a step function failed:\n{traceback.format_exc()}") from e


def _give(conn: Connection, todo: deque[tuple[int, Sequence[Any]]]) -> bool:
    """Send ``conn``'s worker the next chunk (True), or tell it to stop (False)."""
    task = todo.popleft() if todo else None
    conn.send(task)
    return task is not None


def _receive(conn: Connection, proc: Any) -> bytes:
    """A worker's result as sent: (chunk index, ok, results or traceback), pickled."""
    try:
        return conn.recv_bytes()
    except (EOFError, OSError) as e:
        proc.join(timeout=1)
        raise WorkerLost(
            f"a worker process of --jobs stopped before it finished (exit code "
            f"{proc.exitcode}: killed, or out of memory?); nothing was published"
        ) from e


def _serve(conn: Connection, func: Callable[[Any], Any], parent: int | None = None) -> None:
    """A worker: chunk in, results out, until told to stop (``None``). It dies with the run:
    forked, it holds the run's end of its own pipe, so the pipe never closes for it."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # dies quietly with the run: the parent
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # alone handles SIGTERM and Ctrl-C
    die_with_parent(parent)
    name_process("ingest-worker")
    try:
        while (task := conn.recv()) is not None:
            index, chunk = task
            try:
                result: tuple[int, bool, Any] = (index, True, [func(x) for x in chunk])
            except Exception:  # a bug in a step function: the run stops and says where
                result = (index, False, traceback.format_exc())
            conn.send(result)
    except (EOFError, OSError):  # the parent is gone: its end of the pipe is closed
        pass
    conn.close()


def _start_method() -> Any:
    """Fork when this process runs one thread (cheap, and workers inherit the step's
    context); otherwise a fork server: forking a process whose other threads may hold a
    lock (a progress bar, a Dask client in the same process) can leave a worker waiting on
    that lock for ever."""
    methods = mp.get_all_start_methods()
    if "fork" in methods and can_fork():
        return mp.get_context("fork")
    return mp.get_context("forkserver" if "forkserver" in methods else "spawn")
