"""run_steps: the one loop both engines share."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import weakref
from typing import Any

import pytest

from conftest import in_fresh_process
from ingest.engines.local import LocalEngine
from ingest.steps import Context, Step, run_steps


class Collection(list[Any]):
    """A list that can be watched with a weak reference."""

    __slots__ = ("__weakref__",)


class WatchingEngine(LocalEngine):
    """The local engine, noting which earlier collections are still alive at each step."""

    def __init__(self) -> None:
        super().__init__()
        self.made: dict[str, weakref.ref[Collection]] = {}
        self.alive_at: dict[str, set[str]] = {}

    def source(self, records: list[Any]) -> Collection:
        return self._keep("inputs", Collection(records))

    def map(self, records: list[Any], step: Step, ctx: Context) -> Collection:
        self.alive_at[step.name] = {n for n, ref in self.made.items() if ref() is not None}
        return self._keep(step.writes, Collection(super().map(records, step, ctx)))

    def _keep(self, name: str, c: Collection) -> Collection:
        self.made[name] = weakref.ref(c)
        return c


def _double(x: int, ctx: Context) -> list[int]:
    return [2 * x]


_FIVE = (
    Step("a", "map", "inputs", "xs", _double),
    Step("b", "map", "xs", "ys", _double),
    Step("c", "map", "xs", "zs", _double),  # the last reader of xs
    Step("d", "map", "ys", "ws", _double),
    Step("e", "map", "zs", "vs", _double),
)


def test_a_collection_is_let_go_once_its_last_reader_is_done() -> None:
    engine = WatchingEngine()
    run_steps(engine, [1, 2], steps=_FIVE)
    assert engine.alive_at == {
        "a": {"inputs"},
        "b": {"xs"},  # inputs: read by a alone
        "c": {"xs", "ys"},
        "d": {"ys", "zs"},  # xs: gone after c
        "e": {"zs", "ws"},  # ys: gone after d
    }


def test_summary_keys_travel_once_a_batch_from_the_first_listing_that_has_them() -> None:
    from ingest.records.internal import Listing, Provenance
    from ingest.steps.functions import by_summary

    def listing(key: str) -> Listing:
        return Listing(Provenance("f", "s", "topic-page", "listing 1", 0, 1), 0, key, key=key)

    batch = [listing(k) for k in ("a", "b", "a", "c", "b")]
    assert by_summary(batch, Context()) == [[("a", None)], [("b", None)], [], [("c", None)], []]


# --------------------------------------------------------------------------- background
# A background step is computed by a forked child only in a process of one thread (pytest's
# may have others by now): each case runs in a fresh process (``_fresh``), then here, where
# the step may run in turn.


def _pid_and_sum(values: list[int], ctx: Context) -> tuple[int, int]:
    return os.getpid(), sum(values)


def _fail(values: list[int], ctx: Context) -> Any:
    raise ValueError("a bug in a background step")


def _die(values: list[int], ctx: Context) -> Any:
    os.kill(os.getpid(), signal.SIGKILL)


def _reads_langs(x: int, ctx: Context) -> list[tuple[int, Any]]:
    return [(x, ctx.langs)]


def _as_list(found: list[Any], ctx: Context) -> list[Any]:
    return found


def _stop(x: int, ctx: Context) -> list[int]:
    raise KeyboardInterrupt


def _slow(values: list[int], ctx: Context) -> int:
    time.sleep(3)
    return 0


def _odd_os_error(values: list[int], ctx: Context) -> Any:
    error = OSError(28, "No space left on device")
    error.held = threading.Lock()  # type: ignore[attr-defined]  # cannot be pickled
    raise error


def _too_big(values: list[int], ctx: Context) -> bytes:
    return b"x" * 100_000  # more than the file size limit "short" sets


def _no_fork() -> int:
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))


def _interrupt_in(seconds: int) -> None:
    """Ctrl-C in ``seconds``: the run is then waiting for its background child."""

    def interrupt(*_: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGALRM, interrupt)
    signal.alarm(seconds)


def _short_files() -> None:
    """Writes past 4 KB fail, as on a full disk (EFBIG instead of a signal)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))


def _background_steps(gather: Any = _pid_and_sum, then: Any = _double) -> tuple[Step, ...]:
    return (
        Step("a", "map", "inputs", "xs", _double),
        Step("bg", "map", "xs", "langs", _double, gather=gather, background=True),
        Step("b", "map", "xs", "ys", then),
        Step("c", "map", "ys", "order", _reads_langs, gather=_as_list, needs=("langs",)),
    )


