"""Records are safe to put in a web page (BAD_INPUTS F1, F2, F3, C5, P9, P14).

The three seed pages get markup, template, bidi, zero-width, control, NFD and emoji payloads
in their titles, summaries and link targets, and hostile link targets. Payloads in summaries
and original titles clean away to nothing, so every listing still joins its resource and
the output can be compared field by field with the clean run; titles of the topic page
keep what a payload legitimately leaves (``{{7*7}}``, emoji, NFC letters).
"""

from __future__ import annotations

import re
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from jinja2 import Environment

from conftest import ITEM_PAGE, TOPIC_LIST, TOPIC_PAGE, Out, seed_text, write_files
from ingest.cli import main
from ingest.extract.parse.topic_list import is_summary_line

# Payloads that clean to nothing: (raw, warning codes of the step that removes them).
GONE = [
    ("<script>alert(1)</script>", {"MARKUP_REMOVED"}),
    ("<img src=x onerror=alert(1)>", {"MARKUP_REMOVED"}),
    ("&lt;script&gt;alert(2)&lt;/script&gt;", {"MARKUP_REMOVED"}),
    ("</title><svg onload=alert(1)>", {"MARKUP_REMOVED"}),
    ("\u202a\u202b\u202c\u202d\u202e", {"CONTROL_CHAR_REMOVED"}),
    ("\u2066\u2067\u2068\u2069", {"CONTROL_CHAR_REMOVED"}),
    ("\u200b\u2060\ufeff", {"CONTROL_CHAR_REMOVED"}),
    ("\x07\x1b", {"CONTROL_CHAR_REMOVED"}),
    ("\x85\x9b", {"CONTROL_CHAR_REMOVED"}),
    ("&#x202e;", {"MARKUP_REMOVED", "CONTROL_CHAR_REMOVED"}),
]
# Payloads for topic-page titles: (raw, what stays in the title, warning codes).
KEPT = [
    ("{{7*7}}", "{{7*7}}", set()),
    ("零\u200b宽\u2060字\ufeff符", "零宽字符", {"CONTROL_CHAR_REMOVED"}),
    ("\x1b\\[31m红\x1b\\[0m", "[31m红[0m", {"CONTROL_CHAR_REMOVED"}),
    ("A\u0308", "\u00c4", set()),  # NFD in, NFC out
    ("A&#x308;", "\u00c4", {"MARKUP_REMOVED"}),  # NFD made by decoding a reference
    ("👩\u200d💻", "👩\u200d💻", set()),  # ZWJ sequence kept
    ("❤️", "❤️", set()),  # VS16 kept
    *((raw, "", codes) for raw, codes in GONE),
]
# Link targets: (raw, kept url or None, warning code).
LINKS = [
    ("javascript:alert(1)", None, "URL_UNSAFE"),
    (" JaVaScRiPt:alert(1)", None, "URL_UNSAFE"),
    ("java\tscript:alert(1)", None, "URL_UNSAFE"),
    ("data:text/html,<script>alert(1)</script>", None, "URL_UNSAFE"),
    ("vbscript:msgbox(1)", None, "URL_UNSAFE"),
    ("file:///etc/passwd", None, "URL_UNSAFE"),
    ("\x01javascript:alert(1)", None, "URL_UNSAFE"),
    ("jav&#x09;ascript:alert(1)", None, "URL_UNSAFE"),
    ("&#106;avascript:alert(1)", None, "URL_UNSAFE"),
    ("https://evil.example\\\\@ok.example/", None, "URL_UNSAFE"),  # '\\' once unescaped
    ("https:ok.example", None, "URL_UNSAFE"),
    ("https://ok.example/a_(b)", "https://ok.example/a_(b)", None),
    ("https://ok.example/\u202e/x", None, "URL_UNSAFE"),
    ("//evil.example/x", None, "URL_RELATIVE"),
]
RELATED = {37, 38, 39, 40}  # topic-page titles an item-page entry overrides (item-page wins)


def title_payload(n: int) -> tuple[str, str, set[str]]:
    if n in RELATED:
        raw, codes = GONE[n % len(GONE)]
        return raw, "", codes
    return KEPT[n % len(KEPT)]


def summary_payload(n: int) -> tuple[str, set[str]]:
    return GONE[(n + 3) % len(GONE)]


def link_payload(n: int) -> tuple[str, str | None, str | None]:
    return LINKS[n - 1] if n <= len(LINKS) else ("", None, None)


def insert_into_summary(text: str, start: int, raw: str) -> str:
    """``raw`` inside the summary starting at ``start``: before its first space (a removed
    script leaves a space behind, which then merges with that one), else 2 characters in."""
    space = text.find(" ", start, start + 80)
    at = space if space != -1 else start + 2
    return text[:at] + raw + text[at:]


