"""THE ordered list of steps of a run (:data:`STEPS`), their functions, and the context they
share. Both engines and ``bench/stages.py`` loop over it.

A run is a per-file map, then key → group → resolve across files. Every step reads one
collection and is one of three kinds:

- ``map``: ``fn(record, ctx)`` → output records, for every record read (a ``batched``
  step's ``fn`` takes a list of records and gives the outputs of them all);
- ``group``: ``pairs(record, ctx)`` → (key, value) pairs; the values that share a key form
  a group, and ``fn(key, values, ctx)`` → output records, for every group (a ``batched``
  step's ``pairs`` takes a list of records and gives the pairs of each);
- ``driver``: ``fn(ctx)`` → a value, on small data the earlier steps gathered.

A map or group step's output stays where the engine keeps it, as the collection named
``writes``; a step with a ``gather`` function brings it to the driver instead:
``ctx.<writes> = gather(outputs, ctx)``. An engine only forms groups (the local engine
with dicts, the Dask engine with ``dask.bag``); every function here is pure on its
arguments and blind to the order records arrive in, so both give byte-identical output.
A step is given only the context fields it ``needs`` (:meth:`Context.only`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from msgspec import structs

from ingest.extract.discover import InputFile, read_bytes
from ingest.extract.pages import failed_page, file_reject, parse_bytes
from ingest.extract.parse.common import excerpt
from ingest.normalize.language import language_of
from ingest.publish.door import read_regular
from ingest.records import Listing, PageReject, PageResult, RunOutput
from ingest.resolve.align import OrderPoint, order_point, topic_edges
from ingest.resolve.assemble import assemble
from ingest.resolve.finish import Finished, Lid, finish, related_lids
from ingest.resolve.graph import Components, Edge, keyed, label_components, summary_key, units_of
from ingest.resolve.identity import Claim, IdIndex, Ids, assign, claims
from ingest.resolve.merge import Component, resolve_component
from ingest.resolve.near import Signed, near_edges, signed
from ingest.resolve.topics import (
    REASON,
    Page,
    Ranked,
    Routes,
    Topics,
    contested,
    page_identity,
    ranked,
    settle_versions,
    topics_of,
)
from ingest.state import cache
from ingest.state.previous import Previous, RunSettings, StoredPage
from ingest.state.windows import Ages


@dataclass(frozen=True, slots=True)
class PageCache:
    """What the parse step needs of the page cache: the pages the previous publish keeps
    (by sha256) and where, this build, and the staging folder new entries go into."""

    folder: Path | None = None  # the previous publish
    kept: frozenset[str] = frozenset()
    build: str = ""
    staging: Path | None = None  # None: keep no entries (a run that publishes no state)
    take: bool = True  # False (--full): every page parsed again, from its bytes

    def entry(self, sha256: str) -> cache.Entry | None:
        """The previous publish's entry of the page of these bytes (None: it keeps none)."""
        if self.folder is None or sha256 not in self.kept:
            return None
        blob = read_regular(self.folder / cache.entry_name(sha256))
        return None if blob is None else cache.read_entry(blob)

    def taken(self, sha256: str, name: str) -> PageResult | None:
        """The page of these bytes as the previous publish's run parsed it, if this build
        did (its entry then goes into the new publish as it is)."""
        entry = self.entry(sha256) if self.take else None
        page = None if entry is None or entry.build != self.build else entry.result()
        return None if page is None else cache.named(page, name)

    def keep(self, data: bytes, page: PageResult) -> None:
        """The entry of a page parsed here, written; the page learns its size and digest."""
        if self.staging is not None and page.sha256:
            page.entry = cache.keep(self.staging, self.build, data, page)


