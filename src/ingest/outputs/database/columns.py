"""Column types that differ between the two databases: JSON values and moments in time.

- :class:`Json`: ``jsonb`` in PostgreSQL (``jsonb_array_length(fields)`` works as it is);
  in SQLite, text of declared type ``JSON`` that ``json_valid`` accepts (a CHECK says so).
  SQL NULL stands for a missing value, never the JSON ``null``.
- :class:`Timestamp`: ``timestamptz`` in PostgreSQL; in SQLite, ISO 8601 text with its
  offset, ``2026-12-03T19:04:40+00:00`` (SQLite has no such type: a CHECK holds the shape,
  and ``datetime(published_at)`` reads it). A moment without a time zone is refused.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from sqlalchemy import JSON, CheckConstraint, DateTime, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine


def dumps(value: object) -> str:
    """JSON text as the database keeps it: compact, keys sorted, not ASCII-escaped."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class Json(TypeDecorator[Any]):
    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(JSONB(none_as_null=True))
        return dialect.type_descriptor(JSON(none_as_null=True))


def json_check(column: str) -> CheckConstraint:
    """SQLite's part of a JSON column: its text is JSON (null passes)."""
    rule = f"{column} IS NULL OR json_valid({column})"  # json_valid(NULL) is 0 before 3.45
    check = CheckConstraint(rule, name=f"{column}_is_json")
    return check.ddl_if(dialect="sqlite")


class Timestamp(TypeDecorator[dt.datetime]):
    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(Text())
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> Any:
        if value is not None and value.utcoffset() is None:
            raise ValueError(f"a timestamp without a time zone: {value!r}")
        if value is None or dialect.name != "sqlite":
            return value
        return value.isoformat()

    def process_result_value(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        if value is None or dialect.name != "sqlite":
            return value  # type: ignore[no-any-return]
        return dt.datetime.fromisoformat(value)


#: ``YYYY-MM-DDTHH:MM:SS``, then anything (fractions), then the offset ``+HH:MM``.
_ISO_WITH_OFFSET = "????-??-??T??:??:??*[+-]??:??"


def timestamp_check(column: str) -> CheckConstraint:
    """SQLite's part of a Timestamp column: ISO 8601 with an offset, a real moment."""
    rule = f"{column} GLOB '{_ISO_WITH_OFFSET}' AND datetime({column}) IS NOT NULL"
    return CheckConstraint(rule, name=f"{column}_has_offset").ddl_if(dialect="sqlite")
