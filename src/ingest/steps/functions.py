"""The functions of the steps. Module-level functions (not lambdas), so process pools and Dask
can ship them; each is pure on its arguments."""

from __future__ import annotations

from typing import Any

from msgspec import structs

from ..extract.pages import extract_page
from ..extract.parse.base import excerpt
from ..normalize.language import language_of
from ..records.internal import Listing, PageReject, PageResult
from ..records.run import RunOutput
from ..transform.align import OrderPoint, order_point, topic_edges
from ..transform.components import Components, label_components
from ..transform.group import finish_key, group_digest, member_of, memo_of
from ..transform.identity import Claim, Ids, assign, claims
from ..transform.merge import Component, resolve_component
from ..transform.near import Signed, near_edges, signed
from ..transform.records import Finished, Lid, finish, related_lids
from ..transform.report import assemble
from ..transform.topics import Routes, Topics, page_identity, topics_of
from ..transform.units import Edge, keyed, summary_key, units_of
from ..transform.versions import REASON, Page, contested, settle_versions, version
from .context import Context, formed_groups
from .plan import Plan, group_listings, plan_of


def parse(f: Any, ctx: Context) -> list[PageResult]:
    return [extract_page(f, None if ctx.reuse is None else ctx.reuse.known)]


def page_facts(page: PageResult, ctx: Context) -> list[PageResult]:
    facts = page.facts()
    facts.identity = page.identity or page_identity(page)  # a page taken keeps its own
    return [facts]


def topics(found: list[PageResult], ctx: Context) -> Topics:
    """The pages joined into topics; a topic only a topic-list shows keeps the slug the
    previous publish had for its description (its page may be back tomorrow)."""
    return topics_of(found, ctx.previous.topic_slugs())


def contested_pages(ctx: Context) -> frozenset[Page]:
    return contested(ctx.topics)


def page_version(page: PageResult, ctx: Context) -> list[tuple[Page, int]]:
    """The version of a topic page another file of its topic may differ from (only those:
    a version digests the page's text)."""
    key = (page.file, page.sha256)
    return [(key, version(_every_listing(page, ctx)))] if key in ctx.contested else []


def one_version(found: list[tuple[Page, int]], ctx: Context) -> Topics:
    """The topics with one version of each topic page, the others set aside."""
    return settle_versions(ctx.topics, dict(found), ctx.ages.day)


def routes(ctx: Context) -> Routes:
    return ctx.topics.routes()


def planned(page: PageResult, ctx: Context) -> list[PageResult]:
    """Every page, to the plan (a run that takes nothing from a cache keeps none)."""
    return [] if ctx.reuse is None else [page]


def plan(pages: list[PageResult], ctx: Context) -> Plan:
    return plan_of(pages, ctx.reuse, ctx.routes)


def with_slugs(page: PageResult, ctx: Context) -> list[Listing]:
    """The page's listings that the later steps compute with, each told its topic."""
    if not ctx.routes.keeps(page):
        return []
    dirty = ctx.plan.dirty
    if dirty is None and not page.reused:
        return keyed(page.with_slugs(ctx.routes.slug_of))
    assert ctx.reuse is not None, "a page taken with no cache"
    xs = ctx.reuse.listings(page, None if dirty is None else dirty.get(page.file, set()))
    slug = ctx.routes.slug_of.get(page.file)
    for x in xs:
        x.topic_key = slug
    return keyed(xs)


def set_aside(page: PageResult, ctx: Context) -> list[PageReject]:
    """The listings of a topic page of a version another one won over, rejected."""
    why = ctx.routes.set_aside.get((page.file, page.sha256))
    if why is None:
        return []
    return [PageReject(x.prov, REASON, why, _shown(x), True) for x in _every_listing(page, ctx)]


def _every_listing(page: PageResult, ctx: Context) -> list[Listing]:
    """A page's listings, read from the cache for a page taken from it."""
    if not page.reused:
        return page.listings
    assert ctx.reuse is not None, "a page taken with no cache"
    return ctx.reuse.listings(page)


def _shown(x: Listing) -> str:
    """A topic-page listing much as the page shows it, for a reject's excerpt."""
    label = " · ".join(v for v in (x.kind_label, x.level_label) if v)
    return excerpt(f"{x.rank}. [{x.title_zh or ''}]（{label}）：{x.summary_zh}")


def rejected(found: list[PageReject], ctx: Context) -> list[PageReject]:
    return found


