"""Output records as JSON: written by msgspec, and each file checked against its record type.

A record built in code is not validated when it is built (a Struct checks nothing then):
the bytes written are, here, by decoding them again with the record's type, so every
pattern, range, enum and nesting rule of the contract holds for what a site loads. A
failure is a bug, never input: :class:`ContractError` names the record and the rule.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, TypeVar

import msgspec

from .output import Out

T = TypeVar("T", bound=Out)

_ENCODER = msgspec.json.Encoder()
#: Records encoded and checked at a time in a JSON Lines file.
BATCH = 1024


class ContractError(AssertionError):
    """A record that breaks the output contract: a bug in ingest, never in its input."""


@cache
def decoder(kind: type[T]) -> msgspec.json.Decoder[T]:
    """A validating JSON decoder of one record type."""
    return msgspec.json.Decoder(kind)


def json_bytes(record: Out, indent: int | None = None) -> bytes:
    """One record as JSON (compact, or indented by ``indent``), checked against its type."""
    data = _ENCODER.encode(record)
    _check(record, data)
    return data if indent is None else msgspec.json.format(data, indent=indent)


def jsonl(records: Sequence[Out]) -> Iterator[bytes]:
    """A JSON Lines file of ``records`` in pieces of :data:`BATCH` lines, each checked (a
    batch at once; the line that breaks the contract is then found and named)."""
    for start in range(0, len(records), BATCH):
        batch = records[start : start + BATCH]
        data = _ENCODER.encode_lines(batch)
        try:
            decoder(type(batch[0])).decode_lines(data)
        except msgspec.ValidationError as e:
            for n, record in enumerate(batch, start + 1):
                _check(record, _ENCODER.encode(record), f"line {n}: ")
            raise ContractError(f"lines {start + 1}-{start + len(batch)}: mixed records") from e
        yield data


def _check(record: Out, data: bytes, where: str = "") -> None:
    try:
        decoder(type(record)).decode(data)
    except msgspec.ValidationError as e:
        name = type(record).__name__
        raise ContractError(f"{where}a record {name} breaks the output contract: {e}") from e


def to_builtins(record: Out) -> Any:
    """A record as the JSON a site loads, in Python values (dates as ISO strings)."""
    return msgspec.to_builtins(record)
