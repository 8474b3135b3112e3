"""Rows → records: what the database holds for some items or topics, as their JSON.

Used to name the fields a publish changes (``changes.fields``): the old record is rebuilt
from its rows in the shape of its line in the folder (an item's topics in slug order, as
``items.jsonl`` has them: by code point, sorted here, whatever the database's collation
would make of ``ORDER BY slug``). ``sources`` are left out: they never make a change on
their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import Table, select
from sqlalchemy.engine import Connection

from . import tables as t

Record = dict[str, Any]
#: Ids per ``IN (...)`` list: well under SQLite's and PostgreSQL's parameter limits.
CHUNK = 500


def chunks(keys: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(keys), CHUNK):
        yield keys[start : start + CHUNK]


def old_items(conn: Connection, ids: Iterable[str]) -> dict[str, Record]:
    out: dict[str, Record] = {}
    for part in chunks(sorted(ids)):
        for row in _rows(conn, t.items, t.items.c.id, part):
            out[row["id"]] = _item(row)
        for row in _rows(conn, t.item_topics, t.item_topics.c.item_id, part):
            out[row["item_id"]]["topics"].append(_membership(row))
        for row in _rows(conn, t.related, t.related.c.item_id, part, "position"):
            out[row["item_id"]]["related"].append(row["related_id"])
    for record in out.values():
        record["topics"].sort(key=lambda m: m["slug"])
    return out


def old_topics(conn: Connection, slugs: Iterable[str]) -> dict[str, Record]:
    out: dict[str, Record] = {}
    for part in chunks(sorted(slugs)):
        for row in _rows(conn, t.topics, t.topics.c.slug, part):
            out[row["slug"]] = _topic(row)
        for row in _rows(conn, t.item_topics, t.item_topics.c.slug, part, "position"):
            out[row["slug"]]["items"].append(row["item_id"])
    return out


def _rows(
    conn: Connection, table: Table, key: Any, part: Sequence[str], order: str | None = None
) -> Iterator[Record]:
    query = select(table).where(key.in_(part))
    if order is not None:  # a number: no collation involved
        query = query.order_by(key, table.c[order])
    for row in conn.execute(query).mappings():
        yield dict(row)


def _item(row: Record) -> Record:
    earliest, latest = row.pop("published_earliest"), row.pop("published_latest")
    row.pop("digest")
    estimate = None
    if earliest is not None and latest is not None:
        estimate = {"earliest": earliest.isoformat(), "latest": latest.isoformat()}
    collected = row["collected_on"]
    return {
        **row,
        "collected_on": collected.isoformat() if collected is not None else None,
        "published_estimate": estimate,
        "topics": [],
        "related": [],
    }


def _membership(row: Record) -> Record:
    return {k: row[k] for k in ("slug", "rank", "level", "level_label")}


def _topic(row: Record) -> Record:
    site = None
    if row["site_name"] is not None or row["site_url"] is not None:
        site = {"name": row["site_name"], "url": row["site_url"]}
    declared = None
    if row["declared_levels"] is not None:
        declared = {"count": row["declared_count"], "levels": row["declared_levels"]}
    keep = ("slug", "name", "description", "category", "url", "notice", "order_note")
    return {**{k: row[k] for k in keep}, "site": site, "declared": declared, "items": []}
