"""The Dask engine: the same steps on a Dask cluster (``ingest run --engine dask``).

Collections are Dask bags and stay on the workers; a group step is a shuffle by key
(a stable hash of it, then the real key inside each shuffle group) followed by the very
group function the local engine calls. Only what a step gathers reaches the driver: page
facts without their listings, edges, ids, languages and the finished records.

What crosses between processes goes as one pickle per piece (bytes, which Dask sends as
they are) and straight from the worker that holds it to the one that reads it.
Needs the optional extra: ``pip install 'ingest[dask]'``.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Hashable, Iterable
from typing import Any

from ..records.run import RunOutput
from ..steps import Context, Step, formed_groups
from .cluster import connected
from .local import Watch, watched_run
from .wire import cut, packed, register_sizes


class DaskEngine:
    """Bags on a cluster; every collection a step writes is persisted on the workers."""

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions

    def _task(self, step: Step, ctx: Context) -> Any:
        """The step and its context, sent once to every worker, never hashed (they hold
        functions and the gathered values of earlier steps). Not in the graph: the
        scheduler would unpickle every id of the crawl before any task ran."""
        from dask.delayed import delayed
        from distributed import get_client

        [task] = get_client().scatter([(step, ctx.only(step.needs))], broadcast=True, hash=False)
        return delayed(task)

    def _on_driver(self, bag: Any, step: Step, ctx: Context) -> list[Any]:
        """A step that reads a small view of each record and gathers its output: the pairs
        are made on the workers and grouped on the driver (shuffling a view this small costs
        more than the step's work)."""
        pairs = _gathered(_pairs(bag, step, self._task(step, ctx)))
        return _grouped([pairs], step, ctx)

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
        return _gathered(collection)

    def let_go(self, collection: Any) -> None:
        """Dropped: a collection kept alive would keep its partitions on the workers."""

    def start(self, bag: Any, step: Step, ctx: Context) -> _Pending | None:
        """A background step's tasks, submitted: the workers compute its value while the
        driver goes on to the next steps. None for a group step that reads a small view:
        it is formed on the driver, in turn (where each worker would form its own groups
        and load the models, while the summary keys wait for them)."""
        if not self.apart(step):
            return None
        group = step.kind == "group"
        return _Pending(
            self._shuffled(bag, step, ctx) if group else self.map(bag, step, ctx), step, ctx
        )

    def apart(self, step: Step) -> bool:
        return not (step.kind == "group" and _grouped_on_driver(step))

    def map(self, bag: Any, step: Step, ctx: Context) -> Any:
        task = self._task(step, ctx)
        if step.batched:
            return self._keep(bag.map_partitions(_map_partition, task), step)
        return self._keep(bag.map(_map_one, task).flatten(), step)

    def group(self, bag: Any, step: Step, ctx: Context) -> Any:
        """The step's pairs, each input partition cut into one piece per output partition
        by a stable hash of the key; output partition j gathers the j-th pieces, forms its
        groups and runs the group function: a shuffle of whole lists (P² small tasks), not
        of records one by one (Dask's task shuffle)."""
        if _grouped_on_driver(step):
            return self._on_driver(bag, step, ctx)
        return self._keep(self._shuffled(bag, step, ctx), step)

    def _shuffled(self, bag: Any, step: Step, ctx: Context) -> Any:
        """The (lazy) bag of a group step's outputs, its pairs shuffled by key."""
        import dask.bag as db
        from dask.delayed import delayed

        task = self._task(step, ctx)
        pairs = _pairs(bag, step, task)
        width = self.partitions
        pieces = [delayed(cut, pure=True)(part, width) for part in pairs.to_delayed()]
        groups = [
            delayed(_groups_of, pure=True)([p[j] for p in pieces], task) for j in range(width)
        ]
        return db.from_delayed(groups)


class _Pending:
    """A background step's partitions being computed on the workers."""

    def __init__(self, bag: Any, step: Step, ctx: Context) -> None:
        from distributed import get_client

        self._t0 = time.perf_counter()
        self._futures = get_client().compute(bag.map_partitions(packed).to_delayed())
        self._step, self._ctx = step, ctx

    def result(self) -> tuple[Any, float]:
        """The step's gathered value, and the seconds from its start to now."""
        parts = [pickle.loads(future.result()[0]) for future in self._futures]
        assert self._step.gather is not None
        value = self._step.gather([r for part in parts for r in part], self._ctx)
        return value, time.perf_counter() - self._t0

    def stop(self) -> None:
        for future in self._futures:
            future.cancel()


def _grouped_on_driver(step: Step) -> bool:
    """Are a group step's groups formed on the driver (it reads a small view and gathers)?"""
    return step.view is not None and step.gather is not None


def _pairs(bag: Any, step: Step, task: Any) -> Any:
    """The bag of a group step's (key, value) pairs."""
    if step.batched:
        return bag.map_partitions(_pairs_of_partition, task)
    return bag.map(_pairs_of, task).flatten()


def _gathered(bag: Any) -> list[Any]:
    """A bag's records on the driver: each partition pickled where it was made, fetched
    from there and unpickled as soon as it is done, while the others are still being made
    (``bag.compute()`` first joins them all on one worker and sends the whole: every
    record pickled and sent twice, and nothing read before the last is done)."""
    from distributed import as_completed, get_client

    client = get_client()
    futures = client.compute(bag.map_partitions(packed).to_delayed())
    place = {f.key: n for n, f in enumerate(futures)}
    parts: list[list[Any]] = [[] for _ in futures]
    try:
        for future, blob in as_completed(futures, with_results=True):
            parts[place[future.key]] = pickle.loads(blob[0])
    except BaseException:  # Ctrl-C: the tasks go too (left, Dask logs each as it closes)
        client.cancel(futures)
        raise
    return [record for part in parts for record in part]


def _view(record: Any, step: Step) -> Any:
    return record if step.view is None else step.view(record)


def _map_one(record: Any, task: tuple[Step, Context]) -> list[Any]:
    step, ctx = task
    return list(step.fn(_view(record, step), ctx))


def _map_partition(records: Iterable[Any], task: tuple[Step, Context]) -> list[Any]:
    """A batched step's outputs of one whole partition, computed together."""
    step, ctx = task
    return list(step.fn([_view(r, step) for r in records], ctx))


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


def _groups_of(pieces: list[bytes], task: tuple[Step, Context]) -> list[Any]:
    """One output partition: the pairs of its (pickled) pieces, grouped and given to the
    step's function."""
    return _grouped((pickle.loads(piece) for piece in pieces), *task)


def _grouped(batches: Iterable[list[Any]], step: Step, ctx: Context) -> list[Any]:
    """The groups of the pairs in ``batches``, each given to the step's function, in key
    order (groups smaller than the step's minimum are not formed)."""
    groups = formed_groups(batches, step.min_group)
    return [out for key, values in groups for out in step.fn(key, values, ctx)]


def run_dask(
    inputs: list[Any],
    scheduler: str | None = None,
    workers: int = 2,
    ctx: Context | None = None,
    watch: Watch | None = None,
) -> RunOutput:
    """Every step of the run on a Dask cluster (a local one of ``workers`` processes when no
    scheduler is given); see :func:`~ingest.engines.local.watched_run`."""
    with connected(scheduler, workers):
        return watched_run(DaskEngine(max(1, workers * 4)), inputs, ctx, watch)


register_sizes()  # here, and in each worker: it imports this module for the step functions