def hostile_topic_page() -> str:
    text = seed_text(TOPIC_PAGE)
    for n in range(1, 45):
        start = re.search(rf"(?<!\S){n}\. \[", text)
        assert start is not None
        close = text.index("]()（", start.end())
        text = (
            text[:close] + title_payload(n)[0] + "](" + link_payload(n)[0] + ")" + text[close + 3 :]
        )
        at = text.index("）：", close) + 2
        text = insert_into_summary(text, at, summary_payload(n)[0])
    text = text.replace("所属：[部署与推理优化]", "所属：[部署与\u202e推理<b>优化</b>]")
    return text.replace(
        "来源：LearnMap · 学径（https://oplearnx.com）",
        "来源：LearnMap · 学径（javascript:alert(1)）",
    )


def hostile_lines(seed: Path, start: int) -> str:
    lines = seed_text(seed).split("\n")
    for i in range(start, len(lines)):
        if not lines[i].strip() or lines[i].startswith("- ") or lines[i] == "推荐阅读":
            continue
        raw = GONE[i % len(GONE)][0]
        if is_summary_line(lines[i]):
            lines[i] = insert_into_summary(lines[i], 0, raw)
        else:
            lines[i] = lines[i] + raw
    return "\n".join(lines)


def hostile_item_page() -> str:
    text = hostile_lines(ITEM_PAGE, 2)
    first, title, rest = text.split("\n", 2)
    return "\u202e" + first + "\n" + title + "👩\u200d💻\n" + rest


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Out, Out]:
    base = tmp_path_factory.mktemp("safety")
    clean = write_files(
        base / "clean",
        {
            "tp.txt": TOPIC_PAGE.read_bytes(),
            "tl.txt": TOPIC_LIST.read_bytes(),
            "ip.txt": ITEM_PAGE.read_bytes(),
        },
    )
    hostile = write_files(
        base / "hostile",
        {
            "tp.txt": hostile_topic_page(),
            "tl.txt": hostile_lines(TOPIC_LIST, 2),
            "ip.txt": hostile_item_page(),
        },
    )
    outs = []
    for folder in (clean, hostile):
        out = base / f"out-{folder.name}"
        assert main(["run", str(folder), "--out", str(out), "--quiet"]) == 0
        outs.append(Out(out, 0))
    return outs[0], outs[1]


# --------------------------------------------------------------------------- predicate


_TAG_OPEN = re.compile(r"<[A-Za-z/!?]")


def is_emoji(ch: str) -> bool:
    cp = ord(ch)
    return cp >= 0x1F000 or 0x2190 <= cp <= 0x2BFF or 0x2300 <= cp <= 0x23FF


def unsafe_chars(s: str) -> list[str]:
    """Characters that may not appear in a stored string (P9), with their position."""
    bad = []
    for i, ch in enumerate(s):
        cat = unicodedata.category(ch)
        before = s[i - 1] if i else ""
        after = s[i + 1] if i + 1 < len(s) else ""
        if ch == "\u200d" and is_emoji(before.replace("\ufe0f", "") or "x") and is_emoji(after):
            continue
        if ch == "\ufe0f" and before and is_emoji(before):
            continue
        if cat in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") or ch == "\ufe0f":
            bad.append(f"{i}:{ch!r}")
    return bad


