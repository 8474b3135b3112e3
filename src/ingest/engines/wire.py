"""What crosses between the processes of a Dask run, and what records weigh there.

A partition reaches the driver as one pickle (:func:`packed`); a shuffle's pieces of pairs
as one blob each (:func:`packed_pairs`), MessagePack for the pairs it moves by the million;
and Dask is told what pages, listings and components weigh (:func:`register_sizes`).
"""

from __future__ import annotations

import pickle
from collections.abc import Hashable, Iterable
from functools import cache
from typing import Any

import msgspec
from xxhash import xxh64_intdigest

from ..records.internal import Listing, PageResult
from ..transform.align import OrderPoint
from ..transform.merge import Component


def packed(records: Iterable[Any]) -> list[bytes]:
    """A partition as one pickle: Dask sends bytes as they are, where a list of records
    costs it about twice the pickling, record by record, on the event loop."""
    return [pickle.dumps(list(records), protocol=pickle.HIGHEST_PROTOCOL)]


def stable_hash(pair: tuple[Hashable, Any]) -> int:
    """A group key that hashes the same in every process (str hashes are salted)."""
    key = pair[0]
    return xxh64_intdigest(key if isinstance(key, bytes) else str(key).encode())


def cut(pairs: Iterable[tuple[Hashable, Any]], width: int) -> list[bytes]:
    """One input partition's pairs, cut into ``width`` pieces by the key's stable hash,
    each piece packed (see :func:`packed_pairs`)."""
    pieces: list[list[tuple[Hashable, Any]]] = [[] for _ in range(width)]
    for pair in pairs:
        pieces[stable_hash(pair) % width].append(pair)
    return [packed_pairs(piece) for piece in pieces]


#: Pairs a shuffle moves by the millions, by the type of their values: keyed by a text, order
#: points and bare keys cross as MessagePack (an order point pickles through Python: twice
#: as slow to write); anything else is pickled. Listings too: the listings of a component
#: share their summaries' and keys' strings, which a pickle writes once and reads back
#: shared, where MessagePack writes each (2.3 times the bytes) and reads back copies that
#: every memo of the resolve step hashes again (at 25 MB: 0.2 s more for it, in all).
_PICKLED = b"P"


@cache
def _pair_codecs() -> dict[type, tuple[bytes, Any]]:
    """value type → (tag, typed decoder) of the pairs that cross as MessagePack."""
    return {
        OrderPoint: (b"O", msgspec.msgpack.Decoder(list[tuple[str, OrderPoint]])),
        type(None): (b"N", msgspec.msgpack.Decoder(list[tuple[str, None]])),
    }


def packed_pairs(pairs: list[tuple[Hashable, Any]]) -> bytes:
    """A piece of pairs as MessagePack when every pair is a tuple of a text and a value of
    one type that has a codec (decoded, they are what went in); else pickled."""
    kind = type(pairs[0][1]) if pairs else None
    codec = _pair_codecs().get(kind) if kind is not None else None
    if codec is not None and all(
        type(p) is tuple and type(p[0]) is str and type(p[1]) is kind for p in pairs
    ):
        try:
            return codec[0] + _ENCODER.encode(pairs)
        except (TypeError, UnicodeEncodeError, OverflowError):  # a lone surrogate, a huge int
            pass
    return _PICKLED + pickle.dumps(pairs, protocol=pickle.HIGHEST_PROTOCOL)


def unpacked_pairs(data: bytes) -> Any:
    tag, body = data[:1], memoryview(data)[1:]
    if tag == _PICKLED:
        return pickle.loads(body)
    decoder = next(d for t, d in _pair_codecs().values() if t == tag)
    return decoder.decode(body)


_ENCODER = msgspec.msgpack.Encoder()


#: What a record weighs in a worker's memory, roughly: its text (two bytes a character)
#: and its objects' shells. Dask sizes a list by a sample of its items, and an object it
#: does not know by its shell alone (``sys.getsizeof``): 200 parsed pages were 33 KB to
#: it (0.8 MB pickled, 1.5 MB by these estimates). A scheduler that takes a partition for
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
