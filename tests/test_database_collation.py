"""What decides a change never depends on the database's collation.

PostgreSQL made with an ICU collation that, like glibc's en_US.UTF-8, lets punctuation
weigh nothing (en-US, alternate=shifted): ``modelrunner`` sorts before
``model-serving-compute``, while by code point — the order of the folder's files — ``-``
comes before ``r``. A publish with two such topics, then one that rewords
the summaries of items listed on both: the database logs exactly the folder's
changes.jsonl (``changed ["summary_zh"]``), never a ``topics`` change that only the
collation made.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import SEEDS
from dbtest import Json, assert_rows_equal_jsonl, derive, lines, logged, pg_database, rows
from ingest.cli import main

ICU = "TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US-u-ka-shifted' LOCALE 'C.UTF-8'"
SECOND = "modelrunner"


@pytest.fixture
def icu_url() -> Iterator[str]:
    with pg_database(ICU) as url:
        yield url


def add_topic(items: list[Json], topics: list[Json]) -> dict[str, str]:
    """A second topic listing ten items of the first."""
    members = topics[0]["items"][:10]
    topics.append({**topics[0], "slug": SECOND, "items": members, "declared": None})
    for item in items:
        if item["id"] in members:
            item["topics"].append(
                {"slug": SECOND, "rank": None, "level": None, "level_label": None}
            )
            item["topics"].sort(key=lambda m: m["slug"])
    return {}


def reword_both(items: list[Json], topics: list[Json]) -> dict[str, str]:
    for item in items:
        if len(item["topics"]) == 2:
            item["summary_zh"] += "（新）"
    return {}


def test_a_non_c_collation_makes_no_change_of_its_own(
    icu_url: str, ingest: Any, tmp_path: Path
) -> None:
    order = (
        "SELECT string_agg(s, ' ' ORDER BY s) AS o "
        "FROM (VALUES ('model-serving-compute'), ('modelrunner')) AS v(s)"
    )
    assert rows(icu_url, order) == [{"o": "modelrunner model-serving-compute"}], "not ICU"
    a = derive(ingest(SEEDS).folder, tmp_path / "a", add_topic)
    b = derive(a, tmp_path / "b", reword_both)
    assert [t["slug"] for t in lines(a, "topics.jsonl")] == ["model-serving-compute", SECOND]
    for folder in (a, b):
        assert main(["publish", str(folder), "--db", icu_url, "--quiet"]) == 0
        assert_rows_equal_jsonl(icu_url, folder)
    expected = lines(b, "changes.jsonl")
    assert len(expected) == 10 and {tuple(c["fields"]) for c in expected} == {("summary_zh",)}
    assert logged(icu_url, "publish_id = 2") == expected
