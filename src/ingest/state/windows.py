"""Relative ages across crawls: the day a page's bytes were crawled, and an item's window.

A page's bytes are one observation: the relative ages in them were shown once, on or
before the first crawl that saved them. So a page is dated by the earliest day a run read
those bytes on: this run's ``--crawled-at``, or a day the state recorded for the same
sha256. The same pages crawled again a later day (or with no ``--crawled-at``) give the
same windows, and the change feed stays quiet.

An item's window (``published_estimate``) is the window its label means on its page's
crawl day, intersected with the window the previous publish had for the item: every crawl
is evidence that only narrows it. A run that gives no date for the label keeps the
previous window (null only when no crawl ever gave one). When the two windows do not meet
(the resource was re-posted, or a page kept a label longer than it can be true), the new
crawl's window is kept and the run warns ``AGE_CONFLICT``, naming both.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ingest.contract import PublishedEstimate
from ingest.normalize.ages import estimate
from ingest.state.previous import PageRef, Previous

Window = tuple[dt.date, dt.date]  # (earliest, latest)


def first_days(pages: Iterable[PageRef]) -> dict[str, dt.date]:
    """sha256 → the earliest crawl day a publish recorded for those bytes."""
    days: dict[str, dt.date] = {}
    for ref in pages:
        if ref.crawled_at:
            day = dt.date.fromisoformat(ref.crawled_at)
            days[ref.sha256] = min(day, days.get(ref.sha256, day))
    return days


def earliest(*days: dt.date | None) -> dt.date | None:
    """The earliest of the days given, None when none is."""
    known = [d for d in days if d is not None]
    return min(known) if known else None


@dataclass(frozen=True, slots=True)
class Ages:
    """What a run knows of relative ages besides its own pages: its crawl day, the day
    earlier crawls first read each page's bytes, and the previous publish's windows."""

    today: dt.date | None = None  # --crawled-at
    days: Mapping[str, dt.date] = field(default_factory=dict)  # sha256 → first crawl day
    windows: Mapping[str, Window] = field(default_factory=dict)  # item id → its window

    @classmethod
    def of(cls, previous: Previous, today: dt.date | None) -> Ages:
        return cls(today, first_days(previous.pages), previous.windows)

    def day(self, sha256: str) -> dt.date | None:
        """The crawl day of a page's bytes: the earliest a publish recorded for them (a page
        ``--merge`` keeps is one of those) and this run's."""
        return earliest(self.days.get(sha256), self.today)

    def window(
        self, item_id: str, label: str | None, crawled: dt.date | None, warnings: list[str]
    ) -> PublishedEstimate | None:
        """The item's window: ``label`` on ``crawled``, narrowed by the previous one."""
        found = estimate(label, crawled)
        if found is None and label is not None and crawled is not None:
            warnings.append(f"item {item_id}: AGE_UNKNOWN: {label!r} is not a relative age")
        before = self.windows.get(item_id)
        if found is None or before is None:
            window = found or before
        elif max(found[0], before[0]) <= min(found[1], before[1]):
            window = (max(found[0], before[0]), min(found[1], before[1]))
        else:
            warnings.append(
                f"item {item_id}: AGE_CONFLICT: {label!r} crawled {crawled} means "
                f"{found[0]}..{found[1]}, outside the earlier window {before[0]}..{before[1]}; "
                "the new crawl's window is kept"
            )
            window = found
        return None if window is None else PublishedEstimate(earliest=window[0], latest=window[1])
