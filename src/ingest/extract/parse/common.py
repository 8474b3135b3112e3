"""What every parser shares: the :class:`Page` a parser fills, excerpts and caps, the line
grammar of plain-text dumps, site furniture, and the heads of topic-page listings
(``N. [title](href)（kind · level）：``)."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate
from typing import NamedTuple

from ingest.extract.decode import ESCAPED_BYTE, Locator, cut_tail_length
from ingest.normalize.text import cleaned_md, cleaned_plain, han_count, text_memo
from ingest.normalize.urls import checked_url
from ingest.records import Listing, PageReject, PageResult, Provenance

#: A single field longer than this is refused (FIELD_TOO_LONG).
MAX_FIELD_CHARS = 20_000
#: A page with more listings than this is cut there (TOO_MANY_ITEMS).
MAX_LISTINGS = 50_000
#: A line longer than this (in a line-based page kind) is refused (LINE_TOO_LONG).
MAX_LINE_CHARS = 100_000
#: Detection reads this much of a page: its structural marks must show within it.
DETECTION_CHARS = 64 * 1024

LINE_BREAK = re.compile(r"\r\n|\r|\n")

_CLOSERS = "”’）」』)\"' "
_FULL_STOPS = ("。", "！", "？", "…", "!", "?")


def ends_sentence(s: str) -> bool:
    """Does the text end like a complete sentence (closing quotes and brackets aside)? A cut
    summary usually does not: ``v1.`` and ``（含编译）`` end mid-sentence.

    >>> [ends_sentence(s) for s in ("读者。", "（见附录。）", "PyTorch v1.", "the model.", "a）")]
    [True, True, False, True, False]
    """
    s = s.rstrip(_CLOSERS)
    if s.endswith(_FULL_STOPS):
        return True
    return s.endswith(".") and len(s) > 1 and s[-2].isalpha() and s[-2].isascii()


class Line(NamedTuple):
    """One line of a page (line-based pages build one for every line: a cheap record)."""

    text: str
    start: int  # character offset in the decoded text
    number: int  # 1-based


def split_lines(text: str) -> Iterator[Line]:
    """Split on CRLF, CR or LF only (never on U+2028, form feed, ...), with offsets."""
    start = 0
    number = 1
    if "\r" not in text:  # the usual case: LF alone ends a line, and str.split finds it in C
        *whole, last = text.split("\n")
        for number, piece in enumerate(whole, start=1):
            yield Line(piece, start, number)
            start += len(piece) + 1
        if start < len(text):
            yield Line(last, start, len(whole) + 1)
        return
    for m in LINE_BREAK.finditer(text):
        yield Line(text[start : m.start()], start, number)
        start = m.end()
        number += 1
    if start < len(text):
        yield Line(text[start:], start, number)


def line_pieces(text: str) -> list[str]:
    """``LINE_BREAK.split(text)``: found with ``str.split`` when LF alone ends lines."""
    return text.split("\n") if "\r" not in text else LINE_BREAK.split(text)


def next_break(text: str, pos: int, stop: int) -> tuple[int, int] | None:
    """Start and end of ``LINE_BREAK.search(text, pos, stop)``, found with ``str.find``
    (a regex tries every position in Python's matcher: ten times the cost)."""
    lf = text.find("\n", pos, stop)
    cr = text.find("\r", pos, stop if lf < 0 else lf)
    if cr >= 0:
        return cr, cr + 2 if text.startswith("\n", cr + 1, stop) else cr + 1
    return (lf, lf + 1) if lf >= 0 else None


def _line_starts(text: str) -> list[int]:
    """Where each line of ``text`` after the first starts (the end of each line break)."""
    if "\r" not in text:  # the usual case: summed in C from str.split's pieces
        return list(accumulate(len(piece) + 1 for piece in text.split("\n")[:-1]))
    return [m.end() for m in LINE_BREAK.finditer(text)]


#: Line numbers a page counts before it builds the list of its line starts.
_COUNTED_LINES = 4


def line_at(text: str, offset: int) -> int:
    """The 1-based line of ``text[offset]``: one more than the line breaks (CRLF, CR, LF)
    that end before it; a CRLF that ``offset`` splits has not ended.

    >>> [line_at("a\\r\\nb\\rc\\nd", i) for i in (0, 1, 2, 3, 5, 7)]
    [1, 1, 1, 2, 3, 4]
    """
    offset = max(0, min(offset, len(text)))  # as a lookup among the line starts would
    n = text.count("\n", 0, offset) + text.count("\r", 0, offset) - text.count("\r\n", 0, offset)
    if offset and text[offset - 1] == "\r" and text.startswith("\n", offset):
        n -= 1
    return n + 1


def excerpt(raw: str, limit: int = 200) -> str:
    """At most ``limit`` characters of raw text, invalid bytes and controls made visible."""
    s = raw[:limit]
    s = ESCAPED_BYTE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", s)
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in s)