@dataclass(slots=True)
class Context:
    """What the run builds on, and the small values driver-side steps produce for the
    steps after them."""

    previous: Previous = field(default_factory=Previous)
    settings: RunSettings = field(default_factory=RunSettings)
    index: IdIndex = field(default_factory=IdIndex)  # the previous publish's items, indexed
    known: dict[str, str | None] = field(default_factory=dict)  # languages it decided
    ages: Ages = field(default_factory=Ages)  # crawl days and windows of earlier crawls
    cache: PageCache = field(default_factory=PageCache)
    topics: Topics = field(default_factory=Topics)
    contested: frozenset[tuple[str, str]] = frozenset()  # topic pages whose versions differ?
    routes: Routes = field(default_factory=Routes)
    aside: list[PageReject] = field(default_factory=list)  # listings of pages set aside
    signed: list[Signed] = field(default_factory=list)
    near: list[Edge] = field(default_factory=list)
    order: dict[str, list[Edge]] = field(default_factory=dict)  # by topic
    components: Components = field(default_factory=Components)
    ids: Ids = field(default_factory=Ids)
    published: dict[str, str] = field(default_factory=dict)  # minted id → published id
    related: dict[Lid, str] = field(default_factory=dict)
    langs: dict[str, str | None] = field(default_factory=dict)
    parts: list[Finished] = field(default_factory=list)
    output: RunOutput | None = None

    def only(self, names: Iterable[str]) -> Context:
        """This context with just ``names`` (what a step shipped to workers needs); any
        other field is withheld, and using one is an error, never a silent default."""
        kept = set(names)
        fields: dict[str, Any] = {
            f: getattr(self, f) if f in kept else _Withheld(f) for f in _FIELDS
        }
        return Context(**fields)

    @classmethod
    def building_on(
        cls, previous: Previous, settings: RunSettings, cache: PageCache | None = None
    ) -> Context:
        """The context of a run that builds on ``previous``."""
        ages = Ages.of(previous, settings.crawled_at)
        index = IdIndex.of(previous.items.values())
        known = previous.known_languages()
        return cls(previous, settings, index, known, ages, cache or PageCache())


class _Withheld:
    """A context field a step did not declare it needs (see :meth:`Context.only`)."""

    def __init__(self, name: str) -> None:
        self.__dict__["name"] = name

    def __reduce__(self) -> tuple[type[_Withheld], tuple[str]]:
        return (_Withheld, (self.__dict__["name"],))

    def _refuse(self, *_: Any) -> Any:
        raise AttributeError(f"a step used ctx.{self.__dict__['name']} without declaring it")

    __getattr__ = __getitem__ = __contains__ = __iter__ = __len__ = _refuse


