"""The report's ``reuse`` member: what a run took from the cache of the publish it built
on instead of computing it (see ``ingest.steps.reuse``)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from .base import Out

Recompute = Literal[
    "new-bytes", "cache-missing", "other-version", "checksum-failed", "full", "dask-engine"
]


class Recomputed(Out, frozen=True):
    """A page parsed again, and why its earlier result was not taken."""

    file: str
    reason: Annotated[
        Recompute,
        Meta(
            description="new-bytes: no earlier run read these bytes; cache-missing: the "
            "publish built on keeps no cache (or there is none); other-version: its cache "
            "was written by another build of ingest; checksum-failed: the cache, or this "
            "page's part of it, is damaged; full: --full; dask-engine: the Dask engine "
            "takes nothing from a cache"
        ),
    ]


class Reused(Out, frozen=True):
    """What the run took from the cache of the publish it built on instead of computing
    it (``state/reuse*``), and what it computed again. The output is the same either way."""

    pages_reused: Annotated[int, Meta(description="Pages whose parse was taken, not redone")]
    pages_parsed: int
    groups_reused: Annotated[
        int, Meta(description="Groups of listings (one resource each) taken as they were")
    ]
    groups_recomputed: int
    recomputed: Annotated[list[Recomputed], Meta(description="Every page parsed, and why")]
    warnings: Annotated[list[str], Meta(description="Cache trouble, as the run printed it")]
