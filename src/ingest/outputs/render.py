"""Render: the records of a run as the bytes of the folder's files.

Everything but ``report.json``'s ``timing`` is a pure function of the inputs: records are
sorted by a stable key and serialised with a fixed field order, UTF-8, not ASCII-escaped.
``report.html`` (the page for the curator) leaves the timing out, so it is stable too.
"""

from __future__ import annotations

from ..records.output import Change, Item, Reject, RunOutput, Topic
from .page import render_page


def render(out: RunOutput) -> dict[str, bytes]:
    """The bytes of every output file; report.json last (it is the manifest)."""
    return {
        "items.jsonl": _jsonl(out.items),
        "topics.jsonl": _jsonl(out.topics),
        "rejects.jsonl": _jsonl(out.rejects),
        "changes.jsonl": _jsonl(out.changes),
        "report.html": render_page(out),
        "report.json": out.report.model_dump_json(indent=2).encode() + b"\n",
    }


def _jsonl(records: list[Item] | list[Topic] | list[Reject] | list[Change]) -> bytes:
    return b"".join(r.model_dump_json().encode() + b"\n" for r in records)