_FIELDS = tuple(f.name for f in dataclasses.fields(Context))


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the run (see the module docstring)."""

    name: str
    kind: Literal["map", "group", "driver"]
    reads: str
    writes: str
    fn: Callable[..., Any]
    pairs: Callable[[Any, Context], Iterable[Any]] | None = None
    gather: Callable[[list[Any], Context], Any] | None = None
    needs: tuple[str, ...] = ()  # the context fields its functions read on a worker
    batched: bool = False
    pool: bool = False  # costly per record: the local engine runs it in its processes
    pool_from: int = 2  # ... when it has at least this many records or groups
    phase: str = "resolve"  # what the log calls it: read, resolve or write
    #: its value is read only by later steps that need it: an engine with worker processes
    #: forms its groups and hands them to the workers, and the run goes on (a group step)
    apart: bool = False


# --------------------------------------------------------------------------- functions


def parse(f: InputFile | StoredPage, ctx: Context) -> list[PageResult]:
    """One file read and parsed, or taken from the page cache (its entry kept); a bug in a
    parser is an INTERNAL_ERROR reject of the file, never a lost run."""
    try:
        page, data = _parse(f, ctx.cache)
    except Exception as e:
        return [failed_page(f.name, e)]
    if data is not None:  # parsed here: its entry goes into the new publish's cache
        ctx.cache.keep(data, page)
    if isinstance(f, StoredPage):  # a page the state kept (--merge), as the run reads it
        page.from_state = True
        for x in page.listings:
            x.stored, x.crawled_at = True, f.crawled_at
    return [page]


def _parse(f: InputFile | StoredPage, pages: PageCache) -> tuple[PageResult, bytes | None]:
    """A page, and its bytes when it was parsed (None: taken from the cache)."""
    if isinstance(f, StoredPage):
        page, data = pages.taken(f.sha256, f.name) if f.data is None else None, None
        if page is None:
            entry = pages.entry(f.sha256) if f.data is None else None
            data = f.data if entry is None else entry.data
            if data is None:
                raise ValueError(f"the state keeps no bytes of {f.name!r}")
            page = parse_bytes(f.name, data, f.sha256)
        return page, data
    if f.problem is not None:
        return file_reject(PageResult(f.name, "", 0, None, None), *f.problem, ""), None
    read, problem = read_bytes(f.path)
    if read is None:
        assert problem is not None
        return file_reject(PageResult(f.name, "", 0, None, None), *problem, ""), None
    sha256 = hashlib.sha256(read).hexdigest()
    taken = pages.taken(sha256, f.name)
    return (taken, None) if taken is not None else (parse_bytes(f.name, read, sha256), read)


def page_facts(page: PageResult, ctx: Context) -> list[PageResult]:
    facts = page.facts()
    facts.identity = page_identity(page)
    return [facts]


def topics(found: list[PageResult], ctx: Context) -> Topics:
    """The pages joined into topics; a topic only a topic-list shows keeps the slug the
    previous publish had for its description (its page may be back tomorrow)."""
    return topics_of(found, ctx.previous.topic_slugs())


def contested_pages(ctx: Context) -> frozenset[Page]:
    return contested(ctx.topics)


def page_ranks(page: PageResult, ctx: Context) -> list[tuple[Page, Ranked]]:
    """What a topic page another file of its topic may contradict ranks (only those)."""
    key = (page.file, page.sha256)
    return [(key, ranked(page.listings))] if key in ctx.contested else []


def one_version(found: list[tuple[Page, Ranked]], ctx: Context) -> Topics:
    return settle_versions(ctx.topics, dict(found), ctx.ages.day)


def routes(ctx: Context) -> Routes:
    return ctx.topics.routes()


def set_aside(page: PageResult, ctx: Context) -> list[PageReject]:
    """The listings of a topic page of a version another one won over, rejected."""
    why = ctx.routes.set_aside.get((page.file, page.sha256))
    if why is None:
        return []
    return [PageReject(x.prov, REASON, why, _shown(x), True) for x in page.listings]


def _shown(x: Listing) -> str:
    label = " · ".join(v for v in (x.kind_label, x.level_label) if v)
    return excerpt(f"{x.rank}. [{x.title_zh or ''}]（{label}）：{x.summary_zh}")


def gathered(found: list[Any], ctx: Context) -> list[Any]:
    return found


def with_slugs(page: PageResult, ctx: Context) -> list[Listing]:
    """The page's listings the later steps compute with, each told its topic and key."""
    if not ctx.routes.keeps(page):
        return []
    xs = page.with_slugs(ctx.routes.slug_of)
    if offset := ctx.routes.offset.get(page.file, 0):  # a later part of a topic list
        xs = [structs.replace(x, ordinal=x.ordinal + offset) for x in xs]
    return keyed(xs)


def by_topic(x: Listing, ctx: Context) -> list[tuple[str, OrderPoint]]:
    return [] if x.topic_key is None else [(x.topic_key, order_point(x))]


def order_pairs(slug: str, points: list[OrderPoint], ctx: Context) -> list[tuple[str, list[Edge]]]:
    return [(slug, topic_edges(points))]


def edges(found: list[tuple[str, list[Edge]]], ctx: Context) -> dict[str, list[Edge]]:
    return dict(found)


def by_title(xs: list[Listing], ctx: Context) -> list[list[tuple[str, None]]]:
    """Each title whose language no earlier publish decided, once a batch: an original
    title, or the Chinese one of an item page that shows no original title line."""
    seen: set[str] = set()
    out: list[list[tuple[str, None]]] = []
    for x in xs:
        t = x.title_original or (x.title_zh if x.original_is_chinese else None)
        if t is None or t in ctx.known or t in seen:
            out.append([])
        else:
            seen.add(t)
            out.append([(t, None)])
    return out


def language(title: str, _: list[None], ctx: Context) -> list[tuple[str, str | None]]:
    return [(title, language_of(title))]


def with_known(pairs: list[tuple[str, str | None]], ctx: Context) -> dict[str, str | None]:
    return {**ctx.known, **dict(pairs)}


def by_summary(xs: list[Listing], ctx: Context) -> list[list[tuple[str, None]]]:
    """Each listing's summary key, once a batch (a resource on many pages is one key)."""
    seen: set[str] = set()
    out: list[list[tuple[str, None]]] = []
    for key in map(summary_key, xs):
        out.append([] if key in seen else [(key, None)])
        seen.add(key)
    return out


def summary(key: str, _: list[None], ctx: Context) -> list[str]:
    return [key]


def signatures_of(keys: list[str], ctx: Context) -> list[Signed]:
    return [signed(keys)]


def near(ctx: Context) -> list[Edge]:
    return near_edges(ctx.signed)


