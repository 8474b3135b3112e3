"""A run's cache, around the steps: opened before them (:func:`open_reuse`), and after
them, what the run took (:func:`taken`, the report's ``reuse`` member) and what it leaves
for the next run (:func:`next_cache`). See :mod:`.reuse` for what is taken and how.
"""

from __future__ import annotations

import datetime as dt
from functools import partial
from pathlib import Path

import msgspec
from msgspec import structs

from ..records.internal import Listing, PageResult
from ..records.output import FileReport
from ..records.reused import Recompute, Recomputed, Reused
from ..state.reuse import Blob, Fill, Store, build, open_store
from ..transform.near import merged
from ..transform.records import Finished
from ..transform.topics import page_identity
from .context import Context
from .plan import edge_pairs, keys_digest, topic_digest
from .reuse import Reader, Reuse


def open_reuse(
    folder: Path | None,
    full: bool,
    days: dict[str, dt.date | None],
    read: Reader,
    damaged: str | None = None,
) -> tuple[Reuse, list[str]]:
    """What a run over the publish in ``folder`` (None: none yet) may take, and the
    warnings to print; ``full``: nothing (the cache is rebuilt). ``days``: the crawl day of
    each page kept in the state, by name (``--merge``); ``read``: a page's bytes by name;
    ``damaged``: why the state's check found the cache's files damaged (then: nothing)."""
    wanted = build()
    if full:
        return Reuse(None, "full", wanted, days, read), []
    store, why = (None, "checksum-failed") if damaged else open_store(folder, wanted)
    state = f"{str(folder / 'state')!r}" if folder is not None else ""
    warnings = []
    if why == "other-version":
        warnings.append(
            f"the reuse cache in {state} was written by another version of ingest: "
            "ignored, every page parsed again and the cache rebuilt"
        )
    elif why == "checksum-failed":
        warnings.append(
            f"the reuse cache in {state} failed its checksum: ignored, every page parsed "
            "again and the cache rebuilt"
        )
    elif why == "cache-missing" and folder is not None and (folder / "state").is_dir():
        warnings.append(
            f"the publish in {str(folder)!r} keeps no reuse cache (an older ingest or "
            "the Dask engine wrote it): every page parsed again"
        )
    return Reuse(store, why or "new-bytes", wanted, days, read), warnings


def taken(ctx: Context, files: list[FileReport], warnings: list[str]) -> Reused:
    """What the run took and what it computed (``files``: the report's, pages read)."""
    reuse, plan = ctx.reuse, ctx.plan
    damaged = set() if reuse is None else reuse.damaged  # parsed after all
    reused = {p.file for p in plan.pages if p.reused and p.file not in damaged}
    store = None if reuse is None else reuse.store
    recomputed = []
    for f in files:
        if f.sha256 and f.file not in reused:
            why = "checksum-failed" if f.file in damaged else _why(f.sha256, reuse, store)
            recomputed.append(Recomputed(file=f.file, reason=why))
    if store is not None and damaged:
        warnings.append(
            f"the cached listings of {len(damaged)} page(s) in {str(store.folder)!r} failed "
            "their checksum: those pages were parsed again"
        )
    as_taken = {id(f) for f in plan.found.values()}
    groups = sum(1 for p in ctx.parts if id(p) in as_taken)
    return Reused(
        pages_reused=sum(1 for f in files if f.file in reused),
        pages_parsed=len(recomputed),
        groups_reused=groups,
        groups_recomputed=len(ctx.parts) - groups,
        recomputed=recomputed,
        warnings=warnings,
    )


def summary_keys(ctx: Context) -> dict[str, str]:
    """The key of each item's summary, by its id, where the run has it (the state keeps
    them: a group taken was not keyed again)."""
    return {
        item.id: use.summary_key
        for done in ctx.parts
        if done.memo is not None
        for item, use in zip(done.items, done.memo.uses, strict=True)
    }


def _why(sha256: str, reuse: Reuse | None, store: Store | None) -> Recompute:
    if reuse is None:
        return "dask-engine"
    return "new-bytes" if store is not None else reuse.why  # type: ignore[return-value]


def next_cache(ctx: Context) -> Fill | None:
    """What the next run may take from this one (None: this run kept nothing)."""
    reuse, plan = ctx.reuse, ctx.plan
    if reuse is None:
        return None
    kept = [p for p in plan.pages if ctx.routes.keeps(p)]
    keys = plan.keys if plan.given else [[x.key for x in p.listings] for p in kept]
    every = plan.signed if plan.given else merged(ctx.signed)
    assert every is not None
    place = {k: n for n, k in enumerate(every.keys)}
    fill = Fill(keys=every.keys, sigs=every.rows.astype("uint32").tobytes())
    topics: dict[str, list[int]] = {}
    for n, (p, ks) in enumerate(zip(kept, keys, strict=True)):
        slug = ctx.routes.slug_of.get(p.file)
        if slug is not None and ks:
            topics.setdefault(slug, []).append(n)
        if not p.sha256:
            continue  # never read, or a parser's bug: parsed again every time
        ids = [place[k] for k in ks]
        if p.reused and reuse.store is not None:
            entry = reuse.store.index.pages[p.sha256]
            kept_blob: Blob | None = entry.listings
            if p.file in reuse.damaged:
                kept_blob = partial(_parsed_blob, reuse, p)
            fill.pages[p.sha256] = (entry.facts, ids, kept_blob)
        else:
            new_blob = partial(_listings_blob, p.listings) if p.listings else None
            fill.pages[p.sha256] = (_facts(p), ids, new_blob)
    fill.near = (keys_digest(every.keys), edge_pairs(ctx.near, place))
    for slug, ns in topics.items():
        found = topic_digest(slug, [(kept[n].file, kept[n].sha256) for n in ns])
        fill.topics[found] = edge_pairs(ctx.order.get(slug, []), place)
    as_taken = {id(f) for f in plan.found.values()}
    groups = {} if reuse.store is None else reuse.store.index.groups
    for done in ctx.parts:
        if done.memo is None:
            continue
        same = id(done) in as_taken and done.memo.digest in groups
        group: Blob = groups[done.memo.digest] if same else partial(_group_blob, done)
        fill.groups[done.memo.digest] = group
    return fill


def _facts(page: PageResult) -> PageResult:
    """A page as the cache keeps it: without its listings, unnamed (named when taken)."""
    facts = page.facts()
    return structs.replace(
        facts,
        file="",
        from_state=False,
        rejects=[structs.replace(r, prov=structs.replace(r.prov, file="")) for r in facts.rejects],
        identity=page_identity(page),
    )


def _listings_blob(listings: list[Listing]) -> bytes:
    """A page's listings as the cache keeps them: without what each run gives them again
    (file, sha256, topic, summary key; see Reuse.listings)."""
    return msgspec.msgpack.encode(
        [
            structs.replace(
                x,
                prov=structs.replace(x.prov, file="", sha256=""),
                key="",
                topic_key=None,
                stored=False,
                crawled_at=None,
            )
            for x in listings
        ]
    )


def _parsed_blob(reuse: Reuse, page: PageResult) -> bytes:
    """The listings of a page whose cached ones were damaged, parsed again."""
    return _listings_blob(reuse.listings(page))


def _group_blob(done: Finished) -> bytes:
    return msgspec.msgpack.encode(done)
