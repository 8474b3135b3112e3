"""The local engine: the steps in this process; with ``--jobs N`` a ``pool`` step's work in
a :class:`~concurrent.futures.ProcessPoolExecutor` of N processes.

Collections are lists and groups are dicts walked in key order. A pool step's records are
cut into chunks, mapped in the worker processes and joined in input order, so the output
is the same for any ``--jobs``. The workers are forked once, at the run's first pool step,
with SIGINT and SIGTERM held until they are, and live for the run. They ignore Ctrl-C and
die on SIGTERM (the run's own process alone answers both and stops them), and each ends
when the run's process ends however it ends (:func:`_watch_parent`: a worker of a run
killed outright would otherwise wait for work for ever). A worker that dies mid-run (the
out-of-memory killer) stops the run: :class:`~ingest.errors.WorkerLost`, nothing published.

A worker leaves what it computed in a file and sends its name (:func:`_spooled`): the
pool's one pipe for results is read by a thread that waits for a whole message, and a
worker killed in the middle of a large one would leave it waiting for ever; a message of
a few hundred bytes is written whole or not at all.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Generic, TypeVar

from ingest.errors import WorkerLost
from ingest.pipeline import steps
from ingest.pipeline.steps import Context, Step, formed_groups

R = TypeVar("R")
#: Chunks a worker is given of a step's records, at least (so that the work evens out).
CHUNKS_PER_WORKER = 32
#: Records a batched step gets at once (array code works on many).
BATCH = 256
#: Hears how many of a step's records are done, as they are.
Advance = Callable[[Step, int], None]


class LocalEngine:
    """Lists and dicts in this process; ``jobs`` > 1 adds worker processes for pool steps.
    Use as a context manager: the workers end with it."""

    def __init__(
        self, jobs: int = 1, advance: Advance | None = None, spool: Path | None = None
    ) -> None:
        """``spool``: the folder the workers leave their results in (made here; default: a
        temporary one), beside the output folder for a run, whose next run removes it
        should this one be killed."""
        self.jobs, self.advance, self.spool = jobs, advance, spool
        self._pool: ProcessPoolExecutor | None = None
        self._spool: str | None = None  # where the workers leave their results

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        try:
            if exc_type is not None:  # stopped: the workers go now, whatever they are doing
                for child in multiprocessing.active_children():
                    child.kill()
            pool.shutdown(wait=True, cancel_futures=True)
        finally:
            if self._spool is not None:
                shutil.rmtree(self._spool, ignore_errors=True)

    def source(self, records: list[Any]) -> list[Any]:
        return records

    def collect(self, collection: list[Any]) -> list[Any]:
        return collection

    def map(self, records: list[Any], step: Step, ctx: Context) -> list[Any]:
        task = (step, ctx.only(step.needs))
        done = self._each(steps.map_one, steps.map_batch, task, records, step)
        return [out for produced in done for out in produced]

    def group(self, records: list[Any], step: Step, ctx: Context) -> list[Any]:
        task = (step, ctx.only(step.needs))
        pairs = self._each(steps.pairs_of, steps.pairs_of_batch, task, records, step)
        groups = formed_groups(pairs)
        done = self._run(steps.group_one, task, groups, step, [0] * len(groups))
        return [out for found in done for out in found]

    def _each(
        self, one: Callable[[Any, Any], Any], batch: Callable[[Any, Any], Any], task: Any,
        records: list[Any], step: Step,
    ) -> list[Any]:  # fmt: skip
        """``one`` of every record, or (a batched step) ``batch`` of every batch of them."""
        if step.batched:
            batches = _batches(records)
            return self._run(batch, task, batches, step, [len(b) for b in batches])
        return self._run(one, task, records, step, [1] * len(records))

    def _run(
        self,
        func: Callable[[Any, Any], Any],
        task: Any,
        items: Sequence[Any],
        step: Step,
        weights: list[int],
    ) -> list[Any]:
        """``func(item, task)`` of every item, in order: here, or in the workers (each
        item's weight: the records it is the work of, told as it is done)."""
        if not (step.pool and self.jobs > 1 and len(items) >= max(2, step.pool_from)):
            out = []
            for item, weight in zip(items, weights, strict=True):
                out.append(func(item, task))
                self._tell(step, weight)
            return out
        size = max(1, -(-len(items) // (self.jobs * CHUNKS_PER_WORKER)))
        starts = range(0, len(items), size)
        chunks = [self._submit(_chunk, func, task, items[i : i + size]) for i in starts]
        out = []
        for start, chunk in zip(starts, chunks, strict=True):
            out.extend(chunk.result())
            self._tell(step, sum(weights[start : start + size]))
        return out

    def start(self, records: list[Any], step: Step, ctx: Context) -> _Pending | None:
        """An ``apart`` group step: its groups formed here and handed to the workers, the
        run going on meanwhile (None: run it in turn, with no workers to hand them to)."""
        if self.jobs < 2 or step.kind != "group":
            return None
        task = (step, ctx.only(step.needs))
        if step.batched:
            pairs = [steps.pairs_of_batch(b, task) for b in _batches(records)]
        else:
            pairs = [steps.pairs_of(r, task) for r in records]
        groups = formed_groups(pairs)
        if len(groups) < max(2, step.pool_from):  # too few to be worth the travel
            return _Pending([[steps.group_one(g, task) for g in groups]])
        size = max(1, -(-len(groups) // (self.jobs * CHUNKS_PER_WORKER)))
        chunks = [groups[i : i + size] for i in range(0, len(groups), size)]
        return _Pending([self._submit(_chunk, steps.group_one, task, c) for c in chunks])

    def submit(self, fn: Callable[..., R], *args: Any) -> Spooled[R] | None:
        """``fn(*args)`` in a worker (None: there are none; ``--jobs 1``)."""
        return None if self.jobs < 2 else self._submit(fn, *args)

    def _submit(self, fn: Callable[..., R], *args: Any) -> Spooled[R]:
        pool = self._workers()
        assert self._spool is not None
        try:
            return Spooled(pool.submit(_spooled, self._spool, fn, *args))
        except BrokenProcessPool as e:
            raise WorkerLost(LOST) from e

    def _tell(self, step: Step, done: int) -> None:
        if self.advance is not None:
            self.advance(step, done)

    def _workers(self) -> ProcessPoolExecutor:
        """The pool, its workers forked (all at once: the fork start method starts them at
        the first task) with SIGINT and SIGTERM held meanwhile: one arriving while a worker
        is half made is answered once they all are, by the run."""
        if self._pool is None:
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            if self.spool is None:
                self._spool = tempfile.mkdtemp(prefix="ingest-results-")
            else:
                os.mkdir(self.spool, 0o700)
                self._spool = str(self.spool)
            held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
            try:
                self._pool = ProcessPoolExecutor(self.jobs, context, initializer=_worker_start)
                self._pool.submit(int).result()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return self._pool


class Spooled(Generic[R]):
    """A worker's result, read from the file it left it in (see :func:`_spooled`)."""

    def __init__(self, future: Future[str]) -> None:
        self._future = future

    def result(self) -> R:
        try:
            path = self._future.result()
        except BrokenProcessPool as e:
            raise WorkerLost(LOST) from e
        with open(path, "rb") as fh:
            value: R = pickle.load(fh)
        os.unlink(path)
        return value


def _spooled(folder: str, fn: Callable[..., Any], *args: Any) -> str:
    """``fn(*args)`` pickled into a file of ``folder``; the file's name."""
    fd, path = tempfile.mkstemp(dir=folder)
    with open(fd, "wb") as fh:
        pickle.dump(fn(*args), fh, protocol=pickle.HIGHEST_PROTOCOL)
    return path


class _Pending:
    """An apart step's groups in the workers' hands (or done already)."""

    def __init__(self, chunks: list[Spooled[list[Any]]] | list[list[Any]]) -> None:
        self._chunks = chunks

    def result(self) -> list[Any]:
        done = [c.result() if isinstance(c, Spooled) else c for c in self._chunks]
        return [out for chunk in done for found in chunk for out in found]


LOST = (
    "a worker process of --jobs stopped before it finished (killed, or out of memory?); "
    "nothing was published"
)


_STOPPING = {signal.SIGINT, signal.SIGTERM}


def _worker_start() -> None:
    """A worker: Ctrl-C is the run's to answer, SIGTERM ends it, and so does the end of
    the run's process (the two signals were held while it was forked)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_watch_parent, args=(parent.sentinel,), daemon=True).start()


def _watch_parent(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def _batches(records: list[Any]) -> list[list[Any]]:
    return [records[i : i + BATCH] for i in range(0, len(records), BATCH)]


def _chunk(func: Callable[[Any, Any], Any], task: Any, items: Sequence[Any]) -> list[Any]:
    return [func(item, task) for item in items]
