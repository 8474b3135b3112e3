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
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..normalize.language import warm as warm_languages
from ..transform.topics import topics_of
from .context import Context, Engine, Started, Step, formed_groups
from .functions import (
    as_dict,
    by_component,
    by_summary,
    by_title,
    by_topic,
    components,
    edges,
    identity_claims,
    language,
    listing_titles,
    near,
    order_pairs,
    output,
    page_facts,
    parse,
    parts,
    published_ids,
    records,
    related,
    resolve,
    routes,
    signatures_of,
    summary,
    with_known,
    with_slugs,
)

__all__ = ["STEPS", "Context", "Engine", "Step", "formed_groups", "run_steps"]

STEPS: tuple[Step, ...] = (
    Step("parse", "map", "inputs", "pages", parse, pool=True, progress=True),
    Step("topics", "map", "pages", "topics", page_facts, gather=topics_of),
    Step("routes", "driver", "", "routes", routes, needs=("topics",)),
    Step("listings", "map", "pages", "listings", with_slugs, needs=("routes",)),
    Step(
        "order",
        "group",
        "listings",
        "order",
        order_pairs,
        pairs=by_topic,
        gather=edges,
        background=True,  # read by the components step alone: aligned while keys are signed
    ),
    Step("summary keys", "group", "listings", "keys", summary, pairs=by_summary, batched=True),
    Step(
        "near-duplicates",
        "map",
        "keys",
        "near",
        signatures_of,
        gather=near,  # the bands are grouped where they are all gathered, as arrays
        pool=True,
        batched=True,
    ),
    Step("components", "driver", "", "components", components, needs=("near", "order")),
    Step(
        "languages",
        "group",
        "listings",
        "langs",
        language,
        pairs=by_title,
        view=listing_titles,
        gather=with_known,
        batched=True,
        pool=True,
        pool_from=2_000,  # ~50 µs a title: fewer are judged faster than a pool starts
        warm=warm_languages,
        needs=("known",),
        # only the records step reads them: judged by a child on the core resolve leaves
        # idle. Started before the keys were signed, it took that core from the steps the
        # components wait for (order, near-duplicates: 1.85 s at 100 MB, 1.2 s now)
        background=True,
    ),
    Step(
        "resolve",
        "group",
        "listings",
        "resolved",
        resolve,
        pairs=by_component,
        batched=True,
        needs=("components",),
    ),
    Step(
        "identity",
        "map",
        "resolved",
        "ids",
        identity_claims,
        gather=published_ids,
        needs=("index",),
    ),
    Step("related", "map", "resolved", "related", related, gather=as_dict),
    Step(
        "records",
        "map",
        "resolved",
        "parts",
        records,
        gather=parts,
        needs=("ids", "related", "langs", "settings"),
    ),
    Step(
        "assemble",
        "driver",
        "",
        "output",
        output,
        needs=("topics", "parts", "previous", "settings", "ids"),
    ),
)


def run_steps(
    engine: Engine,
    inputs: list[Any],
    ctx: Context | None = None,
    on_step: Callable[[Step, float], None] | None = None,
    steps: tuple[Step, ...] = STEPS,
) -> Context:
    """Run every step of ``steps`` on ``engine``; ``on_step`` hears each one's seconds. A
    collection is let go as soon as the last step that reads it is done. A ``background``
    step the engine can start goes on while the steps after it run; its value is set when
    the first step that needs it comes (its time: the background work's)."""
    ctx = ctx or Context()
    data: dict[str, Any] = {"inputs": engine.source(inputs)}
    last = last_readers(steps)
    pending: dict[str, tuple[Step, Started]] = {}
    try:
        for n, step in enumerate(steps):
            for name in [w for w in pending if w in step.needs]:
                _join(ctx, *pending[name], on_step)
                del pending[name]  # joined: a stop from here on leaves it be
            t0 = time.perf_counter()
            started = engine.start(data[step.reads], step, ctx) if step.background else None
            if started is not None:
                pending[step.writes] = (step, started)
            elif step.kind == "driver":
                setattr(ctx, step.writes, step.fn(ctx.only(step.needs)))
            else:
                run = engine.map if step.kind == "map" else engine.group
                out = run(data[step.reads], step, ctx)
                if step.gather is not None:
                    setattr(ctx, step.writes, step.gather(engine.collect(out), ctx))
                else:
                    data[step.writes] = out
            if step.kind != "driver" and last[step.reads] == n:
                del data[step.reads]  # no later step reads it: let it go (once computed)
            if on_step is not None and started is None:
                on_step(step, time.perf_counter() - t0)
        for name in list(pending):
            _join(ctx, *pending[name], on_step)
            del pending[name]
    finally:
        for _, started in pending.values():
            started.stop()  # the run stopped early: no child outlives it
    return ctx


def _join(
    ctx: Context, step: Step, started: Started, on_step: Callable[[Step, float], None] | None
) -> None:
    """Wait for a background step and set its value."""
    value, seconds = started.result()
    setattr(ctx, step.writes, value)
    if on_step is not None:
        on_step(step, seconds)


def last_readers(steps: tuple[Step, ...]) -> dict[str, int]:
    """The index of the last step that reads each collection."""
    return {step.reads: n for n, step in enumerate(steps) if step.kind != "driver"}
