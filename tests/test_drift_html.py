"""Format drift in saved HTML: site chrome is removed before rendering.

The rules, each on a small page; the fixtures as three savers leave them (a browser's
"save as", curl, a single-file saver) giving the text dumps' records; and mutation tests
that insert chrome elements at the start, at the end and between the sections of every
HTML fixture, through the real command line.
"""

from __future__ import annotations

import re
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from conftest import SEEDS, Out, write_files
from ingest.cli import main
from ingest.extract import markup as htmltree
from ingest.extract.html import html_to_text
from test_htmltext import _HEADER_LINK, FIXTURES, _BrokenLexbor, comparable, seed_text

KINDS = ("topic_page", "topic_list", "item_page")
SAVERS = ("saved", "curl", "singlefile")
SAVED = [f"{kind}_{saver}.html" for kind in KINDS for saver in SAVERS]


def text_of(body: str) -> str:
    return html_to_text(f"<!DOCTYPE html><html><body>{body}</body></html>").text


# --------------------------------------------------------------------------- rules

RULES = [
    pytest.param('<nav><a href="/">首页</a> · <a>关于</a></nav><p>正文</p>', "正文", id="bare-nav"),
    pytest.param(
        '<div role="navigation">首页</div><div role="search">搜索</div>'
        '<div role="banner">学径</div><p>正文</p><div role="contentinfo">© 2026</div>'
        '<div role="complementary">热门</div>',
        "正文",
        id="aria-roles",
    ),
    pytest.param(
        "<header>站点</header><aside>热门主题</aside><p>正文</p><footer>© 2026 学径</footer>",
        "正文",
        id="page-level-header-aside-footer",
    ),
    pytest.param(
        "<article><header><h1>标题</h1></header><p>正文</p><footer>文末</footer></article>"
        "<article><p>另一篇</p></article>",
        "# 标题\n正文\n文末\n另一篇",
        id="an-article-keeps-its-own-header-and-footer",
    ),
    pytest.param(
        "<p>站外</p><main><section><header>节头</header><p>正文</p><aside>旁注</aside>"
        "</section></main><p>站外</p>",
        "节头\n正文\n旁注",
        id="main-is-preferred",
    ),
    pytest.param(
        "首页 · 关于<main><p>正文</p></main>© 2026 学径", "正文", id="bare-text-outside-main"
    ),
    pytest.param(
        "<div>站点横幅</div><article><p>正文</p></article><div>站点页脚</div>",
        "正文",
        id="the-only-article-is-preferred",
    ),
    pytest.param(
        '<div class="cookie-consent">本站使用 Cookie</div><div id="share-bar">分享到 微博</div>'
        '<div class="social-links">微信</div><ol class="breadcrumb"><li>首页</li></ol>'
        '<p class="copyright">© 2026</p><div aria-label="分享">微博</div><p>正文</p>',
        "正文",
        id="cookie-share-breadcrumb-copyright-bars",
    ),
    pytest.param(
        '<main><p>正文</p></main><footer class="site-footer"><p>中文标题与摘要由模型生成。</p>'
        '<p>来源：学径（https://oplearnx.com）</p><p class="copyright">© 2026</p>'
        "<nav>关于</nav></footer>",
        "正文\n中文标题与摘要由模型生成。\n来源：学径（https://oplearnx.com）",
        id="a-footer-with-the-page-source-stays-without-its-chrome",
    ),
    pytest.param(
        '<header class="site-header"><nav>首页</nav><h1>主题</h1><ul><li>所属：分类</li>'
        "</ul></header><main><p>正文</p></main>",
        "# 主题\n- 所属：分类\n正文",
        id="a-site-header-with-the-topic-header-stays",
    ),
    pytest.param(
        '<main><article><p>正文</p></article></main><aside class="related">'
        "<div>推荐阅读</div><p>相关</p></aside>",
        "正文\n推荐阅读\n相关",
        id="related-reading-outside-main-stays",
    ),
    pytest.param(
        '<aside><ul><li><a href="#top">简介</a></li><li><a href="#r">推荐阅读</a></li></ul>'
        '</aside><main><p>正文</p><nav class="page-toc"><a href=" #r">推荐阅读</a></nav>'
        '<h2 id="r"><a href="/related">推荐阅读</a></h2><p>相关</p></main>',
        "正文\n# 推荐阅读\n相关",
        id="a-table-of-contents-entry-is-no-mark",
    ),
    pytest.param(
        '<main><search><form><input name="q"><button>搜索</button></form></search><p>正文</p>'
        '<form class="site-search"><button>搜索资源</button></form><div id="toc">目录</div></main>',
        "正文",
        id="search-and-toc-blocks",
    ),
]


