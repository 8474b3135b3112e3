"""The local engine: the steps in this process, costly ones in a pool of ``jobs`` processes.

Collections are lists and groups are dicts (walked in key order). A ``pool`` step runs its
per-record and per-group functions in worker processes; results come back in input order
whatever order the workers finish in, so the output is byte-identical for any ``jobs``.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

from ..records.run import RunOutput
from ..steps import STEPS, Context, Step, formed_groups, run_steps
from .forked import Forked, Standby, forked, standby
from .heap import keep
from .pool import pmap

T = TypeVar("T")
R = TypeVar("R")
Progress = Callable[[Any], None]
#: Views a batched step's function (map) or pairs function (group) receives at once.
BATCH = 256


class LocalEngine:
    """Lists and dicts in this process; ``jobs`` > 1 adds a process pool for pool steps."""

    def __init__(self, jobs: int = 1, progress: Progress | None = None, standbys: int = 0) -> None:
        """``standbys``: children to fork now, before the run's records exist, for the
        background steps that start with a later step (each is sent its step's views then:
        see :class:`~.forked.Standby`); with one job, none."""
        self.jobs = jobs
        self.progress = progress
        self._children: list[Forked[Any]] = []  # background steps' children, started here
        self._standbys: list[Standby] = []
        for _ in range(standbys if jobs > 1 else 0):
            if (child := standby()) is not None:
                self._standbys.append(child)

    def close(self) -> None:
        """Stop the standby children no step was given."""
        while self._standbys:
            self._standbys.pop().stop()

    def source(self, records: list[Any]) -> list[Any]:
        return records

    def collect(self, collection: list[Any]) -> list[Any]:
        return collection

    def let_go(self, collection: list[Any]) -> None:
        """Left for the exit in a process that ends with its command: freeing the resolved
        components one by one cost 0.22-0.28 s at 100 MB (see :mod:`.heap`)."""
        keep(collection)

    def map(self, records: list[Any], step: Step, ctx: Context) -> list[Any]:
        views = _views(records, step)
        out: list[Any] = []
        func, items = (_map_batch, _batches(views)) if step.batched else (_map_one, views)
        with _step_done():
            for produced in self._run(func, items, step, ctx):
                if step.progress and self.progress is not None:
                    self.progress(produced)
                out.extend(produced)
        return out

    def group(self, records: list[Any], step: Step, ctx: Context) -> list[Any]:
        with _step_done():
            pairs = self._pairs(_views(records, step), step, ctx)
            ordered = formed_groups(pairs, step.min_group)
            pooled = self._run if step.pool_groups else self._here
            return [out for found in pooled(_group_one, ordered, step, ctx) for out in found]

    def start(self, records: list[Any], step: Step, ctx: Context) -> Forked[Any] | None:
        """A background step's value, computed by a forked child while the run goes on
        (``jobs`` > 1 gives the run a second core for it); None when it must run in turn."""
        if not self.apart(step):
            return None
        if step.start_with and self._standbys:  # its views are sent to a small child
            task = (_views(records, step), replace(step, view=None), ctx.only(step.needs))
            sent = self._standbys.pop(0).send(partial(_background, *task))
            if sent is not None:
                self._children.append(sent)
                return sent
        child = forked(partial(_background, records, step, ctx))
        if child is not None:
            self._children.append(child)
        return child

    def _workers(self) -> int:
        """The processes a pool step may have: ``jobs``, less the background children still
        at work (each keeps a core busy: at 100 MB the order child still aligns when the
        near-duplicate step starts, and a pool of two beside it made the step no faster
        and the run 0.18 s slower than signing the keys here)."""
        self._children = [c for c in self._children if c.running()]
        return self.jobs - len(self._children)

    def apart(self, step: Step) -> bool:
        return self.jobs > 1

    def _pairs(self, views: list[Any], step: Step, ctx: Context) -> Iterator[Any]:
        """Each view's (key, value) pairs; a batched step's in batches of views."""
        if not step.batched:
            return self._run(_pairs_of, views, step, ctx)
        batches = _batches(views)
        return (p for per in self._run(_pairs_of_batch, batches, step, ctx) for p in per)

    def _here(
        self, func: Callable[[T], R], items: Sequence[T], step: Step, ctx: Context
    ) -> Iterator[R]:
        _set_task(step, ctx.only(step.needs))  # what it may read, here as on a worker
        return map(func, items)

    def _run(
        self, func: Callable[[T], R], items: Sequence[T], step: Step, ctx: Context
    ) -> Iterator[R]:
        workers = self._workers() if step.pool else 0
        if workers <= 1 or len(items) < max(2, step.pool_from):
            return self._here(func, items, step, ctx)
        if step.warm is not None:
            step.warm()
        task = (step, ctx.only(step.needs))  # what a worker may read: a fork server pickles it
        return pmap(func, items, workers, initializer=_set_task, initargs=task)


def _background(records: list[Any], step: Step, ctx: Context) -> tuple[Any, float]:
    """A step's gathered value and its seconds, computed here, in one process."""
    assert step.gather is not None, f"background step {step.name!r} gathers no value"
    t0 = time.perf_counter()
    engine = LocalEngine(1)
    out = (engine.map if step.kind == "map" else engine.group)(records, step, ctx)
    return step.gather(out, ctx.only(step.needs)), time.perf_counter() - t0


