"""Render: the records of a run as the bytes of the folder's files.

Everything but ``report.json``'s ``timing`` is a pure function of the inputs: records are
sorted by a stable key and serialised with a fixed field order, UTF-8, not ASCII-escaped.
``report.html`` (the page for the curator) and the pages beside it (``report/``) leave the
timing out, so they are stable too.
"""

from __future__ import annotations

from functools import partial

from ..records.run import PAGE, Content, RunOutput
from ..records.serial import json_bytes, jsonl
from .page import page_content


def render(out: RunOutput) -> dict[str, Content]:
    """Every output file: the small ones' bytes, the large ones' pieces, made as they are
    written (never the whole file in memory); report.json last (it is the manifest)."""
    return {
        "items.jsonl": partial(jsonl, out.items),
        "topics.jsonl": partial(jsonl, out.topics),
        "rejects.jsonl": partial(jsonl, out.rejects),
        "changes.jsonl": partial(jsonl, out.changes),
        PAGE: page_content(out),  # it and report/ made by a child while the rest is written
        "report.json": partial(_report, out),  # made once the page's child has started
    }


def _report(out: RunOutput) -> list[bytes]:
    return [json_bytes(out.report, indent=2) + b"\n"]
