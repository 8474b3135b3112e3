"""Saved-HTML shapes of the seed pages: the generator of tests/test_html_shapes.py.

:func:`draw` turns a number into one example: the three seed pages, some of the item page's
entries shown as Chinese originals (the original-title line repeating the Chinese title, or
left out, and the topic list showing that title on its title line), each written twice: as
its text dump and as saved HTML in a shape drawn from the number. A shape varies what a
page's markup may vary without changing what a browser shows:

* heading levels: the whole page a level or more down, a level skipped, a plain block for
  a heading;
* list and card markup: a topic page's listing as one ``li`` or as a card (``article``,
  ``div``, ``section``) inside it; a topic list's entry and an item page's related entry
  as ``li`` (in ``ul`` or ``ol``, maybe around a link), ``div``, ``article``, ``section`` or
  a linked card (``a``); its title a heading, a ``div``, a ``p``, or lines split by ``br``;
* layout around the content: a ``main`` (or ``role="main"``) or none, a site header with a
  search form, a table of contents (an ``aside`` or a ``nav`` of links to the page's own
  sections, beside or inside the content), breadcrumbs, a site footer, a cookie banner;
* noise: comments, scripts and hidden elements that show nothing, rules (``hr``) between
  the parts of a topic list or an item page, and a card's buttons (``收藏``) after its
  summary;
* attributes (classes, ``data-*``, ``lang``, ``style``; quoted, single-quoted, bare),
  character references, and white space (indentation, line breaks inside text, spaces
  around inline elements).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field, replace
from random import Random
from typing import Any

from conftest import ROOT, SEEDS, load_script

_FIXTURES = load_script(ROOT / "tests" / "fixtures" / "html" / "make_fixtures.py", "make_fixtures")
_CLASSES = ("card", "entry", "item", "box", "row", "block", "text", "meta", "wrap", "mt-2", "p-4")
CARDS = ("li", "div", "article", "section", "a")
TITLES = ("h", "div", "p", "br")
LISTINGS = ("inline", "li", "article", "div", "section")
WRAPPERS = ("main", "header", "toc", "breadcrumbs", "footer", "cookie", "noise")
_BUTTONS = '<div class="actions"><button type="button">收藏</button></div>'
_REFERENCES = {"（": "&#xFF08;", "）": "&#65289;", "·": "&middot;", "“": "&ldquo;"}


@dataclass(frozen=True)
class Entry:
    """An item page's entry as the page shows it: ``shown`` is its original-title line."""

    zh: str
    shown: str | None
    summary: str


@dataclass(frozen=True)
class Pages:
    """One example: the three pages as text dumps and as saved HTML, by file name."""

    seed: int
    shape: str
    dumps: dict[str, str]
    saved: dict[str, str]


@dataclass
class Shape:
    rng: Random
    shift: int = 0  # heading levels down
    skip: int = 0  # levels skipped below the page's top heading
    card: str = "div"
    title: str = "div"
    listing: str = "inline"  # a topic page's listing: "inline" or a card inside its li
    wrappers: frozenset[str] = frozenset()
    indent: bool = False
    buttons: bool = False  # a card's buttons after its summary
    originals: dict[str, int] = field(default_factory=dict)
    count: int = 0

    def describe(self) -> str:
        chinese = " ".join(f"{k}={v}" for k, v in sorted(self.originals.items()))
        return (
            f"shift={self.shift} skip={self.skip} card={self.card} title={self.title} "
            f"listing={self.listing} wrappers={','.join(sorted(self.wrappers))} "
            f"indent={self.indent} buttons={self.buttons} {chinese}"
        )

    def h(self, level: int) -> str:
        return f"h{min(6, level + self.shift + (self.skip if level > 1 else 0))}"

    def attrs(self) -> str:
        """Zero to two attributes, each quoted one way or another."""
        rng, out = self.rng, []
        self.count += 1
        pool = [
            ("class", " ".join(rng.sample(_CLASSES, rng.randint(1, 2)))),
            ("data-k", str(self.count)),
            ("lang", "zh-CN"),
            ("title", "提示"),
            ("style", "color: #333"),
        ]
        for name, value in rng.sample(pool, rng.randrange(3)):
            quote = rng.choice(['"', "'", ""]) if " " not in value and "#" not in value else '"'
            out.append(f" {name}={quote}{html.escape(value, quote=True)}{quote}")
        return "".join(out)

    def el(self, tag: str, inner: str, attrs: str = "") -> str:
        gap = "\n" + "  " * self.rng.randrange(1, 4) if self.indent else ""
        return f"<{tag}{attrs or self.attrs()}>{gap}{inner}{gap}</{tag}>"

    def text(self, s: str) -> str:
        """Text of a block of its own: escaped, now and then with a character reference,
        a comment, a hidden decoy, or one of its spaces broken over lines."""
        rng = self.rng
        out = html.escape(s, quote=False)
        if rng.random() < 0.2:
            for char, ref in _REFERENCES.items():
                out = out.replace(char, ref)
        if self.indent and " " in out and rng.random() < 0.5:
            out = out.replace(" ", "\n      ", 1)
        if "noise" in self.wrappers and rng.random() < 0.2:
            cut = rng.choice([0, len(out), *(i + 1 for i, c in enumerate(out) if c == "，")])
            decoy = rng.choice(
                ("<!-- 注释 -->", "<span hidden>隐藏</span>", "<script>x=1</script>")
            )
            out = out[:cut] + decoy + out[cut:]
        return out

    def join(self, parts: list[str]) -> str:
        return ("\n" if self.indent else "").join(parts)