def run_case(case: str) -> str:
    """One background case on a two-job local engine: what happened, in words."""
    steps = {
        "ok": _background_steps(),
        "fail": _background_steps(_fail),
        "die": _background_steps(_die),
        "stop": _background_steps(then=_stop),
        "stop while joined": _background_steps(_slow),
        "unpicklable error": _background_steps(_odd_os_error),
        "short": _background_steps(_too_big),
        "no fork": _background_steps(),
    }[case]
    if case == "stop while joined":
        _interrupt_in(1)
    if case == "short":
        _short_files()
    if case == "no fork":
        os.fork = _no_fork  # as when no memory or process is left for a child
    heard: list[str] = []
    try:
        ctx = run_steps(
            LocalEngine(jobs=2), [1, 2], steps=steps, on_step=lambda s, _: heard.append(s.name)
        )
    except (Exception, KeyboardInterrupt) as e:
        left = _left()
        return f"{type(e).__name__}: {str(e).splitlines()[-1] if str(e) else ''} | left {left}"
    pid, total = ctx.langs
    seen = ctx.order == [(4, ctx.langs), (8, ctx.langs)]
    return f"child {pid != os.getpid()} total {total} seen {seen} heard {heard}"


def _left() -> tuple[int, int] | None:
    """A child process left behind (running: pid 0; or its exit), or None."""
    try:
        return os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return None


def _fresh(case: str, runner: str = "run_case") -> str:
    """``runner(case)`` of this module, run in a fresh Python process: what it printed."""
    return in_fresh_process("test_steps", runner, case)


def test_a_background_step_is_computed_in_a_child_and_set_before_a_step_needs_it() -> None:
    # 2 * (2 * 1 + 2 * 2) in another process; c saw it, set before it ran; its time is
    # heard when it is joined
    assert _fresh("ok") == "child True total 12 seen True heard ['a', 'b', 'bg', 'c']"
    ctx = run_steps(LocalEngine(jobs=1), [1, 2], steps=_background_steps())
    assert ctx.langs == (os.getpid(), 12)  # one job: computed here, in turn


def test_a_background_step_runs_in_turn_where_no_child_can_be_forked() -> None:
    assert _fresh("no fork") == "child False total 12 seen True heard ['a', 'bg', 'b', 'c']"


def test_a_failing_background_step_fails_the_run_with_its_traceback() -> None:
    said = _fresh("fail")
    assert said.startswith("RuntimeError: ValueError: a bug in a background step"), said
    assert said.endswith("| left None")  # and no child is left behind


def test_a_background_child_killed_at_work_is_a_lost_worker() -> None:
    said = _fresh("die")
    assert said.startswith("WorkerLost: a child process of the run stopped before"), said
    assert said.endswith("| left None")


def test_a_run_stopped_early_leaves_no_background_child() -> None:
    assert _fresh("stop") == "KeyboardInterrupt:  | left None"
    assert _fresh("stop while joined") == "KeyboardInterrupt:  | left None"


def test_a_child_whose_error_cannot_be_sent_still_never_returns_to_the_run() -> None:
    """The child's OSError cannot be pickled: the run hears the child failed, with its
    traceback, once (a child escaping its error handling would go on running the run)."""
    said = _fresh("unpicklable error")
    assert said.startswith("RuntimeError: OSError: [Errno 28] No space left"), said
    assert said.endswith("| left None") and len(said.splitlines()) == 1, said


# --------------------------------------------------------------------------- cores
# A pool step gets ``jobs`` processes less the background children still at work.


def _pid(x: int, ctx: Context) -> list[int]:
    return [os.getpid()]


def _wait_a_second(x: int, ctx: Context) -> list[int]:
    if x == 0:
        time.sleep(1)
    return [x]


def _pool_beside_child(child: Any) -> tuple[Step, ...]:
    return (
        Step("bg", "map", "inputs", "langs", child, gather=_as_list, background=True),
        Step("p", "map", "inputs", "xs", _pid, pool=True),
        Step("c", "map", "xs", "order", _reads_langs, gather=_as_list, needs=("langs",)),
    )


def run_cores_case(case: str) -> str:
    """Where a pool step ran beside a background child: "here" (this process) or "pool"."""
    jobs, child = {
        "2 jobs, child at work": (2, _wait_a_second),
        "3 jobs, child at work": (3, _wait_a_second),
        "2 jobs, child done": (2, _double),
    }[case]
    steps = _pool_beside_child(child)
    if child is _double:  # the child is done before the pool step starts
        steps = (steps[0], Step("w", "map", "inputs", "ws", _wait_a_second), *steps[1:])
    ctx = run_steps(LocalEngine(jobs=jobs), [0, 1, 2], steps=steps)
    pids = {x for x, _ in ctx.order}
    return "here" if pids == {os.getpid()} else "pool"


