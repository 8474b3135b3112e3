"""``ingest publish DIR --db URL`` on SQLite and on a real PostgreSQL server (SPEC §6).

A is the seeds' publish; B is derived from it the way a next run would write it (a summary
reworded, a title changed, one item's sources only, a published_estimate set, an item
removed, one merged into another, one added at the end of the topic, the topic's
description changed), with its changes.jsonl from the change-set function ``ingest run``
uses; C goes on from B. Every table is read back with plain SQL and compared with the
JSONL, field by field.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import SEEDS
from dbtest import BACKENDS, Json, database_url, derive, lines, pg_database, rows, snapshot
from ingest.cli import main
from ingest.records.output import Item, Topic
from ingest.state.changes import change_set

NEW_ID = "zz0000000000new"


@pytest.fixture
def pg_url() -> Iterator[str]:
    with pg_database() as url:
        yield url


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return database_url(request, tmp_path)


def publish(folder: Path, url: str) -> int:
    return main(["publish", str(folder), "--db", url])


def _plain_ids(items: list[Json]) -> list[str]:
    """Items no related list names and with none of their own, in id order."""
    named = {r for d in items for r in d["related"]}
    return sorted(
        d["id"] for d in items if d["topics"] and not d["related"] and d["id"] not in named
    )


def edit_b(items: list[Json], topics: list[Json]) -> dict[str, str]:
    by_id = {d["id"]: d for d in items}
    a, b, c, estimate, gone, merged_away = _plain_ids(items)[:6]
    by_id[a]["summary_zh"] += "（改写）"
    by_id[b]["title_zh"] = "新的标题"
    by_id[c]["sources"][0]["line"] += 1000
    by_id[estimate]["published_estimate"] = {"earliest": "2025-06-01", "latest": "2025-07-31"}
    for old in (gone, merged_away):
        items.remove(by_id[old])
        for t in topics:
            t["items"] = [i for i in t["items"] if i != old]
    topic = topics[0]
    member = {"slug": topic["slug"], "rank": None, "level": None, "level_label": None}
    items.append({**by_id[a], "id": NEW_ID, "summary_zh": "新条目", "topics": [member]})
    topic["items"].append(NEW_ID)
    topic["description"] = "新的描述"
    return {merged_away: a}


def edit_c(items: list[Json], topics: list[Json]) -> dict[str, str]:
    by_id = {d["id"]: d for d in items}
    kind, gone = [i for i in _plain_ids(items) if i != NEW_ID][-2:]
    by_id[kind]["kind_label"] = "视频"
    items.remove(by_id[gone])
    topics[0]["items"].remove(gone)
    topics[0]["order_note"] = None
    return {}


@pytest.fixture
def folders(ingest: Any, tmp_path: Path) -> tuple[Path, Path, Path]:
    a = ingest(SEEDS).folder
    b = derive(a, tmp_path / "b", edit_b)
    c = derive(b, tmp_path / "c", edit_c)
    return a, b, c


# --- the rows, read back with plain SQL ----------------------------------------------------


def items_in_db(url: str) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for row in rows(url, "SELECT * FROM items"):
        earliest, latest = row.pop("published_earliest"), row.pop("published_latest")
        row["digest"] = row.pop("digest")
        est = None if earliest is None else {"earliest": earliest, "latest": latest}
        out[row["id"]] = {**row, "published_estimate": est, "topics": [], "related": []}
        out[row["id"]]["sources"] = []
    for row in rows(url, "SELECT * FROM item_topics ORDER BY item_id, slug"):
        member = {k: row[k] for k in ("slug", "rank", "level", "level_label")}
        out[row["item_id"]]["topics"].append(member)
    for row in rows(url, "SELECT * FROM related ORDER BY item_id, position"):
        out[row["item_id"]]["related"].append(row["related_id"])
    for row in rows(url, "SELECT * FROM sources ORDER BY item_id, position"):
        out[row.pop("item_id")]["sources"].append(_source(row))
    return out


def topics_in_db(url: str) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for row in rows(url, "SELECT * FROM topics"):
        site = None
        if row["site_name"] is not None or row["site_url"] is not None:
            site = {"name": row.pop("site_name"), "url": row.pop("site_url")}
        levels = row.pop("declared_levels")
        declared = None if levels is None else {"count": row["declared_count"]}
        if declared is not None:
            declared["levels"] = json.loads(levels)
        row = {k: v for k, v in row.items() if k not in ("site_name", "site_url", "declared_count")}
        out[row["slug"]] = {**row, "site": site, "declared": declared, "items": [], "sources": []}
    for row in rows(url, "SELECT slug, item_id FROM item_topics ORDER BY slug, position"):
        out[row["slug"]]["items"].append(row["item_id"])
    for row in rows(url, "SELECT * FROM topic_sources ORDER BY slug, position"):
        out[row.pop("slug")]["sources"].append(_source(row))
    return out


def _source(row: Json) -> Json:
    return {k: row[k] for k in ("file", "sha256", "format", "locator", "byte_offset", "line")}


def assert_rows_equal_jsonl(url: str, folder: Path) -> None:
    for name, in_db, key in (
        ("items.jsonl", items_in_db(url), "id"),
        ("topics.jsonl", topics_in_db(url), "slug"),
    ):
        raw = (folder / name).read_bytes().splitlines()
        records = [json.loads(x) for x in raw]
        assert sorted(in_db) == sorted(r[key] for r in records), name
        for line, record in zip(raw, records, strict=True):
            row = in_db[record[key]]
            assert row.pop("digest") == hashlib.sha256(line).hexdigest(), record[key]
            assert sorted(row) == sorted(record), (name, record[key])
            for field, value in record.items():
                assert row[field] == value, (name, record[key], field)


def test_every_row_equals_the_jsonl_field_by_field(db_url: str, folders: Any) -> None:
    a, b, c = folders
    for folder in (a, b, c):
        assert publish(folder, db_url) == 0
        assert_rows_equal_jsonl(db_url, folder)


def test_publishing_the_same_folder_twice_changes_no_row(
    db_url: str, folders: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, _ = folders
    for folder in (a, b):
        assert publish(folder, db_url) == 0
        before = snapshot(db_url)
        capsys.readouterr()
        assert publish(folder, db_url) == 0
        assert snapshot(db_url) == before
        assert "nothing changed" in capsys.readouterr().out
    assert [p["id"] for p in rows(db_url, "SELECT id FROM publishes")] == [1, 2]


def logged(url: str, publish_id: int) -> list[Json]:
    query = (
        'SELECT entity, op, id, fields, into_id AS "into" FROM changes WHERE publish_id = '
        + str(publish_id)
    )
    found = [{**r, "fields": json.loads(r["fields"])} for r in rows(url, query)]
    return sorted(found, key=lambda c: (c["entity"], c["op"], c["id"]))


def test_the_change_set_equals_changes_jsonl(db_url: str, folders: Any) -> None:
    a, b, c = folders
    for n, folder in enumerate((a, b, c), 1):
        assert publish(folder, db_url) == 0
        assert logged(db_url, n) == lines(folder, "changes.jsonl")
    ops = {(c["op"], c["id"]) for c in lines(b, "changes.jsonl")}
    assert ("added", NEW_ID) in ops and any(op == "merged" for op, _ in ops)
    [latest] = rows(db_url, "SELECT * FROM publishes WHERE id = 3")
    report = json.loads((c / "report.json").read_text("utf-8"))
    assert latest["sequence"] == report["run"]["sequence"] == 3
    assert (latest["items"], latest["topics"]) == (len(lines(c, "items.jsonl")), 1)
    assert (latest["items_changed"], latest["items_removed"]) == (1, 1)


def test_a_database_runs_behind_catches_up_in_one_publish(db_url: str, folders: Any) -> None:
    """A, then C without B: the rows equal C and the log is the change set from A to C."""
    a, _, c = folders
    assert publish(a, db_url) == 0
    assert publish(c, db_url) == 0
    assert_rows_equal_jsonl(db_url, c)
    merged = {x["id"]: x["into"] for x in lines(c, "changes.jsonl") if x["op"] == "merged"}
    expected = change_set(
        {x["id"]: x for x in lines(a, "items.jsonl")},
        {x["slug"]: x for x in lines(a, "topics.jsonl")},
        [Item.model_validate(x) for x in lines(c, "items.jsonl")],
        [Topic.model_validate(x) for x in lines(c, "topics.jsonl")],
        merged,
    )
    assert logged(db_url, 2) == [x.model_dump(mode="json") for x in expected]
    assert {x.op for x in expected} == {"added", "changed", "removed"}


def test_sources_alone_rewrite_rows_but_log_no_change(db_url: str, folders: Any) -> None:
    a, b, _ = folders
    assert publish(a, db_url) == 0
    assert publish(b, db_url) == 0
    changed = {x["id"] for x in logged(db_url, 2) if x["op"] == "changed"}
    moved = [x for x in lines(b, "items.jsonl") if x["sources"][0]["line"] > 1000]
    assert len(moved) == 1 and moved[0]["id"] not in changed
    assert_rows_equal_jsonl(db_url, b)
