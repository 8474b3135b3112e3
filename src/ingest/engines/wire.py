"""What crosses between the processes of a Dask run, and what records weigh there.

A partition reaches the driver as one pickle (:func:`packed`), and a shuffle's piece of
pairs as one pickle (:func:`cut`); Dask is told what pages, listings and components weigh
(:func:`register_sizes`).
"""

from __future__ import annotations

import pickle
from collections.abc import Hashable, Iterable
from typing import Any

from xxhash import xxh64_intdigest

from ..records.internal import Listing, PageResult
from ..transform.merge import Component


def packed(records: Iterable[Any]) -> list[bytes]:
    """A partition as one pickle: Dask sends bytes as they are, where a list of records
    costs it about twice the pickling, record by record, on the event loop."""
    return [pickle.dumps(list(records), protocol=pickle.HIGHEST_PROTOCOL)]


def stable_hash(pair: tuple[Hashable, Any]) -> int:
    """A group key that hashes the same in every process (str hashes are salted)."""
    key = pair[0]
    return xxh64_intdigest(
        key if isinstance(key, bytes) else str(key).encode(errors="surrogatepass")
    )


def cut(pairs: Iterable[tuple[Hashable, Any]], width: int) -> list[bytes]:
    """One input partition's pairs, cut into ``width`` pieces by the key's stable hash,
    each piece one pickle (a listing's strings, shared by its summary and key, cross once
    and come back shared)."""
    pieces: list[list[tuple[Hashable, Any]]] = [[] for _ in range(width)]
    for pair in pairs:
        pieces[stable_hash(pair) % width].append(pair)
    return [pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL) for piece in pieces]


#: What a record weighs in a worker's memory, roughly: its text (two bytes a character)
#: and its objects' shells. Dask sizes a list by a sample of its items, and an object it
#: does not know by its shell alone (``sys.getsizeof``), a small part of what it pickles
#: to. A scheduler that takes a partition for
#: tiny moves it to wherever a worker is free, and the move costs a pickling of every
#: record (see :data:`.cluster.LOCAL_CLUSTER`).


def listing_size(x: Listing) -> int:
    texts = (x.summary_zh, x.key, x.title_zh, x.title_original, x.url, x.publisher)
    return 400 + 2 * sum(len(t) for t in texts if t)


def page_size(page: PageResult) -> int:
    return 1000 + sum(map(listing_size, page.listings))


def component_size(comp: Component) -> int:
    return 500 + sum(listing_size(x) for r in comp.items for x in r.members)


def register_sizes() -> None:
    """Tell Dask what records weigh (in the driver, and in each worker: the engine's module,
    which workers import for the step functions, calls it)."""
    try:
        from dask.sizeof import sizeof
    except ImportError:  # the optional extra is missing: client_for says so
        return
    sizeof.register(Listing)(listing_size)
    sizeof.register(PageResult)(page_size)
    sizeof.register(Component)(component_size)
