"""The run: per-file map, then key → group → resolve across files, then the records.

Every listing read ends in exactly one place: merged into an item, or a reject with a
reason. :func:`build` checks that accounting before anything is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

from . import SCHEMA_VERSION, __version__
from .align import align_by_order
from .dedup import cluster
from .engine import Progress, parse_all
from .langid import language_of
from .merge import Resolved, cluster_key, item_id, kind_of, resolve
from .models import (
    Conflict,
    Declared,
    FileReport,
    Item,
    ItemTopic,
    Listing,
    PageResult,
    Reject,
    Report,
    Site,
    Source,
    Topic,
    TopicCheck,
    Totals,
)
from .normalize import match_key
from .read import InputFile
from .topics import TopicGroup, join_topics


@dataclass(slots=True)
class RunOutput:
    items: list[Item]
    topics: list[Topic]
    rejects: list[Reject]
    report: Report


@dataclass(slots=True)
class _State:
    """Everything :func:`build` accumulates; passed around, never global."""

    results: list[PageResult]
    listings: list[Listing] = field(default_factory=list)
    owner: list[tuple[int, int]] = field(default_factory=list)  # (result, local index)
    warnings: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    rejected_per_file: dict[str, int] = field(default_factory=dict)


def run(inputs: list[InputFile], jobs: int = 1, progress: Progress | None = None) -> RunOutput:
    t0 = time.perf_counter()
    results = parse_all(inputs, jobs, progress)
    t1 = time.perf_counter()
    out = build(results)
    out.report.timing.update(parse=round(t1 - t0, 4), resolve=round(time.perf_counter() - t1, 4))
    return out


def build(results: list[PageResult]) -> RunOutput:
    """Everything after the per-file map. ``results`` may come in any order."""
    st = _State(sorted(results, key=lambda r: (r.file, r.sha256)))
    groups = join_topics(st.results, st.warnings)
    for ri, r in enumerate(st.results):
        for li, x in enumerate(r.listings):
            st.listings.append(x)
            st.owner.append((ri, li))
        for rj in r.rejects:
            _reject(
                st,
                rj.prov.file,
                rj.prov.locator,
                rj.reason,
                rj.message,
                rj.excerpt,
                rj.prov.byte_offset,
                rj.prov.line,
                rj.prov.format or None,
                rj.is_listing,
            )
    keys = [match_key(x.summary_zh) for x in st.listings]
    clusters, dups = cluster(st.listings, keys)
    for a, b in dups:
        x = st.listings[b]
        st.warnings.append(
            f"{x.prov.file}: {x.prov.locator}: DUPLICATE_ITEM: same resource as "
            f"{st.listings[a].prov.locator}; merged"
        )
    order_joins = align_by_order(clusters, keys)
    members = _drop_orphans(st, clusters.members())
    resolved = _resolve_all(st, members)
    items = _items(st, resolved)
    topics, checks = _topics(st, groups, resolved)
    return RunOutput(
        items,
        topics,
        sorted(st.rejects, key=_reject_order),
        _report(st, items, topics, checks, clusters.near_merges, order_joins),
    )


def _reject(
    st: _State,
    file: str,
    locator: str,
    reason: str,
    message: str,
    excerpt: str,
    byte_offset: int,
    line: int,
    fmt: str | None,
    is_listing: bool,
) -> None:
    st.rejects.append(
        Reject(
            file=file,
            locator=locator,
            reason=reason,
            excerpt=excerpt,
            message=message,
            byte_offset=byte_offset,
            line=line,
            format=fmt,
        )
    )
    if is_listing:
        st.rejected_per_file[file] = st.rejected_per_file.get(file, 0) + 1


def _reject_order(r: Reject) -> tuple[str, int, str, str]:
    return (r.file, r.byte_offset, r.locator, r.reason)


def _drop_orphans(st: _State, members: list[list[int]]) -> list[list[int]]:
    """A title-less topic-list summary that joined nothing would invent an item: reject it."""
    kept = []
    for m in members:
        if all(st.listings[i].role == "orphan" for i in m):
            for i in m:
                x = st.listings[i]
                _reject(
                    st,
                    x.prov.file,
                    x.prov.locator,
                    "PAIRING_ERROR",
                    "summary line without its title line, matching no listing on any other page",
                    x.summary_zh[:200],
                    x.prov.byte_offset,
                    x.prov.line,
                    x.prov.format,
                    True,
                )
        else:
            kept.append(m)
    return kept


def _resolve_all(st: _State, members: list[list[int]]) -> list[tuple[Resolved, list[int]]]:
    named = sorted((cluster_key([st.listings[i] for i in m]), m) for m in members)
    out: list[tuple[Resolved, list[int]]] = []
    used: set[str] = set()
    for key, m in named:
        ident = item_id(key)
        n = 1
        while ident in used:  # two clusters, one key: never overwrite, keep both apart
            n += 1
            ident = f"{item_id(key)}-{n}"
        if n > 1:
            st.warnings.append(
                f"item {ident}: ID_COLLISION: same summary key as "
                f"{item_id(key)} but kept apart (different resources)"
            )
        used.add(ident)
        r = resolve(ident, [st.listings[i] for i in m])
        st.conflicts.extend(r.conflicts)
        st.warnings.extend(r.warnings)
        out.append((r, m))
    return out


def _items(st: _State, resolved: list[tuple[Resolved, list[int]]]) -> list[Item]:
    id_of = {i: r.id for r, m in resolved for i in m}
    index = {id(x): n for n, x in enumerate(st.listings)}
    langs: dict[str, str | None] = {}
    items = []
    for r, _ in resolved:
        title = r.fields["title_original"]
        if title is not None and title not in langs:
            langs[title] = language_of(title)
        items.append(
            Item(
                id=r.id,
                kind=kind_of(r.fields["kind_label"]),  # type: ignore[arg-type]
                kind_label=r.fields["kind_label"],
                title_zh=r.fields["title_zh"],
                title_original=title,
                original_language=langs.get(title) if title is not None else None,
                summary_zh=r.fields["summary_zh"] or "",
                url=r.fields["url"],
                publisher=r.fields["publisher"],
                published_ago=r.fields["published_ago"],
                rating=r.fields["rating"],
                collected_on=r.fields["collected_on"],  # type: ignore[arg-type]
                topics=[ItemTopic.model_validate(t) for t in r.topics],
                related=_related(st, r, id_of, index),
                sources=sorted(
                    (_source(x) for x in r.members),
                    key=lambda s: (s.file, s.byte_offset, s.locator),
                ),
            )
        )
        if any(x.kind_label and kind_of(x.kind_label) == "other" for x in r.members):
            st.warnings.append(f"item {r.id}: UNKNOWN_KIND: label {r.fields['kind_label']!r}")
    return sorted(items, key=lambda i: i.id)


def _source(x: Listing) -> Source:
    p = x.prov
    return Source(
        file=p.file,
        sha256=p.sha256,
        format=p.format,  # type: ignore[arg-type]
        locator=p.locator,
        byte_offset=p.byte_offset,
        line=p.line,
    )


def _related(st: _State, r: Resolved, id_of: dict[int, str], index: dict[int, int]) -> list[str]:
    """From the item's own item-page: related ids in page order, no self, no repeats."""
    mains = [x for x in r.members if x.role == "main"]
    if not mains:
        return []
    ri, local_main = st.owner[index[id(mains[0])]]  # members are in precedence order
    base = index[id(mains[0])] - local_main
    out: list[str] = []
    for local in st.results[ri].related_of_main:
        rid = id_of.get(base + local)
        if rid is None:
            continue
        if rid == r.id:
            st.warnings.append(
                f"item {r.id}: SELF_REFERENCE: related reading names the item itself; dropped"
            )
        elif rid not in out:
            out.append(rid)
    return out


