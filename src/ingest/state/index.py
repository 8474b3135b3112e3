"""The previous publish's items, indexed by the evidence that finds them again.

See :mod:`ingest.transform.identity` for how the evidence is weighed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .earlier import Facts, Place
from .previous import Previous

__all__ = ["Facts", "IdIndex", "Place"]


@dataclass(slots=True)
class IdIndex:
    """The previous publish's items, indexed by the evidence that can find them cheaply."""

    facts: dict[str, Facts] = field(default_factory=dict)
    since: dict[str, int] = field(default_factory=dict)
    by_key: dict[str, list[str]] = field(default_factory=dict)
    by_title: dict[str, list[str]] = field(default_factory=dict)
    by_url: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, previous: Previous) -> IdIndex:
        index = cls()
        for item_id in sorted(previous.items):
            item = previous.items[item_id]
            facts = index.facts[item_id] = item.facts
            index.since[item_id] = item.since
            for k in facts.keys:
                index.by_key.setdefault(k, []).append(item_id)
            for t in facts.titles:
                index.by_title.setdefault(t, []).append(item_id)
            if facts.url:
                index.by_url.setdefault(facts.url, []).append(item_id)
        return index