class Page:
    """Builder for one file's :class:`PageResult`."""

    def __init__(
        self, result: PageResult, text: str, locator: Locator, bad_bytes: bool | None = None
    ) -> None:
        self.result = result
        self.text = text
        self._loc = locator
        self._end = len(text.rstrip())
        self._cut_tail = cut_tail_length(text)
        self._breaks: list[int] | None = None  # offsets where lines start, built when asked
        self._lf_only = "\r" not in text  # the usual page: LF alone ends its lines
        self._counted = 0  # line numbers counted before the list is built
        # Does ``text`` hold bytes that were not valid UTF-8? None: the decoder cannot tell.
        if bad_bytes is None:
            bad_bytes = ESCAPED_BYTE.search(text) is not None
        self._has_bad_bytes = bad_bytes

    def prov(self, offset: int, locator: str) -> Provenance:
        byte, line = self._loc.at(offset)
        r = self.result
        return Provenance(r.file, r.sha256, r.format or "", locator, byte, line)

    def warn(self, code: str, where: str, detail: str = "") -> None:
        self.result.warnings.append(f"{where}: {code}" + (f": {detail}" if detail else ""))

    def mark(self, name: str) -> None:
        """Record a structural mark found on the page (``report.json`` ``files[].marks``)."""
        if name not in self.result.marks:
            self.result.marks.append(name)

    def skip(self, lines: Sequence[Line], what: str) -> None:
        """Warn that ``lines`` belong to no structure of the page and are not read."""
        if not lines:
            return
        first, last = lines[0], lines[-1]
        where = f"line {first.number}" if first is last else f"lines {first.number}-{last.number}"
        shown = excerpt(first.text.strip(), 40)
        self.warn("LINES_SKIPPED", where, f"{len(lines)} line(s) {what}, first '{shown}'")

    def line_number(self, offset: int) -> int:
        """The 1-based line of a character offset (CRLF, CR and LF end a line). The first
        few are counted in C; a page asked for more gets the list of its line starts."""
        if self._breaks is None:
            if self._counted < _COUNTED_LINES:
                self._counted += 1
                if self._lf_only:  # one count, not line_at's three
                    return self.text.count("\n", 0, max(0, offset)) + 1
                return line_at(self.text, offset)
            self._breaks = _line_starts(self.text)
        return bisect_right(self._breaks, offset) + 1

    def lines_in(self, start: int, stop: int) -> list[Line]:
        """The non-blank lines (or pieces of lines) of ``text[start:stop]``."""
        if not self.text[start:stop].strip():
            return []  # the usual case: no line numbers needed
        first = self.line_number(start)
        return [
            Line(ln.text, start + ln.start, first + ln.number - 1)
            for ln in split_lines(self.text[start:stop])
            if ln.text.strip()
        ]

    def reject(self, offset: int, locator: str, reason: str, message: str, raw: str) -> None:
        self.result.rejects.append(
            PageReject(self.prov(offset, locator), reason, message, excerpt(raw), True)
        )

    def reject_line(self, ln: Line, reason: str, message: str, raw: str | None = None) -> None:
        """Reject what starts at line ``ln`` (its text, unless ``raw`` is given)."""
        self.reject(ln.start, f"line {ln.number}", reason, message, ln.text if raw is None else raw)

    def field(self, raw: str, where: str, *, markdown: bool = False) -> str:
        """Clean one text field, turning every lossy step into a warning at ``where``."""
        text, codes = (cleaned_md if markdown else cleaned_plain)(raw)
        for code in codes:
            self.warn(code, where)
        return text

    def url(self, raw: str | None, where: str) -> str | None:
        if not raw:
            return None  # the usual link target: empty, no link (what check_url says)
        url, problem = checked_url(raw)
        if problem is not None:
            self.warn(problem[0], where, problem[1])
        return url

    def may_be_bad(self, size: int) -> bool:
        """Could :meth:`bad_raw` refuse raw text of ``size`` characters? (Without, the usual
        listing needs no raw text built.)"""
        return self._has_bad_bytes or size > MAX_FIELD_CHARS

    def bad_raw(self, raw: str) -> tuple[str, str] | None:
        """A reason to refuse a listing whose raw text is unusable, or None."""
        if not self.may_be_bad(len(raw)):
            return None
        m = ESCAPED_BYTE.search(raw) if self._has_bad_bytes else None
        if m is not None:
            tail = self._cut_tail
            if tail and m.start() == len(raw) - tail and raw.endswith(self.text[-tail:]):
                return "TRUNCATED_ITEM", "the file ends inside a multi-byte character: cut short"
            return "INVALID_UTF8", f"invalid UTF-8 byte 0x{ord(m.group()) - 0xDC00:02x} inside"
        if len(raw) > MAX_FIELD_CHARS:
            return "FIELD_TOO_LONG", f"{len(raw)} characters, over the cap of {MAX_FIELD_CHARS}"
        return None

    def cut_short(self, line: Line) -> bool:
        """Is this the file's last line, ending mid-sentence? (How a cut file looks: the
        line-based page kinds have no footer to tell a cut from a short summary.)"""
        return self.is_last(line) and not ends_sentence(line.text)

    def is_last(self, line: Line) -> bool:
        return line.start + len(line.text) >= self._end

    def without_long_lines(self, lines: list[Line]) -> list[Line]:
        """The lines under the line cap; each longer one is rejected LINE_TOO_LONG."""
        kept = []
        for ln in lines:
            if len(ln.text) > MAX_LINE_CHARS:
                why = f"{len(ln.text)} characters, over the cap of {MAX_LINE_CHARS}"
                self.reject_line(ln, "LINE_TOO_LONG", why)
            else:
                kept.append(ln)
        return kept

    def add(self, listing: Listing) -> None:
        listing.index = len(self.result.listings)
        self.result.listings.append(listing)


