"""Render saved HTML pages as text in the dump format of their page kind.

A saved ``.html`` page of any page kind (topic-page, topic-list, item-page) is turned into
the text a browser shows (its ``innerText``, in reading order), written with the same
conventions as the text dumps, so that the text parsers read it unchanged. It is written
twice (:mod:`.views`): as markdown, the dump shape of a topic page, and as plain text, that
of a topic list and an item page; the page is of the kind whose shape it then takes. The
markdown is written so:

* site chrome is removed first (:mod:`.chrome`): the page's ``main`` (else its only
  ``article``) is rendered, without navigation, banners, sidebars, cookie and share bars;
  a block that carries one of the page's structural marks always stays;
* ``script``, ``style``, ``noscript``, ``template``, ``head``, ``title``, ``svg``, ``iframe``
  and other non-rendered elements, comments, elements with the ``hidden`` attribute and
  elements with an inline ``display: none`` produce no text;
* block elements start a new line, inline elements stay on it; runs of white space inside a
  line collapse to one space; empty lines are dropped;
* headings become ``# `` .. ``###### `` lines by their level among the page's headings,
  ``hr`` a ``---`` line;
* ``ul > li`` becomes ``- item``, ``ol > li`` becomes ``N. item`` (``N`` from the list's
  ``start`` or the item's ``value``, counting up), an ``ol > li`` on one line however many
  blocks it holds, up to the one that ends a sentence;
* an ``a`` inside an ``ol > li`` becomes a markdown link ``[text](href)`` with ``\\ [ ] ( )``
  escaped in the text; every other ``a`` is just its text.

The plain text follows the same rules but for the marks: no heading marks, no rules, no
links, and a list item's marker only on an item of one line (a card's lines are bare).

Character references are decoded exactly once, by the HTML parser: ``&amp;lt;b&amp;gt;``
becomes the text ``&lt;b&gt;``, and ``&lt;b&gt;`` becomes the visible text ``<b>`` (kept, as a
browser shows it, and reported in the warnings).

selectolax's lexbor parser is used first. BeautifulSoup (``html.parser``) takes over when
lexbor raises, finds no visible text, or the markup nests so deep that lexbor's tree
builder would take quadratic time. Both trees are walked with an explicit stack, so no
document can exhaust the recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from .chrome import strip_chrome
from .render import render_events
from .sniff import looks_like_html, nests_deeper_than
from .tree import TAG_LIKE, Event, lexbor_walk, soup_walk
from .views import markdown, plain

__all__ = [
    "PARSER_BEAUTIFULSOUP",
    "PARSER_SELECTOLAX",
    "HtmlText",
    "html_to_text",
    "looks_like_html",
]

PARSER_SELECTOLAX: Final = "selectolax"
PARSER_BEAUTIFULSOUP: Final = "beautifulsoup"


@dataclass(frozen=True, slots=True)
class HtmlText:
    """The visible text of an HTML page in dump format, with how it was obtained."""

    text: str  # as markdown, the shape of a topic page's dump
    parser: str
    warnings: tuple[str, ...] = ()
    plain: str = ""  # as plain text, the shape of a topic list's or an item page's dump


_LEXBOR_MAX_DEPTH: Final = 2000


def html_to_text(html: str) -> HtmlText:
    """Render ``html`` as dump-format text (see the module docstring for the rules)."""
    warnings: list[str] = []
    if nests_deeper_than(html, _LEXBOR_MAX_DEPTH):
        warnings.append(
            f"markup nests more than {_LEXBOR_MAX_DEPTH} elements deep; "
            "used beautifulsoup instead of selectolax"
        )
    else:
        try:
            text = _render(lexbor_walk(html), warnings)
        except Exception as exc:  # any parser failure means: try the other parser
            warnings.append(f"selectolax failed ({type(exc).__name__}: {exc}); used beautifulsoup")
        else:
            if text[0]:
                return _result(text, PARSER_SELECTOLAX, warnings)
            warnings.append("selectolax found no visible text; used beautifulsoup")
            return _soup_result(html, warnings, trust_markup_like=False)
    return _soup_result(html, warnings)


def _soup_result(html: str, warnings: list[str], *, trust_markup_like: bool = True) -> HtmlText:
    """Render with BeautifulSoup; ``trust_markup_like=False`` drops text that looks like tags.

    When lexbor (a conforming HTML5 parser) found nothing visible, tag-like text from
    ``html.parser`` is markup it failed to parse (an unterminated comment or attribute
    value makes it emit the rest of the document as text), not content.
    """
    try:
        text = _render(soup_walk(html), warnings)
    except Exception as exc:  # a page neither parser can read yields no text, not a crash
        warnings.append(f"beautifulsoup failed ({type(exc).__name__}: {exc})")
        text = ("", "")
    if text[0] and not trust_markup_like and TAG_LIKE.search(text[0]):
        warnings.append("beautifulsoup returned unparsed markup as text; dropped it")
        text = ("", "")
    if not text[0]:
        warnings.append("no visible text in the HTML")
    return _result(text, PARSER_BEAUTIFULSOUP, warnings)


def _render(walk: Callable[[], Iterator[Event]], warnings: list[str]) -> tuple[str, str]:
    """The page's content, its site chrome removed (see :mod:`.chrome`), as markdown and
    as plain text."""
    events, removed = strip_chrome(walk)
    lines = render_events(events)
    if removed and not lines:
        warnings.append("every visible text is in site chrome: rendered the whole page")
        events = list(walk())
        lines = render_events(events)
    elif removed:
        shown = ", ".join(removed[:5]) + (", ..." if len(removed) > 5 else "")
        warnings.append(
            f"CHROME_REMOVED: {len(removed)} block(s) of site navigation, banners, bars or "
            f"text outside the page's content not rendered: {shown}"
        )
    return markdown(lines), plain(render_events(events, links=False))


def _result(text: tuple[str, str], parser: str, warnings: list[str]) -> HtmlText:
    tag_like = TAG_LIKE.findall(text[0])
    if tag_like:
        warnings.append(
            f"visible text contains {len(tag_like)} tag-like run(s), first {tag_like[0]!r} "
            "(written as character references in the HTML; kept as text)"
        )
    return HtmlText(text=text[0], parser=parser, warnings=tuple(warnings), plain=text[1])
