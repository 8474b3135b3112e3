"""``ingest publish DIR --db URL`` on SQLite and on a real PostgreSQL server (SPEC §6).

A is the seeds' publish; B is derived from it the way a next run would write it (a summary
reworded, a title changed, one item's sources only, a published_estimate set, an item
removed, one merged into another, one added at the end of the topic, the topic's
description changed), with its changes.jsonl from the change-set function ``ingest run``
uses; C goes on from B. Every table is read back with plain SQL and compared with the
JSONL, field by field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from conftest import SEEDS
from dbtest import (
    NEW_ID,
    assert_rows_equal_jsonl,
    derive,
    edit_b,
    edit_c,
    lines,
    logged,
    rows,
    snapshot,
)
from ingest.cli import main
from ingest.contract import Item, Topic
from ingest.state.changes import change_set


def publish(folder: Path, url: str) -> int:
    return main(["publish", str(folder), "--db", url])


@pytest.fixture
def folders(ingest: Any, tmp_path: Path) -> tuple[Path, Path, Path]:
    a = ingest(SEEDS).folder
    b = derive(a, tmp_path / "b", edit_b)
    c = derive(b, tmp_path / "c", edit_c)
    return a, b, c


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


def test_the_change_set_equals_changes_jsonl(db_url: str, folders: Any) -> None:
    a, b, c = folders
    for n, folder in enumerate((a, b, c), 1):
        assert publish(folder, db_url) == 0
        assert logged(db_url, f"publish_id = {n}") == lines(folder, "changes.jsonl")
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
        [msgspec.convert(x, Item) for x in lines(c, "items.jsonl")],
        [msgspec.convert(x, Topic) for x in lines(c, "topics.jsonl")],
        merged,
    )
    assert logged(db_url, "publish_id = 2") == [msgspec.to_builtins(x) for x in expected]
    assert {x.op for x in expected} == {"added", "changed", "removed"}


def test_sources_alone_rewrite_rows_but_log_no_change(db_url: str, folders: Any) -> None:
    a, b, _ = folders
    assert publish(a, db_url) == 0
    assert publish(b, db_url) == 0
    changed = {x["id"] for x in logged(db_url, "publish_id = 2") if x["op"] == "changed"}
    moved = [x for x in lines(b, "items.jsonl") if x["sources"][0]["line"] > 1000]
    assert len(moved) == 1 and moved[0]["id"] not in changed
    assert_rows_equal_jsonl(db_url, b)
