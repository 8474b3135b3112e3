"""Saved-HTML pages for ``bench/gen_corpus.py``: one page's content in a shape drawn at random.

A saved page shows what its text dump shows, line for line, in markup that varies as sites
and savers vary it: headings a level or two down (or plain blocks); a topic page's listing
as one ``li`` or as a card inside it; a topic list's entry and an item page's related entry
as ``li``, ``div``, ``article`` or a linked card (``a``), its title a heading, a ``div`` or
a ``p``; and around the content a ``main`` or none, a site header with a search form, a
table of contents linking to the page's sections, breadcrumbs, a site footer and a cookie
banner. Only the standard library is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from random import Random

#: An entry of a topic list or an item page: its title lines and its summary.
Entry = tuple[Sequence[str], str]


class Shape:
    """The markup of one page, drawn from ``rng``."""

    def __init__(self, rng: Random) -> None:
        self.rng = rng
        self.shift = rng.choice((0, 0, 1, 2))
        self.card = rng.choice(("li", "div", "article", "a"))
        self.title = rng.choice(("h", "div", "p"))
        self.wrappers = {
            w for w in ("main", "header", "toc", "crumbs", "footer", "cookie") if rng.random() < 0.5
        }

    def h(self, level: int) -> str:
        return f"h{min(6, level + self.shift)}"

    def tag(self, level: int) -> str:
        """The tag of a title at heading ``level``: that heading, or a plain block."""
        return self.h(level) if self.title == "h" else self.title

    def heading(self, level: int, text: str) -> str:
        return f"<{self.tag(level)}>{escape(text)}</{self.tag(level)}>"

    def cards(self, entries: Sequence[Entry], level: int) -> str:
        """Cards of title lines and a summary, each line a block of its own."""
        out = []
        for titles, summary in entries:
            first = [self.heading(level, titles[0])] if titles else []
            rest = [f"<div>{escape(t)}</div>" for t in titles[1:]]
            inner = "".join([*first, *rest, f"<p>{escape(summary)}</p>"])
            if self.card == "a":
                out.append(f'<a class="card" href="">{inner}</a>')
            else:
                out.append(f'<{self.card} class="card">{inner}</{self.card}>')
        body = "\n".join(out)
        return f"<ul>{body}</ul>" if self.card == "li" else f'<div class="cards">{body}</div>'

    def page(self, title: str, content: str, footer: str = "") -> str:
        w = self.wrappers
        parts = ['<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8">']
        parts.append(f"<title>{escape(title)} · LearnMap · 学径</title></head>\n<body>")
        if "cookie" in w:
            parts.append('<div class="cookie-banner"><p>本站使用 Cookie 改善浏览体验。</p></div>')
        if "header" in w:
            parts.append(
                '<header class="site-header"><a href="/">LearnMap · 学径</a>'
                '<form class="search" role="search"><input type="search" name="q">'
                "<button>搜索</button></form></header>"
            )
        inner = []
        if "crumbs" in w:
            inner.append(
                '<nav class="breadcrumb"><a href="/">首页</a> › <a href="/topics">主题</a></nav>'
            )
        if "toc" in w:
            inner.append(
                '<aside class="toc"><ul><li><a href="#a">简介</a></li><li><a href="#r">推荐阅读'
                '</a></li><li><a href="#o">推荐学习顺序</a></li></ul></aside>'
            )
        inner.append(content)
        parts.append(f"<main>{''.join(inner)}</main>" if "main" in w else "\n".join(inner))
        if footer or "footer" in w:
            parts.append(
                f'<footer class="site-footer">{footer}'
                '<p class="copyright">© 2026 LearnMap · 学径</p></footer>'
            )
        parts.append("</body></html>\n")
        return "\n".join(parts)


def topic_page(
    rng: Random,
    head: tuple[str, str, str, str, str],
    listings: Sequence[tuple[str, str, str]],
    notice: tuple[str, str],
) -> str:
    """``head``: name, description, category, URL, section; ``listings``: title, meta
    (``类型 · 级别``), summary each; ``notice``: the footer's notice and source line."""
    s = Shape(rng)
    name, desc, category, url, section = head
    fields = (
        f'<ul><li>所属：<a href="">{escape(category)}</a></li>'
        f'<li>网站：<a href="{escape(url)}">{escape(url)}</a></li></ul>'
    )
    items = []
    for title, meta, summary in listings:
        link = f'<a href="">{escape(title)}</a>'
        if rng.random() < 0.5:
            items.append(f"<li>{link}<span>（{escape(meta)}）</span>：{escape(summary)}</li>")
        else:
            tag = s.tag(3)
            items.append(
                f"<li><{tag}>{link}</{tag}><span>（{escape(meta)}）：</span>"
                f"<p>{escape(summary)}</p></li>"
            )
    article = (
        f"<article><header><{s.h(1)}>{escape(name)}</{s.h(1)}><p>{escape(desc)}</p>{fields}"
        f"</header><section><{s.h(2)}>{escape(section)}</{s.h(2)}><ol>{''.join(items)}</ol>"
        "</section><hr></article>"
    )
    source, _, rest = notice[1].partition("（")
    link = rest.rstrip("）")
    footer = (
        f"<p>{escape(notice[0])}</p><p>{escape(source)}（"
        f'<a href="{escape(link)}">{escape(link)}</a>）</p>'
    )
    return s.page(name, article, footer)


def topic_list(rng: Random, desc: str, stats: str, entries: Sequence[Entry]) -> str:
    s = Shape(rng)
    spans = " · ".join(f"<span>{escape(p)}</span>" for p in stats.split(" · "))
    head = f"<header>{s.heading(1, desc)}<p>{spans}</p></header>"
    return s.page(desc[:20], f"<article>{head}{s.cards(entries, 2)}</article>")


def item_page(
    rng: Random,
    byline: tuple[str, str],
    main: Entry,
    facts: Sequence[str],
    related: Sequence[Entry],
) -> str:
    s = Shape(rng)
    titles, summary = main
    own = [
        f"<div><span>{escape(byline[0])}</span>··<time>{escape(byline[1])}</time></div>",
        f"<{s.h(1)}>{escape(titles[0])}</{s.h(1)}>",
        *(f"<div>{escape(t)}</div>" for t in titles[1:]),
        f"<p>{escape(summary)}</p>",
        "<ul>" + "".join(f"<li>{escape(f)}</li>" for f in facts) + "</ul>",
    ]
    box = f'<section id="r">{s.heading(2, "推荐阅读")}{s.cards(related, 3)}</section>'
    return s.page(titles[0], f"<article>{''.join(own)}</article>{box}")
