"""THE ordered list of steps of a run. Both engines and ``bench/stages.py`` loop over it.

A run is a per-file map, then key → group → resolve across files. Every step reads one
collection and is one of three kinds:

- ``map``: ``fn(view(record), ctx)`` → output records, for every record read;
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .extract.pages import extract_page
from .normalize.language import language_of
from .normalize.language import warm as warm_languages
from .records.internal import Listing, PageResult
from .records.output import RunOutput
from .state.index import IdIndex
from .state.previous import Previous, RunSettings
from .transform.align import topic_edges
from .transform.components import Components, label_components
from .transform.identity import Claim, Ids, assign, claims
from .transform.merge import Component, resolve_component
from .transform.near import bands_many, bucket_edges
from .transform.records import Finished, Lid, finish, related_lids
from .transform.report import assemble
from .transform.topics import Topics, page_identity, topics_of
from .transform.units import Edge, Unit, summary_key, units_of


@dataclass(slots=True)
class Context:
    """What the run builds on, and the small values driver-side steps produce for the
    steps after them."""

    previous: Previous = field(default_factory=Previous)
    settings: RunSettings = field(default_factory=RunSettings)
    index: IdIndex = field(default_factory=IdIndex)  # the previous publish's items, indexed
    known: dict[str, str | None] = field(default_factory=dict)  # languages it decided
    topics: Topics = field(default_factory=Topics)
    near: list[Edge] = field(default_factory=list)
    order: list[Edge] = field(default_factory=list)
    components: Components = field(default_factory=Components)
    ids: Ids = field(default_factory=Ids)
    related: dict[Lid, str] = field(default_factory=dict)
    langs: dict[str, str | None] = field(default_factory=dict)
    parts: list[Finished] = field(default_factory=list)
    output: RunOutput | None = None

    @classmethod
    def building_on(cls, previous: Previous, settings: RunSettings) -> Context:
        """The context of a run that builds on ``previous``."""
        known = {
            str(i["title_original"]): i.get("original_language")
            for i in previous.items.values()
            if i.get("title_original")
        }
        return cls(previous, settings, IdIndex.of(previous), known)


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the run (see the module docstring)."""

    name: str
    kind: Literal["map", "group", "driver"]
    reads: str
    writes: str
    fn: Callable[..., Any]
    pairs: Callable[[Any, Context], Iterable[Any]] | None = None
    view: Callable[[Any], Any] | None = None
    gather: Callable[[list[Any], Context], Any] | None = None
    pool: bool = False  # costly per record: the local engine runs it in its process pool
    pool_from: int = 1  # ... when it has at least this many records or groups
    pool_groups: bool = True  # a group step's group functions too (else only its pairs)
    warm: Callable[[], None] | None = None  # loads what workers need, before they fork
    min_group: int = 1  # smaller groups give nothing and are never formed
    batched: bool = False  # pairs(views, ctx) → one list of pairs per view
    progress: bool = False  # the engine reports each record this step finishes


# --------------------------------------------------------------------------- step functions
# Module-level functions (not lambdas), so process pools and Dask can ship them.


def parse(f: Any, ctx: Context) -> list[PageResult]:
    return [extract_page(f)]


def page_facts(page: PageResult, ctx: Context) -> list[PageResult]:
    facts = page.facts()
    facts.identity = page_identity(page)
    return [facts]


def with_slugs(page: PageResult, ctx: Context) -> list[Listing]:
    return page.with_slugs(ctx.topics.slug_of) if ctx.topics.keeps(page) else []


def by_summary(x: Listing, ctx: Context) -> list[tuple[str, Listing]]:
    return [(summary_key(x), x)]


def unit(key: str, listings: list[Listing], ctx: Context) -> list[Unit]:
    return [units_of(key, listings)]


def unit_key(u: Unit) -> str:
    return u.key


def by_band(keys: list[str], ctx: Context) -> list[list[tuple[bytes, str]]]:
    return [[(band, key) for band in sig] for key, sig in zip(keys, bands_many(keys), strict=True)]


def near_pairs(band: bytes, keys: list[str], ctx: Context) -> list[Edge]:
    return bucket_edges(keys)


def by_topic(x: Listing, ctx: Context) -> list[tuple[str, Listing]]:
    return [] if x.topic_key is None else [(x.topic_key, x)]


def order_pairs(slug: str, listings: list[Listing], ctx: Context) -> list[Edge]:
    return topic_edges(listings)


def edges(found: list[Edge], ctx: Context) -> list[Edge]:
    return found


def components(ctx: Context) -> Components:
    return label_components(ctx.near + ctx.order)


