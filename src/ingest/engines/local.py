"""The local engine: the steps in this process, costly ones in a pool of ``jobs`` processes.

Collections are lists and groups are dicts (walked in key order). A ``pool`` step runs its
per-record and per-group functions in worker processes; results come back in input order
whatever order the workers finish in, so the output is byte-identical for any ``jobs``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from ..records.run import RunOutput
from ..steps import Context, Step, formed_groups, run_steps
from .forked import Forked, forked
from .pool import pmap

T = TypeVar("T")
R = TypeVar("R")
Progress = Callable[[Any], None]
#: A step and the context its functions may read: bound to them, here as on a worker.
Task = tuple[Step, Context]
#: Views a batched step's function (map) or pairs function (group) receives at once.
BATCH = 256


class LocalEngine:
    """Lists and dicts in this process; ``jobs`` > 1 adds a process pool for pool steps."""

    def __init__(self, jobs: int = 1, progress: Progress | None = None) -> None:
        self.jobs = jobs
        self.progress = progress
        self._children: list[Forked[Any]] = []  # background steps' children, started here

    def source(self, records: list[Any]) -> list[Any]:
        return records

    def collect(self, collection: list[Any]) -> list[Any]:
        return collection

    def let_go(self, collection: list[Any]) -> None:
        """Nothing to do: the list goes with the run's last reference to it."""

    def map(self, records: list[Any], step: Step, ctx: Context) -> list[Any]:
        views = _views(records, step)
        out: list[Any] = []
        func, items = (_map_batch, _batches(views)) if step.batched else (_map_one, views)
        for produced in self._run(func, items, step, ctx):
            if step.progress and self.progress is not None:
                self.progress(produced)
            out.extend(produced)
        return out

    def group(self, records: list[Any], step: Step, ctx: Context) -> list[Any]:
        pairs = self._pairs(_views(records, step), step, ctx)
        ordered = formed_groups(pairs, step.min_group)
        pooled = self._run if step.pool_groups else self._here
        return [out for found in pooled(_group_one, ordered, step, ctx) for out in found]

    def start(self, records: list[Any], step: Step, ctx: Context) -> Forked[Any] | None:
        """A background step's value, computed by a forked child while the run goes on
        (``jobs`` > 1 gives the run a second core for it); None when it must run in turn."""
        if not self.apart(step):
            return None
        child = forked(partial(_background, records, step, ctx))
        if child is not None:
            self._children.append(child)
        return child

    def _workers(self) -> int:
        """The processes a pool step may have: ``jobs``, less the background children still
        at work (each keeps a core busy; a pool beside it would only share that core)."""
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
        self, func: Callable[[Task, T], R], items: Sequence[T], step: Step, ctx: Context
    ) -> Iterator[R]:
        return map(partial(func, (step, ctx.only(step.needs))), items)

    def _run(
        self, func: Callable[[Task, T], R], items: Sequence[T], step: Step, ctx: Context
    ) -> Iterator[R]:
        workers = self._workers() if step.pool else 0
        if workers <= 1 or len(items) < max(2, step.pool_from):
            return self._here(func, items, step, ctx)
        if step.warm is not None:
            step.warm()  # loaded once, before the workers fork
        return pmap(partial(func, (step, ctx.only(step.needs))), items, workers)


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


def _map_one(task: Task, record: Any) -> list[Any]:
    step, ctx = task
    return list(step.fn(record, ctx))


def _map_batch(task: Task, views: list[Any]) -> list[Any]:
    step, ctx = task
    return list(step.fn(views, ctx))


def _pairs_of(task: Task, record: Any) -> list[tuple[Hashable, Any]]:
    step, ctx = task
    assert step.pairs is not None, f"group step {step.name!r} has no pairs function"
    return list(step.pairs(record, ctx))


def _pairs_of_batch(task: Task, views: list[Any]) -> list[Any]:
    step, ctx = task
    assert step.pairs is not None, f"group step {step.name!r} has no pairs function"
    return [list(p) for p in step.pairs(views, ctx)]


def _group_one(task: Task, group: tuple[Hashable, list[Any]]) -> list[Any]:
    step, ctx = task
    return list(step.fn(group[0], group[1], ctx))


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

    done = run_steps(LocalEngine(jobs, progress), inputs, ctx, timed)
    assert done.output is not None
    done.output.report.timing.update(timing)
    return done.output
