"""Identity rules that each decide records: every test here fails when its rule is deleted.

The cannot-link rule on different original titles (components.settle), the margin that makes
an order alignment clear (align._best), the NOT_CHINESE warning (merge._check_chinese),
topic identity by canonical URL (normalize.urls.topic_url), identical pages under two names
(merge._duplicates), and canonical, never-truncated link URLs (normalize.urls.check_url).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import SEEDS, TOPIC_PAGE, seed_text, write_files
from ingest.resolve.topics import derived_slug
from test_align_dedup import _page
from test_topic_page import FOOTER, S1, S2, S3, listing

S1B = S1.replace("介绍一个用于测试的资源", "介绍了一个供测试使用的资源")  # a near-duplicate of S1
DESC = "主题alpha的描述。"


def _list(*entries: tuple[str, str]) -> str:
    body = "".join(f"{t}\n{s}\n" for t, s in entries)
    return f"{DESC}\n{len(entries)} 条精选 · 入门 {len(entries)}\n{body}"


@pytest.mark.parametrize(("second", "items"), [("A Different Title", 2), ("First Title", 1)])
def test_different_original_titles_on_two_pages_block_a_near_duplicate_merge(
    ingest: Any, tmp_path: Path, second: str, items: int
) -> None:
    """Two pages (so the same-page rule is not what decides): near-duplicate summaries merge
    when the original titles agree, and stay apart when they differ."""
    files = {"a.txt": _list(("First Title", S1)), "b.txt": _list((second, S1B))}
    out = ingest(write_files(tmp_path / "in", files))
    assert len(out.items) == items
    assert out.report["totals"]["near_duplicate_merges"] == 2 - items


# X and Y differ in one clause; Z rewords both about equally (ratio 61.9 to each, over the
# order threshold of 60 but with no margin between them).
X = "第二篇文章讲解模型推理服务的批处理调度策略，比较静态批处理与连续批处理在吞吐和延迟上的差异。"
Y = "第二篇文章讲解模型推理服务的批处理调度策略，比较静态批处理与连续批处理在显存和成本上的差异。"
Z = "这篇文章讲的是推理服务的批处理调度，对比静态与连续两种批处理方式在性能上的不同之处。"


def test_order_alignment_needs_a_clear_margin(ingest: Any, tmp_path: Path) -> None:
    pairs = zip("甲乙丙丁", (S1, X, Y, S3), strict=True)
    page = _page("alpha", *(listing(n + 1, t, s) for n, (t, s) in enumerate(pairs)))
    lst = _list(("First", S1), ("Second", Z), ("Fourth", S3))
    out = ingest(write_files(tmp_path / "in", {"a.txt": page, "l.txt": lst}))
    assert out.report["totals"]["order_alignments"] == 0
    assert len(out.items) == 5  # Z stands alone: it is not pinned on X or Y by a guess
    assert out.by_title("乙")["title_original"] is None
    assert out.by_title("丙")["title_original"] is None


def test_order_alignment_with_a_clear_margin_joins(ingest: Any, tmp_path: Path) -> None:
    """The control: with one candidate in the window the same entry is aligned."""
    page = _page("alpha", listing(1, "甲", S1), listing(2, "乙", X), listing(3, "丁", S3))
    lst = _list(("First", S1), ("Second", Z), ("Fourth", S3))
    out = ingest(write_files(tmp_path / "in", {"a.txt": page, "l.txt": lst}))
    assert out.report["totals"]["order_alignments"] == 1
    assert out.by_title("乙")["title_original"] == "Second"


def _warnings(out: Any) -> list[str]:
    return [w for w in out.report["warnings"] if "NOT_CHINESE" in w]


@pytest.mark.parametrize(
    ("title", "warned"),
    [
        ("An English Title Here", True),
        ("Three Word Title", True),
        ("PyTorch Lightning", False),  # a name of two words is a fine Chinese title
        ("中文 English Words Here", False),
    ],
)
def test_not_chinese_title_is_warned(ingest: Any, tmp_path: Path, title: str, warned: bool) -> None:
    out = ingest(write_files(tmp_path / "in", {"a.txt": _page("alpha", listing(1, title, S1))}))
    [item] = out.items
    assert item["title_zh"] == title
    got = _warnings(out)
    assert bool(got) == warned, got
    if warned:
        assert got == [f"item {item['id']}: NOT_CHINESE: title_zh {title!r} is not Chinese"]


def test_not_chinese_summary_is_warned(ingest: Any, tmp_path: Path) -> None:
    summary = "An English summary of a resource, long enough to stand as one."
    out = ingest(write_files(tmp_path / "in", {"a.txt": _page("alpha", listing(1, "甲", summary))}))
    [item] = out.items
    assert _warnings(out) == [f"item {item['id']}: NOT_CHINESE: summary_zh has no Chinese text"]


TOPIC = "https://oplearnx.com/topics/model-serving-compute"
VARIANTS = [
    TOPIC + "/",
    "http://oplearnx.com/topics/model-serving-compute",
    "https://www.oplearnx.com/topics/model-serving-compute",
    "HTTPS://OpLearnX.COM/topics/model-serving-compute",
    "https://oplearnx.com:443/topics/model-serving-compute",
    TOPIC + "?utm_source=feed&utm_medium=rss",
    TOPIC + "#listing-3",
    "http://WWW.oplearnx.com:80/topics/model-serving-compute/?fbclid=x#top",
]


@pytest.mark.parametrize("variant", VARIANTS)
def test_url_variants_of_one_topic_page_are_one_topic(
    ingest: Any, tmp_path: Path, variant: str
) -> None:
    text = seed_text(TOPIC_PAGE).replace(TOPIC, variant, 1)
    assert variant in text
    both = ingest(write_files(tmp_path / "in", {"a.txt": seed_text(TOPIC_PAGE), "b.txt": text}))
    [topic] = both.topics
    assert (topic["slug"], topic["url"], len(topic["items"])) == (
        "model-serving-compute",
        TOPIC,
        44,
    )
    assert [s["file"] for s in topic["sources"]] == ["a.txt", "b.txt"]
    assert not [w for w in both.report["warnings"] if "TOPIC_SLUG_COLLISION" in w]
    alone = ingest(write_files(tmp_path / "alone", {"b.txt": text}))
    assert (alone.topics[0]["slug"], alone.topics[0]["url"]) == ("model-serving-compute", TOPIC)


def test_identical_pages_under_two_names_are_one_page(ingest: Any, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for p in sorted(SEEDS.iterdir()):
        shutil.copy(p, folder / p.name)
        shutil.copy(p, folder / f"copy-{p.name}")
    alone = ingest(SEEDS)
    out = ingest(folder)
    assert out.report["totals"]["warnings"] == 0 and out.report["warnings"] == []
    assert [i["id"] for i in out.items] == [i["id"] for i in alone.items]
    for item, single in zip(out.items, alone.items, strict=True):
        files = sorted(s["file"] for s in item["sources"])
        one = [s["file"] for s in single["sources"]]
        assert files == sorted(one + [f"copy-{f}" for f in one])
    [topic] = out.topics
    assert len(topic["sources"]) == 4


def test_identical_copies_keep_a_real_duplicate_warning(ingest: Any, tmp_path: Path) -> None:
    """A resource listed twice on one page is still warned about, once per page, not per copy."""
    text = _page("alpha", listing(1, "甲", S1), listing(2, "乙", S2), listing(3, "甲", S1))
    out = ingest(write_files(tmp_path / "in", {"a.txt": text, "b.txt": text}))
    dup = [w for w in out.report["warnings"] if "DUPLICATE_ITEM" in w]
    assert dup == ["a.txt: listing 3: DUPLICATE_ITEM: same resource as listing 1; merged"]


LINKS = [
    ("http://a.com/ b", None),  # damage after a blank: dropped, never cut to http://a.com/
    ('http://a.com/t "a title"', "http://a.com/t"),
    ("http://a.com/t 'a title'", "http://a.com/t"),
    ("http://a.com/t (a title)", "http://a.com/t"),
    ('http://a.com/t "a title" tail', None),
    ("HTTP://A.COM/X", "http://a.com/X"),
    ("https://Ok.Example:443/p?Q=1#F", "https://ok.example/p?Q=1#F"),
    ("http://ok.example:8080/", "http://ok.example:8080/"),
    ("https://xn--/", None),
    ("https://xn--zz-xyz.example/", None),
    ("http://a.com:0/", None),
    ("http://:80/", None),
    ("https://a..com/", None),
    ("https://bücher.example/", "https://xn--bcher-kva.example/"),
    ("https://[::1]:8443/x", "https://[::1]:8443/x"),
]


def test_link_urls_are_canonical_or_dropped_with_a_warning(ingest: Any, tmp_path: Path) -> None:
    summaries = [S1[:-1] + f"第{n}项。" for n in range(len(LINKS))]
    listings = [listing(n + 1, f"标题{n}", summaries[n], url=u) for n, (u, _) in enumerate(LINKS)]
    out = ingest(write_files(tmp_path / "in", {"a.txt": _page("alpha", *listings)}))
    got = {i["title_zh"]: i["url"] for i in out.items}
    assert got == {f"标题{n}": want for n, (_, want) in enumerate(LINKS)}
    warnings = out.report["files"][0]["warnings"]
    dropped = [n for n, (_, want) in enumerate(LINKS) if want is None]
    for n in dropped:
        assert any(w.startswith(f"listing {n + 1}: URL_UNSAFE") for w in warnings), n
    assert len([w for w in warnings if "URL_" in w]) == len(dropped)


def test_the_seeds_in_process_match_the_golden_output(ingest: Any) -> None:
    """The golden comparison of test_seeds, in this process (mutation testing sees it)."""
    from test_seeds import GOLDEN, _normalized

    got = _normalized(ingest(SEEDS))
    for name, data in got.items():
        assert data == (GOLDEN / name).read_bytes(), name
    alone = ingest(TOPIC_PAGE)
    assert alone.report["warnings"] == [] and alone.report["totals"]["warnings"] == 0


def test_orphan_reject_says_why_and_shows_the_summary(ingest: Any, tmp_path: Path) -> None:
    long_summary = S1[:-1] + "，" + "这是一段很长的补充说明文字" * 20 + "。"
    lst = _list(("T", S2)) + long_summary + "\n"
    out = ingest(write_files(tmp_path / "in", {"l.txt": lst}))
    [rej] = out.rejects
    assert rej["message"] == (
        "summary line without its title line, matching no listing on any other page"
    )
    assert rej["excerpt"] == long_summary[:200] and len(long_summary) > 200


def _header_page(header: str, *listings: str) -> str:
    return f"# {header} - 所属：[分类]() ## 推荐学习顺序 " + " ".join(listings) + FOOTER


def test_topics_without_a_url(ingest: Any, tmp_path: Path) -> None:
    """No URL: the slug is derived from name and description; two pages of one header are
    one topic (two versions of it: one is used), and another header is another topic."""
    one = _header_page("主题甲 主题甲的描述。", listing(1, "甲", S1))
    two = _header_page("主题甲 主题甲的描述。", listing(1, "乙", S2))
    other = _header_page("主题乙 主题乙的描述。", listing(1, "丙", S3))
    out = ingest(write_files(tmp_path / "in", {"a.txt": one, "b.txt": two, "c.txt": other}))
    slugs = {t["slug"]: [s["file"] for s in t["sources"]] for t in out.topics}
    assert slugs == {
        derived_slug("主题甲 主题甲的描述。"): ["b.txt"],
        derived_slug("主题乙 主题乙的描述。"): ["c.txt"],
    }
    assert [(r["file"], r["reason"]) for r in out.rejects] == [
        ("a.txt", "TOPIC_VERSION_SUPERSEDED")
    ]
    assert not [w for w in out.report["warnings"] if "COLLISION" in w]


def test_slug_collision_suffix_and_warning_are_stable(ingest: Any, tmp_path: Path) -> None:
    a = _page("alpha", listing(1, "甲", S1))
    b = a.replace("https://oplearnx.com/topics/alpha", "https://mirror.example/x/alpha")
    out = ingest(write_files(tmp_path / "in", {"a.txt": a, "b.txt": b.replace(S1, S2)}))
    assert sorted(t["slug"] for t in out.topics) == ["alpha", "alpha-71a742"]
    assert out.report["warnings"] == [
        "a.txt: header: TOPIC_SLUG_COLLISION: 'alpha' also names "
        "'https://mirror.example/x/alpha'; this topic is alpha-71a742"
    ]


def test_a_list_whose_description_names_two_topics(ingest: Any, tmp_path: Path) -> None:
    a = _page("alpha", listing(1, "甲", S1))
    b = _page("beta", listing(1, "乙", S2)).replace("主题beta的描述。", DESC)
    lst = _list(("First", S1))
    out = ingest(write_files(tmp_path / "in", {"a.txt": a, "b.txt": b, "l.txt": lst}))
    assert out.report["warnings"] == [
        "l.txt: line 1: TOPIC_AMBIGUOUS: description matches topics alpha, beta; joined to alpha"
    ]
    assert {t["slug"]: len(t["sources"]) for t in out.topics} == {"alpha": 2, "beta": 1}


def test_lists_without_their_topic_page(ingest: Any, tmp_path: Path) -> None:
    files = {"l1.txt": _list(("First", S1)), "l2.txt": _list(("Second", S2))}
    out = ingest(write_files(tmp_path / "in", files))
    slug = derived_slug(DESC)
    assert out.report["warnings"] == [
        f"l1.txt: line 1: TOPIC_PAGE_MISSING: no topic page with this description in the "
        f"batch; slug {slug} derived from it"
    ]
    [topic] = out.topics
    assert topic["slug"] == slug and len(topic["items"]) == 2


def test_a_flattened_header_is_split_where_the_list_says(ingest: Any, tmp_path: Path) -> None:
    """'# 名字 描述 另一段' (two spaces): the topic list's description picks the second."""
    page = _header_page(
        "名字 描述 另一段。 - 网站：[https://oplearnx.com/topics/t]()", listing(1, "甲", S1)
    )
    lst = "另一段。\n1 条精选 · 入门 1\nFirst\n" + S1 + "\n"
    out = ingest(write_files(tmp_path / "in", {"p.txt": page, "l.txt": lst}))
    [topic] = out.topics
    assert (topic["name"], topic["description"]) == ("名字 描述", "另一段。")
    assert out.report["warnings"] == []


