"""Assemble: topics and the run report from page facts and the finished parts (small data).
Every listing read ends in exactly one place, merged into an item or a reject with a reason:
:func:`assemble` checks that accounting before anything is written."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from msgspec import structs

from ingest import SCHEMA_VERSION, __version__
from ingest.contract import (
    Declared,
    FileReport,
    Item,
    Reject,
    Report,
    RunInfo,
    Site,
    Source,
    Topic,
    TopicCheck,
    Totals,
)
from ingest.records import PageReject, PageResult, RunOutput
from ingest.resolve.finish import Finished, TopicEntry, to_reject
from ingest.resolve.identity import Ids, suspected
from ingest.resolve.topics import TopicGroup, with_set_aside
from ingest.state.changes import changes_against, counts, previous_values
from ingest.state.previous import Previous, RunSettings


def build_topics(
    groups: dict[str, TopicGroup], entries: Iterable[TopicEntry], warnings: list[str]
) -> tuple[list[Topic], list[TopicCheck]]:
    per_slug: dict[str, list[TopicEntry]] = {}
    for e in entries:
        per_slug.setdefault(e[0], []).append(e)
    topics, checks = [], []
    for slug, g in groups.items():
        es = sorted(per_slug.get(slug, []))
        topics.append(topic_record(slug, g, [e[3] for e in es]))
        checks.append(topic_check(g, es, warnings))
    return topics, checks


def topic_record(slug: str, g: TopicGroup, ids: list[str]) -> Topic:
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


def topic_check(g: TopicGroup, es: list[TopicEntry], warnings: list[str]) -> TopicCheck:
    """Declared (stats line) against found (topic page listings, or list entries)."""
    s = g.stats
    ranked = [e for e in es if e[1] == 0] if g.pages else es
    found_levels = dict(Counter(e[4] for e in ranked if e[4] is not None))
    declared = s.declared_levels if s else {}
    count = s.declared_count if s else None
    ok = (count is None or count == len(ranked)) and all(
        found_levels.get(k, 0) == v for k, v in declared.items()
    )
    if not ok and g.pages:
        warnings.append(
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


def build_report(
    results: list[PageResult],
    parts: list[Finished],
    items: list[Item],
    topics: list[Topic],
    checks: list[TopicCheck],
    rejects: list[Reject],
    warnings: list[str],
) -> Report:
    """The report of a run, without its run info and change counts (see :func:`assemble`)."""
    rejected_per_file = Counter({r.file: sum(j.is_listing for j in r.rejects) for r in results})
    for p in parts:
        rejected_per_file.update(p.rejected_per_file)
    files = [_file_report(r, rejected_per_file.get(r.file, 0)) for r in results]
    read = sum(r.listings_read for r in results)
    rejected = sum(rejected_per_file.values())
    merged = sum(len(i.sources) for i in items)
    if merged + rejected != read or len({i.id for i in items}) != len(items):
        raise AssertionError(
            f"accounting: {read} listings read, {merged} merged, "
            f"{rejected} rejected, {len(items)} items"
        )  # a bug, never input
    n_warn = sum(len(f.warnings) for f in files) + len(warnings)
    return Report(
        schema_version=SCHEMA_VERSION,
        ingest_version=__version__,
        run=RunInfo(
            mode="snapshot", sequence=1, crawled_at=None, previous_items=None, previous_topics=None
        ),
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
            near_duplicate_merges=sum(p.near_merges for p in parts),
            order_alignments=sum(p.order_joins for p in parts),
            rejects=len(rejects),
            warnings=n_warn,
        ),
        changes=counts([]),
        consistency=checks,
        conflicts=sorted(
            (c for p in parts for c in p.conflicts), key=lambda c: (c.record, c.field)
        ),
        decisions=[d for p in parts for d in p.decisions],
        warnings=sorted(warnings),
        timing={},
    )


def _file_report(r: PageResult, bad: int) -> FileReport:
    file_rejected = any(not j.is_listing for j in r.rejects)
    return FileReport(
        file=r.file,
        origin="state" if r.from_state else "input",
        sha256=r.sha256,
        bytes=r.size,
        encoding=r.encoding,
        format=r.format,
        parser=r.parser,
        listings=r.listings_read,
        rejected_listings=bad,
        status="rejected" if file_rejected else ("partial" if bad else "ok"),
        warnings=r.warnings,
        marks=r.marks,
    )


def assemble(
    results: list[PageResult],
    groups: dict[str, TopicGroup],
    warnings: list[str],
    parts: list[Finished],
    previous: Previous,
    settings: RunSettings,
    ids: Ids,
    aside: Iterable[PageReject] = (),
) -> RunOutput:
    """Gather the finished parts into the outputs, check the accounting, and set what the
    run changed against ``previous`` (``ids``: what the identity step decided; ``aside``:
    the listings of topic pages set aside)."""
    results = with_set_aside(results, aside)
    items = sorted((i for p in parts for i in p.items), key=lambda i: i.id)
    rejects = [to_reject(rj) for r in results for rj in r.rejects]
    rejects.extend(rj for p in parts for rj in p.rejects)
    topics, checks = build_topics(groups, (e for p in parts for e in p.entries), warnings)
    warnings.extend(w for p in parts for w in p.warnings)
    changes = changes_against(previous, items, topics, ids.merged)
    warnings.extend(suspected(previous, items, changes))
    report = build_report(results, parts, items, topics, checks, rejects, warnings)
    had = previous.sequence > 0
    run = RunInfo(
        mode=settings.mode,
        sequence=previous.sequence + 1,
        crawled_at=settings.crawled_at,
        previous_items=len(previous.items) if had else None,
        previous_topics=len(previous.topics) if had else None,
    )
    decisions = sorted(
        [*report.decisions, *ids.decisions], key=lambda d: (d.item, d.kind, d.a.source, d.b.source)
    )
    report = structs.replace(report, run=run, changes=counts(changes), decisions=decisions)
    evidence = sorted(ids.evidence, key=lambda e: e.id)
    rejects.sort(key=lambda r: (r.file, r.byte_offset, r.locator, r.reason))
    out = RunOutput(items, topics, rejects, report, changes, evidence)
    out.previous_values = previous_values(previous, changes)  # for the report page
    return out
