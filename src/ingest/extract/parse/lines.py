"""What one line of a page reads like: a Chinese summary, or site furniture.

Site furniture is the text a saved or scraped page carries around its content: navigation
and breadcrumbs (``首页 · 全部主题 · 关于``, ``1. 首页``, ``# 登录``), share and cookie bars,
copyright and licence lines. It is told by its words and its shape, never by its place
alone; the parsers consult it only where their structure leaves room for a stray line (the
start of an entry, the end of a summary, the key/value block). A line that reads like a
summary is never furniture, so a real listing is never dropped as one.
"""

from __future__ import annotations

import re

from ...normalize.memo import text_memo
from ...normalize.text import han_count
from .base import Line, Page, ends_sentence

#: Longer lines are never furniture (a menu or a copyright line is short).
_MAX_FURNITURE = 120
#: A list, heading or bullet marker that furniture keeps when it is rendered as markdown.
_MARKER = re.compile(r"^(?:#{1,6}|[0-9]{1,3}[.)]|[-*+•·])\s+")
#: What separates the entries of a menu or a breadcrumb trail.
_LINK = re.compile(r"\[([^\[\]]{0,60})\]\([^()]{0,200}\)")  # a menu entry rendered as a link
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


#: :func:`_is_summary_line`, remembered: a line-based parser asks it of a line up to three
#: times (as the next line, the one after, a wrapped line), and a summary is on many pages.
is_summary_line = text_memo(_is_summary_line)


def is_full_summary(s: str) -> bool:
    """Does this line read like a summary and hold a full stop (``。``)? A title never holds
    one, so such a line is a summary wherever it stands, never a title.

    >>> is_full_summary("试过在 3090 等显卡上做 GPU 解锁的人：对混合精度量化有区别吗？")
    False
    >>> is_full_summary("这是一篇社区提问帖，询问在 3090 一类显卡上解锁后是否有效。")
    True
    """
    return "。" in s and is_summary_line(s)


def same_line(a: str, b: str) -> bool:
    """Are two lines the same text, white space aside? (A Chinese original's title shown
    again on its original-title line.)"""
    return a == b or a.split() == b.split()


def is_furniture(line: str) -> bool:
    """Is this line site furniture rather than page content? (See the module docstring.)

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
