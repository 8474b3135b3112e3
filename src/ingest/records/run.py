"""What a run hands its writers: its records (:class:`RunOutput`) and the files they make."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .output import Change, Item, ItemEvidence, Out, Reject, Report, Topic

#: A publish's files of records: name → type of each line (.jsonl) or the file; report last.
FILES: dict[str, type[Out]] = {
    "items.jsonl": Item,
    "topics.jsonl": Topic,
    "rejects.jsonl": Reject,
    "changes.jsonl": Change,
    "report.json": Report,
}
#: The run report as a web page: no schema, but part of every publish.
PAGE = "report.html"
#: The folder of the pages beside it (long lists, a page at a time): ``report/NAME.html``.
PAGES = "report"

Pieces = Callable[[], Iterable[bytes]]


@dataclass(frozen=True, slots=True)
class Alongside:
    """A file's content whose making waits on the disk and on hashing more than it computes
    (the state's page pack): written by a thread alongside the other files."""

    pieces: Pieces


#: Writes one file of a folder: ``write(name in the folder, its pieces)``.
FileSink = Callable[[str, Iterable[bytes]], None]


@dataclass(frozen=True, slots=True)
class Apart:
    """A file's content that takes long to make and only reads the records (the report
    page): made by a forked child process while the other files are written. ``beside``:
    the files of a folder of the publish (``folder``) the same child makes first, naming
    them as it goes (how many there are is known only once they are made): it calls its
    argument, a :data:`FileSink`, once a file."""

    pieces: Pieces
    folder: str | None = None
    beside: Callable[[FileSink], None] | None = None


@dataclass(frozen=True, slots=True)
class Closing:
    """A file's content made from what the others were (the state's manifest lists their
    checksums): made and written once every other file is, in order, before the report."""

    pieces: Pieces


#: A file's content: its bytes, a function giving them in pieces as it is written, or such
#: a function run alongside the others (in a thread), apart (in a child process) or once
#: the others are written.
Content = bytes | Pieces | Alongside | Apart | Closing


def pieces_of(content: Pieces | Alongside | Apart | Closing) -> Iterable[bytes]:
    """The pieces of a content made in pieces, however it is to be written."""
    return content.pieces() if isinstance(content, Alongside | Apart | Closing) else content()


def content_bytes(content: Content) -> bytes:
    """A file's whole content as bytes (for tests and small files, and the manifest)."""
    if isinstance(content, bytes):
        return content
    return b"".join(pieces_of(content))


@dataclass(slots=True)
class RunOutput:
    """The records of one run: what writers publish."""

    items: list[Item]
    topics: list[Topic]
    rejects: list[Reject]
    report: Report
    changes: list[Change] = field(default_factory=list)
    evidence: list[ItemEvidence] = field(default_factory=list)  # for state/earlier.msgpack
    #: What the previous publish said of the records a change names, for the report page:
    #: (entity, id) → {field: its JSON value} — a changed record's changed fields; a
    #: removed or merged item's title, as ``title``.
    previous_values: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    summary_keys: dict[str, str] = field(default_factory=dict)  # id → its summary's, if known
