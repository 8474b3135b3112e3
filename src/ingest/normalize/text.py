"""Pure functions of a field's text: cleaning, match keys, Han counts, and the memos that
remember them. A memo is bounded by the characters it holds, not by entries: one of fixed
entries thrashes once a large crawl has more distinct texts than that."""

from __future__ import annotations

import html
import operator
import re
import unicodedata
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

#: Texts up to this long are remembered; longer ones, rare and costly to keep, are not.
MEMO_CHARS = 2048
#: Characters a memo holds before it starts over (16,384 texts of ``MEMO_CHARS``): hostile
#: input of many distinct long texts holds no more.
BUDGET = 1 << 25

_MISS: Any = object()


class TextMemo(Protocol[T_co]):
    """A memo: ``seen`` is what it holds; ``cache_clear()`` empties it (as ``lru_cache``'s)."""

    seen: dict[str, Any]

    def __call__(self, text: str, /) -> T_co: ...

    def cache_clear(self) -> None: ...


def text_memo(fn: Callable[[str], T], budget: int = BUDGET) -> TextMemo[T]:
    """``fn``, remembered for texts up to ``MEMO_CHARS`` long within ``budget`` characters.
    A closure, not a class: a call costs what a call of ``functools.lru_cache`` costs."""
    seen: dict[str, T] = {}
    held = [0]

    def cache_clear() -> None:
        seen.clear()
        held[0] = 0

    def once(text: str) -> T:
        got = seen.get(text, _MISS)
        if got is _MISS:
            got = fn(text)
            if len(text) <= MEMO_CHARS:
                if held[0] + len(text) > budget:
                    cache_clear()
                seen[text] = got
                held[0] += len(text)
        return got  # type: ignore[no-any-return]

    once.seen = seen  # type: ignore[attr-defined]
    once.cache_clear = cache_clear  # type: ignore[attr-defined]
    return once  # type: ignore[return-value]


# ASCII punctuation that CommonMark lets a backslash escape.
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_GROUP_1 = operator.itemgetter(1)  # a C callable: 4x cheaper than the template r"\1"
# Tags: an opening '<' then a letter, '/', '!' or '?', up to the next '>' (no nesting, linear).
_TAG = re.compile(r"<(?=[A-Za-z/!?])[/!?]?([A-Za-z][A-Za-z0-9]{0,20})?[^<>]{0,2000}>")
#: HTML elements that start a new line (shared with :mod:`ingest.extract.html`).
BLOCK_TAGS = frozenset(
    "address article aside blockquote br caption center details dd dialog dir div dl dt "
    "fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr legend li "
    "listing main menu nav ol p pre search section summary table tbody tfoot thead tr ul".split()
)
_SPACED_TAGS = BLOCK_TAGS | {"td", "th"}  # stripped tags that leave a space behind
_SCRIPT_STYLE = re.compile(
    r"<(script|style)\b[^>]{0,2000}>.{0,100000}?</\1\s*>", re.IGNORECASE | re.DOTALL
)
#: A character reference, only with its ';' (``&copy=1`` in a query is not one).
CHAR_REF = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_NON_WORD = re.compile(r"[\W_]+")
#: The Han ranges :func:`has_han` reads (also part of language identification's script check).
HAN_RANGES = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_HAN = re.compile(f"[{HAN_RANGES}]")
_NOT_HAN = re.compile(f"[^{HAN_RANGES}]+")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")

#: Control, bidi, zero-width and other invisible format characters removed from every field
#: (tab, CR and LF are white space and collapse instead). ZWJ (U+200D) and the variation
#: selectors are kept: they hold emoji sequences such as ❤️ together. Lone surrogates go too.
_REMOVED_RE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u061c\u180e\u200b\u200c\u200e\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
#: Passes of markup and control removal before a field is called pathologically nested.
_PASSES = 4


def md_unescape(s: str) -> str:
    r"""Remove markdown backslash escapes, once.

    >>> md_unescape(r"torch\_xla \[P\] C\+\+ a\\b")
    'torch_xla [P] C++ a\\b'
    """
    return _MD_ESCAPE.sub(_GROUP_1, s) if "\\" in s else s


def strip_markup(s: str, *, decode: bool = True) -> tuple[str, bool]:
    """Remove HTML tags (and script/style bodies) and, with ``decode``, decode entities
    once; also whether anything was removed or decoded.

    >>> strip_markup("a <b>粗</b>体 &amp; <script>x()</script>c<br>d, 1 < 2 > 0")
    ('a 粗体 &  c d, 1 < 2 > 0', True)
    """
    if "<" not in s and "&" not in s:
        return s, False
    out = _strip_tags(s)
    if decode and CHAR_REF.search(out):
        # Entities that decode to markup (&lt;script&gt;) must not become live tags.
        out = _strip_tags(html.unescape(out))
    return out, out != s


def _strip_tags(s: str) -> str:
    s = _SCRIPT_STYLE.sub(" ", s)
    return _TAG.sub(lambda m: " " if (m.group(1) or "").lower() in _SPACED_TAGS else "", s)


