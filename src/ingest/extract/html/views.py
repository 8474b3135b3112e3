"""Rendered lines written in the dump shape of a page kind.

The three page kinds come as two kinds of dump: a topic page as markdown, a topic list and
an item page as the text a browser shows. A saved page's markup varies where its text does
not (heading levels, list or card markup), so each view writes the text as its dump does:

* :func:`markdown` (topic pages): headings are marked by their level among the page's
  headings (its top level ``#``, the next one down ``##``, ...), so a page whose headings
  are all a level or two deeper reads the same; an ordered list's item is one line, its
  blocks (a card's heading, meta and summary) joined by spaces after its number, up to the
  block that ends a sentence (what follows it in the item, a card's buttons, stays on lines
  of its own, as a line after a finished summary in a dump); a heading inside a list item
  is that item's text; a rule is ``---``.
* :func:`plain` (topic lists, item pages): no heading marks and no rules; a list item keeps
  its marker (``- 分级``) only when it is a single line, so the lines of a card (a title,
  an original title, a summary) read as they do in a text dump.
"""

from __future__ import annotations

from collections import Counter

from ..parse.base import ends_sentence
from .render import Line


def markdown(lines: list[Line]) -> str:
    """``lines`` rendered with links (:func:`~.render.render_events`), as markdown."""
    levels = sorted({x.heading for x in lines if x.heading and x.item < 0})
    ranks = {level: rank for rank, level in enumerate(levels, 1)}
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.ordered:
            j = i + 1
            while (
                j < len(lines)
                and lines[j].item == line.item
                and not ends_sentence(lines[j - 1].text)
            ):
                j += 1
            out.append(line.marker + " ".join(x.text for x in lines[i:j]))
            i = j
            continue
        if line.heading and line.item < 0:
            out.append("#" * ranks[line.heading] + " " + line.text)
        else:
            out.append(line.marker + line.text)
        i += 1
    return "\n".join(out)


def plain(lines: list[Line]) -> str:
    """``lines`` rendered without links (:func:`~.render.render_events`), as plain text."""
    sizes = Counter(x.item for x in lines)
    return "\n".join(
        (x.marker if sizes[x.item] == 1 else "") + x.text for x in lines if x.text != "---"
    )
