"""The report's pages stay under 3 MB at any size of run (SPEC §7): long lists are cut into
pages beside the report page, each whole list is on them, and the report page shows only
their first entries.

A generated corpus (bench/gen_corpus.py: many topics and files) goes through the real
command line; then a run far larger than its size, built from the records of the seeds:
thousands of items on one topic, rejects, changes, decisions, conflicts, warnings and
files, every text of them long and full of characters escaping makes longer. The open
time in a browser is a goal of bench/page.py, not of a test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from bs4 import BeautifulSoup

from conftest import ROOT, SEEDS
from ingest.cli import main
from ingest.contract import (
    Change,
    ChangeCounts,
    Conflict,
    ConflictValue,
    Decision,
    DecisionSide,
    FileReport,
    ItemTopic,
    OpCounts,
    Reject,
    TopicCheck,
)
from ingest.records import RunOutput
from ingest.report import render_pages
from test_report_page import pages, read_back

LIMIT = 3_000_000


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("gen")
    gen = [sys.executable, str(ROOT / "bench" / "gen_corpus.py"), "--out", str(tmp / "c")]
    subprocess.run([*gen, "--size", "3MB"], check=True, capture_output=True)
    out = tmp / "out"
    assert main(["run", str(tmp / "c" / "dumps"), "--out", str(out), "--quiet"]) == 0
    return out


def _ids(html: bytes, pattern: str) -> list[str]:
    return re.findall(pattern, html.decode("utf-8"))


def test_a_generated_corpus_has_every_record_on_the_pages(generated: Path) -> None:
    found = pages(generated)
    assert all(len(raw) < LIMIT for raw in found.values())
    run = read_back(generated)
    topics = b"".join(raw for name, raw in found.items() if name.startswith("report/topics-"))
    assert sorted(_ids(topics, r'<tr id="item-([a-z0-9-]+)"')) == [i.id for i in run.items]
    assert _ids(topics, r'<details class="topic" id="topic-([a-z0-9-]+)"') == [
        t.slug for t in run.topics
    ]
    files = b"".join(raw for name, raw in found.items() if name.startswith("report/files-"))
    assert len(_ids(files, r'<td data-label="File"')) == len(run.report.files) > 100
    main_page = BeautifulSoup(found["report.html"].decode("utf-8"), "html.parser")
    assert len(main_page.select("#topics table.index tbody tr")) == 30 < len(run.topics)
    assert len(main_page.select("#topics svg a")) == 20  # the largest topics, not every one


def _long(seed: str, n: int, chars: int) -> str:
    """A text of ``chars`` characters, CJK and characters escaping makes 4-5 times longer."""
    unit = f"{seed}{n}模型服务<&>\"'"
    return (unit * (chars // len(unit) + 1))[:chars]


def huge_run(base: RunOutput, n: int) -> RunOutput:
    """``base`` (the seeds' records) grown to ``n`` items on one topic, and as many rejects,
    changes, decisions, conflicts, warnings and files, their texts long (two of them alone
    larger than a page may be)."""
    long, huge = _long("长", 0, 5000), _long("巨", 0, 4_000_000)  # one text alone over 3 MB
    template = base.items[0]
    place = [ItemTopic(slug="big", rank=None, level=None, level_label=_long("级", 0, 300))]
    items = [
        msgspec.structs.replace(
            template,
            id=f"big{k:08d}",
            title_zh=huge if k == 0 else _long("标题", k, 900),
            title_original=_long("Title", k, 900),
            url="https://e.example/?" + "a=1&" * 100,
            topics=place,
            related=[],
        )
        for k in range(n)
    ]
    topic = msgspec.structs.replace(base.topics[0], slug="big", items=[i.id for i in items])
    side = DecisionSide(summary_zh=_long("摘要", 1, 3000), title=_long("题", 1, 900), source="x")
    other = msgspec.structs.replace(side, summary_zh=_long("摘要改", 2, 3000))
    report = msgspec.structs.replace(
        base.report,
        files=[
            FileReport(
                file=f"{long[:900]}{k}",
                origin="input",
                sha256="0",
                bytes=1,
                encoding="utf-8",
                format=None,
                parser=None,
                listings=1,
                rejected_listings=1,
                status="partial",
                warnings=[long] * 30,
            )
            for k in range(n // 4)
        ],
        consistency=[TopicCheck("big", n + 1, n, {"beginner": 5}, {}, False)],
        conflicts=[
            Conflict(i.id, "summary_zh", long, [ConflictValue(long, [long])] * 30)
            for i in items[: n // 4]
        ],
        decisions=[Decision(i.id, "near-duplicate", 90.0, long, side, other) for i in items],
        warnings=[long] * n,
        changes=ChangeCounts(OpCounts(0, n, 0, 0), OpCounts(0, 0, 0, 0)),
    )
    return RunOutput(
        items=items,
        topics=[topic],
        rejects=[
            Reject(long, long, long, long, huge if k == 0 else long, 0, 1, None) for k in range(n)
        ],
        report=report,
        changes=[
            Change(entity="item", op="changed", id=i.id, fields=["title_zh"], into=None)
            for i in items
        ],
        previous_values={("item", i.id): {"title_zh": long} for i in items},
    )


def test_every_page_of_a_huge_run_is_under_the_limit(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    n = 1500
    found = render_pages(huge_run(read_back(out), n))
    sizes = {name: len(raw) for name, raw in found.items()}
    assert max(sizes.values()) < LIMIT, max(sizes.items(), key=lambda kv: kv[1])
    assert sum(sizes.values()) > 10 * LIMIT  # what one page would have held
    assert sizes["report.html"] < LIMIT
    kinds = Counter(name.split("/")[-1].rsplit("-", 1)[0] for name in found)
    assert kinds["topics"] >= 3 and kinds["decisions"] >= 3 and kinds["rejects"] >= 3

    def on_pages(key: str, mark: str) -> int:
        return sum(v.decode().count(mark) for k, v in found.items() if f"/{key}-" in k)

    assert on_pages("topics", '<tr id="item-big') == n  # every item, once
    for key, mark in (
        ("decisions", '<article class="decision">'),
        ("rejects", '<pre class="excerpt">'),
        ("changes", '<article class="change">'),
        ("warnings", "</li>\n"),
    ):
        assert on_pages(key, mark) == n, key
        assert 0 < found["report.html"].decode().count(mark) <= 30, key