def components(ctx: Context) -> Components:
    return label_components([*ctx.near, *(e for es in ctx.order.values() for e in es)])


def by_component(xs: list[Listing], ctx: Context) -> list[list[tuple[str, Listing]]]:
    label = ctx.components.label
    return [[(label.get(k, k), x)] for k, x in zip(map(summary_key, xs), xs, strict=True)]


def resolve(label: str, listings: list[Listing], ctx: Context) -> list[Component]:
    """One component's listings: its units (one per summary key, in key order), settled."""
    keys = list(map(summary_key, listings))
    if keys.count(keys[0]) == len(keys):  # the usual component: one summary key
        units = [units_of(keys[0], listings)]
    else:
        units = [units_of(k, xs) for k, xs in formed_groups([zip(keys, listings, strict=True)])]
    return [resolve_component(units, ctx.components.edges_of.get(label, []))]


def identity_claims(comp: Component, ctx: Context) -> list[Claim]:
    return claims(comp, ctx.index)


def published_ids(found: list[Claim], ctx: Context) -> Ids:
    return assign(found, ctx.index, ctx.previous.sequence + 1)


def minted_to_published(ctx: Context) -> dict[str, str]:
    return ctx.ids.final


def related(comp: Component, ctx: Context) -> list[tuple[Lid, str]]:
    return related_lids(comp)


def related_ids(pairs: list[tuple[Lid, str]], ctx: Context) -> dict[Lid, str]:
    return dict(pairs)


def records(comp: Component, ctx: Context) -> list[Finished]:
    return [finish(comp, ctx.published, ctx.related, ctx.langs, ctx.ages)]


def output(ctx: Context) -> RunOutput:
    t = ctx.topics
    return assemble(
        t.pages, t.groups, t.warnings, ctx.parts, ctx.previous, ctx.settings, ctx.ids, ctx.aside
    )


STEPS: tuple[Step, ...] = (
    Step("parse", "map", "inputs", "pages", parse, needs=("cache",), pool=True, phase="read"),
    Step("topics", "map", "pages", "topics", page_facts, gather=topics, needs=("previous",)),
    Step("contested", "driver", "", "contested", contested_pages, needs=("topics",)),
    # the topics again, with one version of each topic page (the others set aside)
    Step(
        "versions",
        "map",
        "pages",
        "topics",
        page_ranks,
        gather=one_version,
        needs=("contested", "topics", "ages"),
    ),
    Step("routes", "driver", "", "routes", routes, needs=("topics",)),
    Step("set aside", "map", "pages", "aside", set_aside, gather=gathered, needs=("routes",)),
    Step("listings", "map", "pages", "listings", with_slugs, needs=("routes",)),
    Step(
        "order",
        "group",
        "listings",
        "order",
        order_pairs,
        pairs=by_topic,
        gather=edges,
        apart=True,  # read by the components step alone: aligned while keys are signed
    ),
    Step(
        "languages",
        "group",
        "listings",
        "langs",
        language,
        pairs=by_title,
        gather=with_known,
        batched=True,
        pool=True,
        pool_from=2_000,  # fewer titles are judged faster than they travel
        needs=("known",),
        apart=True,  # read by the records step alone: judged while the steps between run
    ),
    Step("summary keys", "group", "listings", "keys", summary, pairs=by_summary, batched=True),
    Step(
        "signatures",
        "map",
        "keys",
        "signed",
        signatures_of,
        gather=gathered,
        batched=True,
        pool=True,
        pool_from=20_000,
    ),
    Step("near-duplicates", "driver", "", "near", near, needs=("signed",)),
    Step("components", "driver", "", "components", components, needs=("near", "order")),
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
        needs=("index", "previous"),
    ),
    Step("published ids", "driver", "", "published", minted_to_published, needs=("ids",)),
    Step("related", "map", "resolved", "related", related, gather=related_ids),
    Step(
        "records",
        "map",
        "resolved",
        "parts",
        records,
        gather=gathered,
        needs=("published", "related", "langs", "ages"),
    ),
    Step(
        "assemble",
        "driver",
        "",
        "output",
        output,
        needs=("topics", "parts", "previous", "settings", "ids", "aside"),
    ),
)


