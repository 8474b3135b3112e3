"""The base of the output records (:mod:`.output`)."""

from __future__ import annotations

from msgspec import Struct


class Out(Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """The base of every output record: immutable (each record says so again, for mypy),
    and never in a reference cycle."""