def by_component(u: Unit, ctx: Context) -> list[tuple[str, Unit]]:
    return [(ctx.components.label.get(u.key, u.key), u)]


def resolve(label: str, units: list[Unit], ctx: Context) -> list[Component]:
    ordered = sorted(units, key=lambda u: u.key)
    return [resolve_component(ordered, ctx.components.edges_of.get(label, []))]


def identity_claims(comp: Component, ctx: Context) -> list[Claim]:
    return claims(comp, ctx.index)


def published_ids(found: list[Claim], ctx: Context) -> Ids:
    return assign(found, ctx.index, ctx.previous.sequence + 1)


def related(comp: Component, ctx: Context) -> list[tuple[Lid, str]]:
    return related_lids(comp)


def as_dict(pairs: list[tuple[Any, Any]], ctx: Context) -> dict[Any, Any]:
    return dict(pairs)


def with_known(pairs: list[tuple[str, str | None]], ctx: Context) -> dict[str, str | None]:
    return {**ctx.known, **dict(pairs)}


def by_title(comp: Component, ctx: Context) -> list[tuple[str, None]]:
    """Original titles whose language no earlier publish decided."""
    titles = {r.fields["title_original"] for r in comp.items}
    return [(t, None) for t in sorted(t for t in titles if t and t not in ctx.known)]


def language(title: str, _: list[None], ctx: Context) -> list[tuple[str, str | None]]:
    return [(title, language_of(title))]


def records(comp: Component, ctx: Context) -> list[Finished]:
    return [finish(comp, ctx.ids, ctx.related, ctx.langs, ctx.settings.crawled_at)]


def parts(found: list[Finished], ctx: Context) -> list[Finished]:
    return found


def output(ctx: Context) -> RunOutput:
    t = ctx.topics
    return assemble(t.pages, t.groups, t.warnings, ctx.parts, ctx.previous, ctx.settings, ctx.ids)


# --------------------------------------------------------------------------- the list

STEPS: tuple[Step, ...] = (
    Step("parse", "map", "inputs", "pages", parse, pool=True, progress=True),
    Step("topics", "map", "pages", "topics", page_facts, gather=topics_of),
    Step("listings", "map", "pages", "listings", with_slugs),
    Step("exact units", "group", "listings", "units", unit, pairs=by_summary),
    Step(
        "near-duplicates",
        "group",
        "units",
        "near",
        near_pairs,
        pairs=by_band,
        view=unit_key,
        gather=edges,
        pool=True,
        pool_groups=False,  # checking a bucket's pairs costs less than shipping the bucket
        min_group=2,  # a band shared by no other key holds no pair
        batched=True,
    ),
    Step("order", "group", "listings", "order", order_pairs, pairs=by_topic, gather=edges),
    Step("components", "driver", "", "components", components),
    Step("resolve", "group", "units", "resolved", resolve, pairs=by_component),
    Step("identity", "map", "resolved", "ids", identity_claims, gather=published_ids),
    Step("related", "map", "resolved", "related", related, gather=as_dict),
    Step(
        "languages",
        "group",
        "resolved",
        "langs",
        language,
        pairs=by_title,
        gather=with_known,
        pool=True,
        pool_from=20_000,  # ~30 µs a title: fewer are judged faster than a pool starts
        warm=warm_languages,
    ),
    Step("records", "map", "resolved", "parts", records, gather=parts),
    Step("assemble", "driver", "", "output", output),
)


class Engine(Protocol):
    """What an engine provides: collections, and the two ways to run a step on one."""

    def source(self, records: list[Any]) -> Any: ...

    def map(self, collection: Any, step: Step, ctx: Context) -> Any: ...

    def group(self, collection: Any, step: Step, ctx: Context) -> Any: ...

    def collect(self, collection: Any) -> list[Any]: ...


def run_steps(
    engine: Engine,
    inputs: list[Any],
    ctx: Context | None = None,
    on_step: Callable[[Step, float], None] | None = None,
) -> Context:
    """Run every step of :data:`STEPS` on ``engine``; ``on_step`` hears each one's seconds."""
    ctx = ctx or Context()
    data: dict[str, Any] = {"inputs": engine.source(inputs)}
    for step in STEPS:
        t0 = time.perf_counter()
        if step.kind == "driver":
            setattr(ctx, step.writes, step.fn(ctx))
        else:
            run = engine.map if step.kind == "map" else engine.group
            out = run(data[step.reads], step, ctx)
            if step.gather is not None:
                setattr(ctx, step.writes, step.gather(engine.collect(out), ctx))
            else:
                data[step.writes] = out
        if on_step is not None:
            on_step(step, time.perf_counter() - t0)
    return ctx
