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
import tempfile
import threading
import traceback
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..errors import WorkerLost

T = TypeVar("T")
_PR_SET_PDEATHSIG = 1


def can_fork() -> bool:
    """Is forking safe here: a platform that forks, and this process's only thread?"""
    return hasattr(os, "fork") and threading.active_count() == 1


class Forked(Generic[T]):
    """``compute()`` running in a forked child."""

    def __init__(self, compute: Callable[[], T]) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by result or stop
        pid = os.fork()
        if pid == 0:  # the child: compute, write, never return
            _child(compute, self._file.fileno())
        self._pid: int | None = pid

    def result(self) -> T:
        """The value, once the child has written it (what the child raised, raised here)."""
        assert self._pid is not None, "a child's value is read once"
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        with self._file as f:
            f.seek(0)
            data = f.read()
        if not data:
            raise WorkerLost(
                f"a child process of --jobs stopped before it finished (exit code "
                f"{os.waitstatus_to_exitcode(status)}: killed, or out of memory?); nothing "
                "was published"
            )
        ok, payload = pickle.loads(data)
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
        os.waitpid(self._pid, 0)
        self._pid = None
        self._file.close()


def _child(compute: Callable[[], Any], fd: int) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # dies quietly with the run: the parent
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # alone handles SIGTERM and Ctrl-C
    with contextlib.suppress(OSError, AttributeError):  # Linux: die with the parent
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    try:
        sent = pickle.dumps((True, compute()), protocol=pickle.HIGHEST_PROTOCOL)
    except OSError as e:  # a full disk, say: the parent raises it as it is
        sent = pickle.dumps((False, (e, "")), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:  # a bug: the parent raises it, with where
        failed = (False, (None, traceback.format_exc()))
        sent = pickle.dumps(failed, protocol=pickle.HIGHEST_PROTOCOL)
    data = memoryview(sent)
    with contextlib.suppress(OSError):  # a full disk: the parent finds the file short
        while data:
            data = data[os.write(fd, data) :]
    os._exit(0)
