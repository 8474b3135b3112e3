"""Language identification: the hand-labelled titles, short and meaningless titles, cost bounds.

tests/fixtures/langid/titles.tsv holds titles labelled by hand (the seeds' originals, paper,
blog, repository and course titles, titles in 18 other languages, names and versions);
floor.json pins the shipped detector's accuracy on them. ``bench/langid.py --pin`` raises
the floor and refuses to lower it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ingest.normalize.language as lang
from conftest import ROOT, TOPIC_LIST, load_script, seed_text, write_files
from ingest.normalize.language import MAX_CHARS, language_of
from ingest.normalize.text import has_han

FIXTURES = ROOT / "tests" / "fixtures" / "langid"


def labelled() -> list[tuple[frozenset[str | None], str, str]]:
    rows = []
    for line in (FIXTURES / "titles.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            expected, kind, title = line.split("\t")
            rows.append(
                (frozenset(None if c == "-" else c for c in expected.split("|")), kind, title)
            )
    return rows


ROWS = labelled()


def judged(rows: list[tuple[frozenset[str | None], str, str]]) -> list[tuple[str, Any, Any]]:
    """(title, answer, accepted) for every title answered wrongly or left undetermined."""
    language_of.cache_clear()
    return [
        (t, language_of(t), sorted(map(str, ok))) for ok, _, t in rows if language_of(t) not in ok
    ]


def test_the_labelled_set_is_as_the_brief_asks() -> None:
    kinds = {kind for _, kind, _ in ROWS}
    other = {c for ok, _, _ in ROWS for c in ok} - {None, "en", "zh"}
    assert len(ROWS) >= 200 and {"seed", "paper", "blog", "repo", "course", "short"} <= kinds
    assert len(other) >= 10
    assert len({t for _, _, t in ROWS}) == len(ROWS), "a title is labelled twice"


def test_accuracy_is_at_least_the_pinned_floor() -> None:
    floor = json.loads((FIXTURES / "floor.json").read_text(encoding="utf-8"))["accuracy"]
    misses = judged(ROWS)
    accuracy = 1 - len(misses) / len(ROWS)
    assert accuracy >= floor, f"{accuracy:.4f} < floor {floor}: {misses}"


def test_names_versions_and_short_titles_never_get_a_wrong_language() -> None:
    """Undetermined (None) is fine for these; a confident wrong language is not."""
    short = [r for r in ROWS if r[1] in ("short", "repo") or None in r[0]]
    assert [(t, got) for t, got, _ in judged(short) if got is not None] == []


@pytest.mark.parametrize("text", ["Title 7", "v2.1", "GPT-5", "cobanov/PS5LM", "PS5LM", "MoE"])
def test_the_issues_examples_are_undetermined(text: str) -> None:
    assert language_of(text) is None


def test_a_list_titled_title_n_is_not_turkish() -> None:
    """Today's detector labelled every ``Title N`` of a 2,000-entry list Turkish."""
    assert {language_of(f"Title {n}") for n in range(2000)} == {None}


def test_titles_that_name_things_reach_no_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    """Versions, acronyms and repository names cost a regular expression, nothing more."""

    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("a detector was called")

    for name in ("_cld2", "_fasttext", "_langid"):
        monkeypatch.setattr(lang, name, refuse)
    language_of.cache_clear()
    titles = ["v2.1", "GPT-5", "Qwen3-0.6B", "huggingface/transformers", "RTX 4090", "LLM", "MoE"]
    assert [language_of(t) for t in titles] == [None] * len(titles)
    language_of.cache_clear()


