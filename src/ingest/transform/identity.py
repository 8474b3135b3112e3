"""Identity: the one place where an item's id is decided.

Every cluster of listings gets a provisional id when it is resolved (:func:`mint`: a
digest of its Chinese summary's match key, which every page kind shows, so any subset of
pages gives a resource the same id). The identity step then decides the id each item is
published under (:func:`assign`): with no earlier publish, the minted one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # merge imports mint from here
    from .merge import Component


def mint(summary_key: str) -> str:
    """A new id for a resource: a digest of its Chinese summary's match key."""
    return hashlib.blake2b(summary_key.encode(), digest_size=8).hexdigest()


@dataclass(slots=True)
class Ids:
    """Provisional (minted) id → published id, for every item of the run; and the items of
    the previous publish found to be one resource with another (old id → surviving id)."""

    final: dict[str, str] = field(default_factory=dict)
    merged: dict[str, str] = field(default_factory=dict)

    def of(self, minted: str) -> str:
        return self.final.get(minted, minted)


def assign(minted: Iterable[str]) -> Ids:
    """The published id of every item: with no earlier publish, the one it was minted."""
    return Ids({m: m for m in sorted(minted)})


def claims(comp: Component) -> list[str]:
    """What the items of one component claim: today, the ids they were minted."""
    return [r.id for r in comp.items]
