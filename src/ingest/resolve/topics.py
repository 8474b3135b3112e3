"""Topic join: topic-lists join topic pages by the normalized description (key → group).

A topic page is identified by its canonical URL (:func:`~ingest.normalize.urls.topic_url`):
copies whose URLs differ only in form are one topic. A flattened header ('# NAME
DESCRIPTION') offers a key per place it could split; the topic-list's description picks.
A topic-list whose page is not in the batch gets a slug derived from it (with a warning).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from msgspec import structs

from ingest.normalize.text import match_key
from ingest.normalize.urls import unpaged, url_slug
from ingest.records import Listing, PageReject, PageResult, TopicHeader, TopicStats
from ingest.resolve.graph import summary_key


@dataclass(slots=True)
class TopicGroup:
    """All pages of one topic."""

    slug: str
    pages: list[PageResult] = field(default_factory=list)  # topic pages, by sha256
    lists: list[PageResult] = field(default_factory=list)  # topic-lists, by sha256

    @property
    def header(self) -> TopicHeader | None:
        return self.pages[0].header if self.pages else None

    @property
    def stats(self) -> TopicStats | None:
        return self.lists[0].stats if self.lists else None


@dataclass(slots=True)
class Topics:
    """The topics of a run: page facts (sorted), their groups, each page's slug, and the
    pages an earlier publish kept that a newer version replaces (``--merge``)."""

    pages: list[PageResult] = field(default_factory=list)
    groups: dict[str, TopicGroup] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    slug_of: dict[str, str] = field(default_factory=dict)
    superseded: set[tuple[str, str]] = field(default_factory=set)  # (file, sha256), state
    #: (file, sha256) → why: topic pages of a version another one wins over (.versions)
    set_aside: dict[tuple[str, str], str] = field(default_factory=dict)

    def routes(self) -> Routes:
        return Routes(self.slug_of, self.superseded, self.set_aside, _list_offsets(self))


@dataclass(frozen=True, slots=True)
class Routes:
    """What a page's listings need of the topics: its slug, whether it is kept (small: it
    travels to every worker, unlike the page facts)."""

    slug_of: dict[str, str] = field(default_factory=dict)
    superseded: set[tuple[str, str]] = field(default_factory=set)
    set_aside: dict[tuple[str, str], str] = field(default_factory=dict)
    #: file → where its entries start among its topic's list entries (a list in parts)
    offset: dict[str, int] = field(default_factory=dict)

    def keeps(self, page: PageResult) -> bool:
        key = (page.file, page.sha256)
        return not (page.from_state and key in self.superseded) and key not in self.set_aside


def _list_offsets(topics: Topics) -> dict[str, int]:
    """A topic list saved in parts (files of different bytes, one topic) is one list: the
    parts follow each other in file-name order (copies of one part start where it starts)."""
    out: dict[str, int] = {}
    for g in topics.groups.values():
        if len({p.sha256 for p in g.lists}) < 2:
            continue
        start: dict[str, int] = {}
        total = 0
        for p in sorted(g.lists, key=lambda p: (p.file, p.sha256)):
            if p.sha256 not in start:
                start[p.sha256], total = total, total + p.listings_read
            out[p.file] = start[p.sha256]
    return out


def topics_of(facts: list[PageResult], earlier: Mapping[str, str] | None = None) -> Topics:
    """Join the pages (facts, any order) into topics; ``earlier``: an earlier publish's
    slugs by description key."""
    found = sorted(facts, key=lambda r: (r.file, r.sha256, r.from_state))
    superseded = _superseded(found)
    kept = Routes(superseded=superseded).keeps  # the same test as each page's listings get
    pages = [r for r in found if kept(r)]
    warnings: list[str] = []
    groups = join_topics(pages, warnings, earlier or {})
    slug_of = {r.file: r.slug for r in pages if r.slug is not None}
    return Topics(pages, groups, warnings, slug_of, superseded)


def page_identity(page: PageResult) -> str | None:
    """What makes two versions of a page one page: a topic page's URL (or slug), a topic
    list's description, an item page's original title (or its summary)."""
    if page.header is not None:
        return f"topic-page:{page.header.url or page.header.slug or page.header.name}"
    if page.stats is not None:
        return f"topic-list:{page.stats.description_key}"
    main = next((x for x in page.listings if x.role == "main"), None)
    if main is not None:
        own = match_key(main.title_original) if main.title_original else summary_key(main)
        return f"item-page:{own}"
    return None


def _superseded(pages: list[PageResult]) -> set[tuple[str, str]]:
    """Pages kept by an earlier publish that an input replaces: same file name, or the same
    page (:func:`page_identity`) in a newer version; a kept topic page only by one it
    contradicts (:func:`settle_versions`; else it is a part of the topic's one version)."""
    names = {r.file for r in pages if not r.from_state}
    same = {r.identity for r in pages if not r.from_state and r.identity}
    return {
        (r.file, r.sha256)
        for r in pages
        if r.from_state
        and (r.file in names or (r.header is None and r.identity and r.identity in same))
    }


def derived_slug(text: str) -> str:
    """A stable slug for a topic known only by its description or name."""
    return "topic-" + hashlib.blake2b(match_key(text).encode(), digest_size=6).hexdigest()


def join_topics(
    results: list[PageResult], warnings: list[str], earlier: Mapping[str, str]
) -> dict[str, TopicGroup]:
    """Group topic pages and topic-lists by topic; set each page's slug."""
    groups: dict[str, TopicGroup] = {}
    by_key: dict[str, set[str]] = {}
    results = sorted(results, key=lambda r: r.sha256)
    pages = [(r, h) for r in results if (h := r.header) is not None]
    _join_paginated(pages)
    _settle_slugs(pages, warnings)
    for r, h in pages:
        groups.setdefault(h.slug, TopicGroup(h.slug)).pages.append(r)
        for k in h.description_keys:
            by_key.setdefault(k, set()).add(h.slug)
        r.slug = h.slug
    for r in (r for r in results if r.stats is not None):
        slug = _join_list(r, by_key, groups, warnings, earlier)
        groups.setdefault(slug, TopicGroup(slug)).lists.append(r)
        r.slug = slug
    _settle_headers(groups, warnings)
    return {k: groups[k] for k in sorted(groups)}


def _join_paginated(pages: list[tuple[PageResult, TopicHeader]]) -> None:
    """Parts of a paginated topic: pages whose URLs differ only by the page number a part
    carries (``?page=2``, ``/page/2``) are one topic, known by the URL without it — a page
    whose ranks continue others' (its first is not 1), with the page of the name they go
    on from; pages that each start at rank 1 under other names stay topics of their own."""
    found: dict[str, list[tuple[PageResult, TopicHeader]]] = {}
    for r, h in pages:
        if h.url:
            found.setdefault(unpaged(h.url), []).append((r, h))
    for base, members in found.items():
        names = {h.name for r, h in members if r.first_rank == 1}
        if len({h.url for _, h in members}) < 2 or len(names) > 1:
            continue
        for _, h in members:
            h.url, h.slug = base, url_slug(base) or h.slug


def _settle_slugs(pages: list[tuple[PageResult, TopicHeader]], warnings: list[str]) -> None:
    """Give every topic page its slug. Different URLs that end in one slug are different
    topics: the smallest URL keeps the slug, the others get a stable suffix."""
    urls: dict[str, set[str]] = {}
    for _, h in pages:
        if not h.slug:
            h.slug = derived_slug(f"{h.name or ''} {h.description or ''}")
        urls.setdefault(h.slug, set()).add(h.url or "")
    for r, h in pages:
        taken = sorted(urls[h.slug])
        if (h.url or "") != taken[0]:
            suffix = hashlib.blake2b((h.url or "").encode(), digest_size=3).hexdigest()
            warnings.append(
                f"{r.file}: header: TOPIC_SLUG_COLLISION: {h.slug!r} also names "
                f"{taken[0]!r}; this topic is {h.slug}-{suffix}"
            )
            h.slug = f"{h.slug}-{suffix}"


def _join_list(
    r: PageResult,
    by_key: dict[str, set[str]],
    groups: dict[str, TopicGroup],
    warns: list[str],
    earlier: Mapping[str, str],
) -> str:
    assert r.stats is not None
    slugs = sorted(by_key.get(r.stats.description_key, ()))
    if len(slugs) > 1:
        warns.append(
            f"{r.file}: line 1: TOPIC_AMBIGUOUS: description matches topics "
            f"{', '.join(slugs)}; joined to {slugs[0]}"
        )
    if slugs:
        return slugs[0]
    kept = earlier.get(r.stats.description_key)
    if kept is not None and not (kept in groups and groups[kept].pages):
        slug, how = kept, "kept from the previous publish's topic of this description"
    else:
        slug, how = derived_slug(r.stats.description), "derived from it"
    if slug not in groups:
        warns.append(
            f"{r.file}: line 1: TOPIC_PAGE_MISSING: no topic page with this "
            f"description in the batch; slug {slug} {how}"
        )
    return slug


def _settle_headers(groups: dict[str, TopicGroup], warns: list[str]) -> None:
    """Fix name/description of flattened headers by the joined topic-list's description."""
    for g in groups.values():
        for page in g.pages:
            h = page.header
            assert h is not None
            if len(h.description_keys) <= 1:
                continue
            stats = g.stats
            if stats is not None and stats.description_key in h.description_keys:
                full = f"{h.name} {h.description}"
                cut = len(full) - len(stats.description)
                if full.endswith(stats.description) and cut > 1:
                    h.name, h.description = full[: cut - 1], stats.description
                    continue
            warns.append(
                f"{page.file}: header: HEADER_AMBIGUOUS: name and description are "
                f"split at the first space ({h.name!r})"
            )


REASON = "TOPIC_VERSION_SUPERSEDED"
Page = tuple[str, str]  # (file, sha256)
#: A topic page's listings as its ranks show them: (rank, the resource's summary key).
Ranked = tuple[tuple[int, str], ...]


def contested(topics: Topics) -> frozenset[Page]:
    """The topic pages of the topics read from files of different bytes."""
    return frozenset(
        (p.file, p.sha256)
        for g in topics.groups.values()
        if len({p.sha256 for p in g.pages}) > 1
        for p in g.pages
    )


def ranked(listings: list[Listing]) -> Ranked:
    """What a topic page says of its topic: each rank and the resource at it."""
    return tuple((x.rank, summary_key(x)) for x in listings if x.rank is not None)


def settle_versions(
    topics: Topics, pages: Mapping[Page, Ranked], day_of: Callable[[str], dt.date | None]
) -> Topics:
    """``topics`` with each topic's pages that do not contradict each other joined as parts
    of one version (``pages``: what each contested page ranks). Two pages contradict when
    one rank holds different resources, or one resource two ranks. The pages are taken in
    the version rule's order (newest crawl day, more listings, file name that sorts last),
    each joining those before it unless it contradicts them: then it is set aside, its
    listings rejected naming the file it contradicts. A page an earlier publish kept
    (``--merge``) comes after the inputs, and one they contradict is replaced, not rejected."""
    groups, warnings, set_aside = dict(topics.groups), [*topics.warnings], {}
    notes: dict[Page, str] = {}
    superseded: set[Page] = set()
    for slug, g in topics.groups.items():
        if len({p.sha256 for p in g.pages}) < 2:
            continue

        def rank(p: PageResult) -> Rank:
            day = day_of(p.sha256) or dt.date.max  # a page no run dated: this run's
            return (not p.from_state, day, p.listings_read, p.file, p.sha256)

        at: dict[int, tuple[str, PageResult]] = {}  # rank → the resource, the page that says so
        of: dict[str, tuple[int, PageResult]] = {}  # resource → its rank, the page
        taken: list[PageResult] = []
        lost: list[tuple[PageResult, PageResult, str]] = []
        for p in sorted(g.pages, key=rank, reverse=True):
            said = pages.get((p.file, p.sha256), ())
            clash = _contradiction(said, at, of)
            if clash is None:
                taken.append(p)
                for r, key in said:
                    at.setdefault(r, (key, p))
                    of.setdefault(key, (r, p))
            else:
                other, how = clash
                lost.append((p, other, f"{how}; {_why(rank(other), rank(p))}"))
        replaced = [(p, o, w) for p, o, w in lost if p.from_state]
        lost = [(p, o, w) for p, o, w in lost if not p.from_state]
        superseded |= {(p.file, p.sha256) for p, _, _ in replaced}  # a newer version, given
        _parts_told(taken, pages)
        groups[slug] = TopicGroup(slug, [p for p in g.pages if p in taken], g.lists)
        if not lost:
            continue
        names = ", ".join(p.file for p, _, _ in lost)
        warnings.append(
            f"topic {slug}: TOPIC_VERSIONS: {len(lost) + 1} versions of its topic page in "
            f"this run; {', '.join(p.file for p in taken)} used, not {names}"
        )
        for p, other, why in lost:
            set_aside[(p.file, p.sha256)] = (
                f"topic {slug}: the version in {other.file} is used ({why}); ranks never mix"
            )
            notes[(p.file, p.sha256)] = (
                f"file: {REASON}: another version of topic {slug} is used, {other.file} "
                f"({why}); this file's listings are rejected"
            )
    pages_ = [  # the pages set aside, warned (no group holds them any more)
        structs.replace(p, warnings=[*p.warnings, notes[k]]) if k in notes else p
        for p, k in ((p, (p.file, p.sha256)) for p in topics.pages)
        if k not in superseded
    ]
    return dataclasses.replace(
        topics,
        pages=pages_,
        groups=groups,
        warnings=warnings,
        set_aside=set_aside,
        superseded=topics.superseded | superseded,
    )


def _parts_told(taken: list[PageResult], pages: Mapping[Page, Ranked]) -> None:
    """A part whose numbering continues another part's lost no first listings: its
    warning that the numbering does not start at 1 goes."""
    ranks = {(p.file, p.sha256): [r for r, _ in pages.get((p.file, p.sha256), ())] for p in taken}
    every = {r for rs in ranks.values() for r in rs}
    for p in taken:
        mine = ranks[(p.file, p.sha256)]
        if mine and mine[0] - 1 in every:
            p.warnings = [w for w in p.warnings if "numbering does not start at 1" not in w]


def _contradiction(
    said: Ranked, at: Mapping[int, tuple[str, PageResult]], of: Mapping[str, tuple[int, PageResult]]
) -> tuple[PageResult, str] | None:
    """Where a page's ranks contradict the pages taken: (the page it contradicts, how)."""
    for r, key in said:
        if r in at and at[r][0] != key:
            return at[r][1], f"its rank {r} holds another resource"
        if key in of and of[key][0] != r:
            return of[key][1], f"the resource at its rank {r} is at rank {of[key][0]} there"
    return None


Rank = tuple[bool, dt.date, int, str, str]  # given, crawl day, listings, file, sha256


def _why(win: Rank, other: Rank) -> str:
    """Why the version rule takes ``win`` before ``other``."""
    if win[0] != other[0]:
        return "given in this run, where the other was kept by the publish before"
    if win[1] != other[1]:
        return f"crawled {'by this run' if win[1] == dt.date.max else win[1]}, the newest"
    if win[2] != other[2]:
        return f"{win[2]} listings against {other[2]}"
    return "the file name that sorts last"


def with_set_aside(pages: list[PageResult], rejects: Iterable[PageReject]) -> list[PageResult]:
    """The pages' facts with the listings of those set aside among their rejects (and not
    counted as kept elsewhere too: each is read once)."""
    by_page: dict[Page, list[PageReject]] = {}
    for rj in rejects:
        by_page.setdefault((rj.prov.file, rj.prov.sha256), []).append(rj)
    if not by_page:
        return pages
    out = []
    for p in pages:
        mine = by_page.get((p.file, p.sha256), [])
        if mine:
            p = structs.replace(
                p, rejects=[*p.rejects, *mine], listings_elsewhere=p.listings_elsewhere - len(mine)
            )
        out.append(p)
    return out
