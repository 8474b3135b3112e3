"""Tests for ``bench/gen_corpus.py``, the synthetic benchmark corpus generator.

The corpus is re-parsed here independently of the generator (its own decoding, regexes and
grouping of listings into resources), and every count in ``expected.json`` is checked
against what the files really contain; a saved-HTML page is read as the text dump it stands
for (``twins/``). Some topics are saved in parts (a paginated topic page: each part with the
header and the footer, the ranks continuing; its topic list in parts too): their parts are
joined here in file-name order. Then ``ingest run`` on the corpus must give exactly one item
per resource, each topic whole, and reject nothing: every page of the corpus is valid.
"""

from __future__ import annotations

import difflib
import json
import random
import re
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import load_script, run_subprocess

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "bench" / "gen_corpus.py"
SIZE = 1_000_000

KINDS = "博客|帖子|项目|教程|课程|书籍"
LEVELS = ("入门", "进阶", "深入")
FOOTER_NOTICE = "中文标题与摘要由模型根据原文生成，以原文为准。"
FOOTER_SOURCE = "来源：LearnMap · 学径（https://oplearnx.com）"

HAN = re.compile(r"[\u4e00-\u9fff]")
LISTING_START = re.compile(r"(?:^|[ \n])\d+\. \[")
LISTING = re.compile(
    rf"(?:^|[ \n])(\d+)\. \[(.*?)\]\(\)（({KINDS}) · (入门|进阶|深入)）：(.*?)"
    r"(?=[ \n]+\d+\. \[|[ \n]+---[ \n])",
    re.S,
)
HEADER = re.compile(
    r"^# (\S+)[ \n]+(\S+)[ \n]+- 所属：\[(\S+)\]\(\)[ \n]+"
    r"- 网站：\[https://oplearnx\.com/topics/([a-z]+(?:-[a-z]+)+)\]\(\)[ \n]+## 推荐学习顺序[ \n]"
)
STATS = re.compile(
    r"^(\d+) 条精选 · 入门 (\d+) · 按推荐学习顺序：越基础、直观越靠前，越系统、深入越靠后$"
)
ITEM_HEAD = re.compile(r"^(.+)··(\d+ 个月前|\d+ 天前)$")
UNESCAPE = re.compile(r"\\([_+\[\]()#])")
ESCAPABLE = set("_+[]()#")


def run_gen(out: Path, size: str = "1MB", seed: int = 0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GEN), "--out", str(out), "--size", size, "--seed", str(seed)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def load_module() -> ModuleType:
    return load_script(GEN, "gen_corpus")