def formed_groups(
    batches: Iterable[Iterable[tuple[Hashable, Any]]],
) -> list[tuple[Any, list[Any]]]:
    """A group step's (key, value) pairs, given in batches, as its groups: (key, values) in
    key order, the values in the order given. What every engine does with the pairs once
    they are where it groups them."""
    groups: dict[Any, list[Any]] = {}
    for pairs in batches:
        for key, value in pairs:
            groups.setdefault(key, []).append(value)
    return sorted(groups.items())


# How an engine calls a step's functions, on a record (or a batch) and the step's task:
# ``(step, ctx.only(step.needs))``.


def map_one(record: Any, task: tuple[Step, Context]) -> list[Any]:
    step, ctx = task
    return list(step.fn(record, ctx))


def map_batch(records: Iterable[Any], task: tuple[Step, Context]) -> list[Any]:
    step, ctx = task
    return list(step.fn(list(records), ctx))


def pairs_of(record: Any, task: tuple[Step, Context]) -> list[Any]:
    step, ctx = task
    assert step.pairs is not None, f"group step {step.name!r} has no pairs function"
    return list(step.pairs(record, ctx))


def pairs_of_batch(records: Iterable[Any], task: tuple[Step, Context]) -> list[Any]:
    step, ctx = task
    assert step.pairs is not None, f"group step {step.name!r} has no pairs function"
    return [p for per in step.pairs(list(records), ctx) for p in per]


def group_one(group: tuple[Any, list[Any]], task: tuple[Step, Context]) -> list[Any]:
    step, ctx = task
    return list(step.fn(group[0], group[1], ctx))


class Engine(Protocol):
    """What an engine provides: collections, and the ways to run a step on one."""

    def source(self, records: list[Any]) -> Any: ...

    def map(self, collection: Any, step: Step, ctx: Context) -> Any: ...

    def group(self, collection: Any, step: Step, ctx: Context) -> Any: ...

    def collect(self, collection: Any) -> list[Any]: ...

    def start(self, collection: Any, step: Step, ctx: Context) -> Pending | None:
        """An ``apart`` step's work, handed to workers (None: it runs in turn)."""
        ...


class Pending(Protocol):
    """An ``apart`` step's outputs being computed: ``result()`` waits for them."""

    def result(self) -> list[Any]: ...


#: Hears of each step as it starts (with the number of records it reads when they are the
#: inputs) and ends (with its seconds).
Begin = Callable[[Step, int | None], None]
End = Callable[[Step, float], None]


def run_steps(
    engine: Engine,
    inputs: list[Any],
    ctx: Context,
    begin: Begin | None = None,
    end: End | None = None,
    steps: tuple[Step, ...] = STEPS,
) -> Context:
    """Every step of ``steps`` on ``engine``, in turn but for an ``apart`` step the engine
    hands to its workers: its value is taken when the first step that needs it comes (or
    at the end). A collection is let go as soon as the last step that reads it is done."""
    last = {step.reads: n for n, step in enumerate(steps) if step.kind != "driver"}
    data: dict[str, Any] = {"inputs": engine.source(inputs)}
    pending: dict[str, tuple[Step, Pending, float]] = {}

    def join(name: str) -> None:
        step, work, seconds = pending.pop(name)
        t0 = time.perf_counter()
        assert step.gather is not None, f"apart step {step.name!r} gathers no value"
        setattr(ctx, step.writes, step.gather(work.result(), ctx))
        if end is not None:
            end(step, seconds + time.perf_counter() - t0)

    for n, step in enumerate(steps):
        for name in [w for w in pending if w in step.needs]:
            join(name)
        if begin is not None:
            begin(step, len(inputs) if step.reads == "inputs" else None)
        t0 = time.perf_counter()
        work = engine.start(data[step.reads], step, ctx) if step.apart else None
        if work is not None:
            pending[step.writes] = (step, work, time.perf_counter() - t0)
        elif step.kind == "driver":
            setattr(ctx, step.writes, step.fn(ctx.only(step.needs)))
        else:
            run = engine.map if step.kind == "map" else engine.group
            out = run(data[step.reads], step, ctx)
            if step.gather is not None:
                setattr(ctx, step.writes, step.gather(engine.collect(out), ctx))
            else:
                data[step.writes] = out
        for name in [c for c, i in last.items() if i == n]:
            data.pop(name, None)
        if end is not None and work is None:
            end(step, time.perf_counter() - t0)
    for name in list(pending):
        join(name)
    return ctx
