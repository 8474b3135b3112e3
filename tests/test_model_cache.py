"""The decompressed copy of py3langid's model in ingest's cache (``normalize.model_cache``):
made once, read instead of the xz file, replaced when damaged, and never in the way."""

from __future__ import annotations

import lzma
from pathlib import Path
from typing import Any

import pytest

import ingest.normalize.language as lang
from ingest.normalize import model_cache
from ingest.normalize.model_cache import CACHE_ENV

TITLES = [
    "Unlocking asynchronicity in continuous batching",
    "Comment entraîner un modèle de langue sur un seul GPU",
    "Wie man ein Sprachmodell auf einer einzigen GPU trainiert",
    "Cómo entrenar un modelo de lenguaje en una sola GPU",
]


def _load() -> Any:
    lang._langid_model.cache_clear()
    return lang._langid_model()


def _answers(model: Any) -> list[tuple[str, float]]:
    return [model.classify(t) for t in TITLES]


@pytest.fixture(autouse=True)
def _fresh_model() -> Any:
    yield
    lang._langid_model.cache_clear()  # the next test loads its own


def _no_xz(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("the xz file was read")

    monkeypatch.setattr(model_cache.lzma, "open", refuse)


def test_the_copy_is_made_once_and_read_instead_of_the_xz_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    fresh = _answers(_load())
    [copy] = tmp_path.iterdir()
    assert copy.name.startswith("py3langid-model.npz-") and copy.stat().st_size > 60_000_000
    _no_xz(monkeypatch)
    assert _answers(_load()) == fresh


def test_a_damaged_copy_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    fresh = _answers(_load())
    [copy] = tmp_path.iterdir()
    whole = copy.read_bytes()
    copy.write_bytes(whole[: len(whole) // 2])  # cut short, as by a full disk
    assert _answers(_load()) == fresh
    assert not copy.exists()  # removed: the next run makes it again
    assert _answers(_load()) == fresh and copy.read_bytes() == whole


def test_a_cache_that_cannot_be_written_is_no_obstacle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, "")
    fresh = _answers(_load())
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    assert _answers(_load()) == fresh
    assert blocker.read_text() == "not a folder"


def test_an_empty_cache_setting_turns_the_cache_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    read: list[str] = []
    real = lzma.open

    def counting(*args: Any, **kwargs: Any) -> Any:
        read.append(str(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(model_cache.lzma, "open", counting)
    _load()
    assert read and not any(tmp_path.iterdir())


def test_the_default_place_is_the_users_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert model_cache.cache_dir() == Path("/somewhere/cache/ingest")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "/home/someone")
    assert model_cache.cache_dir() == Path("/home/someone/.cache/ingest")