def test_every_page_of_a_topic_gets_its_header_settled(ingest: Any, tmp_path: Path) -> None:
    """Two pages of one topic, a plain header and a flattened one in either order: the
    flattened one is still warned about."""
    url = " - 网站：[https://oplearnx.com/topics/t]()"
    plain = _header_page("名字" + url, listing(1, "甲", S1)).replace("# 名字", "# 名字\n描述。", 1)
    flat = _header_page("名字 描述 另一段。" + url, listing(1, "甲", S1))  # one version
    orders = set()
    for pad in range(16):  # both orders of the two pages' sha256
        files = {"a.txt": plain + "\n" * pad, "b.txt": flat}
        orders.add(
            hashlib.sha256(files["a.txt"].encode()).hexdigest()
            < hashlib.sha256(flat.encode()).hexdigest()
        )
        out = ingest(write_files(tmp_path / f"in{pad}", files))
        assert [w.split(": ")[2] for w in out.report["warnings"]] == ["HEADER_AMBIGUOUS"], pad
    assert orders == {True, False}


def test_a_near_duplicate_merge_is_recorded_as_a_decision(ingest: Any, tmp_path: Path) -> None:
    a, b = _page("alpha", listing(1, "甲", S1)), _page("beta", listing(1, "甲", S1B))
    out = ingest(write_files(tmp_path / "in", {"a.txt": a, "b.txt": b}))
    [item] = out.items
    [d] = out.report["decisions"]
    assert (d["item"], d["kind"], d["a"]["source"], d["b"]["source"]) == (
        item["id"],
        "near-duplicate",
        "a.txt: listing 1" if S1 < S1B else "b.txt: listing 1",
        "b.txt: listing 1" if S1 < S1B else "a.txt: listing 1",
    )


