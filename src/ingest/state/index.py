"""The previous publish's items, indexed by the evidence that finds them again.

See :mod:`ingest.transform.identity` for how the evidence is weighed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from msgspec import Struct

from ..normalize.text import key_of, match_key
from .previous import Previous

Place = tuple[str, int, str | None]  # (slug, rank, level label)


class Facts(Struct, frozen=True, array_like=True, gc=False):
    """What identity compares of an item, this run's or the previous publish's (a Struct:
    a claim carries one from a Dask worker to the driver, and pickles in C)."""

    keys: tuple[str, ...]  # summary match keys (the first is its own summary's)
    titles: tuple[str, ...]  # original-title match keys
    url: str | None
    kind: str | None  # kind label
    places: tuple[Place, ...]
    summary: str
    title: str | None
    source: str


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
            facts = _previous_facts(previous, item_id)
            index.facts[item_id] = facts
            ev = previous.evidence.get(item_id)
            index.since[item_id] = ev.since if ev is not None else max(previous.sequence, 1)
            for k in facts.keys:
                index.by_key.setdefault(k, []).append(item_id)
            for t in facts.titles:
                index.by_title.setdefault(t, []).append(item_id)
            if facts.url:
                index.by_url.setdefault(facts.url, []).append(item_id)
        return index


def _previous_facts(previous: Previous, item_id: str) -> Facts:
    item = previous.items[item_id]
    ev = previous.evidence.get(item_id)
    own = key_of(item.get("summary_zh") or "")  # remembered: this run keys it again
    keys = (own, *(k for k in (ev.keys if ev else []) if k != own))
    title = item.get("title_original")
    titles = tuple(ev.titles) if ev else ((match_key(title),) if title else ())
    places = tuple(
        (t["slug"], t["rank"], t.get("level_label"))
        for t in item.get("topics", [])
        if t.get("rank") is not None
    )
    return Facts(
        keys=keys,
        titles=titles,
        url=item.get("url"),
        kind=item.get("kind_label"),
        places=places,
        summary=item.get("summary_zh") or "",
        title=item.get("title_zh") or title,
        source="previous publish",
    )
