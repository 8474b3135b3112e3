"""The publish's files as the next run reads them: a JSON document, and JSON Lines of
records checked line by line. Anything unreadable is a one-line :class:`UsageError` that
names the file and the line, never a traceback."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import msgspec

from ..errors import UsageError
from ..records.output import ItemId, Slug


def json_doc(path: Path, head: type[msgspec.Struct] | None = None) -> dict[str, Any]:
    """A JSON object (msgspec reads one four times faster than the json module); only the
    fields of ``head``, when given."""
    try:
        data = path.read_bytes()
        doc: Any = msgspec.json.decode(data, type=head) if head else msgspec.json.decode(data)
    except (OSError, msgspec.DecodeError) as e:
        raise UsageError(f"cannot read the previous publish: {str(path)!r}: {e}") from e
    if head is not None:
        return msgspec.structs.asdict(doc)
    if not isinstance(doc, dict):
        raise UsageError(f"cannot read the previous publish: {str(path)!r} is not an object")
    return doc


def compared_lines(path: Path, key: str) -> Iterator[dict[str, Any]]:
    """Earlier records as the change set compares them: without their sources, which make
    no change (see state.changes) and are nine in ten of an item's values; each is let go
    as its line is read (kept, they would hold a re-run's driver 200 MB higher at 100 MB)."""
    for doc in jsonl_docs(path, key):
        doc.pop("sources", None)
        yield doc


def jsonl_docs(path: Path, key: str) -> Iterator[dict[str, Any]]:
    """Every line of a JSON Lines file of the publish, checked (see :func:`checked`)."""
    for n, line in enumerate(read_bytes(path).splitlines(), 1):
        yield checked(path, n, line, key)


def read_bytes(path: Path) -> bytes:
    """A file of the publish, whole."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read the previous publish: {str(path)!r}: {e}") from e


def checked(path: Path, n: int, line: bytes, key: str) -> dict[str, Any]:
    """Line ``n`` of a JSON Lines file of the publish: an object with its ``key``."""
    try:
        doc = msgspec.json.decode(line)
    except msgspec.DecodeError as e:
        raise UsageError(f"cannot read the previous publish: {path}: line {n}: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get(key), str):
        raise UsageError(f"cannot read the previous publish: {path}: line {n}: no {key!r}")
    if not _KEYS[key].fullmatch(doc[key]):  # whole: the contract's "$" lets a "\n" end it
        raise UsageError(
            f"cannot read the previous publish: {path}: line {n}: {key} {doc[key]!r} is "
            "not one ingest writes"
        )
    return doc


#: What an id and a slug are (the contract's patterns), matched whole.
_KEYS = {
    "id": re.compile(get_args(ItemId)[1].pattern),
    "slug": re.compile(get_args(Slug)[1].pattern),
}
