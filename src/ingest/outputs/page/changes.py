"""The entries that show two texts side by side, what differs marked (:mod:`.diff`): a
change against the previous publish (each changed field, its value before and now), a
decision (the two listings judged one resource) and a field conflict of a merge.
"""

from __future__ import annotations

import json
from typing import Any

from ...records.output import Conflict, Decision, DecisionSide
from .diff import marked
from .rows import Shown, item_ref, topic_ref
from .text import INNER, NAME, NONE, TEXT, escape, shorten, shown
from .view import ChangeEntry

# --------------------------------------------------------------------------- changes


def change_row(e: ChangeEntry, s: Shown) -> str:
    """A change: what it is and to which record; a changed record's fields, each with its
    value before and now; what a merged item went into."""
    c = e.change
    ref = item_ref if c.entity == "item" else topic_ref
    head = f'<span class="badge op-{escape(c.op)}">{escape(c.entity)} {escape(c.op)}</span> '
    if c.op in ("removed", "merged"):  # gone from this publish: its id, and what it was
        was = e.before.get("title")
        head += f"<code>{shown(c.id)}</code>"
        head += f' <span lang="zh">{shown(was)}</span>' if isinstance(was, str) else ""
    else:
        head += ref(c.id, s)
    if c.into is not None:
        head += f" → merged into {ref(c.into, s)}"
    fields = "".join(_field(f, e.before.get(f), e.after.get(f)) for f in c.fields)
    return f'<article class="change">\n<h3>{head}</h3>\n{fields}</article>\n'


def _field(name: str, before: Any, after: Any) -> str:
    old, new = value_text(before), value_text(after)
    if old is None or new is None:  # nothing to mark against: the one there is, whole
        was = NONE if old is None else f"<del>{escape(old)}</del>"
        now = NONE if new is None else f"<ins>{escape(new)}</ins>"
    else:
        was, now = marked(old, new)
    return (
        f'<div class="field"><p class="field-name"><code>{shown(name)}</code></p>\n'
        f'<p class="old"><span class="tag">before</span> <span lang="zh">{was}</span></p>\n'
        f'<p class="new"><span class="tag">now</span> <span lang="zh">{now}</span></p></div>\n'
    )


def value_text(value: Any) -> str | None:
    """A field's value as the page shows it: a text as it is, another value as its JSON;
    cut to :data:`.text.TEXT` characters. None: no value (null, or a field one side lacks).

    >>> value_text("一段摘要"), value_text(None), value_text([{"slug": "a", "rank": 2}])
    ('一段摘要', None, '[{"slug": "a", "rank": 2}]')
    """
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return shorten(text, TEXT)


# --------------------------------------------------------------------------- decisions


def decision_row(d: Decision, s: Shown) -> str:
    """A decision with both texts side by side, what differs between them marked."""
    title_a, title_b = marked(shorten(d.a.title or "", NAME), shorten(d.b.title or "", NAME))
    text_a, text_b = marked(shorten(d.a.summary_zh, TEXT), shorten(d.b.summary_zh, TEXT))
    sides = _side("A", d.a, title_a, text_a) + _side("B", d.b, title_b, text_b)
    return (
        f'<article class="decision">\n<h3><span class="badge good">{shown(d.kind)}</span> '
        f"score {d.score:.1f} → {item_ref(d.item, s)}</h3>\n"
        f'<p class="evidence">{shown(d.evidence, TEXT)}</p>\n<div class="sides">\n{sides}</div>\n'
        "</article>\n"
    )


def _side(label: str, side: DecisionSide, title: str, text: str) -> str:
    return (
        f'<div class="side">\n<p class="side-head">{label} · <code>{shown(side.source)}</code>'
        f'</p>\n<p class="side-title" lang="zh">{title or NONE}</p>\n'
        f'<p lang="zh">{text}</p>\n</div>\n'
    )


# --------------------------------------------------------------------------- conflicts


CONFLICTS_HEAD = (
    '<table class="stack">\n<thead><tr><th>Record</th><th>Field</th><th>Chosen</th>'
    "<th>Values seen</th></tr></thead>\n<tbody>\n"
)


def conflict_row(c: Conflict, s: Shown) -> str:
    """A field merged listings disagreed on: the value chosen and every value seen."""
    record = item_ref(c.record, s) if c.record in s.view.titles else topic_ref(c.record, s)
    values = "".join(
        f'<li><span lang="zh">{shown(v.value, TEXT)}</span> <span class="src">'
        f"{shown(', '.join(v.sources))}</span></li>"
        for v in c.values[:INNER]
    )
    return (
        f'<tr>\n<td data-label="Record" class="wide">{record}</td>\n'
        f'<td data-label="Field"><code>{shown(c.field)}</code></td>\n'
        f'<td data-label="Chosen" class="wide" lang="zh">{shown(c.chosen, TEXT)}</td>\n'
        f'<td data-label="Values seen" class="wide"><ul class="values">{values}</ul></td>\n'
        "</tr>\n"
    )
