"""Texts as the report's pages show them: escaped, shortened, and the bytes they take.

Every page has a size it must stay under (see :mod:`.plan`), known before it is written:
each text shown is cut to a number of characters, and :func:`bound` counts the bytes it
takes escaped and encoded, plus :data:`AROUND` for the markup around it; a text the
bound cannot see (a level's label) counts :data:`CHAR_BYTES` a character, the most one
takes (``&#34;``-like entities are 5 bytes, UTF-8 at most 4).
"""

from __future__ import annotations

#: The most bytes one character of a text can take on a page, escaped and encoded.
CHAR_BYTES = 6
#: How many characters of a text a page shows, by what it is.
NAME = 200  # a title, a topic's name, a file's name, an id
TEXT = 600  # a summary, a message, an excerpt, a changed value
URL = 500  # a longer link is shown as text, not linked
#: The markup around a shown text (its cell's tags, a link's) at most: added to its bound.
AROUND = 100
#: The end of a table of entries.
TABLE_TAIL = "</tbody>\n</table>\n"
#: Lists inside one entry (a file's warnings, a conflict's values) show this many.
INNER = 20


def escape(value: object) -> str:
    """``markupsafe.escape``'s output for a plain value (``& < > ' "``), as a str: its
    Python wrapper and the Markup it builds cost more than the escaping, a million times."""
    return (
        str(value)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut.

    >>> shorten("abcdef", 4), shorten("abc", 4)
    ('abc…', 'abc')
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(text: str | None, limit: int = NAME) -> str:
    """``text`` shortened to ``limit`` and escaped; a dash for nothing."""
    if text is None or text == "":
        return NONE
    return escape(shorten(text, limit))


NONE = '<span class="none">—</span>'


def bound(*texts: str | None, limit: int = NAME, around: int = AROUND) -> int:
    """The bytes ``texts``, each :func:`shown` with ``limit``, take, with ``around`` bytes
    of markup each.

    >>> bound("a&b", None), bound("模型" * 300, limit=TEXT)
    (236, 1900)
    """
    return sum(len(shown(t, limit).encode("utf-8")) + around for t in texts)


def blind(chars: int) -> int:
    """The most bytes a text of ``chars`` characters not known yet takes, with its markup."""
    return CHAR_BYTES * chars + AROUND


def safe_href(url: str | None) -> str | None:
    """``url`` if it may be a link (http or https, not over :data:`URL` characters), else
    None. Records hold only such URLs already; the page checks again rather than trust its
    input.

    >>> safe_href("https://a.example/x"), safe_href("javascript:alert(1)"), safe_href(None)
    ('https://a.example/x', None, None)
    """
    if url is None or len(url) > URL:
        return None
    return url if url.lower().startswith(("http://", "https://")) else None


def n_of(count: int, noun: str) -> str:
    """``12 items``, ``1 item``."""
    return f"{count} {noun if count == 1 else noun + 's'}"
