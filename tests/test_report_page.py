"""report.html and the pages beside it (SPEC §6–7) through the real command line: the page
opens with what changed, then the problems, the topics, the files and the decisions; every
long list is on its pages beside it; every text is escaped, nothing runs or loads.

The inputs are the three seeds plus hostile files: markup in a topic list's summary and in
an original title that cleaning leaves (an unclosed ``<img … onerror``), a topic named
``{{7*7}}``, a listing and a whole file whose rejected text holds ``<script>``, and pages
that make a near-duplicate and an order decision, and a topic whose stats line declares
more items than its page holds. A second publish of reworded seeds shows
the changes. Every check reads the pages as a browser's parser would (BeautifulSoup) and
compares them with the JSON files of the same run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import typing
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bs4 import BeautifulSoup, Tag

from conftest import ITEM_PAGE, SEEDS, TOPIC_LIST, TOPIC_PAGE, Out, run_subprocess
from ingest.cli import main
from ingest.contract import Change, Item, Reject, Report
from ingest.contract import Topic as TopicModel
from ingest.records import RunOutput
from ingest.report import render_pages
from test_topic_page import FOOTER, S1, S2, listing

WHOLE_FILE = '<script>alert("whole")</script> not a page at all\n'
IMG_TITLE = "x<img src=x onerror=alert(1)"
SECTIONS = ("changes", "problems", "topics", "files", "decisions", "details")
GLANCE = ("resources", "topics", "new today", "changed", "removed", "could not be read")


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
        "l.txt": f"主题alpha的描述。\n3 条精选 · 入门 1\nFirst\n{S1}\nSecond\n{reworded}\n",
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


#: The seeds' topic page with one summary reworded and one title renamed, as a re-crawl does.
OLD_SUMMARY = "这是 Latent Space 在 AIE NYC 新设的 Compute Trading 分论坛期间录制的对谈，"
NEW_SUMMARY = "这是 Latent Space 在 AIE NYC 新设的算力交易分论坛期间录制的对谈，"
OLD_TITLE, NEW_TITLE = "[StartLuxLabs/StartLux-Decision]", "[StartLuxLabs/StartLux-决策]"


@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory) -> Out:
    """A second publish on the seeds' first: one item's summary reworded, another's title."""
    tmp = tmp_path_factory.mktemp("second")
    out = run_into(SEEDS, tmp / "out")
    crawl = shutil.copytree(SEEDS, tmp / "crawl")
    page = crawl / TOPIC_PAGE.name
    text = page.read_text(encoding="utf-8")
    assert text.count(OLD_SUMMARY) == 1 and text.count(OLD_TITLE) == 1
    page.write_text(
        text.replace(OLD_SUMMARY, NEW_SUMMARY).replace(OLD_TITLE, NEW_TITLE), encoding="utf-8"
    )
    run_into(crawl, out.folder)
    return out


def soup(html: bytes) -> BeautifulSoup:
    return BeautifulSoup(html.decode("utf-8"), "html.parser")


def pages(folder: Path) -> dict[str, bytes]:
    """Every page of a publish: report.html and report/…, by name in the folder."""
    found = {"report.html": (folder / "report.html").read_bytes()}
    for p in sorted((folder / "report").iterdir()):
        found[f"report/{p.name}"] = p.read_bytes()
    return found


def page_of(out: Out, key: str) -> BeautifulSoup:
    """The one page of a list (``report/KEY-1.html``: the runs here are small)."""
    assert not (out.folder / "report" / f"{key}-2.html").exists()
    return soup(out.bytes_of(f"report/{key}-1.html"))


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