#: Longer lines are never furniture (a menu or a copyright line is short).
_MAX_FURNITURE = 120
#: A list, heading or bullet marker that furniture keeps when it is rendered as markdown.
_MARKER = re.compile(r"^(?:#{1,6}|[0-9]{1,3}[.)]|[-*+•·])\s+")
_LINK = re.compile(r"\[([^\[\]]{0,60})\]\([^()]{0,200}\)")  # a menu entry rendered as a link
#: What separates the entries of a menu or a breadcrumb trail.
_SEP = re.compile(r"\s*(?:[·・•|｜/／›»>→]|&gt;)\s*")
_ONLY_PUNCTUATION = re.compile(r"^[\s\-—–_=*·•|｜/\\~.。…:：,，、>›»<‹«]+$")
_LEGAL = re.compile(
    r"©|\(c\)\s*[0-9]{4}|copyright\s*(?:©|\(c\)|[0-9]{4})|版权所有|保留所有权利"
    r"|all rights reserved|icp\s*备|icp\s*证|公网安备",
    re.IGNORECASE,
)
_SHARE = re.compile(r"^(?:分享(?:到|至)?|share(?: this(?: page| article)?)?)\s*[:：]", re.I)
_COOKIE = re.compile(
    r"(?:本站|本网站|我们|\bthis (?:site|website)\b|\bwe\b).{0,40}cookie"
    r"|cookie.{0,40}(?:同意|接受|accept)",
    re.IGNORECASE,
)
#: Words that make up menus, breadcrumbs, pagers and share bars (compared lower-cased).
_NAV_WORDS = frozenset(
    """首页 主页 全部主题 所有主题 主题 全部 分类 标签 关于 关于我们 关于学径 联系 联系我们 帮助
    反馈 意见反馈 登录 注册 退出 搜索 菜单 打开菜单 导航 返回 返回顶部 回到顶部 上一页 下一页
    上一篇 下一篇 更多 查看更多 加载更多 收藏 点赞 评论 分享 微博 微信 qq qq空间 豆瓣 复制链接
    隐私政策 用户协议 服务条款 使用条款 网站地图 订阅 rss home about contact login signin
    signup register logout search menu topics next previous prev more share twitter facebook
    linkedin reddit weibo wechat privacy terms subscribe""".split()
)
_NAV_PHRASES = frozenset(
    ["about us", "log in", "sign in", "sign up", "all topics", "back to top", "load more",
     "copy link", "privacy policy", "terms of use", "terms of service"]
)  # fmt: skip
_HOME = frozenset(["首页", "主页", "home"])
_MARKED = frozenset("#0123456789-*+•·[")  # first characters of a marker or a link
_LEGAL_WORDS = ("©", "(c)", "copyright", "版权", "保留所有权利", "rights reserved", "icp", "公网安")