def draw(seed: int, **fixed: Any) -> Pages:
    """Example ``seed``: the seed pages, some entries Chinese originals, in one HTML shape
    (``fixed`` pins dimensions of the shape, e.g. ``card="li"``)."""
    shape = _shape(seed, fixed)
    topic, topic_list, item = _seeds()
    main, related = _chinese_originals(shape, item)
    originals = {e.summary: e.zh for e in [main, *related] if e.shown in (None, e.zh)}
    entries = tuple(replace(e, title=originals.get(e.summary, e.title)) for e in topic_list.entries)
    topic_list = replace(topic_list, entries=entries)
    dumps = {
        "topic_page.txt": (SEEDS / _FIXTURES.TOPIC_PAGE_SEED).read_text("utf-8"),
        "topic_list.txt": _topic_list_dump(topic_list),
        "item_page.txt": _item_page_dump(item, main, related),
    }
    saved = {
        "topic_page.html": _page(shape, _topic_page_body(shape, topic), topic=True),
        "topic_list.html": _page(shape, _topic_list_body(shape, topic_list)),
        "item_page.html": _page(shape, _item_page_body(shape, item, main, related)),
    }
    return Pages(seed, shape.describe(), dumps, saved)


def _shape(seed: int, fixed: dict[str, Any]) -> Shape:
    rng = Random(seed)
    shape = Shape(  # the markup cycles with the number, so that a few examples show each
        rng,
        shift=seed % 4,
        skip=rng.choice((0, 0, 0, 1)),
        card=CARDS[seed % len(CARDS)],
        title=TITLES[seed % len(TITLES)],
        listing=LISTINGS[seed // 2 % len(LISTINGS)],
        wrappers=frozenset(w for w in WRAPPERS if rng.random() < 0.6),
        indent=rng.random() < 0.5,
    )
    shape.buttons = "noise" in shape.wrappers and rng.random() < 0.5
    for name, value in fixed.items():
        setattr(shape, name, value)
    return shape


def topic_page_part(seed: int, first: int, last: int, section: str | None) -> str:
    """Listings ``first``..``last`` of the seed topic page as one page of the topic saved in
    parts, in the HTML shape of example ``seed``: the header and the footer as every page of
    it shows them, the list numbered from ``first`` (``<ol start>``), its section heading
    ``section`` (None: none)."""
    shape = _shape(seed, {})
    topic, _, _ = _seeds()
    part = replace(topic, listings=topic.listings[first - 1 : last], section=section)
    return _page(shape, _topic_page_body(shape, part, start=first), topic=True)


def topic_list_part(seed: int, entries: list[tuple[str | None, str]]) -> str:
    """The seed topic list's description and stats lines over ``entries`` (title line or
    None, summary line each): one part of a topic list saved in parts, in the HTML shape
    of example ``seed``."""
    shape = _shape(seed, {})
    _, topic_list, _ = _seeds()
    part = replace(topic_list, entries=tuple(_FIXTURES.Entry(t, s) for t, s in entries))
    return _page(shape, _topic_list_body(shape, part))


def _seeds() -> tuple[Any, Any, Any]:
    fx = _FIXTURES
    topic_list = fx.parse_topic_list((SEEDS / fx.TOPIC_LIST_SEED).read_text("utf-8"))
    text = (SEEDS / fx.TOPIC_PAGE_SEED).read_text("utf-8")
    topic = fx.parse_topic_page(text, topic_list.description)
    item = fx.parse_item_page((SEEDS / fx.ITEM_PAGE_SEED).read_text("utf-8"))
    return topic, topic_list, item


def _chinese_originals(s: Shape, item: Any) -> tuple[Entry, list[Entry]]:
    """The item page's own entry and its related ones, each shown as the seed shows it or,
    now and then, as a Chinese original (its title repeated, or no original-title line)."""

    def entry(zh: str, original: str | None, summary: str) -> Entry:
        roll = s.rng.random()
        shown = original if roll < 0.6 else zh if roll < 0.8 else None
        if shown is not original:
            key = "repeated" if shown else "missing"
            s.originals[key] = s.originals.get(key, 0) + 1
        return Entry(zh, shown, summary)

    main = entry(item.title_zh, item.title_original, item.summary)
    return main, [entry(r.title_zh, r.title_original, r.summary) for r in item.related]


def _entry_lines(e: Entry) -> list[str]:
    return [e.zh, *([e.shown] if e.shown is not None else []), e.summary]


def _item_page_dump(item: Any, main: Entry, related: list[Entry]) -> str:
    lines = [f"{item.publisher}··{item.age}", *_entry_lines(main)]
    lines += [f"- {fact}" for fact in item.facts] + [item.heading]
    for e in related:
        lines += _entry_lines(e)
    return "\n".join(lines) + "\n"


def _topic_list_dump(topic_list: Any) -> str:
    lines = [topic_list.description, " · ".join(topic_list.stats)]
    for e in topic_list.entries:
        lines += [*([e.title] if e.title is not None else []), e.summary]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- markup


def _page(s: Shape, content: list[str], *, topic: bool = False) -> str:
    w, rng = s.wrappers, s.rng
    body: list[str] = []
    cookie = (
        '<div class="cookie-banner" role="dialog"><p>本站使用 Cookie 改善浏览体验。'
        "继续浏览即表示同意。</p><button>接受</button></div>"
    )
    if "cookie" in w and rng.random() < 0.5:
        body.append(cookie)
    if "header" in w:
        role = ' role="search"' if rng.random() < 0.5 else ""
        body.append(
            '<header class="site-header"><a class="logo" href="/">LearnMap · 学径</a>'
            '<ul class="menu"><li><a href="/topics">全部主题</a></li><li><a href="/about">关于</a>'
            f'</li></ul><form class="site-search"{role}><input type="search" name="q" '
            'placeholder="搜索资源"><button type="submit">搜索</button></form></header>'
        )
    inner: list[str] = []
    if "breadcrumbs" in w:
        inner.append(
            '<nav aria-label="面包屑"><ol><li><a href="/">首页</a></li>'
            '<li><a href="/topics">全部主题</a></li></ol></nav>'
        )
    if "toc" in w:
        inner.append(_toc(s))
    if "noise" in w:
        inner.append("<!-- 1. [x]()（博客 · 入门）：注释 --><script>var x = '<p>x</p>';</script>")
    footer = content.pop() if topic else None  # a topic page's notice and source
    inner += content
    if "cookie" in w and body[:1] != [cookie]:
        inner.append(cookie)
    if "main" not in w:
        body.append(s.join(inner))
    elif rng.random() < 0.7:
        body.append(s.el("main", s.join(inner)))
    else:
        body.append(s.el("div", s.join(inner), ' role="main"' + s.attrs()))
    if footer is not None:
        body.append(footer)
    elif "footer" in w:
        body.append(_site_footer(""))
    head = '<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8"><title>页面</title>'
    return head + "</head>\n<body>\n" + s.join(body) + "\n</body></html>\n"


def _toc(s: Shape) -> str:
    tag = s.rng.choice(("aside", "nav"))
    links = ("简介", "推荐阅读", "推荐学习顺序", "来源：学径")
    items = "".join(f'<li><a href="#s{n}">{x}</a></li>' for n, x in enumerate(links))
    return f'<{tag} class="toc"><{s.h(2)}>目录</{s.h(2)}><ul>{items}</ul></{tag}>'


def _site_footer(own: str) -> str:
    return (
        f'<footer class="site-footer">{own}<nav><a href="/about">关于学径</a></nav>'
        '<p class="copyright">© 2026 LearnMap · 学径</p></footer>'
    )


def _topic_page_body(s: Shape, t: Any, start: int = 1) -> list[str]:
    url = html.escape(t.url, quote=True)
    fields = [
        s.el("li", f'所属：<a href="">{html.escape(t.category)}</a>'),
        s.el("li", f'网站：<a href="{url}">{html.escape(t.url)}</a>'),
    ]
    header = [
        s.el(s.h(1), s.text(t.name)),
        s.el("p", s.text(t.description)),
        s.el("ul", "".join(fields)),
    ]
    items = [_listing(s, x) for x in t.listings]
    numbered = f' start="{start}"' + s.attrs() if start != 1 else ""  # a later page's list
    section = [s.el(s.h(2), s.text(t.section))] if t.section is not None else []
    section.append(s.el("ol", s.join(items), numbered))
    article = s.el(s.rng.choice(("header", "div")), s.join(header)) + s.el(
        "section", s.join(section)
    )
    notice = s.el("p", s.text(t.notice)) + s.el("p", _source(t.source))
    if s.rng.random() < 0.5:  # the rule ends the article, the notice in the site footer
        return [s.el("article", article + "<hr>"), _site_footer(notice)]
    return [s.el("article", article), _site_footer("<hr>" + notice)]


def _source(source: str) -> str:
    name, _, rest = source.partition("（")
    url = rest.rstrip("）")
    return f'{html.escape(name)}（<a href="{html.escape(url, quote=True)}">{html.escape(url)}</a>）'


def _listing(s: Shape, x: Any) -> str:
    title = f'<a href="">{html.escape(x.title)}</a>'
    meta = s.text(f"（{x.kind} · {x.level}）")
    buttons = _BUTTONS if s.buttons else ""
    if s.listing == "inline":
        summary = f"<span>{s.text(x.summary)}</span>{buttons}"
        return s.el("li", f'{title}<span class="meta">{meta}</span>：{summary}')
    heading = s.el(s.h(3) if s.title == "h" else s.rng.choice(("div", "p")), title)
    gap = s.rng.choice(("", " ", "\n"))
    card = s.join(
        [heading, f"{gap}<span>{meta}{gap}：</span>", s.el("p", s.text(x.summary)), buttons]
    )
    return s.el("li", card if s.listing == "li" else s.el(s.listing, card))


def _topic_list_body(s: Shape, t: Any) -> list[str]:
    stats = " · ".join(f"<span>{html.escape(p)}</span>" for p in t.stats)
    desc = s.el(s.h(1) if s.title == "h" else "p", s.text(t.description))
    head = s.el(s.rng.choice(("header", "section", "div")), s.join([desc, s.el("p", stats)]))
    cards = [_card(s, [e.title] if e.title is not None else [], e.summary, 2) for e in t.entries]
    rule = ["<hr>"] if s.rng.random() < 0.3 else []
    return [s.el("article", s.join([head, *rule, _cards(s, cards)]))]


def _item_page_body(s: Shape, item: Any, main: Entry, related: list[Entry]) -> list[str]:
    pad = s.rng.choice(("", " ", "\n  "))
    byline = (
        f'<span class="publisher">{pad}{html.escape(item.publisher)}{pad}</span>{pad}··{pad}'
        f'<time datetime="2026-05-14">{html.escape(item.age)}</time>'
    )
    own = [s.el(s.rng.choice(("div", "p")), byline), s.el(s.h(1), s.text(main.zh))]
    if main.shown is not None:
        own.append(s.el(s.rng.choice(("div", "p")), s.text(main.shown)))
    own.append(s.el("p", s.text(main.summary)))
    if "toc" in s.wrappers and s.rng.random() < 0.5:  # the article's own table of contents
        own.append(_toc(s))
    own.append(s.el("ul", s.join([s.el("li", s.text(f)) for f in item.facts])))
    tag = s.h(2) if s.title == "h" else "div"
    heading = s.el(tag, s.text(item.heading), ' id="s1"' + s.attrs())
    cards = [_card(s, [e.zh, *([e.shown] if e.shown else [])], e.summary, 3) for e in related]
    box = s.rng.choice(("section", "aside", "div"))
    rule = ["<hr>"] if s.rng.random() < 0.3 else []  # a rule between the parts: no text
    return [s.el("article", s.join(own)), *rule, s.el(box, s.join([heading, _cards(s, cards)]))]


def _card(s: Shape, titles: list[str], summary: str, level: int) -> str:
    """An entry: its title lines and its summary, each a block of its own (or lines of one
    block, split by ``br``)."""
    if s.title == "br":  # one block's lines (inline cards side by side would share a line)
        inner = s.el(s.rng.choice(("p", "div")), "<br>".join(s.text(x) for x in [*titles, summary]))
    else:
        parts = []
        for n, t in enumerate(titles):
            tag = (s.h(level) if s.title == "h" else s.title) if n == 0 else "div"
            parts.append(s.el(tag if n == 0 else s.rng.choice(("div", "p")), s.text(t)))
        inner = s.join([*parts, s.el("p", s.text(summary))])
    inner += _BUTTONS if s.buttons else ""
    if s.card == "li":
        linked = s.rng.random() < 0.3
        return s.el("li", s.el("a", inner, ' href="/r"') if linked else inner)
    if s.card == "a":
        return s.el("a", inner, ' href=""' + s.attrs())
    return s.el(s.card, inner)


def _cards(s: Shape, cards: list[str]) -> str:
    if s.card == "li":
        return s.el(s.rng.choice(("ul", "ol")), s.join(cards))
    return s.el("div", s.join(cards))