def test_two_versions_of_one_topic_never_mix_ranks(ingest: Any, tmp_path: Path) -> None:
    """Two versions of one topic page (URL variants) number the resources differently: one
    version is used (of as many listings, the file name that sorts last), never both."""
    a = _page("alpha", listing(1, "甲", S1), listing(2, "乙", S2))
    b = _page("alpha", listing(1, "乙", S2), listing(2, "甲", S1)).replace("alpha]", "alpha/]")
    out = ingest(write_files(tmp_path / "in", {"a.txt": a, "b.txt": b}))
    assert out.by_title("甲")["topics"] == [
        {"slug": "alpha", "rank": 2, "level": "beginner", "level_label": "入门"}
    ]
    assert out.by_title("乙")["topics"][0]["rank"] == 1
    assert out.report["conflicts"] == []
    assert {(r["file"], r["locator"]) for r in out.rejects} == {
        ("a.txt", "listing 1"),
        ("a.txt", "listing 2"),
    }


@pytest.mark.parametrize("orphan_first", [True, False])
def test_an_orphan_that_cannot_join_leaves_its_component_whole(
    ingest: Any, tmp_path: Path, orphan_first: bool
) -> None:
    """A title-less summary that nearly repeats another entry of its own list is rejected;
    the entry it resembles is still an item (whichever of the two sorts first)."""
    titled, orphan = (S1, S1B) if orphan_first else (S1B, S1)
    lst = _list(("Title", titled)) + orphan + "\n"
    out = ingest(write_files(tmp_path / "in", {"l.txt": lst}))
    assert [i["summary_zh"] for i in out.items] == [titled]
    assert [r["reason"] for r in out.rejects] == ["PAIRING_ERROR"]