def _is_summary_line(s: str) -> bool:
    """Does this line read like a Chinese summary (rather than a title)?

    >>> is_summary_line("MPS in PyTorch 2.15")
    False
    >>> is_summary_line("博客文章，介绍 TorchTPU 这一原生 PyTorch 后端，使 TPU 成为普通设备。")
    True
    >>> is_summary_line("面向初学者的 torch.compile 教程，涉及 EmberShift 在 AsterNeuron "
    ...                 "与 torch.compile 中的应用，提供 OpenAI 与 Anthropic 兼容 API。")
    True
    """
    s = s.strip()
    if not (len(s) >= 40 or ends_sentence(s)):
        return False
    han = han_count(s)  # at least 8 Han characters, and a tenth of the non-space ones
    return han >= 8 and han >= 0.1 * (len(s) - s.count(" "))


#: Remembered: a line-based parser asks it of a line up to three times (as the next line,
#: the one after, a wrapped line), and a summary is on many pages.
is_summary_line = text_memo(_is_summary_line)


def is_full_summary(s: str) -> bool:
    """Does this line read like a summary and hold a full stop (``。``)? A title never holds
    one, so such a line is a summary wherever it stands.

    >>> is_full_summary("试过在 3090 等显卡上做 GPU 解锁的人：对混合精度量化有区别吗？")
    False
    >>> is_full_summary("这是一篇社区提问帖，询问在 3090 一类显卡上解锁后是否有效。")
    True
    """
    return "。" in s and is_summary_line(s)


def same_line(a: str, b: str) -> bool:
    """The same text, white space aside? (A Chinese original's title shown again.)"""
    return a == b or a.split() == b.split()


