"""The Dask cluster a run connects to: a scheduler given, or a local cluster of its own that
ends with the run (Needs the optional extra: ``pip install 'ingest[dask]'``)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from typing import Any

from ..errors import UsageError
from .forked import die_with_parent

#: The scheduler of the local cluster keeps tasks where their data is. Every step leaves
#: its collection persisted where it was made, and a task run elsewhere drags its
#: partition (megabytes of records, pickled and unpickled) after it. So no work stealing,
#: and a bandwidth that makes moving data dearer than waiting for a busy worker (with the
#: records' sizes made known: see :func:`.wire.register_sizes`); data then moves in the
#: shuffles alone, where it must. A scheduler of your own takes them from
#: ``DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING=False`` and
#: ``DASK_DISTRIBUTED__SCHEDULER__BANDWIDTH=1000000``.
LOCAL_CLUSTER = {
    "distributed.scheduler.work-stealing": False,
    "distributed.scheduler.bandwidth": 1_000_000,
}


def worker_start_method() -> str:
    """How the local cluster starts its workers: forked from this process on Linux, which
    has imported Dask and the step functions already (a spawned worker imports them again:
    a Dask run at 100 MB takes about a tenth longer so). Spawned elsewhere (macOS's system
    libraries are not safe to fork with threads running). A forked worker keeps neither the
    run's SIGTERM handler nor Ctrl-C (see :func:`_after_fork_in_child`)."""
    linux = sys.platform.startswith("linux")
    return "fork" if linux and "fork" in multiprocessing.get_all_start_methods() else "spawn"


#: Local clusters alive in this process, whose threads fork workers (see _before_fork).
_LIVE: list[None] = []
_STOPPING = {signal.SIGINT, signal.SIGTERM}
_FORKING = threading.local()  # the mask of a thread that forks a worker, until it is back


def _before_fork() -> None:
    """While a local cluster lives, a thread of Dask's that forks (a worker, started or
    restarted by its nanny) holds Ctrl-C and SIGTERM until the child has its own handlers:
    one landing in between stopped the child half made, and the cluster's start with it.
    The process's main thread, which gets them meanwhile, is left as it is: a signal held
    across its own fork would surface in these hooks, where Python drops what it raises."""
    if _LIVE and threading.current_thread() is not threading.main_thread():
        _FORKING.mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
        _FORKING.parent = os.getpid()


def _after_fork_in_parent() -> None:
    _FORKING.__dict__.pop("parent", None)
    mask = _FORKING.__dict__.pop("mask", None)
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _after_fork_in_child() -> None:
    """In a worker forked by a local cluster: SIGTERM ends it as it ends any process (the
    run's handler unwinds the run, in the run's process alone), and Ctrl-C is the run's to
    handle (it closes the cluster; each worker stopping on its own printed its traceback).
    It dies with the run: the kernel kills it when Dask's thread that forked it ends, and
    that thread lives until its worker has exited. Dask's own watch cannot be relied on: a
    worker learns the run is gone when a pipe the run holds closes, and a worker forked
    after that pipe was made holds it too; two workers forked after both pipes were made
    held each other's and outlived the run for ever (2 of 30 Ctrl-C'd runs), with its
    stderr and the output folder's lock."""
    parent = _FORKING.__dict__.pop("parent", None)
    mask = _FORKING.__dict__.pop("mask", None)
    if mask is not None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        die_with_parent(parent)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


os.register_at_fork(
    before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
)


@contextmanager
def _local_workers() -> Iterator[None]:
    """A local cluster's life: its workers, and those its nannies restart, forked as
    :func:`worker_start_method` says (set only while the cluster was made, a worker
    restarted later was spawned, and a cluster stopped while it started mixed the two)."""
    try:
        import dask
        import distributed  # noqa: F401 - its settings are defaults only once imported
    except ImportError:  # client_for says what is missing
        yield
        return
    with dask.config.set({"distributed.worker.multiprocessing-method": worker_start_method()}):
        _LIVE.append(None)
        try:
            yield
        finally:
            _LIVE.pop()


def client_for(scheduler: str | None, workers: int) -> Any:
    """A client of the scheduler at ``scheduler``, or of a local cluster of ``workers``
    processes (see :data:`LOCAL_CLUSTER`)."""
    try:
        import dask
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
    with dask.config.set(LOCAL_CLUSTER):
        cluster = LocalCluster(
            n_workers=0, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        try:  # the workers started once the cluster is here to be closed (a Ctrl-C meanwhile)
            cluster.scale(workers)
            cluster.wait_for_workers(workers)
            return Client(cluster)
        except BaseException:  # no client: the cluster would have no one to close it
            cluster.close()
            raise


@contextmanager
def connected(scheduler: str | None, workers: int) -> Iterator[Any]:
    """A client for the run; a local cluster it started ends with it (its worker processes,
    and the threads that watch them, would otherwise last until the driver exits: the
    publish that follows could not fork the page's child, and wrote it in turn)."""
    with nullcontext() if scheduler else _local_workers():
        client = client_for(scheduler, workers)
        try:
            with client:
                yield client
        finally:
            if scheduler is None and client.cluster is not None:
                client.cluster.close()
                _release_offload_thread()


def _release_offload_thread() -> None:
    """distributed (de)serializes large messages on a one-thread pool it keeps for the
    process's life; that idle thread alone keeps the publish from forking the page's child
    (see engines.forked.can_fork). Once the run's own cluster is closed, the pool is shut
    down, its thread joined, and a new one, whose thread starts when first used, takes its
    place (not after a run on a scheduler given: this process may hold other clients)."""
    from distributed import utils

    old = getattr(utils, "_offload_executor", None)
    if isinstance(old, ThreadPoolExecutor):
        old.shutdown(wait=True)
        utils._offload_executor = ThreadPoolExecutor(1, thread_name_prefix="Dask-Offload")
