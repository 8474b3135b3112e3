"""A value computed by a forked child process while this process goes on.

The child sees the run as it was when it forked (nothing is sent to it), computes the
value, writes it pickled to an unnamed file and exits at once: a child left waiting on a
pipe keeps the old copy of every page its parent writes meanwhile (the whole heap, on a run
whose parent goes on resolving), while its file costs nothing. The parent reads the value
when it needs it. A failure in the child is raised in the parent when it asks for the value
(an ``OSError`` as it was; anything else with the child's traceback); a child that dies
(killed, out of memory) is :class:`WorkerLost`. A child dies with its parent
(``PR_SET_PDEATHSIG``) and is killed by :meth:`Forked.stop` when the run stops early.
Forking is only safe in a process of one thread (another thread may hold a lock the child
would wait on for ever): :func:`can_fork` says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..errors import WorkerLost

T = TypeVar("T")
_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15


def _libc_prctl() -> Any:
    """libc's ``prctl`` (Linux; None elsewhere), looked up once, here: a child forked from
    a process of several threads (a Dask worker) must not look it up, since the loader's
    lock may be held by a thread the child does not have."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.restype = ctypes.c_int
    return prctl


_PRCTL = _libc_prctl()


def name_process(name: str) -> None:
    """Name this process as ``ps`` and ``top`` show it (Linux; 15 bytes at most), so that
    a run's workers and children are told apart from the run and from each other."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_NAME, name.encode()[:15])


def die_with_parent(parent: int | None) -> None:
    """In a child: the kernel kills it when the thread that forked it ends (with its
    process, however that ends: kill -9, the out-of-memory killer). A child cannot count on
    seeing its pipe to the parent close: a forked child holds the parent's ends of the
    pipes that existed when it forked, its own among them. ``parent``: the parent's pid,
    taken before the fork; a parent gone before the request cannot send it, so the child
    ends here (None: not checked). Linux; elsewhere nothing."""
    if _PRCTL is None or _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return
    if parent is not None and os.getppid() != parent:
        os._exit(_FAILED)


def can_fork() -> bool:
    """Is forking safe here: a platform that forks, and this process's only thread?"""
    return hasattr(os, "fork") and threading.active_count() == 1


def forked(compute: Callable[[], T]) -> Forked[T] | None:
    """``compute()`` in a forked child, or None where this process cannot fork now (other
    threads; no memory or process left for a child: the caller computes it in turn)."""
    if not can_fork():
        return None
    try:
        return Forked(compute)
    except OSError:
        return None


class Forked(Generic[T]):
    """``compute()`` running in a forked child."""

    def __init__(self, compute: Callable[[], T]) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by result or stop
        # SIGINT and SIGTERM wait until the child has its own handlers and the parent knows
        # its child: a signal between the two would leave one running the other's code
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
        parent = os.getpid()
        try:
            pid = os.fork()
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            self._file.close()
            raise
        if pid == 0:  # the child: compute, write, exit; it never returns, whatever happens
            code = _FAILED
            try:
                _child(compute, self._file.fileno(), mask, parent)
                code = 0
            finally:
                os._exit(code)
        self._pid: int | None = pid
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending signal lands here
        except BaseException:
            self.stop()
            raise

    def running(self) -> bool:
        """Is the child still at work (not exited, whether or not its value was read)? Where
        the platform cannot ask without reaping it (no ``waitid``: macOS), it is counted at
        work until its value is read."""
        if self._pid is None:
            return False
        if not hasattr(os, "waitid"):
            return True
        return os.waitid(os.P_PID, self._pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None

    def result(self) -> T:
        """The value, once the child has written it (what the child raised, raised here)."""
        assert self._pid is not None, "a child's value is read once"
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        with self._file as f:
            f.seek(0)
            data = f.read()
        ok, payload = _read(data, os.waitstatus_to_exitcode(status))
        if ok:
            value: T = payload
            return value
        error, shown = payload
        if isinstance(error, OSError):  # the disk, not a bug: raised as it was
            raise error
        raise RuntimeError(f"a child process failed:\n{shown}")

    def stop(self) -> None:
        """Kill the child if it still runs (a no-op once its value was read)."""
        if self._pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._pid, signal.SIGKILL)
        # reaped already when a signal cut ``result`` short between its wait and its next line
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)
        self._pid = None
        self._file.close()


def _read(data: bytes, code: int) -> tuple[bool, Any]:
    """What a child wrote: (True, its value) or (False, (error, traceback))."""
    try:
        if code == 0:
            ok, payload = pickle.loads(data)
            return bool(ok), payload
    except Exception:  # cut short: told as the child's death, below
        pass
    raise WorkerLost(
        f"a child process of the run stopped before it gave its value (exit code {code}: "
        "killed, out of memory, or its temporary file could not be written); nothing was "
        "published"
    )


_STOPPING = {signal.SIGINT, signal.SIGTERM}
#: The exit code of a child that could not write its value (the parent reads none).
_FAILED = 70


def _child(
    compute: Callable[[], Any], fd: int, mask: set[int | signal.Signals], parent: int
) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # dies quietly with the run: the parent
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # alone handles SIGTERM and Ctrl-C
    die_with_parent(parent)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    name_process("ingest-child")
    try:
        sent = pickle.dumps((True, compute()), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as e:  # a full disk or a bug: the parent raises it (see _failure)
        sent = _failure(e)
    data = memoryview(sent)
    while data:  # an error here (a full disk) exits _FAILED: the parent says so
        data = data[os.write(fd, data) :]


def _failure(error: BaseException) -> bytes:
    """A failure as the parent raises it: an OSError itself (when it pickles), anything
    else as its traceback."""
    shown = "".join(traceback.format_exception(error))
    if isinstance(error, OSError):
        with contextlib.suppress(Exception):
            return pickle.dumps((False, (error, shown)), protocol=pickle.HIGHEST_PROTOCOL)
    return pickle.dumps((False, (None, shown)), protocol=pickle.HIGHEST_PROTOCOL)
