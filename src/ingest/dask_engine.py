"""The Dask engine: the same stages on a Dask cluster (``ingest run --engine dask``).

Parsing runs on the workers and the parsed pages stay there. Every cross-file stage is a
shuffle by key followed by the very functions the local engine calls on its groups
(:mod:`ingest.stages`, :mod:`ingest.dedup`, :mod:`ingest.merge`):

- exact identity: listings grouped by summary key → units;
- near-duplicates: units' LSH bands grouped by band → confirmed edges;
- order: listings grouped by topic → order edges;
- components: edges are few (one per near-duplicate or re-aligned pair), so the driver
  labels them, and units are grouped by component label → resolved items.

What reaches the driver is small: each page's facts without its listings, the edges,
the (listing, item) pairs of related reading, and the finished output records.
Needs the optional extra: ``pip install 'ingest[dask]'``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from xxhash import xxh64_intdigest

from .dedup import Edge, Unit, bands, bucket_edges, components
from .engine import parse_one
from .errors import UsageError
from .merge import Component, resolve_component
from .models import Listing, PageResult
from .pipeline import RunOutput, assemble
from .read import InputFile
from .stages import (
    Finished,
    best_edges,
    finish,
    order_edges_by_topic,
    related_lids,
    units_by_key,
)
from .topics import join_topics


def _h(text: str) -> int:
    """A group key that hashes the same in every process (str hashes are salted)."""
    return xxh64_intdigest(text.encode())


def client_for(scheduler: str | None, workers: int) -> Any:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as e:
        raise UsageError(
            "--engine dask needs the optional extra: pip install 'ingest[dask]'"
        ) from e
    if scheduler:
        try:
            return Client(scheduler, timeout="10s")
        except OSError as e:
            raise UsageError(f"cannot reach the Dask scheduler at {scheduler!r}: {e}") from e
    cluster = LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    return Client(cluster)


def run_dask(inputs: list[InputFile], scheduler: str | None = None, workers: int = 2) -> RunOutput:
    import dask.bag as db

    t0 = time.perf_counter()
    with client_for(scheduler, workers):
        parts = max(1, min(len(inputs), workers * 4))
        pages = db.from_sequence(inputs, npartitions=parts).map(parse_one).persist()
        facts: list[PageResult] = pages.map(PageResult.facts).compute()
        t1 = time.perf_counter()
        warnings: list[str] = []
        groups = join_topics(facts, warnings)
        slug_of = {r.file: r.slug for r in facts if r.slug is not None}
        listings = pages.map(PageResult.with_slugs, slug_of).flatten()
        units = (
            listings.groupby(lambda x: _h(x.key), npartitions=parts, shuffle="tasks")
            .map(_units)
            .flatten()
            .persist()
        )
        edges = best_edges(_near_edges(units, parts) + _order_edges(listings, parts))
        label = components(edges)
        per_comp: dict[str, list[Edge]] = {}
        for e in edges:
            per_comp.setdefault(label[e.a], []).append(e)
        comps = (
            units.groupby(lambda u: _h(label.get(u.key, u.key)), npartitions=parts, shuffle="tasks")
            .map(_resolve, label, per_comp)
            .flatten()
            .persist()
        )
        id_of = dict(comps.map(related_lids).flatten().compute())
        done: list[Finished] = comps.map(finish, id_of).compute()
    out = assemble(sorted(facts, key=lambda r: (r.file, r.sha256)), groups, warnings, done)
    out.report.timing.update(parse=round(t1 - t0, 4), resolve=round(time.perf_counter() - t1, 4))
    return out


def _units(group: tuple[int, list[Listing]]) -> list[Unit]:
    """One shuffle group → its units (distinct keys can share a 64-bit group key)."""
    return list(units_by_key(group[1]).values())


def _near_edges(units: Any, parts: int) -> list[Edge]:
    banded = units.map(lambda u: [(band, u.key) for band in bands(u.key)]).flatten()
    buckets = banded.groupby(lambda p: xxh64_intdigest(p[0]), npartitions=parts, shuffle="tasks")
    edges: list[Edge] = buckets.map(_bucket).flatten().distinct().compute()
    return edges


def _bucket(group: tuple[int, list[tuple[bytes, str]]]) -> list[Edge]:
    by_band: dict[bytes, list[str]] = {}
    for band, key in group[1]:
        by_band.setdefault(band, []).append(key)
    return [e for keys in by_band.values() for e in bucket_edges(keys)]


def _order_edges(listings: Any, parts: int) -> list[Edge]:
    topical = listings.filter(lambda x: x.topic_key is not None)
    grouped = topical.groupby(lambda x: _h(x.topic_key), npartitions=parts, shuffle="tasks")
    edges: list[Edge] = grouped.map(lambda g: order_edges_by_topic(g[1])).flatten().compute()
    return edges


def _resolve(
    group: tuple[int, Iterable[Unit]], label: dict[str, str], per_comp: dict[str, list[Edge]]
) -> list[Component]:
    by_label: dict[str, list[Unit]] = {}
    for u in group[1]:
        by_label.setdefault(label.get(u.key, u.key), []).append(u)
    return [
        resolve_component(sorted(us, key=lambda u: u.key), per_comp.get(lab, []))
        for lab, us in sorted(by_label.items())
    ]