@pytest.mark.parametrize(
    ("case", "where"),
    [
        ("2 jobs, child at work", "here"),
        ("3 jobs, child at work", "pool"),
        ("2 jobs, child done", "pool"),
    ],
)
def test_a_pool_step_leaves_a_core_to_each_background_child_at_work(case: str, where: str) -> None:
    assert _fresh(case, "run_cores_case") == where


def test_a_value_the_child_could_not_write_whole_is_a_lost_worker() -> None:
    said = _fresh("short")
    assert said.startswith("WorkerLost: a child process of the run stopped before"), said
    assert "exit code 70" in said and said.endswith("| left None"), said


def test_a_step_reads_only_the_context_it_declares() -> None:
    """Driver steps and steps run in this process too: a background value read by a step
    that does not name it would be read before it is set, silently empty."""

    def peek(ctx: Context) -> Any:
        return len(ctx.langs)

    def peek_each(x: int, ctx: Context) -> list[int]:
        return [x + len(ctx.langs)]

    with pytest.raises(AttributeError, match=r"ctx\.langs"):
        run_steps(LocalEngine(), [1], steps=(Step("d", "driver", "", "related", peek),))
    undeclared = (Step("a", "map", "inputs", "xs", peek_each),)
    with pytest.raises(AttributeError, match=r"ctx\.langs"):
        run_steps(LocalEngine(), [1], steps=undeclared)
    declared = (Step("a", "map", "inputs", "xs", peek_each, needs=("langs",)),)
    run_steps(LocalEngine(), [1], steps=declared)


class _Now:
    """A background value computed at once, here (only when it was started matters)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> tuple[Any, float]:
        return self.value, 0.0

    def stop(self) -> None:
        pass


class _OrderEngine(LocalEngine):
    """The local engine, noting when each step is run or started; ``apart``: whether it
    computes background steps apart (started here, in this process, for the test)."""

    def __init__(self, apart: bool, forks: bool = True) -> None:
        super().__init__()
        self.events: list[str] = []
        self._apart = apart
        self._forks = forks  # False: no child can be had when the step starts

    def map(self, records: list[Any], step: Step, ctx: Context) -> list[Any]:
        self.events.append(f"run {step.name}")
        return super().map(records, step, ctx)

    def start(self, records: list[Any], step: Step, ctx: Context) -> Any:
        if not (self._apart and self._forks):
            return None
        self.events.append(f"start {step.name}")
        assert step.gather is not None
        return _Now(step.gather(super().map(records, step, ctx), ctx))

    def apart(self, step: Step) -> bool:
        return self._apart


def _with_background() -> tuple[Step, ...]:
    return (
        Step("a", "map", "inputs", "xs", _double),
        Step("bg", "map", "xs", "langs", _double, gather=_as_list, background=True),
        Step("b", "map", "xs", "ys", _double),
        Step("c", "map", "ys", "zs", _double),
        Step("d", "map", "zs", "order", _reads_langs, gather=_as_list, needs=("langs",)),
    )


@pytest.mark.parametrize(
    ("apart", "forks", "events"),
    [
        (True, True, ["run a", "start bg", "run b", "run c", "run d"]),
        (False, True, ["run a", "run bg", "run b", "run c", "run d"]),  # the Dask languages
        (True, False, ["run a", "run bg", "run b", "run c", "run d"]),  # no child to be had
    ],
)
def test_a_background_step_starts_or_runs_at_its_place_and_is_set_before_it_is_needed(
    apart: bool, forks: bool, events: list[str]
) -> None:
    engine = _OrderEngine(apart=apart, forks=forks)
    ctx = run_steps(engine, [1, 2], steps=_with_background())
    assert engine.events == events
    assert ctx.langs == [4, 8]
    assert ctx.order == [(8, [4, 8]), (16, [4, 8])]


def test_a_child_is_at_work_until_it_exits_or_where_that_cannot_be_asked_until_read() -> None:
    """``Forked.running``: after the child exits, not at work (its value still unread); on a
    platform without ``waitid`` (macOS), at work until its value is read."""
    script = """
import os, time
from ingest.engines.forked import Forked
seen = []
for no_waitid in (False, True):
    if no_waitid:
        del os.waitid
    child = Forked(lambda: 7)
    time.sleep(0.5)  # it has exited by now
    seen.append((child.running(), child.result(), child.running()))
print(seen)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip() == "[(False, 7, False), (True, 7, False)]", done.stderr
