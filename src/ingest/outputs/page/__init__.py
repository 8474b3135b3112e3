"""The run report as one self-contained web page (``report.html``) for the curator.

One HTML file with its CSS inline and no script: nothing on it loads anything (a
Content-Security-Policy of ``default-src 'none'`` plus the hash of the page's own style
says so to the browser too, so even a text that escaped its escaping could neither run
nor fetch). Jinja2 renders it with autoescape on for every template, so every text of
the run is shown as text. No clock is read and the report's timing is left out: the
same run gives the same bytes (``tests/golden/report.html``).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator
from functools import cache
from importlib.resources import files
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, Template
from markupsafe import Markup

from ... import SCHEMA_VERSION, __version__
from ...records.run import RunOutput
from .chart import build_chart
from .rows import conflicts, decisions, item_cells, item_ref, or_dash, topic_ref, topic_table
from .sections import change_items, chart_bars, file_rows, reject_rows, topic_section
from .view import FOLD_OVER, build_view, safe_href

__all__ = ["page_pieces", "render_page"]


def render_page(run: RunOutput) -> bytes:
    """The bytes of ``report.html`` for ``run``."""
    return b"".join(page_pieces(run))


def page_pieces(run: RunOutput) -> Iterator[bytes]:
    """``report.html`` for ``run`` in pieces, as the template renders them (a large run's
    page is tens of megabytes: it is written as it is made)."""
    view = build_view(run)
    css = style()
    template = environment().get_template("report.html.j2")
    return _batched(
        rendered(
            template,
            {
                "view": view,
                "cells": {i.id: item_cells(i) for i in run.items},  # once, not per topic
                "report": run.report,
                "chart": build_chart(view.topics),
                "css": Markup(css),  # our own file, not run data
                "csp": content_security_policy(css),
                "schema_version": SCHEMA_VERSION,
                "version": __version__,
                "fold_over": FOLD_OVER,
            },
        )
    )


def rendered(template: Template, variables: dict[str, Any]) -> Iterator[str]:
    """``template.generate(variables)``, with the context let go when done: a template's
    macros and its context refer to each other, a cycle only the garbage collector frees,
    and it held the whole run (a full collection, 0.5 s at 100 MB)."""
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
    env = Environment(
        loader=PackageLoader("ingest.outputs.page", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["href"] = safe_href
    env.globals.update(decisions=decisions, conflicts=conflicts)
    env.globals.update(topic_section=topic_section, topic_table=topic_table)
    env.globals.update(file_rows=file_rows, reject_rows=reject_rows)
    env.globals.update(change_items=change_items, chart_bars=chart_bars)
    # the references and dashes rows.py writes, for the templates too (one markup for both)
    env.globals.update(
        item_ref=_markup(item_ref), topic_ref=_markup(topic_ref), or_dash=_markup(or_dash)
    )
    return env


def _markup(func: Callable[..., str]) -> Callable[..., Markup]:
    """``func``, whose output is already escaped HTML, marked so for autoescape."""

    return lambda *args: Markup(func(*args))


@cache
def style() -> str:
    """The page's CSS (``report.css``), inlined into its ``<style>`` element."""
    return files(__name__).joinpath("report.css").read_text(encoding="utf-8")


def content_security_policy(css: str) -> str:
    """Nothing may load or run; only the page's own style, pinned by its hash, applies."""
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return f"default-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
