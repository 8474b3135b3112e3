"""The shrink guard: a run that would remove much of what a site shows is not published.

More than 10 % of the previous publish's items removed (merged items are not removed: their
resource lives on under another id), or any of its topics, and the run is refused unless
``--allow-shrink``: a scraper that saved half the pages, or a layout change that makes a
page unreadable, must not empty a site.
"""

from __future__ import annotations

from ..records.run import RunOutput
from .previous import Previous

#: Share of the previous items a run may remove without --allow-shrink.
MAX_REMOVED_SHARE = 0.10


def shrink(previous: Previous, run: RunOutput) -> str | None:
    """Why this run would shrink the publish too much, or None when it would not."""
    if previous.sequence == 0:
        return None
    counts = run.report.changes
    items, topics = counts.items.removed, counts.topics.removed
    too_many = items > MAX_REMOVED_SHARE * len(previous.items)
    if not too_many and not topics:
        return None
    parts = []
    if too_many:
        share = 100 * items / len(previous.items)
        parts.append(
            f"{items} of the {len(previous.items)} items of the previous publish "
            f"({share:.0f} %, more than {100 * MAX_REMOVED_SHARE:.0f} %)"
        )
    if topics:
        parts.append(f"{topics} of its {len(previous.topics)} topic(s)")
    return "this run would remove " + " and ".join(parts)