def by_summary(xs: list[Listing], ctx: Context) -> list[list[tuple[str, None]]]:
    """Each listing's summary key, once a batch: a key met earlier in the batch gives none
    (a resource listed on many pages is one key, and only the keys travel). None when the
    plan gives the near-duplicate edges."""
    if ctx.plan.given:
        return [[] for _ in xs]
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


def gathered(found: list[Any], ctx: Context) -> list[Any]:
    return found


def near(ctx: Context) -> list[Edge]:
    return ctx.plan.near if ctx.plan.given else near_edges(ctx.signed)


def by_topic(x: Listing, ctx: Context) -> list[tuple[str, OrderPoint]]:
    if x.topic_key is None or ctx.plan.given:
        return []
    return [(x.topic_key, order_point(x))]


def order_pairs(slug: str, points: list[OrderPoint], ctx: Context) -> list[tuple[str, list[Edge]]]:
    return [(slug, topic_edges(points))]


def edges(found: list[tuple[str, list[Edge]]], ctx: Context) -> dict[str, list[Edge]]:
    return ctx.plan.order if ctx.plan.given else dict(found)


def components(ctx: Context) -> Components:
    if ctx.plan.given:
        return ctx.plan.components
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
    edges = ctx.components.edges_of.get(label, [])
    comp = resolve_component(units, edges)
    if ctx.reuse is not None:  # a later run may take it as it is
        comp.digest = group_digest(list(map(member_of, listings)), edges)
    return [comp]


def identity_claims(comp: Component, ctx: Context) -> list[Claim]:
    return claims(comp, ctx.index)


def published_ids(found: list[Claim], ctx: Context) -> Ids:
    every = [*found, *ctx.plan.claims(ctx.index)]
    return assign(every, ctx.index, ctx.previous.sequence + 1)


def minted_to_published(ctx: Context) -> dict[str, str]:
    """The published id of each minted one: all of ``ids`` the records step reads (the
    identity evidence beside it, 12 MB at 100 MB, is the publish's alone)."""
    return ctx.ids.final


def related(comp: Component, ctx: Context) -> list[tuple[Lid, str]]:
    return related_lids(comp)


def related_ids(pairs: list[tuple[Lid, str]], ctx: Context) -> dict[Lid, str]:
    return {**ctx.plan.related(), **dict(pairs)}


def with_known(pairs: list[tuple[str, str | None]], ctx: Context) -> dict[str, str | None]:
    return {**ctx.known, **dict(pairs)}


def listing_titles(x: Listing) -> str | None:
    """The title of a listing that an item may take as its original title: its original
    title, or the Chinese one of an item page that shows no original title line."""
    return x.title_original or (x.title_zh if x.original_is_chinese else None)


def by_title(titles: list[str | None], ctx: Context) -> list[list[tuple[str, None]]]:
    """Each title whose language no earlier publish decided, once a batch."""
    seen: set[str] = set()
    out: list[list[tuple[str, None]]] = []
    for t in titles:
        if t is None or t in ctx.known or t in seen:
            out.append([])
        else:
            seen.add(t)
            out.append([(t, None)])
    return out


def language(title: str, _: list[None], ctx: Context) -> list[tuple[str, str | None]]:
    return [(title, language_of(title))]


def records(comp: Component, ctx: Context) -> list[Finished]:
    # every value finish reads besides the component is in the group's finish_key
    done = finish(comp, ctx.published, ctx.related, ctx.langs, ctx.ages)
    if comp.digest:
        memo = memo_of(comp)
        key = finish_key(memo, ctx.published, ctx.related, ctx.langs, ctx.ages)
        done.memo = structs.replace(memo, key=key)
    return [done]


def parts(found: list[Finished], ctx: Context) -> list[Finished]:
    """The finished groups, and those the plan took: as they were when what finishing
    them reads is what it was, else resolved and finished again."""
    out = list(found)
    again = set()
    for label, done in ctx.plan.found.items():
        assert done.memo is not None
        if finish_key(done.memo, ctx.published, ctx.related, ctx.langs, ctx.ages) == done.memo.key:
            out.append(done)
        else:
            again.add(label)
    if not again:
        return out
    assert ctx.reuse is not None, "a group taken with no cache"
    for label, listings in sorted(group_listings(again, ctx.plan, ctx.reuse, ctx.routes).items()):
        for comp in resolve(label, listings, ctx):
            out.extend(records(comp, ctx))
    return out


def output(ctx: Context) -> RunOutput:
    t = ctx.topics
    return assemble(
        t.pages, t.groups, t.warnings, ctx.parts, ctx.previous, ctx.settings, ctx.ids, ctx.aside
    )
