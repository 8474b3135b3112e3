"""One topic page in several versions in one run: one version wins, the others are set aside.

Two files of one topic (the same canonical URL) whose listings differ — an old and a new
save, one of which lost a listing and renumbered — would mix their ranks in one topic.
Copies of one version (the same listings: a ``.txt`` and a ``.html`` save, another
encoding) are one version, and all of them are used. Of several versions one wins, by
this rule: the newest crawl day (the day its bytes were first crawled, :mod:`..state.ages`;
a page no run dated counts as this run's), then the file with more listings, then the
file name that sorts last. Every listing of the other versions is rejected
(``TOPIC_VERSION_SUPERSEDED``, naming the file used), each of their files warns, and so
does the run (``TOPIC_VERSIONS``, naming them all): ranks are never mixed.

Only the pages of a topic read from files of different bytes (:func:`contested`: few, if
any) have their listings digested (:func:`version`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Mapping

from msgspec import structs
from xxhash import xxh64

from ..records.internal import Listing, PageReject, PageResult
from .topics import TopicGroup, Topics

REASON = "TOPIC_VERSION_SUPERSEDED"
Page = tuple[str, str]  # (file, sha256)
_SHOWN = ("title_zh", "summary_zh", "kind_label", "level_label", "url")


def contested(topics: Topics) -> frozenset[Page]:
    """The topic pages of the topics read from files of different bytes."""
    return frozenset(
        (p.file, p.sha256)
        for g in topics.groups.values()
        if len({p.sha256 for p in g.pages}) > 1
        for p in g.pages
    )


def version(listings: list[Listing]) -> int:
    """A digest of a topic page's listings as its topic shows them: copies of one version
    share it, whatever their encoding or markup."""
    h = xxh64(repr([x.rank for x in listings]).encode())
    for name in _SHOWN:
        text = "\x1e".join([getattr(x, name) or "" for x in listings])
        h.update(text.encode("utf-8", "surrogatepass"))
    return h.intdigest()


def settle_versions(
    topics: Topics, versions: Mapping[Page, int], day_of: Callable[[str], dt.date | None]
) -> Topics:
    """``topics`` with one version of each topic page (``versions``: the digests of the
    contested pages): the others leave their groups, warn, and are named in ``set_aside``."""
    groups, warnings, set_aside = dict(topics.groups), [*topics.warnings], {}
    notes: dict[Page, str] = {}
    for slug, g in topics.groups.items():
        if len({versions.get((p.file, p.sha256), 0) for p in g.pages}) < 2:
            continue

        def rank(p: PageResult) -> tuple[dt.date, int, str, str]:
            return (day_of(p.sha256) or dt.date.max, p.listings_read, p.file, p.sha256)

        ranked = sorted(g.pages, key=rank, reverse=True)
        win = ranked[0]
        mine = versions[(win.file, win.sha256)]
        lost = [p for p in ranked if versions[(p.file, p.sha256)] != mine]
        why = _why(rank(win), rank(lost[0]))
        names = ", ".join(p.file for p in lost)
        warnings.append(
            f"topic {slug}: TOPIC_VERSIONS: {len(lost) + 1} versions of its topic page in "
            f"this run; {win.file} is used ({why}), not {names}"
        )
        for p in lost:
            set_aside[(p.file, p.sha256)] = (
                f"topic {slug}: the version in {win.file} is used ({why}); ranks never mix"
            )
            notes[(p.file, p.sha256)] = (
                f"file: {REASON}: another version of topic {slug} is used, {win.file} "
                f"({why}); this file's listings are rejected"
            )
        kept = [p for p in g.pages if (p.file, p.sha256) not in set_aside]
        groups[slug] = TopicGroup(slug, kept, g.lists)
    if not set_aside:
        return topics
    pages = [  # the pages set aside, warned (no group holds them any more)
        structs.replace(p, warnings=[*p.warnings, notes[k]]) if k in notes else p
        for p, k in ((p, (p.file, p.sha256)) for p in topics.pages)
    ]
    return dataclasses.replace(
        topics, pages=pages, groups=groups, warnings=warnings, set_aside=set_aside
    )


def _why(win: tuple[dt.date, int, str, str], other: tuple[dt.date, int, str, str]) -> str:
    if win[0] != other[0]:
        return f"crawled {'by this run' if win[0] == dt.date.max else win[0]}, the newest"
    if win[1] != other[1]:
        return f"{win[1]} listings against {other[1]}"
    return "the file name that sorts last"


def with_set_aside(pages: list[PageResult], rejects: Iterable[PageReject]) -> list[PageResult]:
    """The pages' facts with the rejected listings of those set aside among their rejects
    (and not counted as listings kept elsewhere too: each is read once)."""
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
