"""Topic join: topic-lists join topic pages by the normalized description (key → group).

A topic page is identified by its canonical topic URL (``normalize.urls.topic_url``: https,
no ``www.``, no default port, no trailing slash, no tracking parameters, no fragment; the
header already carries it), so two copies of a page whose URLs differ only in those ways
are one topic, and its slug never depends on which variant a page showed.

A flattened header ('# NAME DESCRIPTION') offers one key per place it could split; the
topic-list's description line picks the split. A topic-list whose page is not in the
batch still yields a topic, its slug derived from the description (with a warning).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..normalize.text import match_key
from ..records.internal import PageResult, TopicHeader, TopicStats
from .units import summary_key


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
    """The topics of a run: page facts (sorted), their groups, and each page's slug; and
    the pages an earlier publish kept that a newer version replaces (``--merge``)."""

    pages: list[PageResult] = field(default_factory=list)
    groups: dict[str, TopicGroup] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    slug_of: dict[str, str] = field(default_factory=dict)
    superseded: set[tuple[str, str]] = field(default_factory=set)  # (file, sha256), state
    #: (file, sha256) → why: topic pages of a version another one wins over (.versions)
    set_aside: dict[tuple[str, str], str] = field(default_factory=dict)

    def routes(self) -> Routes:
        return Routes(self.slug_of, self.superseded, self.set_aside)


@dataclass(frozen=True, slots=True)
class Routes:
    """What a page's listings need of the topics: the page's slug, and whether the page
    is kept (small: it travels to every worker, unlike the page facts)."""

    slug_of: dict[str, str] = field(default_factory=dict)
    superseded: set[tuple[str, str]] = field(default_factory=set)
    set_aside: dict[tuple[str, str], str] = field(default_factory=dict)

    def keeps(self, page: PageResult) -> bool:
        key = (page.file, page.sha256)
        return not (page.from_state and key in self.superseded) and key not in self.set_aside


def topics_of(facts: list[PageResult], earlier: Mapping[str, str] | None = None) -> Topics:
    """Join the pages (facts only, in any order) into topics; ``earlier``: the slugs of an
    earlier publish's topics by description key."""
    found = sorted(facts, key=lambda r: (r.file, r.sha256, r.from_state))
    superseded = _superseded(found)
    kept = Routes(superseded=superseded).keeps  # the same test as each page's listings get
    pages = [r for r in found if kept(r)]
    warnings: list[str] = []
    groups = join_topics(pages, warnings, earlier or {})
    slug_of = {r.file: r.slug for r in pages if r.slug is not None}
    return Topics(pages, groups, warnings, slug_of, superseded)


def page_identity(page: PageResult) -> str | None:
    """What makes two versions of a page the same page: a topic page's URL (or slug), a
    topic list's description, an item page's original title (or its summary)."""
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
    """Pages kept by an earlier publish that an input replaces: same file name, or the
    same page (:func:`page_identity`) in a newer version."""
    names = {r.file for r in pages if not r.from_state}
    same = {r.identity for r in pages if not r.from_state and r.identity}
    return {
        (r.file, r.sha256)
        for r in pages
        if r.from_state and (r.file in names or (r.identity and r.identity in same))
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
    pages = sorted((r for r in results if r.header is not None), key=lambda r: r.sha256)
    _settle_slugs(pages, warnings)
    for r in pages:
        h = r.header
        assert h is not None
        groups.setdefault(h.slug, TopicGroup(h.slug)).pages.append(r)
        for k in h.description_keys:
            by_key.setdefault(k, set()).add(h.slug)
        r.slug = h.slug
    lists = sorted((r for r in results if r.stats is not None), key=lambda r: r.sha256)
    for r in lists:
        slug = _join_list(r, by_key, groups, warnings, earlier)
        groups.setdefault(slug, TopicGroup(slug)).lists.append(r)
        r.slug = slug
    _settle_headers(groups, warnings)
    return {k: groups[k] for k in sorted(groups)}


def _settle_slugs(pages: list[PageResult], warnings: list[str]) -> None:
    """Give every topic page its slug. Pages whose URLs differ but end in the same slug are
    different topics: the smallest URL keeps the slug, the others get a stable suffix."""
    urls: dict[str, set[str]] = {}
    for r in pages:
        h = r.header
        assert h is not None
        if not h.slug:
            h.slug = derived_slug(f"{h.name or ''} {h.description or ''}")
        urls.setdefault(h.slug, set()).add(h.url or "")
    for r in pages:
        h = r.header
        assert h is not None
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
