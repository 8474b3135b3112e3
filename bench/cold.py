"""A timed run as cold as a new process: ingest remembers texts it has met (cleaned
fields, match keys, links, line verdicts) in bounded memos, and a second run over the same
input in one process would find them all there."""

from __future__ import annotations

import sys

from ingest.normalize.memo import forget_all


def forget_texts() -> None:
    """Empty every bounded memo of ingest's (the language models, loaded once a process,
    stay)."""
    forget_all()
    for module in [m for name, m in sys.modules.items() if name.startswith("ingest")]:
        for value in vars(module).values():
            params = getattr(value, "cache_parameters", None)
            if params is not None and params()["maxsize"] is not None:
                value.cache_clear()
