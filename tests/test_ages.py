"""Relative ages across crawls, and the --crawled-at argument, through the command line.

The seed item page shows ``5 个月前``; crawled 2026-09-30 that is 2026-03-30 .. 2026-05-15.
Each later crawl is evidence that only narrows the window: the same pages another day (or
without --crawled-at) change nothing, a new label narrows it, one that cannot be true with
the earlier window replaces it with a warning.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import ITEM_PAGE, SEEDS, TOPIC_PAGE, Out, run_subprocess
from ingest.cli import main
from test_earlier import as_version_1

AGE = "5 个月前"
FIRST = {"earliest": "2026-03-30", "latest": "2026-05-15"}


def run(dumps: Path, out: Path, *args: str) -> int:
    return main(["run", str(dumps), "--out", str(out), "--quiet", *args])


def aged(out: Path) -> dict[str, Any]:
    [item] = [i for i in Out(out, 0).items if i["published_ago"]]
    return item


def changes(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "changes.jsonl").read_text("utf-8").splitlines()]


def relabelled(folder: Path, label: str) -> Path:
    """The seeds with the item page showing ``label`` as its relative age."""
    folder.mkdir()
    for page in SEEDS.iterdir():
        text = page.read_text(encoding="utf-8")
        if page == ITEM_PAGE:
            assert AGE in text
            text = text.replace(AGE, label, 1)
        (folder / page.name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def day1(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    assert run(SEEDS, out, "--crawled-at", "2026-09-30") == 0
    assert aged(out)["published_estimate"] == FIRST
    return out


def test_the_same_pages_a_later_day_or_undated_change_nothing(day1: Path) -> None:
    for later in (["--crawled-at", "2026-10-01"], ["--crawled-at", "2026-10-02"], []):
        assert run(SEEDS, day1, *later) == 0
        assert changes(day1) == [], later
        assert aged(day1)["published_estimate"] == FIRST
    manifest = json.loads((day1 / "state" / "manifest.json").read_text("utf-8"))
    assert {p["crawled_at"] for p in manifest["pages"]} == {"2026-09-30"}


def test_a_new_label_narrows_the_window_and_it_stays_narrow(day1: Path, tmp_path: Path) -> None:
    dumps = relabelled(tmp_path / "d2", "6 个月前")  # on 10-20: 03-20 .. 05-05 alone
    assert run(dumps, day1, "--crawled-at", "2026-10-20") == 0
    item = aged(day1)
    assert item["published_estimate"] == {"earliest": "2026-03-30", "latest": "2026-05-05"}
    assert changes(day1) == [
        {
            "entity": "item",
            "op": "changed",
            "id": item["id"],
            "fields": ["published_ago", "published_estimate"],
            "into": None,
        }
    ]
    for later in (["--crawled-at", "2026-10-21"], []):  # the same pages again
        assert run(dumps, day1, *later) == 0
        assert changes(day1) == []
        assert aged(day1)["published_estimate"]["latest"] == "2026-05-05"


def test_a_run_without_a_date_keeps_the_window_of_a_new_label(day1: Path, tmp_path: Path) -> None:
    assert run(relabelled(tmp_path / "d2", "6 个月前"), day1) == 0
    item = aged(day1)
    assert item["published_ago"] == "6 个月前" and item["published_estimate"] == FIRST
    assert [c["fields"] for c in changes(day1)] == [["published_ago"]]


def test_a_window_that_would_be_empty_keeps_the_new_crawl_and_warns(
    day1: Path, tmp_path: Path
) -> None:
    assert run(relabelled(tmp_path / "d2", "2 天前"), day1, "--crawled-at", "2026-10-01") == 0
    item = aged(day1)
    assert item["published_estimate"] == {"earliest": "2026-09-28", "latest": "2026-09-30"}
    [warning] = [w for w in Out(day1, 0).report["warnings"] if "AGE_CONFLICT" in w]
    assert item["id"] in warning and "2026-03-30..2026-05-15" in warning


def test_merge_keeps_the_day_of_the_pages_it_keeps(day1: Path, tmp_path: Path) -> None:
    other = tmp_path / "d2"
    other.mkdir()
    (other / "999_new.txt").write_text(TOPIC_PAGE.read_text("utf-8") + "\n", encoding="utf-8")
    assert run(other, day1, "--merge", "--crawled-at", "2026-10-20") == 0
    assert aged(day1)["published_estimate"] == FIRST  # its item page: kept, of 09-30
    assert changes(day1) == []


def test_a_publish_read_from_its_json_keeps_its_windows_too(day1: Path, tmp_path: Path) -> None:
    """A state without ``earlier.msgpack`` (version 1) is read from the records' JSON: the
    windows come from items.jsonl, and an undated run of a new label keeps them."""
    as_version_1(day1)
    assert run(relabelled(tmp_path / "d2", "6 个月前"), day1) == 0
    assert aged(day1)["published_estimate"] == FIRST


def test_an_edited_window_that_is_no_date_is_one_line(day1: Path) -> None:
    items = day1 / "items.jsonl"
    text = items.read_text("utf-8")
    items.write_text(text.replace('"earliest":"2026-03-30"', '"earliest":"2026-13-30"'), "utf-8")
    proc = run_subprocess("run", str(SEEDS), "--out", str(day1))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert (
        "items.jsonl" in proc.stderr and "published_estimate that is not two dates" in proc.stderr
    )


# --------------------------------------------------------------------------- --crawled-at


@pytest.mark.parametrize(
    "value", ["20261102", "2026-W45-1", "2026-11-02T00:00", "2026-1-5", "2026-02-30", ""]
)
def test_crawled_at_is_yyyy_mm_dd_only(value: str, tmp_path: Path) -> None:
    proc = run_subprocess("run", str(SEEDS), "--out", str(tmp_path / "o"), "--crawled-at", value)
    assert proc.returncode == 2
    assert f"argument --crawled-at: not a date (YYYY-MM-DD): {value!r}" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_crawled_at_refuses_a_day_after_tomorrow(tmp_path: Path) -> None:
    for _ in range(2):  # once more if the day turned while it ran
        today = dt.date.today()
        late = run_subprocess(
            "run", str(SEEDS), "--out", str(tmp_path / "o"), "--crawled-at",
            str(today + dt.timedelta(days=2)),
        )  # fmt: skip
        if dt.date.today() == today:
            break
    assert late.returncode == 2 and "is after tomorrow" in late.stderr
    far = run_subprocess("run", "--out", str(tmp_path / "o"), "--crawled-at", "2099-12-31")
    assert far.returncode == 2 and "2099-12-31 is after tomorrow" in far.stderr
    assert not (tmp_path / "o").exists()
    tomorrow = dt.date.today() + dt.timedelta(days=1)
    assert run(SEEDS, tmp_path / "ok", "--crawled-at", str(tomorrow)) == 0


def test_run_help_states_the_crawled_at_rule() -> None:
    proc = run_subprocess("run", "--help")
    text = " ".join(proc.stdout.split())
    assert "YYYY-MM-DD only, no later than tomorrow" in text
