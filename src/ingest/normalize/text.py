"""Text normalization: small pure functions, each ``str -> str``.

Stored text is NFC (never NFKC: that rewrites full-width punctuation the site uses on
purpose). Keys used for matching are NFKC + casefold with everything but letters and
digits removed, so escapes, quotes, spacing and punctuation width never split a resource.
"""

from __future__ import annotations

import html
import operator
import re
import unicodedata
from collections.abc import Callable
from functools import partial

from .memo import text_memo

# ASCII punctuation that CommonMark lets a backslash escape.
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_GROUP_1 = operator.itemgetter(1)
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
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
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


def md_unescape(s: str) -> str:
    r"""Remove markdown backslash escapes, once.

    >>> md_unescape(r"torch\_xla \[P\] C\+\+ a\\b")
    'torch_xla [P] C++ a\\b'
    """
    if "\\" not in s:
        return s  # the usual case: nothing escaped
    return _MD_ESCAPE.sub(_GROUP_1, s)  # a C callable: 4x cheaper than the template r"\1"


def strip_markup(s: str) -> tuple[str, bool]:
    """Remove HTML tags (and script/style bodies) and decode entities once.

    Returns the text and whether anything was removed or decoded.

    >>> strip_markup("a <b>粗</b>体 &amp; <script>x()</script>c<br>d, 1 < 2 > 0")
    ('a 粗体 &  c d, 1 < 2 > 0', True)
    """
    if "<" not in s and "&" not in s:
        return s, False
    out = _strip_tags(s)
    if _ENTITY.search(out):
        # Entities that decode to markup (&lt;script&gt;) must not become live tags.
        out = _strip_tags(html.unescape(out))
    return out, out != s


def _strip_tags(s: str) -> str:
    s = _SCRIPT_STYLE.sub(" ", s)
    return _TAG.sub(lambda m: " " if (m.group(1) or "").lower() in _SPACED_TAGS else "", s)


def clean(s: str, *, markdown: bool = False, warn: Callable[[str], None] | None = None) -> str:
    """Normalize one field: NFC, unescape (markdown only), strip markup and controls, spaces.

    ``warn`` receives a code for every lossy step (nothing is repaired silently). Each step
    runs only when a cheap test says it has work to do, and a text met again (a resource's
    summary on each page that lists it) is looked up, not cleaned again: this is the hot path.

    >>> clean(r"  C\\+\\+ <b>粗</b>\u200b  a\u3000b ", markdown=True)
    'C++ 粗 a b'
    """
    text, codes = cleaned_once(s, markdown)
    if warn is not None:
        for code in codes:
            warn(code)
    return text


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


def cleaned_once(s: str, markdown: bool = False) -> tuple[str, tuple[str, ...]]:
    """:func:`cleaned`, remembered for texts up to ``MEMO_CHARS`` long."""
    return (cleaned_md if markdown else cleaned_plain)(s)


#: Passes of markup and control removal before a field is called pathologically nested.
_PASSES = 4


def _strip_pass(s: str, codes: dict[str, None], *, decode: bool) -> str:
    """One pass of markup and then control removal; ``codes`` collects what was done.
    Character references are decoded in the first pass only (never twice: C12).

    >>> _strip_pass("<\u200b/>x", {}, decode=True), _strip_pass("</>x", {}, decode=False)
    ('</>x', 'x')
    """
    if "<" in s or (decode and "&" in s):
        s, had_markup = strip_markup(s) if decode else _tags_only(s)
        if had_markup:
            s = unicodedata.normalize("NFC", s)  # a removed tag or entity can join a sequence
            codes["MARKUP_REMOVED"] = None
    # Every character _REMOVED_RE finds is unprintable: a printable text (the usual one)
    # needs no search, which tries each of its characters against the class's ranges.
    if not s.isprintable() and _REMOVED_RE.search(s) is not None:
        s = unicodedata.normalize("NFC", _REMOVED_RE.sub("", s))
        codes["CONTROL_CHAR_REMOVED"] = None
    return s


def _tags_only(s: str) -> tuple[str, bool]:
    out = _strip_tags(s)
    return out, out != s


def match_key(s: str) -> str:
    """Key for matching texts across pages: letters and digits only, NFKC, casefold.

    Punctuation goes first, so NFKC rarely has work to do (full-width punctuation defeats
    its quick check and would cost most of the time).

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


#: The characters the seeds' summaries have most often that are no letter or digit (1,130
#: spaces in 47 summaries, then 219 '，' ...), each removed with one ``str.replace``.
_COMMON_NON_WORD = (" ", "，", "、", "。", ".", "-", "（", "）", "/", "；", "：", "_")


def letters_and_digits(s: str) -> str:
    """``s`` without what ``[\\W_]+`` matches: only its letters and digits are left.

    The commonest of those characters go first, one ``str.replace`` each (in C), then the
    regex, if anything is left for it. The regex stops at a run of them every few characters
    (47 a summary in the 25 MB corpus, 30 of them spaces): 121,600 instructions a summary
    alone, 70,700 so (callgrind, over that corpus's 3,345 distinct summaries).

    >>> letters_and_digits(" PyTorch 2.5，用_于 训练。❤️ ")
    'PyTorch25用于训练'
    """
    for c in _COMMON_NON_WORD:
        s = s.replace(c, "")
    return s if s.isalnum() else _NON_WORD.sub("", s)


#: :func:`match_key`, remembered for texts met again (pure: a summary keyed on every page).
key_of = text_memo(match_key)


def han_only(s: str) -> str:
    """The Han characters of ``s``, in order.

    >>> han_only("用 PyTorch 训练")
    '用训练'
    """
    return _NOT_HAN.sub("", s)


def han_count(s: str) -> int:
    """How many Han characters ``s`` has: what is left once the runs of other characters
    are removed (one match a run, not one a character: twice as fast as counting matches).

    >>> han_count("用 PyTorch 2.5 训练（𠀀）"), han_count("no Han")
    (4, 0)
    """
    return len(_NOT_HAN.sub("", s))


def has_han(s: str) -> bool:
    return _HAN.search(s) is not None


def has_latin(s: str) -> bool:
    return _LATIN.search(s) is not None