@pytest.mark.parametrize(("body", "expected"), RULES)
@pytest.mark.parametrize("parser", ["selectolax", "beautifulsoup"])
def test_chrome_rules(
    monkeypatch: pytest.MonkeyPatch, parser: str, body: str, expected: str
) -> None:
    if parser == "beautifulsoup":
        monkeypatch.setattr(htmltree, "LexborHTMLParser", _BrokenLexbor)
    assert text_of(body) == expected


def test_removed_chrome_is_reported_and_text_free_chrome_is_not() -> None:
    result = html_to_text("<body><nav>首页 · 关于</nav><aside><svg></svg></aside><p>正文</p>")
    assert result.text == "正文"
    assert [w for w in result.warnings if w.startswith("CHROME_REMOVED")] == [
        "CHROME_REMOVED: 1 block(s) of site navigation, banners, bars or text outside the "
        "page's content not rendered: nav"
    ]


def test_a_page_that_is_all_chrome_is_rendered_whole() -> None:
    result = html_to_text("<body><nav>首页</nav><footer>关于</footer></body>")
    assert result.text == "首页\n关于"
    assert "every visible text is in site chrome: rendered the whole page" in result.warnings


# --------------------------------------------------------------------------- savers


@pytest.mark.parametrize("name", SAVED)
@pytest.mark.parametrize("parser", ["selectolax", "beautifulsoup"])
def test_saved_page_renders_to_its_dump(
    monkeypatch: pytest.MonkeyPatch, parser: str, name: str
) -> None:
    if parser == "beautifulsoup":
        monkeypatch.setattr(htmltree, "LexborHTMLParser", _BrokenLexbor)
    kind = name.rsplit("_", 1)[0]
    result = html_to_text((FIXTURES / name).read_text(encoding="utf-8"))
    seed = seed_text(kind)
    if kind == "topic_page":
        assert comparable(result.text) == comparable(_HEADER_LINK.sub(r"\1：\2", seed))
    else:
        assert result.text == seed
    assert any(w.startswith("CHROME_REMOVED") for w in result.warnings)


def test_saved_pages_are_up_to_date() -> None:
    from test_htmltext import load_generator

    generator = load_generator()
    built = generator.build_savers(generator.build())
    assert sorted(built) == sorted(SAVED)
    for name, markup in built.items():
        assert (FIXTURES / name).read_text(encoding="utf-8") == markup, f"{name} is stale"


@pytest.mark.parametrize("saver", SAVERS)
def test_saved_pages_give_the_text_dump_records(ingest: Any, saver: str) -> None:
    text = ingest(SEEDS)
    html = ingest(*(FIXTURES / f"{kind}_{saver}.html" for kind in KINDS))
    assert html.code == 0 and html.rejects == []
    assert _without_sources(html.items) == _without_sources(text.items)
    assert _without_sources(html.topics) == _without_sources(text.topics)
    marks = {f["format"]: f["marks"] for f in html.report["files"]}
    assert marks == {f["format"]: f["marks"] for f in text.report["files"]}


def test_a_bare_nav_and_footer_around_a_page_are_chrome(ingest: Any, tmp_path: Path) -> None:
    """A saved page whose <body> starts with a bare <nav> and ends with a <footer>."""
    lines = seed_text("item_page").split("\n")
    page = (
        '<html><body><nav><a href="/">首页</a> · <a href="/topics">全部主题</a></nav>'
        + "".join(f"<p>{line}</p>" for line in lines)
        + "<footer><p>© 2026 LearnMap · 学径</p></footer></body></html>"
    )
    out = ingest(write_files(tmp_path / "in", {"page.html": page}))
    assert out.rejects == [] and len(out.items) == 7
    assert out.report["files"][0]["format"] == "item-page"


