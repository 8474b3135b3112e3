"""A resource's provisional id: what resolve gives each item, and what the identity step
starts from (it keeps the id, or replaces it with an earlier publish's)."""

from __future__ import annotations

import hashlib


def mint(summary_key: str, salt: int = 0) -> str:
    """A new id for a resource: a digest of its Chinese summary's match key (``salt``: the
    next free id when that one is taken)."""
    text = summary_key if not salt else f"{summary_key}\x00{salt}"
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
