"""The run report for the curator: ``report.html``, and the pages beside it in ``report/``.

The report page opens with what needs the curator — the changes against the previous
publish (each changed field before and now, what differs marked), then the problems
(rejects by reason, topics whose counts differ, run warnings), the topics, the files and
the decisions — and shows the first entries of each long list; every entry is on the pages
beside it (``report/KEY-N.html``), each under 3 MB, whatever the size of the run (see
:mod:`.pager`). The pipeline's own counts are folded away at the end.

Every page is one HTML file with its CSS inline and no script: nothing on it loads
anything (a Content-Security-Policy of ``default-src 'none'`` plus the hash of the page's
own style says so to the browser too, so even a text that escaped its escaping could
neither run nor fetch). Jinja2 renders the frames with autoescape on; entries are built
by :mod:`.rows`, :mod:`.changes` and :mod:`.sections`, which escape every value. No clock
is read and the report's timing is left out: the same run gives the same bytes
(``tests/golden/``). All of it is made by one child process while the rest of the publish
is written (:class:`~ingest.records.run.Apart`).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Iterator
from functools import cache
from importlib.resources import files
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, Template
from markupsafe import Markup

from ... import SCHEMA_VERSION, __version__
from ...records.run import PAGE, PAGES, Apart, FileSink, RunOutput
from .book import Book, Listing
from .rows import TOPICS, Shown
from .sections import chart_bars
from .text import escape

__all__ = ["page_content", "render_pages"]

#: Links to a list's pages the report page shows (the first ones, then the last).
PAGE_LINKS = 40


def page_content(run: RunOutput) -> Apart:
    """``report.html`` and the pages beside it (``report/``), made apart: the pages first
    (how many there are, and where each item's row is, is known once they are made)."""
    book = Book(run)

    def beside(write: FileSink) -> None:
        book.write_pages(write, _page_pieces)

    return Apart(lambda: _report_pieces(book), PAGES, beside)


def render_pages(run: RunOutput) -> dict[str, bytes]:
    """Every page for ``run``: ``report.html`` and ``report/…``, by name in the publish."""
    content = page_content(run)
    found: dict[str, bytes] = {}

    def keep(name: str, pieces: Iterable[bytes]) -> None:
        found[f"{PAGES}/{name}"] = b"".join(pieces)

    assert content.beside is not None
    content.beside(keep)
    return {PAGE: b"".join(content.pieces()), **found}


def _report_pieces(book: Book) -> Iterator[bytes]:
    s = book.shown(f"{PAGES}/")
    lists = {x.key: x for x in book.lists}
    shown = {key: book.first(x, s) for key, x in lists.items()}
    topics = book.pages[TOPICS]
    variables = {
        "view": book.view,
        "report": book.run.report,
        "x": lists,
        "count": {key: len(shown[key]) for key in lists},
        "shown": {key: Markup(_around(x, shown[key])) for key, x in lists.items()},
        "more": {
            key: Markup(_more(x, book.pages[key], len(shown[key]), s)) for key, x in lists.items()
        },
        "chart": book.chart,
        "bars": Markup(chart_bars(book.chart, s)),
        "topic_pages": topics,
        "topic_links": Markup(_links(TOPICS, topics, s)),
        **_frame(),
    }
    yield from _batched(rendered(environment().get_template("report.html.j2"), variables))


def _around(x: Listing, entries: list[str]) -> str:
    return x.head + "".join(entries) + x.tail if entries else ""


def _more(x: Listing, pages: int, shown: int, s: Shown) -> str:
    """Where all of a list's entries are: its pages, linked."""
    if pages == 0:
        return ""
    what = "All of them" if shown < len(x.entries) else "On a page of its own"
    return f'<p class="more">{what}: page{"s" if pages > 1 else ""} {_links(x.key, pages, s)}</p>\n'


def _links(key: str, pages: int, s: Shown) -> str:
    """Links to the pages of a list: all, or the first ones and the last."""

    def link(n: int) -> str:
        return f'<a href="{escape(s.links.page(key, n))}">{n}</a>'

    if pages <= PAGE_LINKS:
        return " · ".join(map(link, range(1, pages + 1)))
    return " · ".join(map(link, range(1, PAGE_LINKS))) + " … " + link(pages)


def _page_pieces(x: Listing, n: int, last: bool, body: str) -> Iterator[bytes]:
    variables = {
        "title": x.title,
        "key": x.key,
        "n": n,
        "last": last,
        "section": x.section,
        "body": Markup(body),
        **_frame(),
    }
    return _batched(rendered(environment().get_template("page.html.j2"), variables))


def _frame() -> dict[str, Any]:
    css = style()
    return {
        "css": Markup(css),  # our own file, not run data
        "csp": content_security_policy(css),
        "schema_version": SCHEMA_VERSION,
        "version": __version__,
    }


def rendered(template: Template, variables: dict[str, Any]) -> Iterator[str]:
    """``template.generate(variables)``, with the context let go when done: a template's
    macros and its context refer to each other, a cycle only the garbage collector frees,
    and it would hold the whole run until a full collection (0.5 s at 100 MB)."""
    context = template.new_context(variables)
    try:
        yield from template.root_render_func(context)
    except Exception:
        template.environment.handle_exception()  # raises it with the template's own lines
    finally:
        context.vars.clear()
        context.parent.clear()


def _batched(pieces: Iterator[str], size: int = 1 << 18) -> Iterator[bytes]:
    """The template's many small pieces, joined and encoded a quarter megabyte at a time."""
    batch: list[str] = []
    held = 0
    for piece in pieces:
        batch.append(piece)
        held += len(piece)
        if held >= size:
            yield "".join(batch).encode("utf-8")
            batch, held = [], 0
    yield "".join(batch).encode("utf-8")


@cache
def environment() -> Environment:
    """Jinja2 with autoescape on for every template (not by file name) and undefined
    names an error, so a template typo fails the tests instead of printing nothing."""
    return Environment(
        loader=PackageLoader("ingest.outputs.page", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


@cache
def style() -> str:
    """The pages' CSS (``report.css``), inlined into each page's ``<style>`` element."""
    return files(__name__).joinpath("report.css").read_text(encoding="utf-8")


def content_security_policy(css: str) -> str:
    """Nothing may load or run; only the page's own style, pinned by its hash, applies."""
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return f"default-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