def clean(s: str, *, markdown: bool = False) -> str:
    """Normalize one field: NFC, unescape (markdown only), strip markup and controls, spaces.

    :func:`cleaned` also gives a code for every lossy step (nothing is repaired silently).
    The hot path: each step runs only when a cheap test says it has work, and a text met
    again is looked up, not cleaned again.

    >>> clean(r"  C\\+\\+ <b>粗</b>\u200b  a\u3000b ", markdown=True)
    'C++ 粗 a b'
    """
    return (cleaned_md if markdown else cleaned_plain)(s)[0]


def cleaned(s: str, markdown: bool = False) -> tuple[str, tuple[str, ...]]:
    """The cleaned text and the codes of the lossy steps taken (see :func:`clean`)."""
    codes: dict[str, None] = {}
    if not s.isascii():
        s = unicodedata.normalize("NFC", s)
        if "\u2028" in s or "\u2029" in s:
            codes["ODD_WHITESPACE"] = None  # line/paragraph separators: collapsed to a space
    if markdown and "\\" in s:
        s = md_unescape(s)
    for n in range(_PASSES):  # markup and invisible characters can hide each other
        before, s = s, _strip_pass(s, codes, decode=n == 0)
        if s == before:
            break
    else:  # nested deeper than the passes: no angle bracket can be trusted
        s = _strip_pass(s.replace("<", "").replace(">", ""), codes, decode=False)
    return " ".join(s.split()), tuple(codes)


#: :func:`cleaned` remembered (pure: the same text cleans the same way), markdown or not.
cleaned_md = text_memo(partial(cleaned, markdown=True))
cleaned_plain = text_memo(cleaned)


def _strip_pass(s: str, codes: dict[str, None], *, decode: bool) -> str:
    """One pass of markup and then control removal; ``codes`` collects what was done.
    Character references are decoded in the first pass only (never twice: C12).

    >>> _strip_pass("<\u200b/>x", {}, decode=True), _strip_pass("</>x", {}, decode=False)
    ('</>x', 'x')
    """
    if "<" in s or (decode and "&" in s):
        s, had_markup = strip_markup(s, decode=decode)
        if had_markup:
            s = unicodedata.normalize("NFC", s)  # a removed tag or entity can join a sequence
            codes["MARKUP_REMOVED"] = None
    # Only an unprintable text can hold what _REMOVED_RE finds: the usual text needs no search.
    if not s.isprintable() and _REMOVED_RE.search(s) is not None:
        s = unicodedata.normalize("NFC", _REMOVED_RE.sub("", s))
        codes["CONTROL_CHAR_REMOVED"] = None
    return s


def match_key(s: str) -> str:
    """Key for matching texts across pages: letters and digits only, NFKC, casefold.
    Punctuation goes first, so NFKC rarely has work (full-width punctuation defeats its
    quick check and would cost most of the time).

    >>> match_key("Torch_XLA （旧方式） ❤️") == match_key(r"torch\\_xla(旧方式)")
    True
    >>> match_key("ＡＩ Ⅻ Straße")
    'aixiistrasse'
    """
    t = letters_and_digits(s)
    if not unicodedata.is_normalized("NFKC", t):
        t = _NON_WORD.sub("", unicodedata.normalize("NFKC", t))
    t = t.casefold()
    return t if not t or t.isalnum() else _NON_WORD.sub("", t)


#: The commonest non-word characters of the seeds' summaries (1,130 spaces in 47 summaries,
#: then 219 '，' ...), each removed with one ``str.replace``.
_COMMON_NON_WORD = (" ", "，", "、", "。", ".", "-", "（", "）", "/", "；", "：", "_")


def letters_and_digits(s: str) -> str:
    """``s`` without what ``[\\W_]+`` matches. The commonest such characters go first, one
    ``str.replace`` each (in C), then the regex if anything is left for it: 70,700
    instructions a summary instead of 121,600 (callgrind, the 25 MB corpus's summaries).

    >>> letters_and_digits(" PyTorch 2.5，用_于 训练。❤️ ")
    'PyTorch25用于训练'
    """
    for c in _COMMON_NON_WORD:
        s = s.replace(c, "")
    return s if s.isalnum() else _NON_WORD.sub("", s)


#: :func:`match_key`, remembered for texts met again (a summary keyed on every page).
key_of = text_memo(match_key)


def han_only(s: str) -> str:
    """The Han characters of ``s``, in order.

    >>> han_only("用 PyTorch 训练")
    '用训练'
    """
    return _NOT_HAN.sub("", s)


def han_count(s: str) -> int:
    """How many Han characters ``s`` has (removing the runs of others: one match a run, not
    one a character, is twice as fast as counting matches).

    >>> han_count("用 PyTorch 2.5 训练（𠀀）"), han_count("no Han")
    (4, 0)
    """
    return len(_NOT_HAN.sub("", s))


def has_han(s: str) -> bool:
    return _HAN.search(s) is not None


def has_latin(s: str) -> bool:
    return _LATIN.search(s) is not None
