"""The local engine: per-file map, then key → group → resolve across files in one process.

Every listing read ends in exactly one place: merged into an item, or a reject with a
reason. :func:`assemble` checks that accounting before anything is written.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .dedup import Edge, Unit, components, near_edges
from .engine import Progress, languages, parse_all, pmap
from .merge import resolve_component
from .models import Conflict, Item, PageResult, Reject, Report, Topic
from .read import InputFile
from .report import build_report, build_topics
from .stages import (
    Finished,
    TopicEntry,
    best_edges,
    finish,
    order_edges_by_topic,
    related_lids,
    to_reject,
    units_by_key,
)
from .topics import TopicGroup, join_topics


@dataclass(slots=True)
class RunOutput:
    items: list[Item]
    topics: list[Topic]
    rejects: list[Reject]
    report: Report


def run(inputs: list[InputFile], jobs: int = 1, progress: Progress | None = None) -> RunOutput:
    t0 = time.perf_counter()
    with few_collections():
        results = parse_all(inputs, jobs, progress)
        t1 = time.perf_counter()
        out = build(results, jobs)
    out.report.timing.update(parse=round(t1 - t0, 4), resolve=round(time.perf_counter() - t1, 4))
    return out


@contextmanager
def few_collections() -> Iterator[None]:
    """Collect garbage cycles rarely: a run builds millions of long-lived objects and makes
    few cycles, so the default thresholds spend a quarter of the resolve time scanning."""
    old = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*old)


def build(results: list[PageResult], jobs: int = 1) -> RunOutput:
    """Everything after the per-file map. ``results`` may come in any order."""
    results = sorted(results, key=lambda r: (r.file, r.sha256))
    warnings: list[str] = []
    groups = join_topics(results, warnings)
    listings = [x for r in results for x in r.listings]
    units = units_by_key(listings)
    edges = best_edges(
        [
            *near_edges(sorted(units), lambda f, xs: pmap(f, xs, jobs)),
            *order_edges_by_topic(listings),
        ]
    )
    comps = [resolve_component(us, es) for us, es in split_components(units, edges)]
    id_of = dict(pair for c in comps for pair in related_lids(c))
    langs = languages((r.fields["title_original"] for c in comps for r in c.items), jobs)
    return assemble(results, groups, warnings, [finish(c, id_of, langs) for c in comps])


def split_components(
    units: dict[str, Unit], edges: list[Edge]
) -> Iterable[tuple[list[Unit], list[Edge]]]:
    """The group stage of identity: units joined by edges, each with its own edges."""
    label = components(edges)
    grouped: dict[str, tuple[list[Unit], list[Edge]]] = {}
    for key in sorted(units):
        grouped.setdefault(label.get(key, key), ([], []))[0].append(units[key])
    for e in edges:
        grouped[label[e.a]][1].append(e)
    for k in sorted(grouped):
        yield grouped[k]


def assemble(
    results: list[PageResult],
    groups: dict[str, TopicGroup],
    warnings: list[str],
    parts: list[Finished],
) -> RunOutput:
    """Gather the finished parts into the four outputs, and check the accounting."""
    items = sorted((i for p in parts for i in p.items), key=lambda i: i.id)
    rejects = [to_reject(rj) for r in results for rj in r.rejects]
    rejects.extend(rj for p in parts for rj in p.rejects)
    entries: list[TopicEntry] = [e for p in parts for e in p.entries]
    topics, checks = build_topics(groups, entries, warnings)
    conflicts: list[Conflict] = [c for p in parts for c in p.conflicts]
    warnings.extend(w for p in parts for w in p.warnings)
    report = build_report(results, parts, items, topics, checks, rejects, conflicts, warnings)
    return RunOutput(items, topics, sorted(rejects, key=_reject_order), report)


def _reject_order(r: Reject) -> tuple[str, int, str, str]:
    return (r.file, r.byte_offset, r.locator, r.reason)
