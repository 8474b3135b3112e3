"""The local engine: the steps in this process, costly ones in a pool of ``jobs`` processes.

Collections are lists and groups are dicts (walked in key order). A ``pool`` step runs its
per-record and per-group functions in worker processes; results come back in input order
whatever order the workers finish in, so the output is byte-identical for any ``jobs``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from typing import Any, TypeVar

from ..records.run import RunOutput
from ..steps import Context, Engine, Step, formed_groups, run_steps
from .forked import Forked, forked
from .pool import pmap

T = TypeVar("T")
R = TypeVar("R")
#: A step's work as it goes: the step, and how many of the records it reads are done since
#: (0: it is at work on something else, its groups).
Advance = Callable[[Step, int], None]
#: A step and the context its functions may read: bound to them, here as on a worker.
Task = tuple[Step, Context]
#: Views a batched step's function (map) or pairs function (group) receives at once.
BATCH = 256


@dataclass(frozen=True, slots=True)
class Watch:
    """What hears of a run's steps as they go (``ingest run`` shows them): ``begin`` of each
    as it starts (with the number of records it reads when they are the inputs), ``end`` as
    it ends, with its seconds; ``advance``, from an engine that can tell, as its work goes.
    Each step begins and ends once, in this process, whether it runs in turn or apart (a
    background step ends when the run takes its value)."""

    end: Callable[[Step, float], None]
    begin: Callable[[Step, int | None], None] | None = None
    advance: Advance | None = None


class LocalEngine:
    """Lists and dicts in this process; ``jobs`` > 1 adds a process pool for pool steps;
    ``advance`` hears of each record, batch or group a step is done with here."""

    def __init__(self, jobs: int = 1, advance: Advance | None = None) -> None:
        self.jobs = jobs
        self.advance = advance
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
        counts = map(len, items) if step.batched else repeat(1)
        for produced in self._told(self._run(func, items, step, ctx), step, counts):
            out.extend(produced)
        return out

    def group(self, records: list[Any], step: Step, ctx: Context) -> list[Any]:
        pairs = self._pairs(_views(records, step), step, ctx)
        ordered = formed_groups(pairs, step.min_group)
        pooled = self._run if step.pool_groups else self._here
        return [
            out
            for found in self._told(pooled(_group_one, ordered, step, ctx), step, repeat(0))
            for out in found
        ]

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
            return self._told(self._run(_pairs_of, views, step, ctx), step, repeat(1))
        batches = _batches(views)
        per_view = self._run(_pairs_of_batch, batches, step, ctx)
        return (p for per in self._told(per_view, step, map(len, batches)) for p in per)

    def _told(self, results: Iterator[R], step: Step, counts: Iterable[int]) -> Iterator[R]:
        """``results`` as they come, ``advance`` told of each (``counts``: the records each
        is the work of)."""
        if self.advance is None:
            return results
        return _telling(results, step, counts, self.advance)

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


def _telling(
    results: Iterator[R], step: Step, counts: Iterable[int], advance: Advance
) -> Iterator[R]:
    for count, result in zip(counts, results, strict=False):  # counts may go on for ever
        advance(step, count)
        yield result


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
    inputs: list[Any], jobs: int = 1, watch: Watch | None = None, ctx: Context | None = None
) -> RunOutput:
    """Every step of the run, locally (see :func:`watched_run`)."""
    engine = LocalEngine(jobs, watch.advance if watch is not None else None)
    return watched_run(engine, inputs, ctx, watch)


def watched_run(
    engine: Engine, inputs: list[Any], ctx: Context | None, watch: Watch | None
) -> RunOutput:
    """Every step of the run on ``engine``: the report's ``timing`` gets each step's
    seconds, and ``watch`` hears of each step."""
    timing: dict[str, float] = {}

    def ended(step: Step, seconds: float) -> None:
        timing[step.name] = round(seconds, 4)
        if watch is not None:
            watch.end(step, seconds)

    begin = watch.begin if watch is not None else None
    done = run_steps(engine, inputs, ctx, ended, on_begin=begin)
    assert done.output is not None
    done.output.report.timing.update(timing)
    return done.output