def test_a_long_not_chinese_title_is_cut_in_the_warning(ingest: Any, tmp_path: Path) -> None:
    title = "A Very Long English Title " * 4
    out = ingest(write_files(tmp_path / "in", {"a.txt": _page("alpha", listing(1, title, S1))}))
    [item] = out.items
    assert _warnings(out) == [
        f"item {item['id']}: NOT_CHINESE: title_zh {item['title_zh'][:60]!r} is not Chinese"
    ]


def test_a_header_split_needs_the_exact_description(ingest: Any, tmp_path: Path) -> None:
    """A list whose description has the same key but other punctuation does not split the
    header; a one-character name is a name."""
    url = " - 网站：[https://oplearnx.com/topics/t]()"
    page = _header_page("名字 描述 另一段。" + url, listing(1, "甲", S1))
    lst = "另一段.\n1 条精选 · 入门 1\nFirst\n" + S1 + "\n"
    out = ingest(write_files(tmp_path / "a", {"p.txt": page, "l.txt": lst}))
    assert (out.topics[0]["name"], out.topics[0]["description"]) == ("名字", "描述 另一段。")
    assert [w.split(": ")[2] for w in out.report["warnings"]] == ["HEADER_AMBIGUOUS"]
    page = _header_page("甲 描述 另一段。" + url, listing(1, "甲", S1))
    lst = "描述 另一段。\n1 条精选 · 入门 1\nFirst\n" + S1 + "\n"
    out = ingest(write_files(tmp_path / "b", {"p.txt": page, "l.txt": lst}))
    assert (out.topics[0]["name"], out.report["warnings"]) == ("甲", [])