def test_detectors_see_at_most_max_chars(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost of a title is bounded: a 20,000-character title is judged on its start."""
    seen: list[int] = []
    for name in ("_cld2", "_fasttext", "_langid"):
        real = getattr(lang, name)
        monkeypatch.setattr(
            lang, name, lambda t, *a, _r=real, **k: seen.append(len(t)) or _r(t, *a, **k)
        )
    language_of.cache_clear()
    assert language_of("Comment entraîner un modèle de langue sur un seul GPU " * 400) == "fr"
    assert seen and max(seen) <= MAX_CHARS
    language_of.cache_clear()


def test_answers_do_not_depend_on_what_was_judged_before() -> None:
    titles = [t for _, _, t in ROWS]
    language_of.cache_clear()
    forward = [language_of(t) for t in titles]
    language_of.cache_clear()
    backward = [language_of(t) for t in reversed(titles)]
    language_of.cache_clear()
    assert forward == backward[::-1]


@given(st.text(max_size=60))
def test_any_text_gets_a_code_or_none(text: str) -> None:
    got = language_of(text)
    assert got is None or (len(got) == 2 and got.isascii() and got.islower())


@given(
    st.lists(st.sampled_from(["\x00", "\ud800", "\x7f", "é", "a", "Title", " ", "7"]), max_size=30)
)
def test_control_characters_and_surrogates_do_not_break_a_detector(pieces: list[str]) -> None:
    text = "Comment entraîner un modèle " + "".join(pieces)
    got = language_of(text)
    assert got is None or len(got) == 2


def test_original_languages_through_the_command_line(ingest: Any, tmp_path: Path) -> None:
    """A topic list whose original titles are in several languages, or name only things."""
    titles = {
        "Comment entraîner un modèle de langue sur un seul GPU": "fr",
        "Как обучить языковую модель на одной видеокарте": "ru",
        "Wie man große Sprachmodelle effizient auf eigener Hardware betreibt": "de",
        "Title 7": None,
        "GPT-5": None,
        "cobanov/PS5LM": None,
        "MPS in PyTorch 2.15": "en",
    }
    lines = seed_text(TOPIC_LIST).splitlines()
    for i, title in enumerate(titles):
        lines[2 + 2 * i] = title
    out = ingest(write_files(tmp_path / "in", {"001.txt": "\n".join(lines) + "\n"}))
    assert out.code == 0 and not out.rejects
    got = {i["title_original"]: i["original_language"] for i in out.items}
    assert {t: got[t] for t in titles} == titles


def test_the_floor_is_only_ever_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bench/langid.py --pin`` raises the floor to the accuracy measured, never lowers it."""
    bench = load_script(ROOT / "bench" / "langid.py", "langid_bench")
    floor = tmp_path / "floor.json"
    floor.write_text('{"accuracy": 0.9}\n', encoding="utf-8")
    monkeypatch.setattr(bench, "FLOOR", floor)
    assert bench.pin(0.8) == 1 and json.loads(floor.read_text())["accuracy"] == 0.9
    assert bench.pin(0.95) == 0 and json.loads(floor.read_text())["accuracy"] == 0.95


def test_loading_the_models_needs_no_temporary_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk or a file-size limit must not stop a run at its first split vote
    (py3langid's own loader writes its 68 MB model to a temporary file; ingest reads the
    models from the packages' own files, never a copy elsewhere)."""

    def refuse(*_: Any, **__: Any) -> None:
        raise OSError(27, "File too large")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    monkeypatch.setattr(tempfile, "NamedTemporaryFile", refuse)
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    for load in (lang._langid_model, lang._fasttext_model):
        load.cache_clear()
        assert load() is not None


def test_the_one_script_search_sees_what_the_three_checks_see() -> None:
    edges = [0x3040, 0x30FF, 0x3100, 0x31F0, 0x31FF, 0x1100, 0x11FF, 0xAC00, 0xD7AF, 0x33FF]
    edges += [0x3400, 0x4DBF, 0x4DC0, 0x4E00, 0x9FFF, 0xF900, 0xFAFF, 0x20000, 0x2FA1F, 0x2FA20]
    for c in map(chr, edges):
        seen = bool(lang._KANA.search(c) or lang._HANGUL.search(c) or has_han(c))
        assert bool(lang._CJK.search(c)) == seen, hex(ord(c))