def is_furniture(line: str) -> bool:
    """Is this short line site furniture (a menu, a breadcrumb trail, a share bar, a cookie
    notice, a legal line, a rule of punctuation) rather than content? Never a summary.

    >>> [is_furniture(s) for s in ("首页 · 全部主题 · 关于", "1. 首页", "# 登录", "- 全部主题")]
    [True, True, True, True]
    >>> [is_furniture(s) for s in ("首页 › 主题 › 模型服务与算力", "分享到：微博", "返回顶部")]
    [True, True, True]
    >>> [is_furniture(s) for s in ("© 2026 LearnMap · 学径", "京ICP备12345678号-1", "———", "---")]
    [True, True, True, False]
    >>> [is_furniture(s) for s in ("本站使用 Cookie 改善体验", "We use cookies", "1. [首页](/)")]
    [True, True, True]
    >>> [is_furniture(s) for s in ("Copyright Law and AI", "Share Your Models", "❤️", "Home Lab")]
    [False, False, False, False]
    >>> is_furniture("我们测试了 Cookie 同意弹窗对转化率的影响，发现多数用户会直接点击接受。")
    False
    """
    s = line.strip()
    if not s or len(s) > _MAX_FURNITURE:
        return False
    if _ONLY_PUNCTUATION.match(s):
        return s.strip("-") != ""  # '---' is a topic page's footer mark, never furniture
    if s[0] in _MARKED:
        s = _MARKER.sub("", s, count=1)
        s = _LINK.sub(r"\1", s) if "](" in s else s
    low = s.lower()
    found = (
        _is_menu(low)
        or (any(w in low for w in _LEGAL_WORDS) and _LEGAL.search(low) is not None)
        or (low.startswith(("分享", "share")) and _SHARE.match(low) is not None)
        or ("cookie" in low and _COOKIE.search(low) is not None)
    )
    return found and not is_summary_line(s)


def _is_menu(low: str) -> bool:
    """Menu entries only, or a breadcrumb trail from the home page."""
    first = _SEP.split(low, maxsplit=1)[0].strip()
    if first not in _NAV_WORDS and first not in _NAV_PHRASES:
        return False
    parts = [p.strip() for p in _SEP.split(low)]
    if all(p in _NAV_WORDS or p in _NAV_PHRASES for p in parts):
        return True
    return len(parts) >= 2 and all(parts) and parts[0] in _HOME


def split_furniture(lines: list[Line]) -> tuple[list[Line], list[Line]]:
    """(the lines that are no site furniture, those that are), each in page order."""
    kept: list[Line] = []
    furniture: list[Line] = []
    for ln in lines:
        (furniture if is_furniture(ln.text) else kept).append(ln)
    return kept, furniture


def without_furniture(page: Page, lines: list[Line], where: str) -> list[Line]:
    """``lines`` without site furniture; each run of it is skipped with a warning."""
    kept: list[Line] = []
    run: list[Line] = []
    for ln in lines:
        if is_furniture(ln.text):
            run.append(ln)
            continue
        page.skip(run, f"of site furniture {where}")
        run = []
        kept.append(ln)
    page.skip(run, f"of site furniture at the end of {where}")
    return kept


#: Digits a number may have (also full-width ones, which are never valid in a head).
_DIGITS = frozenset("0123456789０１２３４５６７８９")
_ASCII_DIGITS = "0123456789"
_MAX_DIGITS = 6
_ASCII_SPACE = frozenset(" \t\n\r\f\v")
_HEADISH_REACH = 1200  # past the longest title a head may have (1000), to its "]("
_HEADISH = re.compile(r"\]\(|[（(][^（()）\n]{0,30}[·・•][^（()）\n]{0,30}[）)]\s?[：:]")
#: A dot followed by white space or ``[`` (the end of the text is neither).
_DOT = re.compile(r"\.(?=[\[\s])")
_WIDE_DOT = re.compile(r"．(?=[\[\s])")

