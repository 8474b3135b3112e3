"""The Dask engine: the same steps on a Dask cluster (``ingest run --engine dask``).

Collections are Dask bags and stay on the workers; a group step is a shuffle by key
(a stable hash of it, then the real key inside each shuffle group) followed by the very
group function the local engine calls. Only what a step gathers reaches the driver: page
facts without their listings, edges, ids, languages and the finished records.
Needs the optional extra: ``pip install 'ingest[dask]'``.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Hashable, Iterable
from typing import Any

from xxhash import xxh64_intdigest

from ..errors import UsageError
from ..records.output import RunOutput
from ..steps import Context, Step, run_steps


def client_for(scheduler: str | None, workers: int) -> Any:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as e:
        raise UsageError(
            "--engine dask needs the optional extra: pip install 'ingest[dask]'"
        ) from e
    if scheduler:
        try:
            return Client(scheduler, timeout="10s")
        except OSError as e:
            raise UsageError(f"cannot reach the Dask scheduler at {scheduler!r}: {e}") from e
    cluster = LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    return Client(cluster)


class DaskEngine:
    """Bags on a cluster; every collection a step writes is persisted on the workers."""

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions
        self._tasks = itertools.count()

    def _task(self, step: Step, ctx: Context) -> Any:
        """The step and its context as one graph key: shipped once to each worker, never
        hashed (they hold functions and the gathered values of earlier steps)."""
        from dask.delayed import delayed

        task = (step, ctx.only(step.needs))
        name = f"ingest-task-{next(self._tasks)}-{step.name}"
        return delayed(task, name=name, traverse=False)

    def _on_driver(self, bag: Any, step: Step, ctx: Context) -> list[Any]:
        """A step that reads a small view of each record and gathers its output: the views
        come to the driver and are grouped there (the summary keys of a 100 MB crawl are 5
        MB; shuffling them with their bands cost more than the step's own work)."""
        from .local import LocalEngine

        views: list[Any] = bag.map(step.view).compute()
        return LocalEngine().group(views, dataclasses.replace(step, view=None), ctx)

    def _keep(self, bag: Any, step: Step) -> Any:
        """A collection later steps read is persisted on the workers, and waited for: the
        step's time is then its own (and a failure surfaces in the step that caused it)."""
        if step.gather is not None:
            return bag
        from distributed import wait

        kept = bag.persist()
        wait(kept)
        return kept

    def source(self, records: list[Any]) -> Any:
        import dask.bag as db

        return db.from_sequence(records, npartitions=max(1, min(len(records), self.partitions)))

    def collect(self, collection: Any) -> list[Any]:
        if isinstance(collection, list):
            return collection  # formed on the driver (see group)
        out: list[Any] = collection.compute()
        return out

    def map(self, bag: Any, step: Step, ctx: Context) -> Any:
        return self._keep(bag.map(_map_one, self._task(step, ctx)).flatten(), step)

    def group(self, bag: Any, step: Step, ctx: Context) -> Any:
        """The step's pairs, each input partition cut into one piece per output partition
        by a stable hash of the key; output partition j gathers the j-th pieces, forms its
        groups and runs the group function: a shuffle of whole lists (P² small tasks), not
        of records one by one (Dask's task shuffle cost ~80 µs a record)."""
        import dask.bag as db
        from dask.delayed import delayed

        if step.gather is not None and step.view is not None:
            return self._on_driver(bag, step, ctx)
        task = self._task(step, ctx)
        if step.batched:
            pairs = bag.map_partitions(_pairs_of_partition, task)
        else:
            pairs = bag.map(_pairs_of, task).flatten()
        width = self.partitions
        pieces = [delayed(_cut, pure=True)(part, width) for part in pairs.to_delayed()]
        groups = [
            delayed(_groups_of, pure=True)([p[j] for p in pieces], task) for j in range(width)
        ]
        return self._keep(db.from_delayed(groups), step)


def _view(record: Any, step: Step) -> Any:
    return record if step.view is None else step.view(record)


def _map_one(record: Any, task: tuple[Step, Context]) -> list[Any]:
    step, ctx = task
    return list(step.fn(_view(record, step), ctx))


def _pairs_of(record: Any, task: tuple[Step, Context]) -> list[tuple[Hashable, Any]]:
    step, ctx = task
    assert step.pairs is not None, f"group step {step.name!r} has no pairs function"
    return list(step.pairs(_view(record, step), ctx))


def _pairs_of_partition(records: Iterable[Any], task: tuple[Step, Context]) -> list[Any]:
    """A batched step's pairs of one whole partition, computed together."""
    step, ctx = task
    assert step.pairs is not None, f"group step {step.name!r} has no pairs function"
    views = [_view(r, step) for r in records]
    return [p for per in step.pairs(views, ctx) for p in per]


def _stable_hash(pair: tuple[Hashable, Any]) -> int:
    """A group key that hashes the same in every process (str hashes are salted)."""
    key = pair[0]
    return xxh64_intdigest(key if isinstance(key, bytes) else str(key).encode())


def _cut(pairs: Iterable[tuple[Hashable, Any]], width: int) -> list[list[tuple[Hashable, Any]]]:
    """One input partition's pairs, cut into ``width`` pieces by the key's stable hash."""
    pieces: list[list[tuple[Hashable, Any]]] = [[] for _ in range(width)]
    for pair in pairs:
        pieces[_stable_hash(pair) % width].append(pair)
    return pieces


def _groups_of(pieces: list[list[tuple[Hashable, Any]]], task: tuple[Step, Context]) -> list[Any]:
    """One output partition: its pairs grouped by key, each group given to the step's
    function, in key order (groups smaller than the step's minimum are not formed)."""
    step, ctx = task
    groups: dict[Any, list[Any]] = {}
    for piece in pieces:
        for key, value in piece:
            groups.setdefault(key, []).append(value)
    ordered = sorted(g for g in groups.items() if len(g[1]) >= step.min_group)
    return [out for key, values in ordered for out in step.fn(key, values, ctx)]


def run_dask(
    inputs: list[Any], scheduler: str | None = None, workers: int = 2, ctx: Context | None = None
) -> RunOutput:
    """Every step of the run on a Dask cluster (a local one of ``workers`` processes when no
    scheduler is given); the report's ``timing`` gets each step's seconds."""
    timing: dict[str, float] = {}

    def timed(step: Step, seconds: float) -> None:
        timing[step.name] = round(seconds, 4)

    with client_for(scheduler, workers):
        done = run_steps(DaskEngine(max(1, workers * 4)), inputs, ctx, timed)
    assert done.output is not None
    done.output.report.timing.update(timing)
    return done.output