def _views(records: list[Any], step: Step) -> list[Any]:
    return records if step.view is None else [step.view(r) for r in records]


def _batches(views: list[Any]) -> list[list[Any]]:
    return [views[i : i + BATCH] for i in range(0, len(views), BATCH)]


#: The step a worker runs and its context: set once per process (fork passes it for free).
_TASK: tuple[Step, Context] | None = None


def _set_task(step: Step, ctx: Context) -> None:
    global _TASK
    _TASK = (step, ctx)


@contextmanager
def _step_done() -> Iterator[None]:
    """Forget the step's task when the step is over. The context holds the whole run (its
    output too, by the last step): left in a module global it outlives the run, and at
    exit the interpreter walks every one of those objects again (2 s at 100 MB)."""
    global _TASK
    try:
        yield
    finally:
        _TASK = None


def _task() -> tuple[Step, Context]:
    assert _TASK is not None, "a step function ran before its task was set"
    return _TASK


def _map_one(record: Any) -> list[Any]:
    step, ctx = _task()
    return list(step.fn(record, ctx))


def _map_batch(views: list[Any]) -> list[Any]:
    step, ctx = _task()
    return list(step.fn(views, ctx))


def _pairs_of(record: Any) -> list[tuple[Hashable, Any]]:
    step, ctx = _task()
    assert step.pairs is not None, f"group step {step.name!r} has no pairs function"
    return list(step.pairs(record, ctx))


def _pairs_of_batch(views: list[Any]) -> list[Any]:
    step, ctx = _task()
    assert step.pairs is not None, f"group step {step.name!r} has no pairs function"
    return [list(p) for p in step.pairs(views, ctx)]


def _group_one(group: tuple[Hashable, list[Any]]) -> list[Any]:
    step, ctx = _task()
    return list(step.fn(group[0], group[1], ctx))


#: Garbage-collection thresholds while a run's records are alive (see no_collections): a
#: first threshold of 0 turns automatic collection off.
NO_COLLECTIONS = (0, 50, 100)


@contextmanager
def no_collections() -> Iterator[None]:
    """No automatic collection of garbage cycles while a run lasts. A run builds millions of
    long-lived objects and makes almost no cycles: at 100 MB, 243 objects in cycles are
    left at its end (273 on the hostile shapes of bench/adversarial.py), while the young
    collections scanned every new object once: 1.25 s of the driver's time at 100 MB with
    thresholds of (100000, 50, 100), 0.03 s now, peak RSS the same (the default thresholds
    had spent a quarter of the resolve step scanning).
    Leave it only once the run's records are gone: the default thresholds, back while a
    million objects are alive, start a full collection over all of them (0.5 s at 100 MB)."""
    old = set_gc_threshold(NO_COLLECTIONS)
    try:
        yield
    finally:
        set_gc_threshold(old)


def set_gc_threshold(thresholds: tuple[int, int, int]) -> tuple[int, int, int]:
    """Set this process's garbage-collection thresholds; the old ones are returned."""
    old = gc.get_threshold()
    gc.set_threshold(*thresholds)
    return old


def run(
    inputs: list[Any],
    jobs: int = 1,
    progress: Progress | None = None,
    ctx: Context | None = None,
) -> RunOutput:
    """Every step of the run, locally; the report's ``timing`` gets each step's seconds."""
    timing: dict[str, float] = {}

    def timed(step: Step, seconds: float) -> None:
        timing[step.name] = round(seconds, 4)

    engine = LocalEngine(jobs, progress, standbys=sum(1 for s in STEPS if s.start_with))
    try:
        with no_collections():
            done = run_steps(engine, inputs, ctx, timed)
    finally:
        engine.close()
    assert done.output is not None
    done.output.report.timing.update(timing)
    return done.output
