"""One transaction per publish, seen from outside (SPEC §6): a reader in a second
connection sees the old publish or the new one, a failed publish leaves the old one, and
two publishes at once wait for each other.

The writer is held inside its transaction, just before COMMIT, by a listener on
SQLAlchemy's ``commit`` event in the writer's thread; the reader is a plain driver
connection (sqlite3 or psycopg) in the test's thread.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine, event, exc

from conftest import SEEDS
from dbtest import derive, edit_b, lines, rows, snapshot
from ingest.cli import main

WAIT = 60


@pytest.fixture
def folders(ingest: Any, tmp_path: Path) -> tuple[Path, Path]:
    a = ingest(SEEDS).folder
    return a, derive(a, tmp_path / "b", edit_b)


def publish(folder: Path, url: str) -> int:
    return main(["publish", str(folder), "--db", url, "--quiet"])


def read_state(url: str) -> tuple[Any, ...]:
    """What a site sees, read in one plain driver connection that never waits long: the item
    ids and summaries, the membership count and the latest publish."""
    queries = [
        "SELECT id, summary_zh FROM items ORDER BY id",
        "SELECT count(*) FROM item_topics",
        "SELECT max(id) FROM publishes",
    ]
    if url.startswith("sqlite"):
        conn: Any = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=2)
    else:
        conn = psycopg.connect(url, options="-c statement_timeout=2000")
    try:
        return tuple(tuple(map(tuple, conn.execute(q).fetchall())) for q in queries)
    finally:
        conn.close()


class Held:
    """Holds the first commit made in thread ``owner`` until released; ``action`` may
    raise there instead (a failure at the last moment)."""

    def __init__(self, action: Callable[[], None] | None = None) -> None:
        self.reached, self.release = threading.Event(), threading.Event()
        self.owner: threading.Thread | None = None
        self.action = action

    def __call__(self, conn: object) -> None:
        if threading.current_thread() is not self.owner or self.reached.is_set():
            return
        self.reached.set()
        if self.action is not None:
            self.action()
        assert self.release.wait(WAIT)


@pytest.fixture
def held() -> Iterator[Callable[..., Held]]:
    hooks: list[Held] = []

    def make(action: Callable[[], None] | None = None) -> Held:
        hooks.append(Held(action))
        event.listen(Engine, "commit", hooks[-1])
        return hooks[-1]

    yield make
    for hook in hooks:
        hook.release.set()
        event.remove(Engine, "commit", hook)


def disk_full() -> None:
    """What the driver raises when the disk fills at COMMIT."""
    raise exc.OperationalError("COMMIT", {}, sqlite3.OperationalError("database or disk is full"))


def start(target: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(target()), daemon=True)
    return thread, result


def test_a_reader_sees_the_old_publish_or_the_new_one(
    db_url: str, folders: Any, held: Callable[..., Held]
) -> None:
    a, b = folders
    assert publish(a, db_url) == 0
    old = read_state(db_url)
    hold = held()
    writer, result = start(lambda: publish(b, db_url))
    hold.owner = writer
    writer.start()
    assert hold.reached.wait(WAIT), "the writer never reached its commit"
    during = read_state(db_url)
    hold.release.set()
    writer.join(WAIT)
    assert result == [0]
    new = read_state(db_url)
    assert during == old
    assert new != old and new[2] == ((2,),)
    assert {i for i, _ in new[0]} == {x["id"] for x in lines(b, "items.jsonl")}


def test_a_publish_that_fails_at_the_end_leaves_the_old_one(
    db_url: str, folders: Any, held: Callable[..., Held], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = folders
    assert publish(a, db_url) == 0
    before = snapshot(db_url)

    hold = held(disk_full)
    hold.owner = threading.current_thread()
    capsys.readouterr()
    assert publish(b, db_url) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "database or disk is full" in err, err
    assert snapshot(db_url) == before


def test_a_new_sqlite_file_is_removed_when_its_first_publish_fails(
    tmp_path: Path, folders: Any, held: Callable[..., Held]
) -> None:
    db = tmp_path / "new.sqlite"
    hold = held(disk_full)
    hold.owner = threading.current_thread()
    assert publish(folders[0], f"sqlite:///{db}") == 2
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("new")) == []


def test_two_publishes_at_once_run_one_after_the_other(
    db_url: str, folders: Any, held: Callable[..., Held]
) -> None:
    a, b = folders
    assert publish(a, db_url) == 0
    hold = held()
    first, first_result = start(lambda: publish(b, db_url))
    second, second_result = start(lambda: publish(b, db_url))
    hold.owner = first
    first.start()
    assert hold.reached.wait(WAIT)
    second.start()
    second.join(1.5)
    assert second.is_alive(), "the second publish did not wait for the first"
    hold.release.set()
    first.join(WAIT)
    second.join(WAIT)
    assert first_result == second_result == [0]
    assert [r["id"] for r in rows(db_url, "SELECT id FROM publishes ORDER BY id")] == [1, 2]


def test_sqlite_readers_never_wait_for_a_publish(tmp_path: Path, folders: Any) -> None:
    """WAL mode: the file keeps the committed publish readable while the next is written."""
    db = tmp_path / "site.sqlite"
    assert publish(folders[0], f"sqlite:///{db}") == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
