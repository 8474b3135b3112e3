"""report.html (SPEC §6) through the real command line: every section, in rank order, escaped.

The inputs are the three seeds plus hostile files: markup in a topic list's summary and in
an original title that cleaning leaves (an unclosed ``<img … onerror``), a topic named
``{{7*7}}``, a listing and a whole file whose rejected text holds ``<script>``, and pages
that make a near-duplicate and an order decision. Every check reads the page as a browser's
parser would (BeautifulSoup) and compares it with the JSON files of the same run.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import typing
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bs4 import BeautifulSoup, Tag

from conftest import ITEM_PAGE, TOPIC_LIST, TOPIC_PAGE, Out, run_subprocess
from ingest.cli import main
from ingest.outputs.page import render_page
from ingest.records.output import Change, ChangeCounts, Item, OpCounts, Reject, Report
from ingest.records.output import Topic as TopicModel
from ingest.records.run import RunOutput
from test_topic_page import FOOTER, S1, S2, listing

WHOLE_FILE = '<script>alert("whole")</script> not a page at all\n'
IMG_TITLE = "x<img src=x onerror=alert(1)"
SECTIONS = ("totals", "files", "chart", "topics", "decisions", "changes", "rejects")


def _topic_page(slug: str, name: str, *listings: str) -> str:
    return (
        f"# {name} 主题{slug}的描述。 - 所属：[分类]() - 网站：[https://oplearnx.com/topics/"
        f"{slug}]() ## 推荐学习顺序 " + " ".join(listings) + FOOTER
    )


def hostile_inputs(folder: Path) -> Path:
    """The seeds plus hostile files (see the module's docstring)."""
    folder.mkdir(parents=True)
    for seed in (TOPIC_PAGE, ITEM_PAGE):
        shutil.copy(seed, folder / seed.name)
    lines = TOPIC_LIST.read_text(encoding="utf-8").split("\n")
    lines[2] += " " + IMG_TITLE
    lines[3] = lines[3][:20] + "<script>alert(1)</script>" + lines[3][20:]
    (folder / TOPIC_LIST.name).write_text("\n".join(lines), encoding="utf-8")
    near = S1.replace("介绍一个用于测试的资源", "介绍了一个供测试使用的资源")
    reworded = "第二篇文章讲述了另一个完全不同的话题，含有若干细节和结论，可供读者参考阅读。"
    files = {
        "notes.txt": WHOLE_FILE,
        "a.txt": _topic_page(
            "alpha",
            "阿尔法{{7*7}}",
            listing(1, "甲 <img src=x onerror=alert(2)", S1),
            listing(2, "乙", S2, "视频 · 深入"),
            "3. [截断<script>alert(3)</script>]()（博客 · 入门）：",
        ),
        "b.txt": _topic_page("beta", "贝塔", listing(1, "甲", near)),
        "l.txt": f"主题alpha的描述。\n2 条精选 · 入门 1\nFirst\n{S1}\nSecond\n{reworded}\n",
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def run_into(folder: Path, out: Path, *args: str) -> Out:
    code = main(["run", str(folder), "--out", str(out), "--quiet", *args])
    assert code == 0
    return Out(out, code)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Out:
    tmp = tmp_path_factory.mktemp("page")
    return run_into(hostile_inputs(tmp / "in"), tmp / "out")


def soup(html: bytes) -> BeautifulSoup:
    return BeautifulSoup(html.decode("utf-8"), "html.parser")


def text(tag: Tag) -> str:
    return " ".join(tag.get_text(" ").split())


def cells(row: Tag) -> dict[str, str]:
    """A table row's cells, by their column's heading."""
    table = row.find_parent("table")
    assert table is not None
    heads = [text(th) for th in table.select("thead th")]
    return dict(zip(heads, (text(td) for td in row.find_all("td")), strict=True))


def read_back(folder: Path) -> RunOutput:
    """The run's records as the folder holds them."""
    out = Out(folder, 0)
    return RunOutput(
        items=[msgspec.convert(d, Item) for d in out.items],
        topics=[msgspec.convert(d, TopicModel) for d in out.topics],
        rejects=[msgspec.convert(d, Reject) for d in out.rejects],
        report=msgspec.convert(out.report, Report),
        changes=[msgspec.convert(d, Change) for d in out.lines("changes.jsonl")],
    )


# --------------------------------------------------------------------------- safety


def test_nothing_on_the_page_can_run_or_load(hostile: Out) -> None:
    raw = hostile.bytes_of("report.html")
    page = soup(raw)
    active = ["script", "img", "iframe", "object", "embed", "link", "base", "form", "frame"]
    assert page.find_all(active) == []
    assert b"<script" not in raw.lower() and b"<img" not in raw.lower()
    for tag in page.find_all(True):
        assert not [a for a in tag.attrs if a.startswith("on") or a in ("src", "srcset")], tag
        href = str(tag.get("href", "#"))
        assert href.startswith(("#", "https://", "http://")), href
    # The policy lets nothing load and pins the one style element by its hash.
    csp = str(page.find("meta", attrs={"http-equiv": "Content-Security-Policy"})["content"])
    [style] = page.find_all("style")
    digest = base64.b64encode(hashlib.sha256(style.string.encode()).digest()).decode()
    assert csp.startswith("default-src 'none'; ") and f"style-src 'sha256-{digest}'" in csp


def test_hostile_texts_show_as_text(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    excerpts = [pre.get_text() for pre in page.select("#rejects pre.excerpt")]
    assert excerpts == [r["excerpt"] for r in hostile.rejects]
    assert any("<script>alert(3)</script>" in e for e in excerpts)  # a listing's excerpt
    assert WHOLE_FILE.replace("\n", "\\n") in excerpts  # a whole file's excerpt
    rows = [cells(r) for r in page.select("#topics tbody tr")]
    assert any(r["Original title"].endswith(IMG_TITLE) for r in rows)
    assert "甲 <img src=x onerror=alert(2)" in [r["Chinese title"] for r in rows]
    assert page.select_one("#topic-alpha .name").get_text() == "阿尔法{{7*7}}"


def _literal(annotation: Any) -> bool:
    if typing.get_origin(annotation) is typing.Literal:
        return True
    return any(_literal(a) for a in typing.get_args(annotation))


PAYLOAD = "\"'><x-evil onmouseover=alert(1)>&amp;</x-evil>"


def poisoned(value: Any) -> Any:
    """``value`` with the payload after every free string (ids and keys too; Literal
    vocabularies kept, since the page branches on them), validation bypassed."""
    if isinstance(value, msgspec.Struct):  # built, not converted: nothing is checked
        return type(value)(
            **{
                f.name: getattr(value, f.name)
                if _literal(f.type)
                else poisoned(getattr(value, f.name))
                for f in msgspec.structs.fields(value)
            }
        )
    if isinstance(value, list):
        return [poisoned(v) for v in value]
    if isinstance(value, dict):
        return {poisoned(k): poisoned(v) for k, v in value.items()}
    return value + PAYLOAD if isinstance(value, str) else value


def test_every_text_of_every_record_is_escaped(hostile: Out) -> None:
    """Cleaning removes most markup before the page sees it; here every string of every
    record (ids, file names, reasons, levels' keys...) carries markup that breaks out of
    text and attributes, and none of it becomes markup."""
    run = read_back(hostile.folder)
    bad = RunOutput(
        items=poisoned(run.items),
        topics=poisoned(run.topics),
        rejects=poisoned(run.rejects),
        report=poisoned(run.report),
        changes=poisoned(run.changes),
    )
    raw = render_page(bad)
    page = soup(raw)
    assert b"<x-evil" not in raw and page.find_all("x-evil") == []
    assert not [t for t in page.find_all(True) if "onmouseover" in t.attrs]
    shown = page.get_text().count(PAYLOAD)
    assert shown > 2 * len(run.items)  # titles, ids, sources... all shown, as text
    anchored = [t["id"] for t in page.select("#topics tr[id]")]
    assert anchored and all(str(a).endswith(PAYLOAD) for a in anchored)  # whole attributes


# --------------------------------------------------------------------------- sections


def test_every_section_is_there(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    assert [s["id"] for s in page.select("main > section")] == list(SECTIONS)
    assert [a["href"] for a in page.select("nav a")] == [f"#{s}" for s in SECTIONS]


def test_totals_are_the_reports(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    shown = {text(d.dt): int(text(d.dd)) for d in page.select("dl.totals > div")}
    assert shown == {k.replace("_", " "): v for k, v in hostile.report["totals"].items()}


def test_files_with_status_and_warnings(hostile: Out) -> None:
    """Every file once: those not read whole or read with warnings first, then the rest."""
    page = soup(hostile.bytes_of("report.html"))
    section = page.select_one("#files")
    assert section is not None
    rows = [cells(r) for r in section.select("tbody tr")]
    files = hostile.report["files"]
    troubled = [f for f in files if f["status"] != "ok" or f["warnings"]]
    clean = [f for f in files if f not in troubled]
    assert len(troubled) == 3 and len(clean) == 4
    assert [r["File"] for r in rows] == [f["file"] for f in troubled + clean]
    assert [r["Status"] for r in rows] == [f["status"] for f in troubled + clean]
    warnings = [r["Warnings"].split(" ")[0] for r in rows]
    assert warnings == [str(len(f["warnings"])) for f in troubled + clean]
    assert {"ok", "partial", "rejected"} <= {r["Status"] for r in rows}
    [folded] = section.select("details#clean-files")
    assert folded.has_attr("open")  # only 4: no need to fold


def test_topics_list_their_items_in_rank_order(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    items = {i["id"]: i for i in hostile.items}
    for topic in hostile.topics:
        rows = [cells(r) for r in page.select(f"#topic-{topic['slug']} tbody tr")]
        assert [r["Id"] for r in rows] == topic["items"]
        for r in rows:
            item = items[r["Id"]]
            [member] = [t for t in item["topics"] if t["slug"] == topic["slug"]]
            assert r["#"] == str(member["rank"])
            assert r["Chinese title"] == (item["title_zh"] or "—")
            assert r["Original title"] == (item["title_original"] or "—")
            assert r["Kind"] == (item["kind"] or "—")
            assert r["Level"] == (member["level"] or member["level_label"] or "—")
    seed = [cells(r) for r in page.select("#topic-model-serving-compute tbody tr")]
    assert [r["#"] for r in seed] == [str(n) for n in range(1, 45)]


def test_items_on_no_topic_are_listed_too(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    listed = {i for t in hostile.topics for i in t["items"]}
    unlisted = [i["id"] for i in hostile.items if i["id"] not in listed]
    assert len(unlisted) == 3  # the item page's related reading the topic list did not name
    assert [cells(r)["Id"] for r in page.select("#unlisted tbody tr")] == unlisted
    anchors = [str(t["id"]) for t in page.select("tr[id]")]
    assert sorted(anchors) == sorted(f"item-{i['id']}" for i in hostile.items)  # once each


def test_decisions_show_both_texts(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    articles = page.select("#decision-list article.decision")
    decisions = hostile.report["decisions"]
    assert sorted(d["kind"] for d in decisions) == ["near-duplicate", "order"]
    assert len(articles) == len(decisions)
    for art, d in zip(articles, decisions, strict=True):
        sides = art.select(".side")
        for side, want in zip(sides, (d["a"], d["b"]), strict=True):
            assert text(side.select_one(".side-title")) == want["title"]
            assert want["summary_zh"] in text(side) and want["source"] in text(side)
        assert d["item"] in text(art.h3) and d["kind"] in text(art.h3)
    summary = text(page.select_one("#decision-list > summary"))
    assert summary == "2 decisions: near-duplicate 1, order 1"
    conflicts = page.select("#conflict-list tbody tr")
    assert len(conflicts) == len(hostile.report["conflicts"]) > 0
    for row, c in zip(conflicts, hostile.report["conflicts"], strict=True):
        got = cells(row)
        assert (got["Field"], got["Chosen"]) == (c["field"], c["chosen"])
        assert all(v["value"] in got["Values seen"] for v in c["values"])


def test_long_lists_start_folded(hostile: Out) -> None:
    """A large crawl: thousands of clean files, decisions and conflicts start folded, so
    the page opens on the files and rejects that need a look."""
    run = read_back(hostile.folder)
    report = run.report
    many = {
        "files": report.files * 20,
        "decisions": report.decisions * 30,
        "conflicts": report.conflicts * 20,
    }
    run.report = msgspec.structs.replace(report, **many)
    page = soup(render_page(run))
    for block in ("clean-files", "decision-list", "conflict-list"):
        [folded] = page.select(f"details#{block}")
        assert not folded.has_attr("open"), block
    assert text(page.select_one("#decision-list > summary")) == (
        "60 decisions: near-duplicate 30, order 30"
    )


def test_first_run_changes_are_counted_and_folded(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    counts = {
        text(r.th): [int(text(td)) for td in r.find_all("td")]
        for r in page.select("#changes table.counts tbody tr")
    }
    ch = hostile.report["changes"]
    assert counts == {
        e: [ch[e][op] for op in ("added", "changed", "removed", "merged")] for e in ch
    }
    groups = page.select("#changes details.changes")
    assert [text(g.summary) for g in groups] == [
        "topics added 3",
        f"items added {len(hostile.items)}",
    ]
    assert not any(g.has_attr("open") for g in groups)  # everything added: folded
    ids = [text(c) for c in groups[1].select("li > a > code")]
    assert ids == sorted(i["id"] for i in hostile.items)


def test_changes_of_every_kind_are_listed(hostile: Out) -> None:
    """changed, removed and merged entries (a run on a previous publish) each show what
    they say: the fields, the id, the survivor, linked to its row."""
    run = read_back(hostile.folder)
    keep = run.items[0].id
    changes = [
        Change(entity="item", op="changed", id=keep, fields=["summary_zh", "title_zh"], into=None),
        Change(entity="item", op="merged", id="0123456789abcdef", fields=[], into=keep),
        Change(entity="item", op="removed", id="fedcba9876543210", fields=[], into=None),
        Change(entity="topic", op="removed", id="gone-topic", fields=[], into=None),
    ]
    ops = OpCounts(added=0, changed=1, removed=1, merged=1)
    counts = ChangeCounts(items=ops, topics=OpCounts(added=0, changed=0, removed=1, merged=0))
    run.changes = changes
    run.report = msgspec.structs.replace(run.report, changes=counts)
    page = soup(render_page(run))
    groups = page.select("#changes details.changes")
    assert [text(g.summary) for g in groups] == [
        "topics removed 1",
        "items changed 1",
        "items removed 1",
        "items merged 1",
    ]
    assert all(g.has_attr("open") for g in groups)
    lines = [" ".join(g.li.get_text().split()) for g in groups]
    assert lines[0] == "gone-topic"
    assert lines[1].startswith(keep) and lines[1].endswith(" · fields: summary_zh, title_zh")
    assert lines[2] == "fedcba9876543210"
    assert lines[3].startswith("0123456789abcdef → merged into " + keep)
    assert groups[3].select("a")[-1]["href"] == f"#item-{keep}"


def test_chart_counts_each_topics_items_by_level(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    levels = {
        i["id"]: {t["slug"]: t["level"] or "none" for t in i["topics"]} for i in hostile.items
    }
    bars = page.select("#chart svg a")
    assert [b["href"] for b in bars] == [f"#topic-{t['slug']}" for t in hostile.topics]
    for bar, topic in zip(bars, hostile.topics, strict=True):
        want = Counter(levels[i][topic["slug"]] for i in topic["items"])
        rects = bar.select("rect")
        got = {str(r["class"][0]).removeprefix("lv-"): r.title.get_text() for r in rects}
        assert {lv: int(t.split(": ")[1].split()[0]) for lv, t in got.items()} == dict(want)
        assert text(bar.select_one("text.total")) == str(len(topic["items"]))


# --------------------------------------------------------------------------- stable bytes


def test_the_page_is_a_function_of_the_published_records(hostile: Out, tmp_path: Path) -> None:
    """Same inputs in another order and with --jobs 2: the same bytes; the page rendered
    from the files read back: the same bytes; the report's timing never shows."""
    again = run_into(hostile_inputs(tmp_path / "in"), tmp_path / "out", "--jobs", "2")
    assert again.bytes_of("report.html") == hostile.bytes_of("report.html")
    run = read_back(hostile.folder)
    assert render_page(run) == hostile.bytes_of("report.html")
    run.report = msgspec.structs.replace(run.report, timing={"parse": 12345.678})
    assert render_page(run) == hostile.bytes_of("report.html")


def test_validate_wants_the_page(hostile: Out, tmp_path: Path) -> None:
    folder = shutil.copytree(hostile.folder, tmp_path / "copy")
    assert run_subprocess("validate", str(folder)).returncode == 0
    (folder / "report.html").unlink()
    proc = run_subprocess("validate", str(folder))
    assert proc.returncode == 1 and "report.html: missing" in proc.stdout


def test_a_template_error_names_the_templates_own_line() -> None:
    """The page renders through its own loop (to let the run go when done), and an error
    in a template still points at the template line, as Jinja's ``generate`` does."""
    import traceback

    from jinja2 import Environment, StrictUndefined, UndefinedError

    from ingest.outputs.page import rendered

    template = Environment(undefined=StrictUndefined).from_string("a\nb\n{{ missing.x }}\n")
    with pytest.raises(UndefinedError) as caught:
        "".join(rendered(template, {}))
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert [f.lineno for f in frames if f.filename == "<template>"] == [3]
