"""Texts as the report's pages show them: escaped, and cut to a length, so that one entry
of a list (a row, a change) stays small whatever the run's texts are: a page is filled
entry by entry up to its size (see :mod:`.pager`).
"""

from __future__ import annotations

#: How many characters of a text a page shows, by what it is.
NAME = 200  # a title, a topic's name, a file's name, an id
TEXT = 600  # a summary, a message, an excerpt, a changed value
URL = 500  # a longer link is shown as text, not linked
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
