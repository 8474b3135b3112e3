"""Language of a title: a script check first, langdetect (seeded) only for Latin text.

langdetect labels most Chinese titles that contain Latin words as another language and
costs milliseconds a call, so Han script decides Chinese outright, kana Japanese, Hangul
Korean; only text in Latin script reaches langdetect, once per distinct text.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

from .normalize import has_han, has_latin

_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")


@lru_cache(maxsize=1 << 16)  # pure: each distinct title is judged once per process
def language_of(text: str | None) -> str | None:
    """ISO 639-1 code of ``text`` or None when it cannot be told.

    >>> language_of("PyTorch 2.15 中的 MPS")
    'zh'
    >>> language_of("Unlocking asynchronicity in continuous batching")
    'en'
    """
    if not text:
        return None
    if _KANA.search(text):
        return "ja"
    if _HANGUL.search(text):
        return "ko"
    if has_han(text):
        return "zh"
    if not has_latin(text):
        return None
    return _langdetect(text)


@cache
def _detector_factory() -> object:
    from langdetect import DetectorFactory
    from langdetect.detector_factory import init_factory

    DetectorFactory.seed = 0  # deterministic: the same text always gets the same answer
    init_factory()
    return DetectorFactory


def _langdetect(text: str) -> str | None:
    from langdetect import detect
    from langdetect.lang_detect_exception import LangDetectException

    _detector_factory()
    try:
        code: str = detect(text)
    except LangDetectException:
        return None
    return code.split("-")[0]
