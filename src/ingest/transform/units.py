"""Units and edges: the vocabulary of identity.

A *unit* is every listing whose Chinese summary has one match key: exact identity, always
merged. An *edge* is evidence that two units are one resource (a near-duplicate summary,
or the shared order of two views of a topic); components of edges are settled in
:mod:`.components`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ..normalize.text import key_of
from ..records.internal import Listing, listing_id


class Edge(NamedTuple):
    """Evidence that two summary keys are one resource; ``a < b``."""

    score: float
    a: str
    b: str
    kind: str  # "near" | "order"


def edge(score: float, x: str, y: str, kind: str) -> Edge:
    a, b = sorted((x, y))
    return Edge(round(score, 3), a, b, kind)


def edge_order(e: Edge) -> tuple[float, str, str, str]:
    return (-e.score, e.a, e.b, e.kind)


class Unit(NamedTuple):
    """Listings that share one summary key (in ``listing_id`` order)."""

    key: str
    listings: list[Listing]


def pages_of(u: Unit) -> set[tuple[str, str]]:
    """The pages the unit's listings are on: a page is its content and kind."""
    return {(x.prov.sha256, x.prov.format) for x in u.listings}


def titles_of(u: Unit) -> set[str]:
    """The match keys of the unit's original titles."""
    return set(map(key_of, {x.title_original for x in u.listings if x.title_original}))


def summary_key(x: Listing) -> str:
    return x.key or key_of(x.summary_zh)


def keyed(listings: list[Listing]) -> list[Listing]:
    """``listings``, each given its summary's match key. Done once the listings have left
    their pages, not where they are parsed: a key is nearly as long as its summary, and
    the ``--jobs`` pool would ship both back (here, a summary met on eight pages is keyed
    once)."""
    for x in listings:
        x.key = key_of(x.summary_zh)
    return listings


def units_of(key: str, listings: Iterable[Listing]) -> Unit:
    """Group stage of exact identity: all listings whose summary key is ``key``."""
    return Unit(key, sorted(listings, key=listing_id))
