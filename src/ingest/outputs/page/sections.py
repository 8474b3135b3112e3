"""The page's long lists as Python string building: a topic's block, the rows of the files,
rejects and changes, the chart's bars. A large run has thousands of each (a hundred thousand
topic rows); Jinja loops and macro calls cost several times more per entry. Every value goes
through :func:`.rows.escape` (numbers and our own words aside); the templates insert the
:class:`Markup` as it is. The bytes are those the templates wrote (the golden page, the
harness's runs and the hostile ones were compared).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from markupsafe import Markup

from ...records.output import Change, FileReport, Reject
from .chart import Chart
from .rows import escape, item_ref, or_dash, topic_ref, topic_table
from .view import TopicView, safe_href


def topic_section(t: TopicView, cells: Mapping[str, str], open_: bool) -> Markup:
    """A topic's ``<details>`` block: its summary line, its facts, its table of items."""
    topic, check, n = t.topic, t.check, len(t.rows)
    slug = escape(topic.slug)
    badge = ""
    if check is not None:
        badge = " " + _badge("declared counts " + ("match" if check.ok else "differ"), check.ok)
    href = safe_href(topic.url)
    url = f'<a href="{escape(href)}" rel="noreferrer">{escape(topic.url)}</a>' if href else None
    parts = [
        f'<details class="topic" id="topic-{slug}"{" open" if open_ else ""}>\n<summary>'
        f'<span class="name" lang="zh">{escape(t.title)}</span> <code>{slug}</code> '
        f'<span class="count">{n_of(n, "item")}</span>{badge}</summary>\n'
        '<div class="topic-body">\n',
        f'<p lang="zh">{escape(topic.description)}</p>' if topic.description else "",
        f'<dl class="facts">\n<div><dt>category</dt><dd lang="zh">{or_dash(topic.category)}'
        f'</dd></div>\n<div><dt>url</dt><dd class="path">{url or or_dash(topic.url)}</dd></div>\n',
    ]
    if check is not None:
        count = check.declared_count
        declared = "not declared" if count is None else n_of(count, "item")
        parts.append(
            f"<div><dt>declared</dt><dd>{declared}{_levels(check.declared_levels.items())}"
            f"</dd></div>\n<div><dt>found on the page</dt><dd>{n_of(check.found_count, 'item')}"
            f"{_levels(check.found_levels.items())}</dd></div>\n"
        )
    shown = _levels((lv or "no level", k) for lv, k in t.levels)
    parts.append(f"<div><dt>in this report</dt><dd>{n_of(n, 'item')}{shown}</dd></div>\n</dl>\n")
    parts.append(topic_table(t.rows, cells))
    parts.append("\n</div>\n</details>")
    return Markup("".join(parts))


def n_of(count: int, noun: str) -> str:
    """``12 items``, ``1 item``."""
    return f"{count} {noun if count == 1 else noun + 's'}"


def _badge(value: str, good: bool) -> str:
    return f'<span class="badge {"good" if good else "bad"}">{escape(value)}</span>'


def _levels(counts: Iterable[tuple[str, int]]) -> str:
    return "".join(f", {escape(level)} {n}" for level, n in counts)


def file_rows(files: Iterable[FileReport]) -> Markup:
    """The rows of a table of files, one ``<tr>`` each."""
    return Markup("".join(map(_file_row, files)))


def _file_row(f: FileReport) -> str:
    status = escape(f.status)
    warnings = "0"
    if f.warnings:
        shown = "".join(f"<li>{escape(w)}</li>" for w in f.warnings)
        warnings = (
            f'<details><summary>{len(f.warnings)}</summary><ul class="warnings">{shown}'
            "</ul></details>"
        )
    return (
        f'<tr>\n<td data-label="File" class="path wide"><code>{escape(f.file)}</code></td>\n'
        f'<td data-label="Status"><span class="badge st-{status}">{status}</span></td>\n'
        f'<td data-label="Kind">{escape(f.format or "—")}</td>\n'
        f'<td data-label="Encoding">{escape(f.encoding or "—")}</td>\n'
        f'<td data-label="Bytes" class="num">{f.bytes}</td>\n'
        f'<td data-label="Listings" class="num">{f.listings}</td>\n'
        f'<td data-label="Rejected" class="num">{f.rejected_listings}</td>\n'
        f'<td data-label="Warnings">{warnings}</td>\n</tr>\n'
    )


def reject_rows(rejects: Iterable[Reject]) -> Markup:
    """The rows of the table of rejects, one ``<tr>`` each."""
    return Markup("".join(map(_reject_row, rejects)))


def _reject_row(r: Reject) -> str:
    line = "" if r.locator.startswith("line ") else f" · line {r.line}"
    return (
        f'<tr>\n<td data-label="File" class="path"><code>{escape(r.file)}</code></td>\n'
        f'<td data-label="Where">{escape(r.locator)}{line} · byte {r.byte_offset}</td>\n'
        f'<td data-label="Reason"><code>{escape(r.reason)}</code></td>\n'
        f'<td data-label="Message" class="wide">{escape(r.message)}</td>\n'
        f'<td data-label="Excerpt" class="wide"><pre class="excerpt">{escape(r.excerpt)}</pre>'
        "</td>\n</tr>\n"
    )


def change_items(
    changes: Iterable[Change], titles: Mapping[str, str], slugs: frozenset[str]
) -> Markup:
    """One ``<li>`` a change: the record, the fields it changed, what it was merged into."""
    return Markup("".join(_change(c, titles, slugs) for c in changes))


def _change(c: Change, titles: Mapping[str, str], slugs: frozenset[str]) -> str:
    def ref(key: str) -> str:
        return item_ref(key, titles) if c.entity == "item" else topic_ref(key, slugs)

    fields = ", ".join(f"<code>{escape(f)}</code>" for f in c.fields)
    shown = f' · fields: <span class="fields">{fields}</span>' if c.fields else ""
    into = f" → merged into {ref(c.into)}" if c.into else ""
    return f"<li>{ref(c.id)}{shown}{into}</li>\n"


def chart_bars(chart: Chart) -> Markup:
    """The chart's bars: a link to each topic, its label, one rectangle a level, its total."""
    out = []
    for bar in chart.bars:
        label = escape(bar.full_label)
        out.append(
            f'<a href="#topic-{escape(bar.slug)}">\n<title>{label}: {bar.total} items</title>\n'
            f'<text class="label" x="0" y="{bar.top + 12}">{escape(bar.label)}</text>\n'
        )
        y = bar.top + chart.bar_top
        for s in bar.segments:
            what = "with no level" if s.level == "none" else escape(s.level)
            out.append(
                f'<rect class="lv-{escape(s.level)}" x="{escape(s.x)}" y="{y}" '
                f'width="{escape(s.width)}" height="{chart.bar_height}"><title>{label}: '
                f"{s.count} {what}</title></rect>\n"
            )
        out.append(
            f'<text class="total" x="{escape(bar.end)}" dx="5" y="{y + 11}">{bar.total}</text>\n'
            "</a>\n"
        )
    return Markup("".join(out))