def _without_sources(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "sources"} for r in records]


# --------------------------------------------------------------------------- mutations

CHROME_ELEMENTS = [
    '<nav class="site-nav"><a href="/">首页</a> · <a href="/topics">全部主题</a></nav>',
    '<div role="navigation"><a href="/">首页</a> › <a href="/topics">主题</a></div>',
    '<div id="cookie-banner" class="cookie-consent">本站使用 Cookie。<button>接受</button></div>',
    '<div class="share-bar">分享到：<a href="#">微博</a> · <a href="#">微信</a></div>',
    '<aside class="sidebar"><h3>热门主题</h3><ul><li><a href="/t">大模型入门</a></li></ul></aside>',
    '<footer class="site-footer"><p>© 2026 LearnMap · 学径 保留所有权利</p></footer>',
    # chrome in plain markup: the text parsers must place it
    "<p>首页 · 全部主题 · 关于</p>",
    "<h1>登录</h1>",
    '<ol><li><a href="/">首页</a></li></ol>',
    "<div>返回顶部</div>",
]
#: Between the sections of each kind: (anchor in the fixture, insert before it?).
SECTIONS = {
    "topic_page": ['<section class="reading-order">', "    <hr>", "</main>"],
    "topic_list": ['  <div class="entries">', '    <div class="entry">\n', "</main>"],
    "item_page": ['    <ul class="facts">', '  <aside class="related">', "</main>"],
}
FIXTURE_PAGES = [f"{kind}{suffix}.html" for kind in KINDS for suffix in ("", "_hostile")]


def places(name: str) -> dict[str, str]:
    kind = name.removesuffix(".html").removesuffix("_hostile")
    markup = (FIXTURES / name).read_text(encoding="utf-8")
    start = re.search(r"<body[^>]*>", markup)
    assert start is not None
    out = {"start": start.end(), "end": markup.index("</body>")}
    for anchor in SECTIONS[kind]:
        count = 2 if anchor.endswith('entry">\n') else 1  # between entries 1 and 2
        at = -1
        for _ in range(count):
            at = markup.index(anchor, at + 1)
        out[f"before {anchor.strip()!r}"] = at
    return {place: markup[:at] + "{chrome}" + markup[at:] for place, at in out.items()}


@cache
def records(markup: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_files(Path(tmp, "in"), {"page.html": markup})
        out = Out(Path(tmp, "out"), main(["run", str(folder), "--out", f"{tmp}/out", "--quiet"]))
        return {
            "items": _without_sources(out.items),
            "topics": _without_sources(out.topics),
            "rejects": out.rejects,
            "file": out.report["files"][0],
        }


def _chrome_costs_nothing(name: str, sweep: bool) -> None:
    """Site chrome put in at every place of a fixture page: the page's records are those of
    the clean page. ``sweep``: every element at every place; else one element a place, a
    different one each (every element is put in somewhere over the fixtures)."""
    clean = records((FIXTURES / name).read_text(encoding="utf-8"))
    assert clean["rejects"] == []
    offset = FIXTURE_PAGES.index(name)
    for n, (place, template) in enumerate(places(name).items()):
        one = CHROME_ELEMENTS[(offset + n) % len(CHROME_ELEMENTS)]
        for element in CHROME_ELEMENTS if sweep else [one]:
            got = records(template.replace("{chrome}", element))
            what = f"{name}, {place}: {element}"
            assert got["rejects"] == [], what
            assert got["items"] == clean["items"], what
            assert got["topics"] == clean["topics"], what
            assert got["file"]["marks"] == clean["file"]["marks"], what
            said = " ".join(got["file"]["warnings"])
            assert "CHROME_REMOVED" in said or "LINES_SKIPPED" in said, what


@pytest.mark.parametrize("name", FIXTURE_PAGES)
def test_chrome_elements_anywhere_cost_nothing(name: str) -> None:
    _chrome_costs_nothing(name, sweep=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", FIXTURE_PAGES)
def test_every_chrome_element_at_every_place_costs_nothing(name: str) -> None:
    _chrome_costs_nothing(name, sweep=True)
