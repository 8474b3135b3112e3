"""The Dask engine: the same steps on a Dask cluster (``ingest run --engine dask``).

Collections are ``dask.bag`` bags kept on the workers (persisted); a group step's pairs
are grouped by ``Bag.groupby`` (a task shuffle by a stable hash of the key, the same in
every process) and each group given to the very function the local engine calls. Only what
a step gathers reaches the driver. Each step and the context it needs travel once, as one
value of the graph. Without ``--scheduler`` the run starts a ``LocalCluster`` of
``--jobs`` worker processes that ends with it. Needs the optional extra:
``pip install 'ingest[dask]'``.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from uuid import uuid4

from ingest.errors import UsageError, WorkerLost
from ingest.pipeline import steps
from ingest.pipeline.steps import Context, Step


class DaskEngine:
    """Bags on a cluster; every collection a step writes is persisted on the workers."""

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions

    def source(self, records: list[Any]) -> Any:
        import dask.bag as db

        return db.from_sequence(records, npartitions=max(1, min(len(records), self.partitions)))

    def collect(self, bag: Any) -> list[Any]:
        from distributed import KilledWorker

        try:
            return list(bag.compute())
        except KilledWorker as e:  # its worker died each time (Dask's allowed-failures)
            raise WorkerLost(
                "a task of the run killed the Dask worker running it each time it was tried "
                "(out of memory?); nothing was published"
            ) from e

    def start(self, bag: Any, step: Step, ctx: Context) -> None:
        """An apart step runs in turn here: its value is a few small values."""
        return None

    def map(self, bag: Any, step: Step, ctx: Context) -> Any:
        task = _task(step, ctx)
        if step.batched:
            return _kept(bag.map_partitions(steps.map_batch, task), step)
        return _kept(bag.map(steps.map_one, task).flatten(), step)

    def group(self, bag: Any, step: Step, ctx: Context) -> Any:
        task = _task(step, ctx)
        if step.batched:
            pairs = bag.map_partitions(steps.pairs_of_batch, task)
        else:
            pairs = bag.map(steps.pairs_of, task).flatten()
        grouped = pairs.groupby(_key, shuffle="tasks")
        return _kept(grouped.map(_group_one, task).flatten(), step)


def _task(step: Step, ctx: Context) -> Any:
    """The step and the context it needs, one value of the graph (named, never hashed: it
    holds the gathered values of earlier steps)."""
    from dask.delayed import delayed

    return delayed((step, ctx.only(step.needs)), name=f"task-{step.name}-{uuid4().hex}")


def _kept(bag: Any, step: Step) -> Any:
    """A collection later steps read, persisted on the workers; one a step gathers is
    computed as it is gathered."""
    if step.gather is not None:
        return bag
    from distributed import wait

    kept = bag.persist()
    wait(kept)
    return kept


def _key(pair: tuple[Any, Any]) -> Any:
    return pair[0]


def _group_one(group: tuple[Any, list[Any]], task: tuple[Step, Context]) -> list[Any]:
    key, pairs = group  # as Bag.groupby gives it: the pairs whole
    return steps.group_one((key, [v for _, v in pairs]), task)


def check_reach(client: Any, staging: Path, inputs: list[str]) -> None:
    """Every worker sees the inputs and the staging folder (it writes the pages' cache
    entries there) at the paths this process does: a worker elsewhere may not."""
    probe = staging / f".reach-{uuid4().hex}"  # holds its own name
    probe.write_text(probe.name, "utf-8")
    try:
        unseen = client.run(_unseen, [*inputs, str(probe)])
    finally:
        probe.unlink()
    for worker, path in sorted(unseen.items()):
        if path is not None:
            raise UsageError(
                f"the Dask worker {worker} does not see {path!r} as ingest run does: its "
                "workers must reach the inputs and the folder beside --out at the same paths"
            )


def _unseen(paths: list[str]) -> str | None:
    *inputs, probe = map(Path, paths)
    seen = False
    with suppress(OSError):
        seen = probe.read_text("utf-8") == probe.name
    missing = [p for p in inputs if not p.exists()] + ([] if seen else [probe.parent])
    return str(missing[0]) if missing else None


@contextmanager
def connected(scheduler: str | None, workers: int) -> Iterator[Any]:
    """A client of the scheduler given, or of a local cluster of ``workers`` processes that
    ends with the block."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as e:
        raise UsageError(
            "--engine dask needs the optional extra: pip install 'ingest[dask]'"
        ) from e
    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except OSError as e:
            raise UsageError(f"cannot reach the Dask scheduler at {scheduler!r}: {e}") from e
        with client:
            yield client
        return
    ignored = signal.signal(signal.SIGINT, signal.SIG_IGN)  # its processes: the run's to stop
    try:
        cluster = LocalCluster(  # its log is the cluster's business: the run says one line
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.CRITICAL,
        )
    finally:
        signal.signal(signal.SIGINT, ignored)
    with cluster, Client(cluster) as client:
        yield client
