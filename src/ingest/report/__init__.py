"""The run report for the curator: ``report.html``, and the pages beside it in ``report/``.

The report page opens with the changes against the previous publish, then the problems, the
topics, the files and the decisions, each long list's first entries; every entry is on the
pages beside it (``report/KEY-N.html``), each under 3 MB whatever the size of the run.

Every page is one HTML file with its CSS inline and no script: nothing on it loads anything
(a Content-Security-Policy of ``default-src 'none'`` plus the hash of the page's own style
says so to the browser too). Jinja2 renders the frames with autoescape on; :mod:`.sections`
escapes every value of the entries. No clock is read and the report's timing is left out:
the same run gives the same bytes (``tests/golden/``).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from importlib.resources import files
from itertools import chain
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, Template
from markupsafe import Markup

from ingest import SCHEMA_VERSION, __version__
from ingest.contract import Topic
from ingest.publish.folder import write_file
from ingest.records import PAGE, PAGES, RunOutput, unpacked
from ingest.report.sections import (
    TOPICS,
    Links,
    Listing,
    Places,
    Shown,
    build_chart,
    escape,
    item_cells,
    listings,
    topic_blocks,
)
from ingest.report.view import Entry, build_view, first, paged

__all__ = ["render_pages", "write_report", "write_report_into"]

#: Writes one file of a folder: ``write(name in the folder, its pieces)``.
FileSink = Callable[[str, Iterable[bytes]], None]
#: Links to a list's pages the report page shows (the first ones, then the last).
PAGE_LINKS = 40


class Book:
    """The report page and the pages beside it, for one run: first the pages of the topics'
    blocks (where each item's and topic's row lands), then every other list's, then the
    report page."""

    def __init__(self, run: RunOutput) -> None:
        self.run = run
        self.view = build_view(run)
        self.lists = listings(run, self.view)
        self.pages: dict[str, int] = {}  # list → how many pages it has, once written
        self.anchors: dict[str, int] = {}  # "item-ID" / "topic-SLUG" → its page of topics
        self.places: Places = {}  # each item's place on each topic
        for i in run.items:
            for t in i.topics:
                self.places.setdefault(t.slug, {})[i.id] = t
        self.cells = {i.id: item_cells(i) for i in run.items}  # its cells in a topic's table

    def shown(self, prefix: str) -> Shown:
        """What the entries need, for a page whose links to the others start ``prefix``."""
        return Shown(self.view, Links(prefix, self.anchors), self.places, self.cells)

    def write_pages(self, write: FileSink) -> None:
        """Every page beside the report page, through ``write(name, pieces)``."""
        s = self.shown("")
        seen: set[str] = set()
        blocks = chain.from_iterable(topic_blocks(t, ids, s, seen) for t, ids in self._topics())
        self._write(Listing(TOPICS, "Topics and their items", "topics", [], _no_row), blocks, write)
        for x in self.lists:
            self._write(x, (Entry(x.row(e, s)) for e in x.entries), write)

    def _write(self, x: Listing, entries: Iterator[Entry], write: FileSink) -> None:
        self.pages[x.key] = 0
        for page in paged(entries):
            self.anchors.update(dict.fromkeys(page.marks, page.n))
            write(f"{x.key}-{page.n}.html", _page_pieces(x, page.n, page.last, page.html))
            self.pages[x.key] = page.n

    def _topics(self) -> list[tuple[Topic | None, Sequence[str]]]:
        """Each topic and its items, then the items on no topic (if any)."""
        listed = {i for t in self.run.topics for i in t.items}
        unlisted = [i.id for i in self.run.items if i.id not in listed]
        return [*((t, t.items) for t in self.run.topics), *([(None, unlisted)] if unlisted else [])]


def _no_row(entry: Any, s: Shown) -> str:
    raise AssertionError("the topics' blocks are made by topic_blocks")


def write_report(run: RunOutput, write: FileSink) -> None:
    """``report.html`` and the pages beside it (``report/NAME``), each given to ``write``:
    the pages first (how many there are, and where each item's row is, is known once they
    are made)."""
    book = Book(run)
    book.write_pages(lambda name, pieces: write(f"{PAGES}/{name}", pieces))
    write(PAGE, _report_pieces(book))


def write_report_into(folder: Path, data: bytes) -> dict[str, tuple[int, str]]:
    """The report's pages of the run ``data`` packs (:func:`~ingest.records.packed`),
    written into ``folder`` (a publish being made: a worker writes them while the rest of
    it is written); each file's size and digest, by name."""
    run, written = unpacked(data), {}

    def write(name: str, pieces: Iterable[bytes]) -> None:
        (folder / name).parent.mkdir(exist_ok=True)
        found = write_file(folder / name, pieces)
        written[name] = (found.size, found.xxh3_128)

    write_report(run, write)
    return written


def render_pages(run: RunOutput) -> dict[str, bytes]:
    """Every page for ``run``: ``report.html`` and ``report/…``, by name in the publish."""
    found: dict[str, bytes] = {}
    write_report(run, lambda name, pieces: found.update({name: b"".join(pieces)}))
    return found


def _report_pieces(book: Book) -> Iterator[bytes]:
    s = book.shown(f"{PAGES}/")
    lists = {x.key: x for x in book.lists}
    shown = {key: first(x.row(e, s) for e in x.entries) for key, x in lists.items()}
    chart = build_chart(book.run.topics, s)
    return _pieces(
        "report.html.j2",
        view=book.view,
        report=book.run.report,
        x=lists,
        count={key: len(shown[key]) for key in lists},
        shown={key: Markup(_around(x, shown[key])) for key, x in lists.items()},
        more={
            key: Markup(_more(x, book.pages[key], len(shown[key]), s)) for key, x in lists.items()
        },
        chart=chart,
        bars=Markup("".join(chart.bars)),
        topic_pages=book.pages[TOPICS],
        topic_links=Markup(_links(TOPICS, book.pages[TOPICS], s)),
    )


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


def _page_pieces(x: Listing, n: int, last: bool, entries: str) -> Iterator[bytes]:
    body = Markup(x.head + entries + x.tail)
    return _pieces(
        "page.html.j2", title=x.title, key=x.key, n=n, last=last, section=x.section, body=body
    )


def _pieces(template: str, **variables: Any) -> Iterator[bytes]:
    """``template`` rendered in the pages' frame (their style, its hash, the versions), joined
    and encoded a quarter megabyte at a time."""
    css = style()
    variables |= {
        "css": Markup(css),  # our own file, not run data
        "csp": content_security_policy(css),
        "schema_version": SCHEMA_VERSION,
        "version": __version__,
    }
    batch: list[str] = []
    held = 0
    for piece in rendered(environment().get_template(template), variables):
        batch.append(piece)
        held += len(piece)
        if held >= 1 << 18:
            yield "".join(batch).encode("utf-8")
            batch, held = [], 0
    yield "".join(batch).encode("utf-8")


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


@cache
def environment() -> Environment:
    """Jinja2 with autoescape on for every template (not by file name) and undefined
    names an error, so a template typo fails the tests instead of printing nothing."""
    return Environment(
        loader=PackageLoader("ingest.report", "templates"),
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