def test_nothing_on_any_page_can_run_or_load(hostile: Out) -> None:
    found = pages(hostile.folder)
    assert {"report.html", "report/topics-1.html", "report/rejects-1.html"} <= set(found)
    for name, raw in found.items():
        page = soup(raw)
        active = ["script", "img", "iframe", "object", "embed", "link", "base", "form", "frame"]
        assert page.find_all(active) == [], name
        assert b"<script" not in raw.lower() and b"<img" not in raw.lower()
        for tag in page.find_all(True):
            assert not [a for a in tag.attrs if a.startswith("on") or a in ("src", "srcset")]
            href = str(tag.get("href", "#"))
            if href.startswith(("#", "https://", "http://")):
                continue
            # a link to another page of the report: relative, and to one that is there
            target = (hostile.folder / name).parent / href.split("#")[0]
            assert ":" not in href.split("#")[0] and target.is_file(), (name, href)
        # The policy lets nothing load and pins the one style element by its hash.
        csp = str(page.find("meta", attrs={"http-equiv": "Content-Security-Policy"})["content"])
        [style] = page.find_all("style")
        digest = base64.b64encode(hashlib.sha256(style.string.encode()).digest()).decode()
        assert csp.startswith("default-src 'none'; ") and f"style-src 'sha256-{digest}'" in csp


def test_hostile_texts_show_as_text(hostile: Out) -> None:
    excerpts = [p.get_text() for p in page_of(hostile, "rejects").select("pre.excerpt")]
    assert excerpts == [r["excerpt"] for r in hostile.rejects]
    assert any("<script>alert(3)</script>" in e for e in excerpts)  # a listing's excerpt
    assert WHOLE_FILE.replace("\n", "\\n") in excerpts  # a whole file's excerpt
    topics = page_of(hostile, "topics")
    rows = [cells(r) for r in topics.select("tbody tr")]
    assert any(r["Original title"].endswith(IMG_TITLE) for r in rows)
    assert "甲 <img src=x onerror=alert(2)" in [r["Chinese title"] for r in rows]
    assert topics.select_one("#topic-alpha .name").get_text() == "阿尔法{{7*7}}"


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


def test_every_text_of_every_record_is_escaped(second: Out) -> None:
    """Cleaning removes most markup before the pages see it; here every string of every
    record (ids, file names, reasons, levels' keys, the changed fields' old values...)
    carries markup that breaks out of text and attributes, and none of it becomes markup."""
    run = read_back(second.folder)
    values = {(c.entity, c.id): dict.fromkeys(c.fields, "旧的值") for c in run.changes if c.fields}
    bad = RunOutput(
        items=poisoned(run.items),
        topics=poisoned(run.topics),
        rejects=poisoned(run.rejects),
        report=poisoned(run.report),
        changes=poisoned(run.changes),
        previous_values=poisoned(values),
    )
    shown = 0
    for raw in render_pages(bad).values():
        page = soup(raw)
        assert b"<x-evil" not in raw and page.find_all("x-evil") == []
        assert not [t for t in page.find_all(True) if "onmouseover" in t.attrs]
        shown += page.get_text().count(PAYLOAD)
    assert shown > 2 * len(run.items)  # titles, ids, sources... all shown, as text


# --------------------------------------------------------------------------- what leads


def test_the_page_opens_with_what_changed(second: Out) -> None:
    """A second publish: the changes come first, each changed field with its value before
    and now, the characters that differ marked."""
    page = soup(second.bytes_of("report.html"))
    assert [s["id"] for s in page.select("main > section")] == list(SECTIONS)
    assert [a["href"] for a in page.select("nav a")] == [f"#{s}" for s in SECTIONS]
    changed = {c["id"]: c["fields"] for c in second.lines("changes.jsonl")}
    assert sorted(changed.values()) == [["summary_zh"], ["title_zh"]]
    entries = page.select("#change-list article.change")
    assert len(entries) == 2
    by_field = {}
    for e in entries:
        [field] = e.select(".field")
        by_field[text(field.select_one(".field-name"))] = field
        assert text(e.h3).startswith("item changed")
    summary, title = by_field["summary_zh"], by_field["title_zh"]
    assert [d.get_text() for d in summary.select(".old del")] == [" Compute Trading "]
    assert [i.get_text() for i in summary.select(".new ins")] == ["算力交易"]
    item = next(i for i in second.items if i["id"] in changed and "算力交易" in i["summary_zh"])
    assert summary.select_one(".new span[lang]").get_text() == item["summary_zh"]
    assert summary.select_one(".old span[lang]").get_text().startswith(OLD_SUMMARY)
    assert [d.get_text() for d in title.select(".old del")] == ["Decision"]
    assert [i.get_text() for i in title.select(".new ins")] == ["决策"]


