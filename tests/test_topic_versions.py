"""One topic page in two versions in one run, through the command line.

The seed topic page (44 listings) and a newer save of it that lost listing 10 and
renumbered the rest (43): one version wins — the newest crawl day, then more listings,
then the file name that sorts last — the other's listings are rejected with a reason, its
file and the run warn, and ranks never mix.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import SEEDS, TOPIC_PAGE, Out, multiline_topic_page, run_subprocess
from ingest.cli import main

PAGE = TOPIC_PAGE.read_text(encoding="utf-8")
OLD = TOPIC_PAGE.name
NEW = "000_resaved.txt"
REASON = "TOPIC_VERSION_SUPERSEDED"


def without_listing_10(page: str) -> str:
    m = re.search(r" 10\. \[.*?(?= 11\. \[)", page)
    assert m is not None
    cut = page[: m.start()] + page[m.end() :]
    return re.sub(r" ([0-9]+)\. \[", lambda n: f" {int(n[1]) - (int(n[1]) > 10)}. [", cut)


def dumps(folder: Path, extra: dict[str, str]) -> Path:
    folder.mkdir()
    for page in SEEDS.iterdir():
        (folder / page.name).write_bytes(page.read_bytes())
    for name, text in extra.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def run(folder: Path, out: Path, *args: str) -> Out:
    return Out(out, main(["run", str(folder), "--out", str(out), "--quiet", *args]))


def ranks(out: Out) -> Counter[int]:
    return Counter(t["rank"] for i in out.items for t in i["topics"] if t["rank"] is not None)


def file_report(out: Out, name: str) -> dict[str, Any]:
    [f] = [f for f in out.report["files"] if f["file"] == name]
    return f


def assert_accounted(out: Out) -> None:
    t = out.report["totals"]
    assert t["listings"] == t["listings_merged"] + t["listings_rejected"]
    assert t["listings_merged"] == sum(len(i["sources"]) for i in out.items)
    assert t["listings_rejected"] == len(out.rejects) == t["rejects"]
    assert sum(f["listings"] for f in out.report["files"]) == t["listings"]


def test_two_versions_in_one_run_never_mix_ranks(tmp_path: Path) -> None:
    out = run(dumps(tmp_path / "d", {NEW: without_listing_10(PAGE)}), tmp_path / "out")
    assert out.code == 0
    assert ranks(out) == Counter(range(1, 45))  # the old save's 44, each once
    [topic] = out.topics
    assert [s["file"] for s in topic["sources"] if s["format"] == "topic-page"] == [OLD]
    assert all(s["file"] != NEW for i in out.items for s in i["sources"])
    rejects = out.rejects
    assert len(rejects) == 43 and {(r["file"], r["reason"]) for r in rejects} == {(NEW, REASON)}
    assert all(OLD in r["message"] and "44 listings against 43" in r["message"] for r in rejects)
    assert [r["locator"] for r in rejects] == [f"listing {n}" for n in range(1, 44)]
    new = file_report(out, NEW)
    assert new["listings"] == new["rejected_listings"] == 43
    [warning] = new["warnings"]
    assert warning.startswith(f"file: {REASON}:") and OLD in warning
    [run_warning] = [w for w in out.report["warnings"] if "TOPIC_VERSIONS" in w]
    assert OLD in run_warning and NEW in run_warning
    assert file_report(out, OLD)["warnings"] == [] and file_report(out, OLD)["status"] == "ok"
    assert_accounted(out)
    assert run_subprocess("validate", str(out.folder)).returncode == 0
    html = (out.folder / "report.html").read_text("utf-8")
    assert "TOPIC_VERSIONS" in html and REASON in html


def test_the_version_first_crawled_later_wins(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(SEEDS, out, "--crawled-at", "2026-10-01").code == 0
    day2 = run(
        dumps(tmp_path / "d", {NEW: without_listing_10(PAGE)}), out, "--crawled-at", "2026-10-02"
    )
    assert day2.code == 0
    assert ranks(day2) == Counter(range(1, 44))  # the new save's 43
    assert {r["file"] for r in day2.rejects} == {OLD} and len(day2.rejects) == 44
    [warning] = file_report(day2, OLD)["warnings"]
    assert NEW in warning and "crawled 2026-10-02, the newest" in warning
    assert_accounted(day2)


def swapped(page: str, a: int, b: int) -> str:
    """The page with the resources at ranks ``a`` and ``b`` swapped (44 listings still)."""
    parts = re.split(r"(?= [0-9]+\. \[)", page)
    at = {int(m[1]): n for n, p in enumerate(parts) if (m := re.match(r" ([0-9]+)\. \[", p))}
    one, two = parts[at[a]], parts[at[b]]
    parts[at[a]] = one.replace(f" {a}. [", " {b}. [", 1).replace("{b}", str(b))
    parts[at[b]] = two.replace(f" {b}. [", " {a}. [", 1).replace("{a}", str(a))
    parts[at[a]], parts[at[b]] = parts[at[b]], parts[at[a]]
    return "".join(parts)


@pytest.mark.parametrize("swap", [False, True])
def test_the_same_day_and_count_falls_to_the_file_name(tmp_path: Path, swap: bool) -> None:
    a, z = swapped(PAGE, 3, 4), swapped(PAGE, 5, 6)  # 44 listings each, two ranks moved
    if swap:  # whichever bytes the names hold
        a, z = z, a
    out = run(dumps(tmp_path / "d", {"000_a.txt": a, "000_z.txt": z}), tmp_path / "out")
    assert {r["file"] for r in out.rejects} == {OLD, "000_a.txt"}
    [run_warning] = [w for w in out.report["warnings"] if "TOPIC_VERSIONS" in w]
    assert "3 versions" in run_warning and "000_z.txt used, not" in run_warning
    assert all("the file name that sorts last" in r["message"] for r in out.rejects)
    assert all(
        "000_z.txt" in r["message"] and "holds another resource" in r["message"]
        for r in out.rejects
    )
    assert ranks(out) == Counter(range(1, 45))
    assert_accounted(out)


def test_pages_that_differ_only_in_other_fields_are_one_version(tmp_path: Path) -> None:
    """A level relabelled is no contradiction (the same rank, the same resource): the pages
    are one version, every listing merged into its item."""
    other = PAGE.replace("（博客 · 入门）", "（博客 · 进阶）", 1)
    out = run(dumps(tmp_path / "d", {"000_z.txt": other}), tmp_path / "out")
    assert out.rejects == [] and not any("TOPIC_VERSION" in w for w in out.report["warnings"])
    assert ranks(out) == Counter(range(1, 45))
    assert sum(len(i["sources"]) for i in out.items) == 44 + 44 + 19 + 7
    assert_accounted(out)


def test_copies_of_one_version_are_all_used(tmp_path: Path) -> None:
    folder = dumps(tmp_path / "d", {"000_lines.txt": multiline_topic_page(PAGE)})
    (folder / "000_utf16.txt").write_bytes(PAGE.encode("utf-16"))
    out = run(folder, tmp_path / "out")
    assert out.rejects == [] and not any("TOPIC_VERSION" in w for w in out.report["warnings"])
    [topic] = out.topics
    assert len([s for s in topic["sources"] if s["format"] == "topic-page"]) == 3
    assert ranks(out) == Counter(range(1, 45))


def test_the_outcome_does_not_depend_on_jobs_or_file_order(tmp_path: Path) -> None:
    folder = dumps(
        tmp_path / "d", {NEW: without_listing_10(PAGE), "000_0.txt": without_listing_10(PAGE)}
    )
    one = run(folder, tmp_path / "o1")
    two = run(folder, tmp_path / "o2", "--jobs", "2")
    for name in ("items.jsonl", "topics.jsonl", "rejects.jsonl", "changes.jsonl"):
        assert one.bytes_of(name) == two.bytes_of(name)
    report = json.loads(one.bytes_of("report.json"))
    assert report["totals"]["rejects"] == 86  # both 43-listing copies of the losing version