# A listing head. Link text honours backslash escapes and up to two levels of nested
# brackets, the link target one level of parentheses; every repetition is possessive and
# bounded, and alternatives differ in their first character, so a match never backtracks.
_TEXT = r"(?:\\.|[^\[\]\\\n])"
_HEAD = re.compile(
    rf"\[((?:{_TEXT}|\[(?:{_TEXT}|\[{_TEXT}{{0,500}}+\]){{0,500}}+\]){{0,1000}}+)\]"
    r"\(((?:[^()\n]|\([^()\n]{0,500}+\)){0,2000}+)\)"
    r"[ \t]*[（(]([^（()）\n]{0,60}+)[）)][ \t]*[：:]"
)
#: The usual head, without escapes or nested brackets: a loop over one character class is
#: a tight C loop, an alternation is not (a third of the cost). Where it matches, ``_HEAD``
#: matches the same way; else ``_HEAD`` is tried.
_PLAIN_HEAD = re.compile(
    r"\[([^\[\]\\\n]{0,1000}+)\]"
    r"\(([^()\n]{0,2000}+)\)"
    r"[ \t]*[（(]([^（()）\n]{0,60}+)[）)][ \t]*[：:]"
)


class Head(NamedTuple):
    """A parsed listing head (every candidate builds one: a cheap immutable record)."""

    number: int
    start: int
    end: int
    title: str
    url: str
    meta: str
    dot: int  # where the ``.`` after its number is