def test_totals_in_the_curators_words(second: Out, hostile: Out) -> None:
    for out in (second, hostile):
        page = soup(out.bytes_of("report.html"))
        glance = {text(d.dt): int(text(d.dd)) for d in page.select("dl.glance > div")}
        r, ch = out.report, out.report["changes"]["items"]
        want = [r["totals"]["items"], r["totals"]["topics"], ch["added"], ch["changed"]]
        want += [ch["removed"] + ch["merged"], r["totals"]["rejects"]]
        assert [glance[k] for k in GLANCE] == want
        # the pipeline's own counts only folded away at the end
        [folded] = page.select("#details details")
        assert not folded.has_attr("open")
        pipeline = {text(d.dt): int(text(d.dd)) for d in folded.select("dl.totals > div")}
        named = {"warnings": "warnings of the files and the run"}
        assert pipeline == {named.get(k, k.replace("_", " ")): v for k, v in r["totals"].items()}
        assert "aligned titles" not in text(page.select_one("header"))


def test_warnings_counted_alike_in_the_summary_the_report_and_the_page(tmp_path: Path) -> None:
    """The files' warnings and the run's: apart in the summary, both in report.json's
    totals, the run's under "Run warnings" on the page and both in its totals."""
    done = run_subprocess("run", str(hostile_inputs(tmp_path / "in")), "--out", str(tmp_path / "o"))
    assert done.returncode == 0, done.stderr
    out = Out(tmp_path / "o", 0)
    r = out.report
    of_files, of_run = sum(len(f["warnings"]) for f in r["files"]), len(r["warnings"])
    assert of_files > 0 and of_run > 0
    said = re.search(r"warnings of the files / of the run\W+(\d+) / (\d+)", done.stdout)
    assert said is not None, done.stdout
    assert (int(said[1]), int(said[2])) == (of_files, of_run)
    assert r["totals"]["warnings"] == of_files + of_run
    page = soup(out.bytes_of("report.html"))
    assert text(page.select_one("#warnings .count")) == str(of_run)
    totals = {text(d.dt): int(text(d.dd)) for d in page.select("dl.totals > div")}
    assert totals["warnings of the files and the run"] == of_files + of_run


