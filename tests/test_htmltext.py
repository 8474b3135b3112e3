"""Tests for ingest.extract.html: saved HTML pages render to the text of their dumps."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ingest.extract import markup as htmltext
from ingest.extract.html import HtmlText, html_to_text, looks_like_html

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "seeds"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "html"
SEED_OF_KIND = {
    "topic_page": "000_323494b48c0530e6.txt",
    "topic_list": "001_71f134887f74a7d3.txt",
    "item_page": "004_580ca6da1b58938c.txt",
}
FIXTURE_NAMES = [f"{kind}{suffix}.html" for kind in SEED_OF_KIND for suffix in ("", "_hostile")]
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_HEADER_LINK = re.compile(r"(所属|网站)：\[([^\]]*)\]\(\)")

Convert = Callable[[str], HtmlText]


def seed_text(kind: str) -> str:
    return (SEEDS / SEED_OF_KIND[kind]).read_text(encoding="utf-8")


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def comparable(text: str) -> str:
    """Comparison normalization: markdown-unescape, then collapse all white space."""
    return " ".join(_MD_ESCAPE.sub(r"\1", text).split())


class _BrokenLexbor:
    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("lexbor unavailable")


@pytest.fixture(params=["selectolax", "beautifulsoup"])
def convert(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Convert:
    """html_to_text through selectolax, or forced onto the BeautifulSoup fallback."""
    parser = str(request.param)
    if parser == "beautifulsoup":
        monkeypatch.setattr(htmltext, "LexborHTMLParser", _BrokenLexbor)

    def run(html: str) -> HtmlText:
        result = html_to_text(html)
        # selectolax hands over to BeautifulSoup by itself only when it finds no text.
        handed_over = any("selectolax found no visible text" in w for w in result.warnings)
        assert result.parser == parser or handed_over
        return result

    return run


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


# --------------------------------------------------------------------------- looks_like_html


@pytest.mark.parametrize(
    "text",
    [
        "<!DOCTYPE html><html><body>x</body></html>",
        "<!doctype HTML>\n<p>x",
        "\ufeff  \n<html lang='zh'>",
        "<HEAD><title>t</title></HEAD>",
        "<body>\n文本</body>",
        "<!-- saved from url=(0043)https://oplearnx.com/ -->\n<html>",
        '<?xml version="1.0"?>\n<html xmlns="http://www.w3.org/1999/xhtml">',
        '<div class="a"><p><span>x</span></p></div>',
        "\n\n<ul><li>一</li><li>二</li></ul>",
    ],
)
def test_looks_like_html_true(text: str) -> None:
    assert looks_like_html(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "# 模型服务与算力 学习模型服务框架 - 所属：[部署与推理优化]()",
        "Hugging Face··5 个月前\n解锁连续批处理中的异步性",
        "一个标题 <b> 标签 </b> 出现在正文里，但正文远多于标记。" * 3,
        "<think> 标签在推理模型输出中很常见，本文介绍如何解析它以及常见的坑。",
        "x" * 2000 + "<html><body>too late</body></html>",
        "htmlish but not <html",
    ],
)
def test_looks_like_html_false(text: str) -> None:
    assert not looks_like_html(text)


@pytest.mark.parametrize("kind", sorted(SEED_OF_KIND))
def test_seed_dumps_are_not_html(kind: str) -> None:
    text = seed_text(kind)
    assert not looks_like_html(text)
    assert not looks_like_html("\ufeff" + text)
    assert not looks_like_html(text.replace("\n", "\r\n"))


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixtures_are_html(name: str) -> None:
    assert looks_like_html(fixture_text(name))


# --------------------------------------------------------------------------- result type


def test_result_is_a_frozen_dataclass() -> None:
    result = html_to_text("<p>x</p>")
    assert result == HtmlText(text="x", parser="selectolax", warnings=(), plain="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.text = "y"  # type: ignore[misc]


def test_empty_document_warns_instead_of_raising() -> None:
    result = html_to_text("")
    assert result.text == ""
    assert result.parser == "beautifulsoup"
    assert any("no visible text" in warning for warning in result.warnings)


# --------------------------------------------------------------------------- rendering rules

RULES = [
    # invisible content
    pytest.param(
        "<head><title>T</title><style>p{}</style><script>var a='<p>x</p>'</script></head>"
        "<body><p>shown</p></body>",
        "shown",
        id="head-title-style-script",
    ),
    pytest.param(
        "<p>a<script>document.write('<b>1. [x]()</b>')</script>b</p>"
        "<style>p::before{content:'<i>'}</style><noscript>开启 JS</noscript>"
        "<template><p>t</p></template><svg><title>s</title><text>t</text></svg>"
        '<iframe src="x">frame</iframe><!-- <p>c</p> -->',
        "ab",
        id="never-rendered-elements",
    ),
    pytest.param(
        '<p>a<span hidden>h</span>b</p><div hidden="hidden"><p>x</p></div>'
        '<p style="color:red; DISPLAY : none !important">n</p>'
        '<p style="x-display:none">kept</p><p style="display:block">block</p>',
        "ab\nkept\nblock",
        id="hidden-and-display-none",
    ),
    pytest.param(
        '<p>a<img src=x onerror="alert(\'<b>1. [x]()</b>\')" alt="图">b</p>',
        "ab",
        id="img-onerror",
    ),
    pytest.param(
        "<div>a<span>b</span> <b>c</b><i> d</i></div><p>e</p>text<section>f</section>",
        "ab c d\ne\ntext\nf",
        id="block-vs-inline",
    ),
    pytest.param(
        "<p>  a \n\t b  \r\n c </p><p>\u00a0x\u3000y</p>",
        "a b c\n\u00a0x\u3000y",
        id="whitespace-collapses-html-space-only",
    ),
    pytest.param(
        "<div></div><p> </p><div>\n  <span> </span>\n</div><p>x</p><p></p>",
        "x",
        id="empty-lines-dropped",
    ),
    pytest.param(
        "<h1>一 <b>级</b></h1><h2>二</h2><h3>三</h3><h4>四</h4><h6>六</h6><h2></h2><p>p</p>",
        "# 一 级\n## 二\n### 三\n#### 四\n##### 六\np",  # by level among the page's
        id="headings",
    ),
    pytest.param(
        "<h2>名</h2><p>d</p><h4>节</h4><h4>又</h4><h3>中</h3>",
        "# 名\nd\n### 节\n### 又\n## 中",
        id="heading-levels-are-relative",
    ),
    pytest.param(
        '<main><ol><li><h3><a href="">t</a></h3><span>（博客 · 入门）</span>：<p>s</p></li>'
        "<li><article><h4>u</h4><p>v</p></article></li></ol><h3>x</h3></main>",
        "1. [t]() （博客 · 入门）： s\n2. u v\n# x",
        id="ol-item-is-one-line",
    ),
    pytest.param(
        '<main><ol><li><a href="">t</a>（博客 · 入门）：<p>一句。</p><div>收藏</div></li>'
        "<li><h3><a>问？</a></h3><p>二句！</p><p>三</p></li></ol></main>",
        "1. [t]()（博客 · 入门）： 一句。\n收藏\n2. [问？]() 二句！\n三",
        id="ol-item-one-line-up-to-its-sentence-end",
    ),
    pytest.param(
        "<ol><li>a</li><li>b</li></ol><ol start=7><li>c</li><li>d</li></ol>",
        "1. a\n2. b\n7. c\n8. d",
        id="ol-start",
    ),
    pytest.param(
        '<ol start="3"><li>a</li><li value="10">b</li><li>c</li><li value="x">d</li></ol>',
        "3. a\n10. b\n11. c\n12. d",
        id="ol-li-value",
    ),
    pytest.param(
        '<ol start="junk"><li>a</li></ol><ol start="-2"><li>b</li></ol>',
        "1. a\n-2. b",
        id="ol-start-lenient",
    ),
    pytest.param(
        "<ol><li>a<ol><li>x</li><li>y</li></ol></li><li>b</li></ol>",
        "1. a\n1. x\n2. y\n2. b",
        id="ol-nested",
    ),
    pytest.param(
        "<ul><li>分级</li><li>值得看</li><li><p>收录时间</p></li></ul>",
        "- 分级\n- 值得看\n- 收录时间",
        id="ul",
    ),
    pytest.param("<ul><li></li><li> </li></ul><p>x</p>", "x", id="empty-li-leaves-no-marker"),
    pytest.param("<li>x</li><li>y", "- x\n- y", id="li-outside-list"),
    pytest.param("<p>a</p><hr><p>b</p><hr/>", "a\n---\nb\n---", id="hr"),
    pytest.param("<p>a<br>b<br/><br>c</p>", "a\nb\nc", id="br"),
    pytest.param(
        '<ol><li><a href="https://x.org/a?b=1&amp;c=2">a [b] (c) \\ d_e</a>（博客 · 入门）：s</li>'
        "<li><a>t</a>：u</li></ol>",
        "1. [a \\[b\\] \\(c\\) \\\\ d_e](https://x.org/a?b=1&c=2)（博客 · 入门）：s\n2. [t]()：u",
        id="ol-link-markdown-escaped",
    ),
    pytest.param(
        '<ol><li><a href="">\n  <b>Bold</b> <code>x_y</code><br><i>it</i>\n</a>'
        "（项目 · 深入）：s</li></ol>",
        # white space at the link's edges stays outside the brackets, as a browser shows it
        "1. [Bold x_y it]() （项目 · 深入）：s",
        id="ol-link-nested-inline",
    ),
    pytest.param(
        '<ol><li>see <a href=" \nhttps://x.org/a\tb ">x</a> and<a href="y"> y </a>.</li></ol>',
        "1. see [x](https://x.org/ab) and [y](y) .",
        id="ol-link-spacing-and-href-cleanup",
    ),
    pytest.param(
        '<ol><li>a<a href="x"><img src="i.png"></a>b</li></ol>',
        "1. ab",
        id="ol-empty-link-dropped",
    ),
    pytest.param(
        '<p><a href="x">plain</a></p><ul><li>所属：<a href="">部署</a></li></ul>'
        '<ol><li><ul><li><a href="z">deep</a></li></ul></li></ol>',
        "plain\n- 所属：部署\n- deep",
        id="other-links-are-text",
    ),
    pytest.param(
        "<p>&amp;lt;script&amp;gt; &amp; &quot;q&quot; &#x4E2D;&#25991; &middot; &hellip;</p>",
        '&lt;script&gt; & "q" 中文 · …',
        id="entities-decoded-once",
    ),
    pytest.param(
        "<div><span>Hugging Face</span>··<span>5 个月前</span></div>",
        "Hugging Face··5 个月前",
        id="publisher-line",
    ),
    pytest.param(
        "<table><tr><th>k</th><td>v</td></tr><tr><td>c</td></tr></table>",
        "k v\nc",
        id="table-rows",
    ),
    pytest.param("<pre>a  b\n   c\n\nd</pre>", "a b\nc\nd", id="pre-keeps-lines"),
    pytest.param(
        "<dl><dt>k</dt><dd>v</dd></dl><blockquote>q</blockquote><figure>f"
        "<figcaption>c</figcaption></figure>",
        "k\nv\nq\nf\nc",
        id="other-blocks",
    ),
]


@pytest.mark.parametrize(("html", "expected"), RULES)
def test_rendering_rules(convert: Convert, html: str, expected: str) -> None:
    assert convert(html).text == expected


PLAIN_RULES = [
    pytest.param("<h1>题</h1><h3>小</h3><p>p</p><hr><p>q</p>", "题\n小\np\nq", id="no-marks"),
    pytest.param(
        "<ul><li>分级</li><li><p>值得看</p></li></ul>"
        "<ul><li><h3>t</h3><div>o</div><p>s</p></li><li><div>u</div><p>v</p></li></ul>",
        "- 分级\n- 值得看\nt\no\ns\nu\nv",
        id="one-line-items-keep-their-marker-cards-do-not",
    ),
    pytest.param(
        '<ol><li><a href="x">t [1]</a>（博客 · 入门）：s</li></ol>',
        "1. t [1]（博客 · 入门）：s",
        id="links-are-text",
    ),
]


@pytest.mark.parametrize(("html", "expected"), PLAIN_RULES)
def test_plain_rendering_rules(convert: Convert, html: str, expected: str) -> None:
    assert convert(html).plain == expected


def test_tag_like_text_from_references_is_kept_and_reported(convert: Convert) -> None:
    result = convert("<p>&lt;b&gt;粗体&lt;/b&gt; and &amp;lt;i&amp;gt;</p>")
    assert result.text == "<b>粗体</b> and &lt;i&gt;"
    assert any("tag-like" in warning and "'<b>" in warning for warning in result.warnings)


# --------------------------------------------------------------------------- fixtures


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_renders_to_its_seed_dump(convert: Convert, name: str) -> None:
    kind = name.removesuffix(".html").removesuffix("_hostile")
    seed = seed_text(kind)
    result = convert(fixture_text(name))
    if kind == "topic_page":
        # The header's 所属/网站 links are not in an ol > li, so they render as plain text.
        seed = _HEADER_LINK.sub(r"\1：\2", seed)
    else:
        # Line-structured kinds: the rendered text *is* the dump, line for line.
        assert result.text == seed
    assert comparable(result.text) == comparable(seed)


def test_topic_page_fixture_line_structure() -> None:
    lines = html_to_text(fixture_text("topic_page.html")).text.splitlines()
    assert lines[:5] == [
        "# 模型服务与算力",
        "学习模型服务框架、并行计算与底层优化，适合维护训练和推理基础设施的人员。",
        "- 所属：部署与推理优化",
        "- 网站：https://oplearnx.com/topics/model-serving-compute",
        "## 推荐学习顺序",
    ]
    listings = lines[5:-3]
    assert [line.split(". [", 1)[0] for line in listings] == [str(n) for n in range(1, 45)]
    assert all(re.search(r"\]\(\)（[^（）]+ · [^（）]+）：", line) for line in listings)
    assert lines[-3:] == [
        "---",
        "中文标题与摘要由模型根据原文生成，以原文为准。",
        "来源：LearnMap · 学径（https://oplearnx.com）",
    ]


def test_hostile_topic_page_keeps_numbering_across_split_lists() -> None:
    text = html_to_text(fixture_text("topic_page_hostile.html")).text
    numbers = re.findall(r"^(\d+)\. \[", text, flags=re.M)
    assert numbers == [str(n) for n in range(1, 45)]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_output_has_no_markup_or_decoys(convert: Convert, name: str) -> None:
    result = convert(fixture_text(name))
    assert re.search(r"<[A-Za-z/]", result.text) is None
    for decoy in ("fake", "不应出现", "隐藏", "不显示", "Hidden", "模板", "注释", "JavaScript"):
        assert decoy not in result.text
    assert "LearnMap" not in result.text or name.startswith("topic_page")
    assert result.warnings == (() if result.parser == "selectolax" else result.warnings)


def test_fixtures_are_up_to_date() -> None:
    built = load_generator().build()
    assert sorted(built) == sorted(FIXTURE_NAMES)
    for name, text in built.items():
        assert fixture_text(name) == text, f"{name} is stale: rerun make_fixtures.py"


_RENDERED = """
import sys
from ingest.extract.html import html_to_text
print(repr(html_to_text(open(sys.argv[1], encoding="utf-8").read())))
"""


def test_rendering_does_not_depend_on_the_processs_hash_seed() -> None:
    """Two processes whose str hashes differ (sets and dicts of text iterate in another
    order) render a hostile page to the same text, warnings and all."""
    page = str(FIXTURES / "topic_page_hostile.html")
    said = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _RENDERED, page], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr
        said.append(done.stdout)
    assert said[0] == said[1] == repr(html_to_text(fixture_text("topic_page_hostile.html"))) + "\n"


# --------------------------------------------------------------------------- fallback


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_beautifulsoup_fallback_gives_the_same_text(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    html = fixture_text(name)
    expected = html_to_text(html)
    assert expected.parser == "selectolax"
    monkeypatch.setattr(htmltext, "LexborHTMLParser", _BrokenLexbor)
    fallback = html_to_text(html)
    assert fallback.parser == "beautifulsoup"
    assert fallback.text == expected.text
    assert any("selectolax failed" in w and "lexbor unavailable" in w for w in fallback.warnings)


def test_fallback_when_selectolax_finds_no_text(monkeypatch: pytest.MonkeyPatch) -> None:
    class _Empty:
        root = None

        def __init__(self, *_args: Any) -> None:
            pass

    monkeypatch.setattr(htmltext, "LexborHTMLParser", _Empty)
    result = html_to_text("<p>x</p>")
    assert result == HtmlText("x", "beautifulsoup", (result.warnings[0],), "x")
    assert "no visible text" in result.warnings[0]


def test_unclosed_head_does_not_swallow_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(htmltext, "LexborHTMLParser", _BrokenLexbor)
    result = html_to_text("<html><head><title>t</title><body><p>正文</p></body></html>")
    assert result.text == "正文"


# --------------------------------------------------------------------------- broken documents

BROKEN = [
    "<div><p>unclosed <b>bold <i>italic",
    "<li>a<li>b</ul></ol></li>text",
    "</div></p></li></a>stray end tags",
    "<ol><li><a href='x'>one<a href='y'>two</a></li></ol>",
    "<table><p>in table</p><tr><td>cell<td>cell2</table>",
    "<!-- unterminated comment <p>x</p>",
    "<script>never closed <p>hidden?</p>",
    "<p>nul\x00char and \ufffd replacement</p>",
    "<p>lone surrogate \ud800 here</p>",
    '<p title="unterminated>attribute</p><p>after</p>',
    "<ol start=99999999999999999999><li value=" + "9" * 5000 + ">big</li></ol>",
    "<![CDATA[cdata]]><?php echo 1 ?><!bogus><p>ok</p>",
    "<a href='x'><div><p>block in link</p></div></a>",
    "<svg><foreignObject><p>inside svg</p></foreignObject></svg><math><mi>x</mi></math>",
    "&" * 1000 + "<" * 1000 + ">" * 1000,
]


@pytest.mark.parametrize("html", BROKEN)
def test_broken_documents_do_not_raise(convert: Convert, html: str) -> None:
    result = convert(html)
    assert isinstance(result.text, str)
    assert "\n\n" not in result.text


def test_broken_documents_keep_their_visible_text() -> None:
    assert html_to_text("<li>a<li>b</ul></ol></li>text").text == "- a\n- b\ntext"
    assert html_to_text("<div><p>unclosed <b>bold <i>italic").text == "unclosed bold italic"
    assert "lone surrogate" in html_to_text("<p>lone surrogate \ud800 here</p>").text


@pytest.mark.parametrize("html", BROKEN)
def test_broken_documents_leak_no_markup(html: str) -> None:
    assert re.search(r"<[A-Za-z/!]", html_to_text(html).text) is None


def test_unparsed_markup_from_the_fallback_is_dropped() -> None:
    result = html_to_text("<!-- unterminated comment <p>x</p>")
    assert result.text == ""
    assert any("unparsed markup" in warning for warning in result.warnings)


@pytest.mark.slow
def test_two_megabyte_nested_document_is_fast_and_safe() -> None:
    depth = 100_000
    html = '<div class="n">' * depth + "<p>深处的文字</p>" + "</div>" * depth
    assert len(html) >= 2_000_000
    started = time.perf_counter()
    result = html_to_text(html)
    elapsed = time.perf_counter() - started
    assert result.text == "深处的文字"
    assert result.parser == "beautifulsoup"
    assert any("nests more than" in warning for warning in result.warnings)
    assert elapsed < 30, f"{elapsed:.1f}s"


@pytest.mark.slow
def test_deep_unclosed_nesting_and_lists_do_not_crash() -> None:
    html = "<ol><li>x" * 20_000 + "<span><b>" * 20_000 + "end"
    result = html_to_text(html)
    assert result.text.endswith("end")
    assert result.text.startswith("1. x")


@pytest.mark.slow
def test_two_megabyte_wide_document_stays_on_selectolax() -> None:
    html = "<div><p>段落 <b>粗体</b></p></div>\n" * 65_000
    assert len(html) >= 2_000_000
    result = html_to_text(html)
    assert result.parser == "selectolax"
    assert result.warnings == ()
    assert result.text.count("\n") == 64_999
