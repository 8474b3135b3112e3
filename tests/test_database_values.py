"""Old and new values in the database (docs/database.md, ``changes.field_values``): a run
whose second day changes the publisher of the item page, published after the first day's
through ``ingest publish``, on SQLite and PostgreSQL. The ``changes`` row of that item holds
the publisher before and after, as ``changes.jsonl`` has them; rows of other ops hold
``{}``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import ITEM_PAGE, SEEDS
from dbtest import json_value, lines, logged, rows
from ingest.cli import main

BEFORE, AFTER = "Hugging Face", "HF 博客"


def second_day(tmp_path: Path) -> Path:
    """The seeds as a next crawl saved them: the item page names another publisher."""
    day = tmp_path / "day2"
    shutil.copytree(SEEDS, day)
    page = day / ITEM_PAGE.name
    first, rest = page.read_text("utf-8").split("\n", 1)
    assert first.startswith(f"{BEFORE}··"), first
    page.write_text(first.replace(BEFORE, AFTER, 1) + "\n" + rest, encoding="utf-8")
    return day


def run_and_publish(inputs: Path, out: Path, url: str) -> None:
    assert main(["run", str(inputs), "--out", str(out), "--quiet"]) == 0
    assert main(["publish", str(out), "--db", url, "--quiet"]) == 0


def test_a_changed_field_is_stored_with_its_values_before_and_after(
    db_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run_and_publish(SEEDS, out, db_url)
    assert lines(out, "changes.jsonl") and logged(db_url, "publish_id = 1") == lines(
        out, "changes.jsonl"
    )
    first = rows(db_url, "SELECT DISTINCT op, field_values FROM changes WHERE publish_id = 1")
    assert [(r["op"], json_value(r["field_values"])) for r in first] == [("added", {})]

    run_and_publish(second_day(tmp_path), out, db_url)
    [line] = lines(out, "changes.jsonl")
    values = {"publisher": {"before": BEFORE, "after": AFTER}}
    assert (line["op"], line["fields"], line["values"]) == ("changed", ["publisher"], values)
    assert logged(db_url, "publish_id = 2") == [line]
    # As SQL reads it: the JSON object, each field's "before" and "after".
    if db_url.startswith("sqlite"):
        before = "json_extract(field_values, '$.publisher.before')"
        after = "json_extract(field_values, '$.publisher.after')"
    else:
        before, after = (
            "field_values -> 'publisher' ->> 'before'",
            "field_values #>> '{publisher,after}'",
        )
    query = f"SELECT id, {before} AS before, {after} AS after FROM changes WHERE publish_id = 2"
    assert rows(db_url, query) == [{"id": line["id"], "before": BEFORE, "after": AFTER}]