def decode(data: bytes) -> tuple[str, str]:
    """(text, encoding) by BOM, then strict UTF-8, else GB18030."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8"), "utf-8-sig"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16"), "utf-16"
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("gb18030"), "gb18030"


def unescape(text: str) -> str:
    return UNESCAPE.sub(r"\1", text)


def ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


@dataclass
class Listing:
    summary: str
    file: str
    kind: str  # topic_page / topic_list / item_main / related
    title_zh: str | None = None
    title_en: str | None = None  # the original title shown (a Chinese original's: Chinese)
    chinese_title: bool = False


@dataclass
class Parsed:
    encodings: Counter[str] = field(default_factory=Counter)
    files: Counter[str] = field(default_factory=Counter)
    bytes: int = 0
    listings: list[Listing] = field(default_factory=list)
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)  # by description
    # (description, listing indexes, declared count, declared beginners): a whole list
    topic_lists: list[tuple[str, list[int], int, int]] = field(default_factory=list)
    # each page of a topic page (a topic list) by description, in file-name order
    page_parts: defaultdict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    list_parts: defaultdict[str, list[tuple[str, list[int], int, int]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    item_pages: list[tuple[int, list[int]]] = field(default_factory=list)  # main idx, related
    crlf_files: int = 0
    flat_topic_pages: int = 0
    escaped_titles: int = 0
    chinese_lines: Counter[str] = field(default_factory=Counter)
    html_pages: Counter[str] = field(default_factory=Counter)


def parse_topic_page(name: str, text: str, p: Parsed) -> None:
    flat = "\n" not in text.rstrip("\n")
    p.flat_topic_pages += flat
    header = HEADER.match(text)
    assert header, f"{name}: bad header {text[:200]!r}"
    topic_name, desc, category, slug = header.groups()
    assert desc.endswith("。") and " " not in desc and HAN.search(topic_name), name
    assert text.rstrip().endswith(FOOTER_SOURCE) and FOOTER_NOTICE in text, name
    found = LISTING.findall(text)
    assert len(found) == len(LISTING_START.findall(text)), f"{name}: unparsed listing"
    first = int(found[0][0])  # a later part of a paginated topic goes on from the last one
    assert [int(f[0]) for f in found] == list(range(first, first + len(found))), name
    levels = [LEVELS.index(f[3]) for f in found]
    idx = []
    for _num, title, _kind, _level, summary in found:
        for text_field in (title, summary):
            assert not ESCAPABLE & set(UNESCAPE.sub("", text_field)), f"{name}: unescaped"
        p.escaped_titles += "\\" in title
        assert 140 <= len(unescape(summary)) <= 400, summary
        idx.append(len(p.listings))
        p.listings.append(Listing(unescape(summary), name, "topic_page", title_zh=unescape(title)))
    head = {"name": topic_name, "slug": slug, "category": category}
    p.page_parts[desc].append(
        {"file": name, "head": head, "first": first, "listings": idx, "levels": levels}
    )


PART = re.compile(r"^(t[pl]_\d{6})(?:_p(\d))?\.txt$")


def join_parts(p: Parsed) -> None:
    """Each topic from its pages (one, or 2-4 parts of one page size in file-name order,
    each with the same header, ranks going on from one to the next), and each topic list
    from its parts (each with the same description and stats lines)."""
    for desc, parts in p.page_parts.items():
        files = [part["file"] for part in parts]
        _one_page_or_parts(files)
        sizes = [len(part["listings"]) for part in parts]
        assert all(n == sizes[0] for n in sizes[:-1]) and sizes[-1] <= sizes[0], files
        assert [part["first"] for part in parts] == [1 + sum(sizes[:i]) for i in range(len(parts))]
        assert all(part["head"] == parts[0]["head"] for part in parts), files
        levels = [lev for part in parts for lev in part["levels"]]
        assert 20 <= len(levels) <= 60, files
        assert levels == sorted(levels), f"{files}: levels must not decrease"
        p.topics[desc] = {
            **parts[0]["head"],
            "files": files,
            "listings": [i for part in parts for i in part["listings"]],
            "beginners": levels.count(0),
        }
    for desc, lists in p.list_parts.items():
        files = [name for name, _, _, _ in lists]
        _one_page_or_parts(files)
        assert len({(n, k) for _, _, n, k in lists}) == 1, files
        idx = [i for _, some, _, _ in lists for i in some]
        p.topic_lists.append((desc, idx, lists[0][2], lists[0][3]))


def _one_page_or_parts(files: list[str]) -> None:
    """``tp_NNNNNN.txt`` alone, or ``tp_NNNNNN_p1.txt`` .. ``_pK.txt`` (K from 2 to 4)."""
    found = [PART.match(f) for f in files]
    assert all(found) and len({m[1] for m in found if m}) == 1, files
    parts = [m[2] for m in found if m]
    assert parts == [None] or parts == [str(k) for k in range(1, len(files) + 1)], files
    assert len(files) <= 4, files


def parse_topic_list(name: str, lines: list[str], p: Parsed) -> None:
    stats = STATS.match(lines[1])
    assert stats, f"{name}: bad stats line {lines[1]!r}"
    assert (len(lines) - 2) % 2 == 0 and len(lines) > 2, name
    idx = []
    for title, summary in zip(lines[2::2], lines[3::2], strict=True):
        assert title and "。" not in title, f"{name}: title line {title!r}"
        assert summary.endswith("。"), f"{name}: summary line {summary!r}"
        idx.append(len(p.listings))
        chinese = HAN.search(title) is not None  # a Chinese original's title line
        p.listings.append(
            Listing(summary, name, "topic_list", title_en=title, chinese_title=chinese)
        )
    p.list_parts[lines[0]].append((name, idx, int(stats.group(1)), int(stats.group(2))))


def item_entries(name: str, lines: list[str], p: Parsed) -> list[Listing]:
    """Entries of title lines and a summary line (the one line that ends a sentence): a
    Chinese title, then its original title, that title again (a Chinese original), or none."""
    entries, titles = [], []
    for line in lines:
        if not line.endswith("。"):
            titles.append(line)
            continue
        assert 1 <= len(titles) <= 2, f"{name}: {titles!r}"
        zh, *original = titles
        assert HAN.search(zh) or "/" in zh, f"{name}: {zh!r}"
        if original and original[0] == zh and HAN.search(zh):
            p.chinese_lines["repeated"] += 1
        elif not original:
            p.chinese_lines["missing"] += 1
        else:
            assert not HAN.search(original[0]), f"{name}: {original!r}"
        entries.append(Listing(line, name, "related", zh, original[0] if original else zh))
        titles = []
    assert not titles, f"{name}: {titles!r} without a summary"
    return entries


def parse_item_page(name: str, lines: list[str], p: Parsed) -> None:
    assert ITEM_HEAD.match(lines[0]), f"{name}: {lines[0]!r}"
    kv = lines.index("- 分级")
    assert lines[kv : kv + 5 : 2] == ["- 分级", "- 收录时间", "推荐阅读"], name
    assert re.fullmatch(r"- \d{4}-\d{2}-\d{2}", lines[kv + 3]) and lines[kv + 1][:2] == "- "
    [main_entry] = item_entries(name, lines[1:kv], p)
    main = len(p.listings)
    p.listings.append(replace(main_entry, kind="item_main"))
    entries = item_entries(name, lines[kv + 5 :], p)
    assert 3 <= len(entries) <= 6, name
    related = list(range(len(p.listings), len(p.listings) + len(entries)))
    p.listings += entries
    p.item_pages.append((main, related))


def parse_corpus(folder: Path) -> Parsed:
    p = Parsed()
    for path in sorted((folder / "dumps").iterdir()):
        data = path.read_bytes()
        p.bytes += len(data)
        text, encoding = decode(data)
        p.encodings[encoding] += 1
        if path.suffix == ".html":  # read as the text dump it stands for
            assert text.startswith("<!DOCTYPE html>") and "</html>" in text, path.name
            saved = text
            path = folder / "twins" / f"{path.stem}.txt"
            text = path.read_text(encoding="utf-8").removesuffix("\n")
            p.html_pages[path.name[:2]] += 1
            first = LISTING.search(text) if text.startswith("# ") else None
            if first is not None and int(first[1]) > 1:  # a later part of a topic page
                assert saved.count(f'<ol start="{first[1]}">') == 1, path.name
        else:
            assert path.suffix == ".txt", path.name
        p.crlf_files += "\r\n" in text
        text = text.replace("\r\n", "\n")
        lines = text.rstrip("\n").split("\n")
        # the page kind comes from the content; the name must agree
        if text.startswith("# "):
            kind = "topic_page"
            parse_topic_page(path.name, text, p)
        elif len(lines) > 1 and STATS.match(lines[1]):
            kind = "topic_list"
            parse_topic_list(path.name, lines, p)
        else:
            kind = "item_page"
            parse_item_page(path.name, lines, p)
        assert path.name.startswith({"topic_page": "tp_", "topic_list": "tl_"}.get(kind, "ip_"))
        p.files[kind] += 1
    join_parts(p)
    return p


def group_resources(summaries: list[str]) -> list[int]:
    """Union distinct summary strings that are near-duplicates (ratio >= 0.85).

    Candidates share a clause that few strings have (a variant rewords one clause and keeps
    the others), so this stays far from quadratic.
    """
    parent = list(range(len(summaries)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_clause: defaultdict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(summaries):
        for clause in set(re.split(r"[，。；：]", s)):
            if len(clause) >= 8:
                by_clause[clause].append(i)
    for members in by_clause.values():
        if len(members) > 20:  # stock phrase shared by many resources
            continue
        for j in members[1:]:
            a, b = find(members[0]), find(j)
            if a != b and ratio(summaries[members[0]], summaries[j]) >= 0.85:
                parent[b] = a
    return [find(i) for i in range(len(summaries))]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "c"
    result = run_gen(out)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def parsed(corpus: Path) -> Parsed:
    return parse_corpus(corpus)


@pytest.fixture(scope="module")
def expected(corpus: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((corpus / "expected.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def groups(parsed: Parsed) -> tuple[list[str], list[int], list[int]]:
    """(distinct summary strings, group of each string, string index of each listing)."""
    uniq: dict[str, int] = {}
    listing_str = [uniq.setdefault(li.summary, len(uniq)) for li in parsed.listings]
    strings = list(uniq)
    return strings, group_resources(strings), listing_str


def test_deterministic_and_regenerates_own_folder(corpus: Path, tmp_path: Path) -> None:
    other = tmp_path / "again"
    assert run_gen(other).returncode == 0
    assert run_gen(other).returncode == 0  # a generator folder is replaced, not refused
    names = sorted(p.relative_to(corpus) for p in corpus.rglob("*"))
    assert names == sorted(p.relative_to(other) for p in other.rglob("*"))
    for name in names:
        if (corpus / name).is_file():
            assert (corpus / name).read_bytes() == (other / name).read_bytes(), name
    different = tmp_path / "seed1"
    assert run_gen(different, seed=1).returncode == 0
    first = Path("dumps", "tp_000000.html")  # the first page of each kind is saved HTML
    assert (different / first).read_bytes() != (corpus / first).read_bytes()


def test_refuses_to_delete_foreign_folder(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "thesis.txt").write_text("precious", encoding="utf-8")
    result = run_gen(user)
    assert result.returncode != 0
    assert "refusing" in result.stderr
    assert (user / "thesis.txt").read_text(encoding="utf-8") == "precious"
    assert not list(user.rglob("tp_*"))
    a_file = tmp_path / "file"
    a_file.write_text("x", encoding="utf-8")
    assert run_gen(a_file).returncode != 0
    assert a_file.read_text(encoding="utf-8") == "x"


def test_size_files_and_encodings(corpus: Path, parsed: Parsed, expected: dict[str, Any]) -> None:
    assert (corpus / ".gen_corpus").is_file()
    assert expected["seed"] == 0 and expected["size_target"] == SIZE
    assert expected["bytes"] == parsed.bytes
    assert 0.9 * SIZE <= parsed.bytes <= 1.1 * SIZE
    assert expected["files"] == dict(parsed.files)
    assert all(parsed.files[k] > 0 for k in ("topic_page", "topic_list", "item_page"))
    assert expected["encodings"] == {k: parsed.encodings[k] for k in expected["encodings"]}
    assert all(parsed.encodings[k] > 0 for k in ("utf-8", "utf-8-sig", "utf-16", "gb18030"))
    assert parsed.encodings["utf-8"] / parsed.files.total() > 0.7
    assert parsed.crlf_files > 0
    assert 0 < parsed.flat_topic_pages < parsed.files["topic_page"]
    assert parsed.escaped_titles > 0


def test_listing_and_topic_counts(parsed: Parsed, expected: dict[str, Any]) -> None:
    by_kind = Counter(li.kind for li in parsed.listings)
    assert expected["listings"] == len(parsed.listings)
    assert expected["listings_by_kind"] == {
        "topic_page_listings": by_kind["topic_page"],
        "topic_list_entries": by_kind["topic_list"],
        "item_page_main": by_kind["item_main"],
        "related_entries": by_kind["related"],
    }
    assert expected["topics"] == len(parsed.topics)
    assert parsed.files["topic_page"] == sum(len(t["files"]) for t in parsed.topics.values())
    assert expected["topic_lists"] == len(parsed.topic_lists)
    topics = parsed.topics.values()
    assert len({t["slug"] for t in topics}) == len(topics)
    assert len({t["name"] for t in topics}) == len(topics)
    for desc, _idx, n, k in parsed.topic_lists:
        topic = parsed.topics[desc]  # every topic list belongs to a generated topic page
        assert (n, k) == (len(topic["listings"]), topic["beginners"])
    share = len(parsed.topic_lists) / len(parsed.topics)
    assert 0.2 <= share <= 0.6


def test_some_topics_are_saved_in_parts(parsed: Parsed, expected: dict[str, Any]) -> None:
    """About a fifth of the topics (never the first) are saved as a paginated topic page
    (2-4 files: checked in :func:`join_parts`), the topic list of such a topic in parts
    too, at most one part a page."""
    parted = {d: t for d, t in parsed.topics.items() if len(t["files"]) > 1}
    lists = {d: len(parsed.list_parts[d]) for d, _, _, _ in parsed.topic_lists}
    assert expected["parted"] == {
        "topics": len(parted),
        "topic_page_files": sum(len(t["files"]) for t in parted.values()),
        "topic_lists": sum(n > 1 for n in lists.values()),
        "topic_list_files": sum(n for n in lists.values() if n > 1),
    }
    assert 0.1 <= len(parted) / len(parsed.topics) <= 0.35
    assert {len(t["files"]) for t in parted.values()} >= {2, 3}
    assert "tp_000000.txt" in parsed.topics[next(iter(parsed.topics))]["files"]
    assert any(n > 1 for n in lists.values())
    for desc, n in lists.items():  # a list in parts is a parted topic's, never in more parts
        assert n == 1 or 1 < n <= len(parsed.topics[desc]["files"]), desc
        if desc in parted and n == 1:
            assert len(parsed.list_parts[desc][0][1]) == 1, desc  # one entry: one part


def test_resources_variants_and_cross_listing(
    parsed: Parsed,
    expected: dict[str, Any],
    groups: tuple[list[str], list[int], list[int]],
) -> None:
    _strings, group_of, listing_str = groups
    listing_group = [group_of[s] for s in listing_str]
    assert expected["items"] == len(set(group_of))

    # near-duplicates: every non-canonical string of a group is a variant
    per_group: defaultdict[int, Counter[str]] = defaultdict(Counter)
    for li, g in zip(parsed.listings, listing_group, strict=True):
        per_group[g][li.summary] += 1
    main_summary = {
        listing_group[m]: parsed.listings[m].summary for m, _related in parsed.item_pages
    }
    variants = 0
    for g, counts in per_group.items():
        canonical = main_summary.get(g) or counts.most_common(1)[0][0]
        variants += counts.total() - counts[canonical]
        for s in counts:
            assert ratio(canonical, s) >= 0.9
    assert expected["near_duplicate_variants"] == variants
    total = len(parsed.listings) - len(parsed.item_pages)
    assert 0.02 <= variants / total <= 0.08

    # distinct resources are never near-duplicates (canonical strings, 200 random pairs)
    canon = [counts.most_common(1)[0][0] for counts in per_group.values()]
    rng = random.Random(0)
    for _ in range(200):
        a, b = rng.sample(canon, 2)
        assert ratio(a, b) < 0.5, (a, b)

    # titles: one English title per resource, unique; some Chinese titles are shared
    en_of: defaultdict[int, set[str]] = defaultdict(set)
    zh_of: defaultdict[int, set[str]] = defaultdict(set)
    for li, g in zip(parsed.listings, listing_group, strict=True):
        if li.title_en:
            en_of[g].add(li.title_en)
        if li.title_zh:
            zh_of[g].add(li.title_zh)
    assert all(len(v) == 1 for v in en_of.values())
    assert all(len(v) == 1 for v in zh_of.values())
    en_titles = [next(iter(v)) for v in en_of.values()]
    assert len(en_titles) == len(set(en_titles))
    zh_groups = Counter(next(iter(v)) for v in zh_of.values())
    assert 1 <= sum(1 for n in zh_groups.values() if n > 1) <= expected["same_title_zh_pairs"]

    # cross-listing: about 8 topic pages per resource listed on topic pages
    tp_groups = [g for li, g in zip(parsed.listings, listing_group, strict=True)
                 if li.kind == "topic_page"]  # fmt: skip
    mean = len(tp_groups) / len(set(tp_groups))
    assert 6.0 <= mean <= 10.0
    assert expected["items_on_topic_pages"] == len(set(tp_groups))

    # topic lists show a subset of their topic page, in its order
    for desc, idx, _n, _k in parsed.topic_lists:
        page = [listing_group[i] for i in parsed.topics[desc]["listings"]]
        shown = iter(page)
        assert all(any(g == h for h in shown) for g in (listing_group[i] for i in idx))

    # item pages: main is on a topic page, related has no self and no repeats, and some
    # related resources appear nowhere but in related reading
    on_pages = set(tp_groups) | {listing_group[i] for tl in parsed.topic_lists for i in tl[1]}
    only_related = set()
    for main, related in parsed.item_pages:
        rel = [listing_group[i] for i in related]
        assert listing_group[main] in on_pages
        assert listing_group[main] not in rel and len(rel) == len(set(rel))
        only_related |= {g for g in rel if g not in on_pages}
    assert only_related
    mains = [listing_group[m] for m, _r in parsed.item_pages]
    assert len(mains) == len(set(mains))


def test_chinese_originals_and_saved_pages(parsed: Parsed, expected: dict[str, Any]) -> None:
    assert expected["chinese_original_lines"] == dict(parsed.chinese_lines)
    assert all(n > 0 for n in parsed.chinese_lines.values())
    on_lists = sum(li.chinese_title for li in parsed.listings)
    assert on_lists > 0 and expected["chinese_originals_shown"] > 0
    by_prefix = {"topic_page": "tp", "topic_list": "tl", "item_page": "ip"}
    assert {k: parsed.html_pages[v] for k, v in by_prefix.items()} == expected["html_pages"]
    assert all(n > 0 for n in expected["html_pages"].values())
    assert expected["rejects"] == 0


def test_ingest_gives_one_item_per_resource_and_rejects_nothing(
    corpus: Path,
    tmp_path: Path,
    parsed: Parsed,
    expected: dict[str, Any],
    groups: tuple[list[str], list[int], list[int]],
) -> None:
    """``ingest run`` on the corpus (its Chinese originals, its saved pages, its topics
    saved in parts) gives exactly one item per resource (each item's summary is of another
    resource), no reject, every topic whole (the parts of a paginated topic joined: as
    many items as its pages list, the count its topic list declares), and every Chinese
    original whose title a page shows with the title as its original."""
    out = tmp_path / "out"
    done = run_subprocess("run", str(corpus / "dumps"), "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text("utf-8"))
    totals = report["totals"]
    for key in ("listings", "items", "topics", "rejects"):
        assert totals[key] == expected[key], key
    assert (out / "rejects.jsonl").read_bytes() == b""
    assert not any("TOPIC_VERSION" in w or "COUNT_MISMATCH" in w for w in report["warnings"])
    assert any(len(t["files"]) > 1 for t in parsed.topics.values())
    topics = [json.loads(x) for x in (out / "topics.jsonl").read_text("utf-8").splitlines()]
    found = {t["slug"]: len(t["items"]) for t in topics}
    assert found == {t["slug"]: len(t["listings"]) for t in parsed.topics.values()}
    declared = {t["slug"]: (t["declared"] or {}).get("count") for t in topics}
    for desc, _idx, n, _k in parsed.topic_lists:
        assert declared[parsed.topics[desc]["slug"]] == n == found[parsed.topics[desc]["slug"]]
    assert all(c["ok"] for c in report["consistency"])
    for t in parsed.topics.values():  # a topic saved in parts: every part one of its sources
        [topic] = [x for x in topics if x["slug"] == t["slug"]]
        pages = [s["file"] for s in topic["sources"] if s["format"] == "topic-page"]
        assert [Path(f).stem for f in pages] == [Path(f).stem for f in t["files"]]
    strings, group_of, _ = groups
    index = {s: i for i, s in enumerate(strings)}
    items = [json.loads(x) for x in (out / "items.jsonl").read_text("utf-8").splitlines()]
    resources = [group_of[index[i["summary_zh"]]] for i in items]
    assert len(set(resources)) == len(items) == len(set(group_of))
    summaries = set(strings)
    assert not any(i["title_zh"] in summaries or i["title_original"] in summaries for i in items)
    chinese = [i for i in items if i["original_language"] == "zh"]
    assert all(i["title_original"] == i["title_zh"] for i in chinese)
    assert len(chinese) == expected["chinese_originals_shown"]
    saved = [f for f in report["files"] if f["file"].endswith(".html")]
    assert len(saved) == sum(expected["html_pages"].values())
    assert all(f["format"] and f["parser"] == "selectolax" for f in saved)


def test_helpers() -> None:
    gen = load_module()
    assert gen.parse_size("1MB") == 1_000_000
    assert gen.parse_size("25mb") == 25_000_000
    assert gen.parse_size("1GB") == 10**9
    assert gen.parse_size("2MiB") == 2 * 2**20
    assert gen.parse_size("4096") == 4096
    for bad in ("", "MB", "1XB", "-1MB", "0"):
        with pytest.raises(ValueError):
            gen.parse_size(bad)
    assert gen.md_escape("C++ [P] torch_xla f(x) #7") == r"C\+\+ \[P\] torch\_xla f\(x\) \#7"
    summary = "文章介绍 KvikIO 如何把数据读入显存，并说明兼容路径。适合关注文件 I/O 的工程师阅读。"
    rng = random.Random(0)
    for _ in range(20):
        variant = gen.make_variant(summary, rng)
        assert variant != summary and ratio(summary, variant) >= 0.9
