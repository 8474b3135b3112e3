"""Where the time goes: each stage of ``ingest run`` timed alone, in one process.

    python bench/stages.py bench/corpus/25MB-seed0/dumps

Runs the local engine's stages one by one (the same calls ``pipeline.build`` makes) and
prints each one's seconds and share. Generate a corpus first with bench/gen_corpus.py (or
run bench/bench.py, which does).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from ingest.dedup import near_edges
from ingest.engine import languages, parse_all
from ingest.merge import resolve_component
from ingest.output import render
from ingest.pipeline import assemble, few_collections, split_components
from ingest.read import collect_inputs
from ingest.stages import (
    best_edges,
    finish,
    order_edges_by_topic,
    related_lids,
    units_by_key,
)
from ingest.topics import join_topics

T = TypeVar("T")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("corpus", help="a folder of dumps")
    args = p.parse_args(argv)
    times: dict[str, float] = {}

    def timed(name: str, f: Callable[[], T]) -> T:
        t = time.perf_counter()
        out = f()
        times[name] = time.perf_counter() - t
        return out

    inputs = collect_inputs([args.corpus])
    with few_collections():
        results = timed(
            "parse: read, decode, detect, parse, normalize", lambda: parse_all(inputs, 1, None)
        )
        results.sort(key=lambda r: (r.file, r.sha256))
        warnings: list[str] = []
        groups = timed("topic join", lambda: join_topics(results, warnings))
        listings = [x for r in results for x in r.listings]
        units = timed("exact units", lambda: units_by_key(listings))
        near = timed(
            "near-duplicate edges: MinHash bands + verify", lambda: near_edges(sorted(units))
        )
        order = timed("order edges", lambda: order_edges_by_topic(listings))
        edges = best_edges(near + order)
        comps = timed(
            "components: settle + merge",
            lambda: [resolve_component(us, es) for us, es in split_components(units, edges)],
        )
        id_of = dict(p for c in comps for p in related_lids(c))
        titles = [r.fields["title_original"] for c in comps for r in c.items]
        langs = timed("language identification", lambda: languages(titles, 1))
        parts = timed("output models", lambda: [finish(c, id_of, langs) for c in comps])
        out = timed("topics + report", lambda: assemble(results, groups, warnings, parts))
        timed("render JSON", lambda: render(out))
    total = sum(times.values())
    for name, t in times.items():
        print(f"{t:8.2f} s {100 * t / total:5.1f} %  {name}")
    print(
        f"{total:8.2f} s in all: {len(listings)} listings, {len(units)} distinct summaries, "
        f"{len(langs)} distinct original titles"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