def walk(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in walk(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in walk(v, f"{path}[{i}]")]
    return [(path, value)]


def check_record(record: dict[str, Any]) -> list[str]:
    problems = []
    for path, value in walk(record):
        if path.endswith(".url"):
            parts = urlsplit(value) if isinstance(value, str) else None
            if value is not None and not (
                parts is not None and parts.scheme in ("http", "https") and parts.hostname
            ):
                problems.append(f"{path}: url {value!r}")
        if not isinstance(value, str):
            continue
        if not unicodedata.is_normalized("NFC", value):
            problems.append(f"{path}: not NFC {value!r}")
        if bad := unsafe_chars(value):
            problems.append(f"{path}: {bad} in {value!r}")
        if _TAG_OPEN.search(value):
            problems.append(f"{path}: markup in {value!r}")
    return problems


def test_every_string_of_every_record_is_safe(runs: tuple[Out, Out]) -> None:
    _, out = runs
    records = out.items + out.topics
    assert len(out.items) == 47 and len(out.topics) == 1
    assert [p for r in records for p in check_record(r)] == []


def test_the_predicate_catches_what_it_should() -> None:
    samples = {
        "a\u202eb": 1,
        "x\u200by": 1,
        "\ufeffz": 1,
        "t\x1b[31m": 1,
        "c1\x85": 1,
        "A\u0308": 1,
        "<svg onload=1>": 1,
        "</p>": 1,
        "<!--": 1,
        "1 < 2": 0,
        "👩\u200d💻 ❤️ 模型": 0,
        "a\u200db": 1,
        "\ufe0fx": 1,
    }
    for text, expected in samples.items():
        assert len(check_record({"t": text})) == expected, text
    assert check_record({"url": "javascript:alert(1)"}) and check_record({"url": "//x.example"})
    assert check_record({"url": "https://ok.example/a_(b)"}) == []


# --------------------------------------------------------------------------- exact fields


def by_rank(out: Out) -> dict[int, dict[str, Any]]:
    return {i["topics"][0]["rank"]: i for i in out.items if i["topics"]}


def test_text_kept_and_removed_exactly(runs: tuple[Out, Out]) -> None:
    clean, out = runs
    assert [i["id"] for i in out.items] == [i["id"] for i in clean.items]
    before, after = by_rank(clean), by_rank(out)
    for n in range(1, 45):
        kept = title_payload(n)[1] if n != 38 else "👩\u200d💻"
        assert after[n]["title_zh"] == before[n]["title_zh"] + kept, n
        assert after[n]["url"] == link_payload(n)[1], n
    skip = {"title_zh", "url", "sources"}
    for a, b in zip(clean.items, out.items, strict=True):
        assert {k: v for k, v in b.items() if k not in skip} == {
            k: v for k, v in a.items() if k not in skip
        }
    [topic], [clean_topic] = out.topics, clean.topics
    assert topic["category"] == clean_topic["category"] == "部署与推理优化"
    assert topic["site"] == {"name": "LearnMap · 学径", "url": None}
    texts = [v for _, v in walk(out.items) if isinstance(v, str)]
    for needle in ("{{7*7}}", "👩\u200d💻", "❤️", "[31m红[0m", "零宽字符"):
        assert any(needle in t for t in texts), needle


def test_every_lossy_step_leaves_a_warning(runs: tuple[Out, Out]) -> None:
    _, out = runs
    files = {f["file"]: f for f in out.report["files"]}
    found = {tuple(w.split(": ")[:2]) for w in files["tp.txt"]["warnings"]}
    expected = {("header", "CONTROL_CHAR_REMOVED"), ("header", "MARKUP_REMOVED")}
    expected.add(("footer", "URL_UNSAFE"))
    for n in range(1, 45):
        codes = title_payload(n)[2] | summary_payload(n)[1]
        if (code := link_payload(n)[2]) is not None:
            codes = codes | {code}
        expected |= {(f"listing {n}", c) for c in codes}
    assert found == expected
    for name in ("tl.txt", "ip.txt"):
        codes = {w.split(": ")[1] for w in files[name]["warnings"]}
        assert codes == {"MARKUP_REMOVED", "CONTROL_CHAR_REMOVED"}, name
    messages = [w for w in files["tp.txt"]["warnings"] if "URL_" in w]
    assert all(unsafe_chars(m) == [] for m in messages)  # raw link values are escaped
    assert any("'java\\tscript:alert(1)'" in m for m in messages)


# --------------------------------------------------------------------------- rendering


PAGE = Environment(autoescape=True).from_string(
    """<!doctype html>
<html><head><title>{{ i.title_zh }}</title></head>
<body><article data-id="{{ i.id }}">
<h1 title="{{ i.title_original }}">{{ i.title_zh }}</h1>
<p class="original">{{ i.title_original }}</p>
<p class="summary">{{ i.summary_zh }}</p>
{% if i.url %}<a href="{{ i.url }}" title="{{ i.title_zh }}">{{ i.url }}</a>{% endif %}
<ul>{% for t in i.topics %}
<li><a href="https://oplearnx.com/topics/{{ t.slug }}">{{ t.slug }}</a></li>
{% endfor %}</ul>
{% for s in i.sources %}<span>{{ s.file }} {{ s.locator }}</span>{% endfor %}
</article></body></html>"""
)


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.other: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_comment(self, data: str) -> None:
        self.other.append(f"comment {data!r}")

    def handle_pi(self, data: str) -> None:
        self.other.append(f"pi {data!r}")


def parse(html: str) -> Elements:
    p = Elements()
    p.feed(html)
    p.close()
    return p


def test_rendered_through_an_autoescaping_template_nothing_is_live(runs: tuple[Out, Out]) -> None:
    _, out = runs
    plain = {"id": "x", "title_zh": "t", "title_original": "o", "summary_zh": "s"}
    for item in out.items:
        shape = {
            **plain,
            "url": item["url"] and "https://x.example/",
            "topics": [{"slug": "s"} for _ in item["topics"]],
            "sources": [{"file": "f", "locator": "l"} for _ in item["sources"]],
        }
        expected = parse(PAGE.render(i=shape)).tags
        page = parse(PAGE.render(i=item))
        assert page.tags == expected, item["id"]
        assert page.other == []
        assert [n for n, _ in page.attrs if n.startswith("on")] == []
        for name, value in page.attrs:
            if name == "href":
                assert value is not None
                seen = re.sub(r"[\x00-\x20]", "", value).lower()
                assert seen.startswith(("https://", "http://")) and "javascript:" not in seen
    assert any(i["url"] == "https://ok.example/a_(b)" for i in out.items)
