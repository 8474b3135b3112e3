"""The functions of the steps. Module-level functions (not lambdas), so process pools and Dask
can ship them; each is pure on its arguments."""

from __future__ import annotations

from typing import Any

from ..extract.pages import extract_page
from ..extract.parse.base import excerpt
from ..normalize.language import language_of
from ..records.internal import Listing, PageReject, PageResult
from ..records.run import RunOutput
from ..transform.align import OrderPoint, order_point, topic_edges
from ..transform.components import Components, label_components
from ..transform.identity import Claim, Ids, assign, claims
from ..transform.merge import Component, resolve_component
from ..transform.near import Signed, near_edges, signed
from ..transform.records import Finished, Lid, finish, related_lids
from ..transform.report import assemble
from ..transform.topics import Routes, Topics, page_identity, topics_of
from ..transform.units import Edge, keyed, summary_key, units_of
from ..transform.versions import REASON, Page, contested, settle_versions, version
from .context import Context, formed_groups


def parse(f: Any, ctx: Context) -> list[PageResult]:
    return [extract_page(f)]


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


def page_version(page: PageResult, ctx: Context) -> list[tuple[Page, int]]:
    """The version of a topic page another file of its topic may differ from (only those:
    a version digests the page's text)."""
    key = (page.file, page.sha256)
    return [(key, version(page))] if key in ctx.contested else []


def one_version(found: list[tuple[Page, int]], ctx: Context) -> Topics:
    """The topics with one version of each topic page, the others set aside."""
    return settle_versions(ctx.topics, dict(found), ctx.ages.day)


def routes(ctx: Context) -> Routes:
    return ctx.topics.routes()


def with_slugs(page: PageResult, ctx: Context) -> list[Listing]:
    return keyed(page.with_slugs(ctx.routes.slug_of)) if ctx.routes.keeps(page) else []


def set_aside(page: PageResult, ctx: Context) -> list[PageReject]:
    """The listings of a topic page of a version another one won over, rejected."""
    why = ctx.routes.set_aside.get((page.file, page.sha256))
    if why is None:
        return []
    return [PageReject(x.prov, REASON, why, _shown(x), True) for x in page.listings]


def _shown(x: Listing) -> str:
    """A topic-page listing much as the page shows it, for a reject's excerpt."""
    label = " · ".join(v for v in (x.kind_label, x.level_label) if v)
    return excerpt(f"{x.rank}. [{x.title_zh or ''}]（{label}）：{x.summary_zh}")


def rejected(found: list[PageReject], ctx: Context) -> list[PageReject]:
    return found


def by_summary(xs: list[Listing], ctx: Context) -> list[list[tuple[str, None]]]:
    """Each listing's summary key, once a batch: a key met earlier in the batch gives none
    (a resource listed on many pages is one key, and only the keys travel)."""
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


def near(found: list[Signed], ctx: Context) -> list[Edge]:
    return near_edges(found)


def by_topic(x: Listing, ctx: Context) -> list[tuple[str, OrderPoint]]:
    return [] if x.topic_key is None else [(x.topic_key, order_point(x))]


def order_pairs(slug: str, points: list[OrderPoint], ctx: Context) -> list[Edge]:
    return topic_edges(points)


def edges(found: list[Edge], ctx: Context) -> list[Edge]:
    return found


def components(ctx: Context) -> Components:
    return label_components(ctx.near + ctx.order)


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
    """The published id of each minted one: all of ``ids`` the records step reads (the
    identity evidence beside it, 12 MB at 100 MB, is the publish's alone)."""
    return ctx.ids.final


def related(comp: Component, ctx: Context) -> list[tuple[Lid, str]]:
    return related_lids(comp)


def as_dict(pairs: list[tuple[Any, Any]], ctx: Context) -> dict[Any, Any]:
    return dict(pairs)


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
    return [finish(comp, ctx.published, ctx.related, ctx.langs, ctx.ages)]


def parts(found: list[Finished], ctx: Context) -> list[Finished]:
    return found


def output(ctx: Context) -> RunOutput:
    t = ctx.topics
    return assemble(
        t.pages, t.groups, t.warnings, ctx.parts, ctx.previous, ctx.settings, ctx.ids, ctx.aside
    )
