"""The Dask engine: the same steps on a Dask cluster (``ingest run --engine dask``).

Collections are Dask bags and stay on the workers; a group step is a shuffle by key
(a stable hash of it, then the real key inside each shuffle group) followed by the very
group function the local engine calls. Only what a step gathers reaches the driver: page
facts without their listings, edges, ids, languages and the finished records.
Needs the optional extra: ``pip install 'ingest[dask]'``.
"""

from __future__ import annotations

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

        return delayed((step, ctx), name=f"ingest-task-{next(self._tasks)}-{step.name}")

    def _keep(self, bag: Any, step: Step) -> Any:
        return bag if step.gather is not None else bag.persist()

    def source(self, records: list[Any]) -> Any:
        import dask.bag as db

        return db.from_sequence(records, npartitions=max(1, min(len(records), self.partitions)))

    def collect(self, collection: Any) -> list[Any]:
        out: list[Any] = collection.compute()
        return out

    def map(self, bag: Any, step: Step, ctx: Context) -> Any:
        return self._keep(bag.map(_map_one, self._task(step, ctx)).flatten(), step)

    def group(self, bag: Any, step: Step, ctx: Context) -> Any:
        task = self._task(step, ctx)
        if step.batched:
            pairs = bag.map_partitions(_pairs_of_partition, task)
        else:
            pairs = bag.map(_pairs_of, task).flatten()
        shuffled = pairs.groupby(_stable_hash, npartitions=self.partitions, shuffle="tasks")
        return self._keep(shuffled.map(_groups_of, task).flatten(), step)


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


def _groups_of(
    shuffled: tuple[int, list[tuple[Hashable, Any]]], task: tuple[Step, Context]
) -> list[Any]:
    """One shuffle group → the step's output for each real key in it, in key order."""
    step, ctx = task
    groups: dict[Any, list[Any]] = {}
    for key, value in shuffled[1]:
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
