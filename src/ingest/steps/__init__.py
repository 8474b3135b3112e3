"""THE ordered list of steps of a run. Both engines and ``bench/stages.py`` loop over it.

A run is a per-file map, then key → group → resolve across files. Every step reads one
collection and is one of three kinds:

- ``map``: ``fn(view(record), ctx)`` → output records, for every record read (a
  ``batched`` step's ``fn`` takes a list of views and gives the outputs of them all);
- ``group``: ``pairs(view(record), ctx)`` → (key, value) pairs; the values that share a key
  form a group, and ``fn(key, values, ctx)`` → output records, for every group (a
  ``batched`` step's ``pairs`` takes a list of views and gives the pairs of each, so that
  array code can work on many records at once);
- ``driver``: ``fn(ctx)`` → a value, on small data the earlier steps gathered.

The output of a map or group step stays where the engine keeps it, as the collection
named ``writes``; when the step has a ``gather`` function it is brought to the driver
instead and ``ctx.<writes> = gather(outputs, ctx)``. An engine only forms groups: the
local engine with dicts (and a process pool for ``pool`` steps), the Dask engine with
shuffles. Every function named here is pure on its arguments and blind to the order
records arrive in, so both engines give byte-identical output. Adding a step is one entry
in :data:`STEPS` plus its function.

A ``background`` step's value is read only by later steps (their ``needs`` name it): an
engine may compute it apart while the steps after it run (the local engine forks a
child), and the run waits for it at the first step that needs it. An engine that would not
runs it in turn, at its own place.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..normalize.language import warm as warm_languages
from . import functions as f
from .context import Context, Engine, Started, Step, formed_groups

__all__ = ["STEPS", "Context", "Engine", "Step", "formed_groups", "run_steps"]

STEPS: tuple[Step, ...] = (
    Step("parse", "map", "inputs", "pages", f.parse, pool=True, progress=True, needs=("reuse",)),
    Step("topics", "map", "pages", "topics", f.page_facts, gather=f.topics),
    Step("contested", "driver", "", "contested", f.contested_pages, needs=("topics",)),
    # the topics again, with one version of each topic page (the others set aside)
    Step(
        "versions",
        "map",
        "pages",
        "topics",
        f.page_version,
        gather=f.one_version,
        needs=("contested", "reuse"),
    ),
    Step("routes", "driver", "", "routes", f.routes, needs=("topics",)),
    Step(
        "set aside",
        "map",
        "pages",
        "aside",
        f.set_aside,
        gather=f.rejected,
        needs=("routes", "reuse"),
    ),
    # what the run takes from the cache of the publish it builds on (see .reuse)
    Step("plan", "map", "pages", "plan", f.planned, gather=f.plan, needs=("reuse",)),
    Step("listings", "map", "pages", "listings", f.with_slugs, needs=("routes", "plan", "reuse")),
    Step(
        "order",
        "group",
        "listings",
        "order",
        f.order_pairs,
        pairs=f.by_topic,
        gather=f.edges,
        background=True,  # read by the components step alone: aligned while keys are signed
        needs=("plan",),
    ),
    Step(
        "languages",
        "group",
        "listings",
        "langs",
        f.language,
        pairs=f.by_title,
        view=f.listing_titles,
        gather=f.with_known,
        batched=True,
        pool=True,
        pool_from=2_000,  # fewer titles are judged faster than a pool starts
        warm=warm_languages,
        needs=("known",),
        # only the records step reads them: judged apart while the steps between run.
        # After order: an engine that judges them in turn on the driver (Dask) does so
        # while its workers align the topics
        background=True,
    ),
    Step(
        "summary keys",
        "group",
        "listings",
        "keys",
        f.summary,
        pairs=f.by_summary,
        batched=True,
        needs=("plan",),
    ),
    Step(
        "signatures",
        "map",
        "keys",
        "signed",
        f.signatures_of,
        gather=f.gathered,  # the bands are grouped where they are all gathered, as arrays
        pool=True,
        batched=True,
    ),
    Step("near-duplicates", "driver", "", "near", f.near, needs=("signed", "plan")),
    Step("components", "driver", "", "components", f.components, needs=("near", "order", "plan")),
    Step(
        "resolve",
        "group",
        "listings",
        "resolved",
        f.resolve,
        pairs=f.by_component,
        batched=True,
        needs=("components", "reuse"),
    ),
    Step(
        "identity",
        "map",
        "resolved",
        "ids",
        f.identity_claims,
        gather=f.published_ids,
        needs=("index",),
    ),
    Step("published ids", "driver", "", "published", f.minted_to_published, needs=("ids",)),
    Step("related", "map", "resolved", "related", f.related, gather=f.related_ids),
    Step(
        "records",
        "map",
        "resolved",
        "parts",
        f.records,
        gather=f.parts,
        needs=("published", "related", "langs", "ages", "settings"),
    ),
    Step(
        "assemble",
        "driver",
        "",
        "output",
        f.output,
        needs=("topics", "parts", "previous", "settings", "ids", "aside"),
    ),
)


def run_steps(
    engine: Engine,
    inputs: list[Any],
    ctx: Context | None = None,
    on_step: Callable[[Step, float], None] | None = None,
    steps: tuple[Step, ...] = STEPS,
    on_begin: Callable[[Step, int | None], None] | None = None,
) -> Context:
    """Run every step of ``steps`` on ``engine``; ``on_begin`` hears of each one as it
    starts, with the number of records it reads when they are the inputs (else None), and
    ``on_step`` of its seconds as it ends: each step once, in the order they end. A
    collection is let go as soon as the last step that reads it is done. A ``background``
    step the engine can start goes on while the steps after it run, and its value is set
    (and it ends) when the first step that needs it comes (its time: the background
    work's)."""
    run = _Run(engine, ctx or Context(), inputs, last_readers(steps), on_step, on_begin)
    try:
        for n, step in enumerate(steps):
            run.step(n, step)
        run.join_all()
    finally:
        run.stop()  # the run stopped early: no child outlives it
    return run.ctx


class _Run:
    """The state of one run of the steps: its collections and the background work."""

    def __init__(
        self,
        engine: Engine,
        ctx: Context,
        inputs: list[Any],
        last: dict[str, int],
        on_step: Callable[[Step, float], None] | None,
        on_begin: Callable[[Step, int | None], None] | None,
    ) -> None:
        self.engine, self.ctx, self.last = engine, ctx, last
        self.on_step, self.on_begin = on_step, on_begin
        self.count = len(inputs)  # the records a step that reads the inputs reads
        self.data: dict[str, Any] = {"inputs": engine.source(inputs)}
        self.pending: dict[str, tuple[Step, Started]] = {}  # by the value they write

    def step(self, n: int, step: Step) -> None:
        for name in [w for w in self.pending if w in step.needs]:
            self.join(name)
        self.begin(step)
        for name in [c for c, i in self.last.items() if i == n and c in self.data]:
            self.engine.let_go(self.data.pop(name))  # no later step reads it (computed)

    def begin(self, step: Step) -> None:
        """Start a background step the engine computes apart; run any other in turn."""
        if self.on_begin is not None:
            self.on_begin(step, self.count if step.reads == "inputs" else None)
        t0 = time.perf_counter()
        reads = self.data[step.reads] if step.kind != "driver" else None
        started = self.engine.start(reads, step, self.ctx) if step.background else None
        if started is not None:
            self.pending[step.writes] = (step, started)
            return
        self.in_turn(step, reads)
        if self.on_step is not None:
            self.on_step(step, time.perf_counter() - t0)

    def in_turn(self, step: Step, reads: Any) -> None:
        ctx = self.ctx
        if step.kind == "driver":
            setattr(ctx, step.writes, step.fn(ctx.only(step.needs)))
            return
        out = (self.engine.map if step.kind == "map" else self.engine.group)(reads, step, ctx)
        if step.gather is not None:
            setattr(ctx, step.writes, step.gather(self.engine.collect(out), ctx))
        else:
            self.data[step.writes] = out

    def join(self, name: str) -> None:
        """Wait for a background step and set its value."""
        step, started = self.pending[name]
        value, seconds = started.result()  # a stop while it waits stops the work too
        del self.pending[name]  # joined: a stop from here on leaves it be
        setattr(self.ctx, step.writes, value)
        if self.on_step is not None:
            self.on_step(step, seconds)

    def join_all(self) -> None:
        for name in list(self.pending):
            self.join(name)

    def stop(self) -> None:
        for _, started in self.pending.values():
            started.stop()


def last_readers(steps: tuple[Step, ...]) -> dict[str, int]:
    """The index of the last step that reads each collection."""
    last: dict[str, int] = {}
    for n, step in enumerate(steps):
        if step.kind != "driver":
            last[step.reads] = n
    return last
