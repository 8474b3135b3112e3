"""Relative ages across crawls, and the --crawled-at argument, through the command line.

The seed item page shows ``5 个月前``; crawled 2026-09-30 that is 2026-03-30 .. 2026-05-15.
Each later crawl is evidence that only narrows the window: the same pages another day (or
without --crawled-at) change nothing, a new label narrows it, one that cannot be true with
the earlier window replaces it with a warning.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import ITEM_PAGE, SEEDS, TOPIC_PAGE, Out, run_subprocess, without_steps
from ingest.cli import main
from ingest.state.previous import decode_state
from test_state import snapshot

AGE = "5 个月前"
FIRST = {"earliest": "2026-03-30", "latest": "2026-05-15"}


def run(dumps: Path, out: Path, *args: str) -> int:
    return main(["run", str(dumps), "--out", str(out), "--quiet", *args])


def aged(out: Path) -> dict[str, Any]:
    [item] = [i for i in Out(out, 0).items if i["published_ago"]]
    return item


def changes(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "changes.jsonl").read_text("utf-8").splitlines()]


def crawl_days(out: Path) -> set[str | None]:
    """The day the state of the publish in ``out`` records for each page's bytes."""
    state = decode_state((out / "state" / "records.zst").read_bytes())
    assert state is not None
    return {p.crawled_at for p in state.pages}


def nothing_new(dumps: Path, out: Path, capsys: pytest.CaptureFixture[str], *args: str) -> None:
    """A run of ``dumps`` (3 pages) into ``out`` publishes nothing: it says so, and ``out``
    is byte for byte as it was."""
    before = snapshot(out)
    capsys.readouterr()
    assert main(["run", str(dumps), "--out", str(out), *args]) == 0
    said = capsys.readouterr().out
    assert said.startswith("ingest: nothing new: the 3 page(s) are byte for byte"), args
    assert snapshot(out) == before, args


def as_ingest_0_2(out: Path) -> Path:
    """The publish in ``out`` as ingest 0.2 left it, as far as a run without --merge reads
    it: a marker of state version 3 that lists no files, so the records (and their
    published_estimate windows) are read from their JSON; 0.2's state/ (page packs, which
    only --merge reads) left out."""
    shutil.rmtree(out / "state")
    marker = json.loads((out / ".ingest").read_text("utf-8"))
    old = {k: marker[k] for k in ("written_by", "kind", "schema_version")}
    (out / ".ingest").write_text(json.dumps({**old, "state_version": 3}, indent=1) + "\n")
    return out


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


def test_the_same_pages_a_later_day_or_undated_change_nothing(
    day1: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    later_days = (["--crawled-at", "2026-10-01"], ["--crawled-at", "2026-10-02"], [])
    for later in later_days:  # nothing new: the publish is left as it is
        nothing_new(SEEDS, day1, capsys, *later)
    for later in later_days:  # computed again, they still date the pages 09-30
        assert run(SEEDS, day1, "--full", *later) == 0
        assert changes(day1) == [], later
        assert aged(day1)["published_estimate"] == FIRST
    assert crawl_days(day1) == {"2026-09-30"}


def test_the_same_pages_dated_earlier_are_something_new(day1: Path) -> None:
    """A crawl day before the one the state records for the pages' bytes dates them anew:
    the run is no "nothing new", and the window narrows to what 09-29 gives."""
    assert run(SEEDS, day1, "--crawled-at", "2026-09-29") == 0
    assert Out(day1, 0).report["run"]["sequence"] == 2
    item = aged(day1)
    assert item["published_estimate"] == {"earliest": "2026-03-30", "latest": "2026-05-14"}
    assert changes(day1) == [
        {
            "entity": "item",
            "op": "changed",
            "id": item["id"],
            "fields": ["published_estimate"],
            "into": None,
            "values": {
                "published_estimate": {
                    "before": FIRST,
                    "after": {"earliest": "2026-03-30", "latest": "2026-05-14"},
                }
            },
        }
    ]
    assert crawl_days(day1) == {"2026-09-29"}


def test_a_new_label_narrows_the_window_and_it_stays_narrow(
    day1: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
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
            "values": {
                "published_ago": {"before": AGE, "after": "6 个月前"},
                "published_estimate": {
                    "before": FIRST,
                    "after": {"earliest": "2026-03-30", "latest": "2026-05-05"},
                },
            },
        }
    ]
    for later in (["--crawled-at", "2026-10-21"], []):  # the same pages again: nothing new
        nothing_new(dumps, day1, capsys, *later)
    for later in (["--crawled-at", "2026-10-21"], []):  # computed again: still narrow
        assert run(dumps, day1, "--full", *later) == 0
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
    """A publish of ingest 0.2 is read from the records' JSON: the windows come from
    items.jsonl, and an undated run of a new label keeps them."""
    as_ingest_0_2(day1)
    assert run(relabelled(tmp_path / "d2", "6 个月前"), day1) == 0
    assert aged(day1)["published_estimate"] == FIRST
    assert [c["fields"] for c in changes(day1)] == [["published_ago"]]


def test_an_edited_window_that_is_no_date_is_one_line(day1: Path) -> None:
    """In a publish read from its JSON (ingest 0.2's: no checksums), a window edited into
    no date is refused, not dropped."""
    as_ingest_0_2(day1)
    items = day1 / "items.jsonl"
    text = items.read_text("utf-8")
    items.write_text(text.replace('"earliest":"2026-03-30"', '"earliest":"2026-13-30"'), "utf-8")
    before = snapshot(day1)
    proc = run_subprocess("run", str(SEEDS), "--out", str(day1))
    assert proc.returncode == 2 and without_steps(proc.stderr).count("\n") == 1, proc.stderr
    assert (
        "items.jsonl" in proc.stderr and "published_estimate that is not two dates" in proc.stderr
    )
    assert snapshot(day1) == before


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