def _topics(
    st: _State, groups: dict[str, TopicGroup], resolved: list[tuple[Resolved, list[int]]]
) -> tuple[list[Topic], list[TopicCheck]]:
    entries: dict[str, list[tuple[int, int, str, str | None]]] = {}
    for r, _ in resolved:
        for t in r.topics:
            slug, rank = str(t["slug"]), t["rank"]
            order = (0, rank) if isinstance(rank, int) else (1, _list_ordinal(r, slug))
            level = t["level"] if isinstance(t["level"], str) else None
            entries.setdefault(slug, []).append((*order, r.id, level))
    topics, checks = [], []
    for slug, g in groups.items():
        es = sorted(entries.get(slug, []))
        topics.append(_topic(slug, g, [e[2] for e in es]))
        checks.append(_check(st, g, es))
    return topics, checks


def _list_ordinal(r: Resolved, slug: str) -> int:
    return min(
        (x.ordinal for x in r.members if x.topic_key == slug and x.prov.format == "topic-list"),
        default=0,
    )


def _topic(slug: str, g: TopicGroup, ids: list[str]) -> Topic:
    h, s = g.header, g.stats
    site = Site(name=h.site_name, url=h.site_url) if h and (h.site_name or h.site_url) else None
    return Topic(
        slug=slug,
        name=h.name if h else None,
        description=(h.description if h else None) or (s.description if s else None),
        category=h.category if h else None,
        url=h.url if h else None,
        site=site,
        notice=h.notice if h else None,
        order_note=s.order_note if s else None,
        declared=Declared(count=s.declared_count, levels=s.declared_levels) if s else None,
        items=ids,
        sources=[
            Source(
                file=r.file,
                sha256=r.sha256,
                format=r.format,  # type: ignore[arg-type]
                locator="file",
                byte_offset=0,
                line=1,
            )
            for r in sorted(g.pages + g.lists, key=lambda r: (r.file, r.sha256))
        ],
    )