def test_each_page_of_a_topic_is_settled_on_its_own(ingest: Any, tmp_path: Path) -> None:
    """One flattened header the list can split, one it cannot: only the second is warned
    about, in either order of the two pages."""
    url = " - 网站：[https://oplearnx.com/topics/t]()"
    good = _header_page("名字 描述 另一段。" + url, listing(1, "甲", S1))
    bad = _header_page("名字 其他 文字。" + url, listing(1, "甲", S1))
    lst = "另一段。\n1 条精选 · 入门 1\nFirst\n" + S1 + "\n"
    orders = set()
    for pad in range(8):
        files = {"a.txt": good + "\n" * pad, "b.txt": bad, "l.txt": lst}
        orders.add(_sha(files["a.txt"]) < _sha(bad))
        out = ingest(write_files(tmp_path / f"in{pad}", files))
        assert [w.split(": ")[:3] for w in out.report["warnings"]] == [
            ["b.txt", "header", "HEADER_AMBIGUOUS"]
        ]
    assert orders == {True, False}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    ("header", "slug"),
    [("名字", "topic-6957a3739c72"), ("", "topic-ddd9c40767f9")],
)
def test_a_header_without_url_or_description_gets_a_pinned_slug(
    ingest: Any, tmp_path: Path, header: str, slug: str
) -> None:
    out = ingest(
        write_files(tmp_path / "in", {"p.txt": _header_page(header, listing(1, "甲", S1))})
    )
    assert [t["slug"] for t in out.topics] == [slug]
