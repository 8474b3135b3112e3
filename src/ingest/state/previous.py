"""The previous publish, as the next run sees it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(slots=True)
class Previous:
    """What an earlier publish left in the output folder (empty for a first publish)."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # id → item as JSON
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)  # slug → topic as JSON
    sequence: int = 0  # the earlier publish's run.sequence; 0 when there is none


@dataclass(frozen=True, slots=True)
class RunSettings:
    """How this run is asked to build on the state."""

    mode: Literal["snapshot", "merge"] = "snapshot"
    crawled_at: dt.date | None = None