def candidates(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
    """(start, number) of every ``N. [`` in ``text[start:end]``: what
    ``(?<!\\S)([0-9]{1,6})\\. \\[`` with ``re.ASCII`` finds, found with ``str.find`` (a regex
    with a look-behind tries every position: ten times slower)."""
    stop = len(text) if end is None else end
    i = text.find(". [", start, stop)
    while i != -1:
        first = _number_start(text, i, ascii_only=True)
        if first is not None and first >= start:
            yield first, int(text[first:i])
        i = text.find(". [", i + 3, stop)


def _number_start(text: str, dot: int, *, ascii_only: bool) -> int | None:
    """Where the 1 to 6 digits before ``text[dot]`` start, when white space (``\\s``; with
    ``ascii_only`` the ASCII one) or the start of the text comes before them; else None."""
    j = dot
    while j > 0 and dot - j < _MAX_DIGITS and text[j - 1] in _DIGITS:
        if ascii_only and not text[j - 1].isascii():
            break
        j -= 1
    if j == dot:
        return None
    if j > 0 and not (text[j - 1] in _ASCII_SPACE if ascii_only else text[j - 1].isspace()):
        return None
    return j


def loose_numbers(
    text: str, start: int, end: int, skip: frozenset[int] = frozenset()
) -> Iterator[tuple[int, str]]:
    """(start, digits) of everything numbered like a listing in ``text[start:end]``, in
    order: 1 to 6 digits (ASCII or full-width) after white space, then ``.`` or ``．`` and
    white space or ``[``; but the dots in ``skip``. Each dot is found by a regex that starts
    with a literal (fast; one that starts with a digit class is five times slower)."""
    dots = [m.start() for m in _DOT.finditer(text, start, end)]
    if text.find("．", start, end) != -1:
        dots = sorted(dots + [m.start() for m in _WIDE_DOT.finditer(text, start, end)])
    for dot in dots:
        if dot in skip:
            continue
        first = _number_start(text, dot, ascii_only=False)
        if first is not None and first >= start:
            yield first, text[first:dot]


def valid_heads(text: str) -> list[Head]:
    """Every candidate head in ``text`` that passes the grammar, in order: what
    ``[h for at, n in candidates(text) if (h := _scan_head(text, at, n))]`` gives, in one
    loop (a topic page has a head a listing; generator steps and calls were half its cost)."""
    out: list[Head] = []
    find, plain, full = text.find, _PLAIN_HEAD.match, _HEAD.match
    dot = find(". [")
    while dot != -1:
        j = dot
        while j > 0 and dot - j < _MAX_DIGITS and text[j - 1] in _ASCII_DIGITS:
            j -= 1
        if j != dot and (j == 0 or text[j - 1] in _ASCII_SPACE):
            h = plain(text, dot + 2) or full(text, dot + 2)
            if h is not None:
                parts = h.group(1, 2, 3)
                out.append(_tuple_new(Head, (int(text[j:dot]), j, h.end(), *parts, dot)))
        dot = find(". [", dot + 3)
    return out


_tuple_new = tuple.__new__


def accepted_heads(page: Page, valid: list[Head]) -> list[Head]:
    """Valid heads that the numbering accepts. One out of sequence is kept with a NUMBERING
    warning; but when the next head continues the sequence, it is text inside a summary."""
    accepted: list[Head] = []
    last = 0
    for i, head in enumerate(valid):
        if head.number not in (last, last + 1) and accepted:
            nxt = valid[i + 1] if i + 1 < len(valid) else None
            if nxt is not None and nxt.number == last + 1:
                why = f"'{head.number}. [' inside a summary kept as text"
                page.warn("AMBIGUOUS_BOUNDARY", f"listing {last}", why)
                continue
            page.warn("NUMBERING", f"listing {head.number}", f"follows listing {last}")
        accepted.append(head)
        last = head.number
    if accepted and accepted[0].number != 1:
        page.warn("NUMBERING", f"listing {accepted[0].number}", "numbering does not start at 1")
    return accepted


def ambiguous(heads: list[Head]) -> set[int]:
    """Starts of listings whose extent is unknown: a number given twice in a row means the
    first may be text inside the listing before it (``见 3. [附录]()（博客 · 入门）：``) or a
    duplicate number. The listing before and the first of the pair are not trusted."""
    out: set[int] = set()
    for i in range(1, len(heads)):
        if heads[i].number == heads[i - 1].number:
            out.add(heads[i - 1].start)
            if i >= 2:
                out.add(heads[i - 2].start)
    return out


def broken_heads(text: str, start: int, heads: list[Head], end: int) -> dict[int, int]:
    """start → number of listings whose head grammar is broken.

    A failed candidate counts only where it still looks like a head (a link or a meta block
    follows) and either has full-width digits (never valid) or sits where the numbering
    expects it (the next number, that number missing): ``见 6. [x]`` stays summary text.
    """
    taken = {h.start for h in heads}
    # a listing's own number: its digits start where it does (its dot needs no look)
    own = frozenset(h.dot for h in heads)
    failed = [
        (at, int(digits), not digits.isascii())
        for at, digits in loose_numbers(text, start, end, own)
        if at not in taken
    ]
    out: dict[int, int] = {}
    bounds = [(h.start, h.number) for h in heads] + [(end, None)]
    i, expect = 0, 1
    for b_start, b_num in bounds:  # one walk over both lists, both sorted by offset
        while i < len(failed) and failed[i][0] < b_start:
            f_start, f_num, full_width = failed[i]
            i += 1
            expected = f_num == expect and (b_num is None or b_num > expect)
            if not (full_width or expected):
                continue
            if _HEADISH.search(text, f_start, min(b_start, f_start + _HEADISH_REACH)):
                out[f_start] = f_num
                expect += int(expected)
        expect = (b_num or 0) + 1
    return out


def first_listing_head(text: str) -> int | None:
    """Where the first full listing head in ``text`` starts, if there is one."""
    if "](" not in text:
        return None
    return next((at for at, n in candidates(text) if _scan_head(text, at, n) is not None), None)


def _scan_head(text: str, at: int, number: int) -> Head | None:
    """The full head grammar at a candidate ``number. [`` at ``at``: one anchored match."""
    pos = text.index(". [", at) + 2
    h = _PLAIN_HEAD.match(text, pos) or _HEAD.match(text, pos)
    if h is None:
        return None
    return Head(number, at, h.end(), h.group(1), h.group(2), h.group(3), pos - 2)