def _check(st: _State, g: TopicGroup, es: list[tuple[int, int, str, str | None]]) -> TopicCheck:
    s = g.stats
    ranked = [e for e in es if e[0] == 0] if g.pages else es
    found_levels: dict[str, int] = {}
    for e in ranked:
        if e[3] is not None:
            found_levels[e[3]] = found_levels.get(e[3], 0) + 1
    declared = s.declared_levels if s else {}
    count = s.declared_count if s else None
    ok = (count is None or count == len(ranked)) and all(
        found_levels.get(k, 0) == v for k, v in declared.items()
    )
    if not ok and g.pages:
        st.warnings.append(
            f"topic {g.slug}: COUNT_MISMATCH: declared {count} {declared}, found "
            f"{len(ranked)} {found_levels}"
        )
    return TopicCheck(
        slug=g.slug,
        declared_count=count,
        found_count=len(ranked),
        declared_levels=declared,
        found_levels=found_levels,
        ok=ok,
    )


def _report(
    st: _State,
    items: list[Item],
    topics: list[Topic],
    checks: list[TopicCheck],
    near: int,
    order_joins: int,
) -> Report:
    files = [_file_report(st, r) for r in st.results]
    read = sum(r.listings_read for r in st.results)
    rejected = sum(st.rejected_per_file.values())
    merged = sum(len(i.sources) for i in items)
    if merged + rejected != read:  # a bug, never bad input: refuse to publish a lie
        raise AssertionError(
            f"accounting: {read} listings read, {merged} merged, {rejected} rejected"
        )
    n_warn = sum(len(f.warnings) for f in files) + len(st.warnings)
    return Report(
        schema_version=SCHEMA_VERSION,
        ingest_version=__version__,
        files=files,
        totals=Totals(
            files=len(files),
            listings=read,
            listings_merged=merged,
            listings_rejected=rejected,
            items=len(items),
            topics=len(topics),
            aligned_titles=sum(1 for i in items if i.title_zh and i.title_original),
            merges=merged - len(items),
            near_duplicate_merges=near,
            order_alignments=order_joins,
            rejects=len(st.rejects),
            warnings=n_warn,
        ),
        consistency=checks,
        conflicts=sorted(st.conflicts, key=lambda c: (c.record, c.field)),
        warnings=st.warnings,
        timing={},
    )


def _file_report(st: _State, r: PageResult) -> FileReport:
    file_rejected = any(not j.is_listing for j in r.rejects)
    bad = st.rejected_per_file.get(r.file, 0)
    status: Literal["ok", "partial", "rejected"] = (
        "rejected" if file_rejected else ("partial" if bad else "ok")
    )
    return FileReport(
        file=r.file,
        sha256=r.sha256,
        bytes=r.size,
        encoding=r.encoding,
        format=r.format,
        parser=r.parser,
        listings=r.listings_read,
        rejected_listings=bad,
        status=status,
        warnings=r.warnings,
    )