def test_problems_by_reason_with_the_files_most_affected(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    rows = [cells(r) for r in page.select("#problems table.reasons tbody tr")]
    by_reason = Counter(r["reason"] for r in hostile.rejects)
    assert [(r["Reason"], int(r["Rejects"])) for r in rows] == sorted(
        by_reason.items(), key=lambda kv: (-kv[1], kv[0])
    )
    for row in rows:
        files = Counter(r["file"] for r in hostile.rejects if r["reason"] == row["Reason"])
        top = sorted(files.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        assert row["Files most affected"] == ", ".join(f"{f} ({n})" for f, n in top)
    mismatched = [c["slug"] for c in hostile.report["consistency"] if not c["ok"]]
    assert mismatched == ["alpha"]  # declared 3, found 2
    shown = page.select("#problems table.index tbody tr")
    assert [cells(r)["Topic"].split()[0] for r in shown] == mismatched
    assert "differ · found 2 items" in text(shown[0])
    warnings = [li.get_text() for li in page.select("#problems ul.warnings li")]
    assert warnings == hostile.report["warnings"] and "COUNT_MISMATCH" in warnings[0]


# --------------------------------------------------------------------------- the lists


def test_topics_list_their_items_in_rank_order(hostile: Out) -> None:
    page = page_of(hostile, "topics")
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
    main = soup(hostile.bytes_of("report.html"))
    index = [cells(r) for r in main.select("#topics table.index tbody tr")]
    assert [r["Topic"].split()[0] for r in index[-3:]] == [t["slug"] for t in hostile.topics]


def test_every_item_has_one_anchor_and_links_land_on_it(hostile: Out) -> None:
    page = page_of(hostile, "topics")
    listed = {i for t in hostile.topics for i in t["items"]}
    unlisted = [i["id"] for i in hostile.items if i["id"] not in listed]
    assert len(unlisted) == 3  # the item page's related reading the topic list did not name
    assert [cells(r)["Id"] for r in page.select("#unlisted tbody tr")] == unlisted
    anchors = [str(t["id"]) for t in page.select("tr[id]")]
    assert sorted(anchors) == sorted(f"item-{i['id']}" for i in hostile.items)  # once each
    main = soup(hostile.bytes_of("report.html"))
    links = [str(a["href"]) for a in main.select("#changes a[href*='#item-']")]
    assert links and all(h.startswith("report/topics-1.html#item-") for h in links)
    assert {h.split("#")[1] for h in links} <= set(anchors)


def test_files_with_status_and_warnings(hostile: Out) -> None:
    """Every file once, on its page: those not read whole or read with warnings first."""
    rows = [cells(r) for r in page_of(hostile, "files").select("tbody tr")]
    files = hostile.report["files"]
    troubled = [f for f in files if f["status"] != "ok" or f["warnings"]]
    clean = [f for f in files if f not in troubled]
    assert len(troubled) == 3 and len(clean) == 4
    assert [r["File"] for r in rows] == [f["file"] for f in troubled + clean]
    assert [r["Status"] for r in rows] == [f["status"] for f in troubled + clean]
    warnings = [r["Warnings"].split(" ")[0] for r in rows]
    assert warnings == [str(len(f["warnings"])) for f in troubled + clean]
    main = soup(hostile.bytes_of("report.html"))
    assert main.select_one("#file-list").has_attr("open")  # some need a look
    shown = [cells(r)["File"] for r in main.select("#file-list tbody tr")]
    assert shown == [f["file"] for f in troubled + clean]


def _side_texts(side: Tag) -> tuple[str, str]:
    return text(side.select_one(".side-title")), side.select("p")[-1].get_text()


def test_decisions_show_both_texts_and_mark_what_differs(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    articles = page.select("#decision-list article.decision")
    decisions = hostile.report["decisions"]
    assert sorted(d["kind"] for d in decisions) == ["near-duplicate", "order"]
    assert len(articles) == len(decisions)
    for art, d in zip(articles, decisions, strict=True):
        sides = art.select(".side")
        for side, want in zip(sides, (d["a"], d["b"]), strict=True):
            assert _side_texts(side) == (want["title"], want["summary_zh"])
            assert want["source"] in text(side)
        assert d["item"] in text(art.h3) and d["kind"] in text(art.h3)
    near = next(a for a, d in zip(articles, decisions, strict=True) if d["kind"] != "order")
    a, b = near.select(".side")
    assert [x.get_text() for x in a.select("p:last-child del")] == ["一个用于测试"]
    assert [x.get_text() for x in b.select("p:last-child ins")] == ["了一个供测试使用"]
    assert [x.get_text() for x in a.select(".side-title del")] == [" <img src=x onerror=alert(2)"]
    summary = text(page.select_one("#decision-list > summary"))
    assert summary == "2 decisions: near-duplicate 1, order 1"
    conflicts = page.select("#conflict-list tbody tr")
    assert len(conflicts) == len(hostile.report["conflicts"]) > 0
    for row, c in zip(conflicts, hostile.report["conflicts"], strict=True):
        got = cells(row)
        assert (got["Field"], got["Chosen"]) == (c["field"], c["chosen"])
        assert all(v["value"] in got["Values seen"] for v in c["values"])


def test_a_first_publish_counts_its_additions_and_folds_them(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    counts = {
        text(r.th): [int(text(td)) for td in r.find_all("td")]
        for r in page.select("#changes table.counts tbody tr")
    }
    ch = hostile.report["changes"]
    ops = ("changed", "removed", "merged", "added")
    assert counts == {
        "topics": [ch["topics"][op] for op in ops],
        "resources": [ch["items"][op] for op in ops],
    }
    assert page.select("#change-list") == []
    [added] = page.select("#added-list")
    assert not added.has_attr("open")
    assert len(added.select("article.change")) == 30  # the first; all on the page beside
    every = page_of(hostile, "added").select("article.change h3 code")
    changes = hostile.lines("changes.jsonl")
    assert [c.get_text() for c in every] == [c["id"] for c in changes if c["entity"] == "topic"] + [
        c["id"] for c in changes if c["entity"] == "item"
    ]


def test_the_chart_counts_each_topics_items_by_level(hostile: Out) -> None:
    page = soup(hostile.bytes_of("report.html"))
    levels = {
        i["id"]: {t["slug"]: t["level"] or "none" for t in i["topics"]} for i in hostile.items
    }
    bars = page.select("#topics svg a")
    largest = sorted(hostile.topics, key=lambda t: (-len(t["items"]), t["slug"]))
    assert [b["href"] for b in bars] == [f"report/topics-1.html#topic-{t['slug']}" for t in largest]
    for bar, topic in zip(bars, largest, strict=True):
        want = Counter(levels[i][topic["slug"]] for i in topic["items"])
        rects = bar.select("rect")
        got = {str(r["class"][0]).removeprefix("lv-"): r.title.get_text() for r in rects}
        assert {lv: int(t.split(": ")[1].split()[0]) for lv, t in got.items()} == dict(want)
        assert text(bar.select_one("text.total")) == str(len(topic["items"]))


# --------------------------------------------------------------------------- stable bytes


def test_the_pages_are_a_function_of_the_published_records(hostile: Out, tmp_path: Path) -> None:
    """Same inputs in another order and with --jobs 2: the same bytes; the pages rendered
    from the files read back: the same bytes; the report's timing never shows."""
    again = run_into(hostile_inputs(tmp_path / "in"), tmp_path / "out", "--jobs", "2")
    assert pages(again.folder) == pages(hostile.folder)
    run = read_back(hostile.folder)
    assert render_pages(run) == pages(hostile.folder)
    run.report = msgspec.structs.replace(run.report, timing={"parse": 12345.678})
    assert render_pages(run) == pages(hostile.folder)


def test_validate_wants_the_page(
    hostile: Out, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A publish without its page is found wanting (exit 1), even one whose marker lists
    no page (so the door lets it through); a page listed and gone is damage (exit 2)."""
    folder = shutil.copytree(hostile.folder, tmp_path / "copy")
    capsys.readouterr()
    assert main(["validate", str(folder)]) == 0
    (folder / "report.html").unlink()
    capsys.readouterr()
    assert main(["validate", str(folder)]) == 2
    said = capsys.readouterr()
    assert said.out == "" and "is damaged: report.html is missing" in said.err
    marker = json.loads((folder / ".ingest").read_text(encoding="utf-8"))
    del marker["files"]["report.html"]
    (folder / ".ingest").write_text(json.dumps(marker), encoding="utf-8")
    assert main(["validate", str(folder)]) == 1
    assert capsys.readouterr().out == f"{folder / 'report.html'}: missing\n"


def test_a_template_error_names_the_templates_own_line() -> None:
    """The page renders through its own loop (to let the run go when done), and an error
    in a template still points at the template line, as Jinja's ``generate`` does."""
    import traceback

    from jinja2 import Environment, StrictUndefined, UndefinedError

    from ingest.report import rendered

    template = Environment(undefined=StrictUndefined).from_string("a\nb\n{{ missing.x }}\n")
    with pytest.raises(UndefinedError) as caught:
        "".join(rendered(template, {}))
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert [f.lineno for f in frames if f.filename == "<template>"] == [3]
