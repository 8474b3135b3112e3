"""A timed run as cold as a new process: ingest remembers texts it has met (cleaned
fields, match keys, links, line verdicts) in bounded memos, and a second run over the same
input in one process would find them all there."""

from __future__ import annotations

import sys


def forget_texts() -> None:
    """Empty every bounded memo of ingest's: the text memos and the ``lru_cache``s (the
    language models, loaded once a process by an unbounded ``cache``, stay)."""
    for module in [m for name, m in sys.modules.items() if name.startswith("ingest")]:
        for value in vars(module).values():
            if isinstance(value, type):
                continue  # a class (the memo's protocol), not a memo
            clear = getattr(value, "cache_clear", None)
            params = getattr(value, "cache_parameters", None)
            if clear is not None and (params is None or params()["maxsize"] is not None):
                clear()
