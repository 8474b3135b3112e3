"""A topic page missing for a run and back the next: the topic keeps its slug throughout.

Day 1 reads the seeds; day 2 only the topic list and the item page (the topic page was not
downloaded); day 3 the seeds again. The topic known only by its list keeps the slug the
previous publish gave its description, so no run removes it and the recovery run is not
refused by the shrink guard.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import ITEM_PAGE, SEEDS, TOPIC_LIST, Out, run_subprocess
from ingest.cli import main

SLUG = "model-serving-compute"


def run(folder: Path, out: Path, *args: str) -> Out:
    return Out(out, main(["run", str(folder), "--out", str(out), "--quiet", *args]))


def topic_changes(out: Out) -> list[tuple[str, str]]:
    return [(c["op"], c["id"]) for c in out.lines("changes.jsonl") if c["entity"] == "topic"]


def test_a_topic_page_missing_for_a_run_keeps_its_slug(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(SEEDS, out).code == 0
    only_list = tmp_path / "d2"
    only_list.mkdir()
    for page in (TOPIC_LIST, ITEM_PAGE):
        shutil.copy(page, only_list / page.name)

    refused = run_subprocess("run", str(only_list), "--out", str(out), "--quiet")
    assert refused.returncode == 3  # 23 of its items are on the topic page alone
    assert "of its 1 topic" not in refused.stderr

    day2 = run(only_list, out, "--allow-shrink")
    assert day2.code == 0
    assert [t["slug"] for t in day2.topics] == [SLUG]
    assert topic_changes(day2) == [("changed", SLUG)]
    [warning] = [w for w in day2.report["warnings"] if "TOPIC_PAGE_MISSING" in w]
    assert f"slug {SLUG} kept from the previous publish" in warning

    day3 = run(SEEDS, out)  # the page is back: no flip, and nothing refused
    assert day3.code == 0
    assert [t["slug"] for t in day3.topics] == [SLUG]
    assert topic_changes(day3) == [("changed", SLUG)]
    assert len(day3.items) == 47 and all(c["op"] != "removed" for c in day3.lines("changes.jsonl"))
