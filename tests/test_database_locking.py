"""Publishes at once, in real processes.

- PostgreSQL: the publish lock is the first statement, so first publishes into an empty
  database, and migrations, run one after the other (taken later, two of them would race
  to ``duplicate key … pg_type_typname_nsp_index`` or ``column … already exists``).
- A publish waiting for a hung one says what it waits for and gives up after
  ``--lock-timeout`` (PostgreSQL and SQLite).
- SQLite: a file is removed only by the publish that made it, and never while it holds a
  committed publish; a publish that waited never writes into a file the path no longer
  leads to.

A publish is stopped at a known point with ``INGEST_FAULT=<point>:stop`` (it stops itself
with SIGSTOP; the test sends SIGCONT) or terminated there with ``:term``.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import ROOT, SEEDS, proc_state
from dbtest import assert_rows_equal_jsonl, derive, edit_b, pg_database, rows
from ingest.publish.signals import FAULT_ENV
from test_database_migrations import downgrade_to_v1

WAIT = 120


@pytest.fixture
def seeds_out(ingest: Any) -> Path:
    folder: Path = ingest(SEEDS).folder
    return folder


def start(folder: Path, url: str, *more: str, fault: str | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    if fault is not None:
        env[FAULT_ENV] = fault
    cmd = [sys.executable, "-m", "ingest", "publish", str(folder), "--db", url, *more]
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=WAIT)
    return proc.returncode, out, err


def together(folder: Path, url: str, n: int) -> list[tuple[int, str, str]]:
    return [finish(p) for p in [start(folder, url) for _ in range(n)]]


def stopped(proc: subprocess.Popen[str]) -> None:
    """Wait until the process has stopped itself at its fault point."""
    deadline = time.monotonic() + WAIT
    while (state := proc_state(proc.pid)) is not None and state[0] != "T":
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the publish never reached its fault point"
        time.sleep(0.01)


# --- point 7: PostgreSQL first publishes and migrations at once -------------------------------


@pytest.mark.parametrize("rounds", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_first_publishes_into_an_empty_postgresql_database_run_one_after_the_other(
    seeds_out: Path, rounds: int
) -> None:
    for _ in range(rounds):
        with pg_database() as url:
            done = together(seeds_out, url, 3)
            assert [code for code, _, err in done] == [0, 0, 0], [err for *_, err in done]
            outs = sorted(out for _, out, _ in done)
            assert sum("as publish 1 (new database)" in o for o in outs) == 1, outs
            assert sum("nothing changed" in o for o in outs) == 2, outs
            assert rows(url, "SELECT count(*) AS n FROM publishes") == [{"n": 1}]
            assert_rows_equal_jsonl(url, seeds_out)


@pytest.mark.parametrize("rounds", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_migrations_at_once_run_one_after_the_other(
    seeds_out: Path, tmp_path: Path, rounds: int
) -> None:
    b = derive(seeds_out, tmp_path / "b", edit_b)
    for _ in range(rounds):
        with pg_database() as url:
            assert finish(start(seeds_out, url, "--quiet"))[0] == 0
            downgrade_to_v1(url)
            done = together(b, url, 3)
            assert [code for code, _, err in done] == [0, 0, 0], [err for *_, err in done]
            outs = [out for _, out, _ in done]
            assert sum("migrated from database schema 1" in o for o in outs) == 1, outs
            assert_rows_equal_jsonl(url, b)


def test_two_first_publishes_into_a_new_sqlite_file(seeds_out: Path, tmp_path: Path) -> None:
    db = tmp_path / "site.sqlite"
    done = together(seeds_out, f"sqlite:///{db}", 3)
    assert [code for code, _, err in done] == [0, 0, 0], [err for *_, err in done]
    assert sum("(new database)" in out for _, out, _ in done) == 1
    assert_rows_equal_jsonl(f"sqlite:///{db}", seeds_out)


# --- point 10: a publish waiting for a hung one ---------------------------------------------


def test_a_publish_waiting_for_a_hung_postgresql_publish_says_so_and_gives_up(
    seeds_out: Path, pg_url: str, tmp_path: Path
) -> None:
    """The first publish hangs with the lock (it waits for a table the test holds); the
    second says who holds the lock and gives up after --lock-timeout; the first then ends
    as if nothing had happened."""
    b = derive(seeds_out, tmp_path / "b", edit_b)
    assert finish(start(seeds_out, pg_url, "--quiet"))[0] == 0
    with psycopg.connect(pg_url) as blocker:
        blocker.execute("LOCK TABLE ingest_meta IN ACCESS EXCLUSIVE MODE")
        hung = start(b, pg_url, "--quiet")
        _holds_the_lock(pg_url, hung)
        began = time.monotonic()
        code, out, err = finish(start(b, pg_url, "--lock-timeout", "2"))
        took = time.monotonic() - began
        assert hung.poll() is None
        blocker.rollback()
    assert (code, out) == (2, ""), err
    waiting, error = err.splitlines()
    host = os.uname().nodename
    assert waiting.startswith(f"ingest: waiting for another publish to {pg_url} (held by ")
    assert f"ingest publish {host} pid {hung.pid}, server pid " in waiting
    assert waiting.endswith("to finish; giving up after 2 s (--lock-timeout)")
    assert error.startswith("ingest: error: gave up after 2 s waiting for another publish")
    assert "nothing written" in error and "Traceback" not in err
    assert 2 <= took < 30
    assert finish(hung)[0] == 0
    assert [r["id"] for r in rows(pg_url, "SELECT id FROM publishes")] == [1, 2]
    assert_rows_equal_jsonl(pg_url, b)


def _holds_the_lock(url: str, proc: subprocess.Popen[str]) -> None:
    """Until ``proc``'s server process holds the publish lock and waits behind ours (asked
    in a connection of its own: a transaction sees one snapshot of the activity)."""
    query = (
        "SELECT count(*) FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = %s "
        "AND a.wait_event_type = 'Lock'"
    )
    name = f"ingest publish {os.uname().nodename} pid {proc.pid}"[:63]
    deadline = time.monotonic() + WAIT
    with psycopg.connect(url, autocommit=True) as conn:
        while conn.execute(query, (name,)).fetchone() != (1,):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the first publish never took the lock"
            time.sleep(0.02)


def test_a_publish_waiting_for_a_sqlite_writer_says_so_and_gives_up(
    seeds_out: Path, tmp_path: Path
) -> None:
    db = tmp_path / "site.sqlite"
    url = f"sqlite:///{db}"
    assert finish(start(seeds_out, url, "--quiet"))[0] == 0
    b = derive(seeds_out, tmp_path / "b", edit_b)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    began = time.monotonic()
    code, out, err = finish(start(b, url, "--lock-timeout", "1.5"))
    took = time.monotonic() - began
    holder.execute("ROLLBACK")
    holder.close()
    assert (code, out) == (2, ""), err
    waiting, error = err.splitlines()
    assert waiting == (
        f"ingest: waiting for another publish to {url} (another process holds its write "
        "lock) to finish; giving up after 1.5 s (--lock-timeout)"
    )
    assert error.startswith("ingest: error: gave up after 1.5 s waiting") and "nothing" in error
    assert 1.5 <= took < 30
    assert finish(start(b, url, "--quiet"))[0] == 0
    assert_rows_equal_jsonl(url, b)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_publish_waiting_for_a_sqlite_writer_answers_a_signal_at_once(
    seeds_out: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    """Ctrl-C or SIGTERM while a publish waits for SQLite's write lock stops it within a
    moment (it was answered only when the lock came free), nothing written."""
    db = tmp_path / "site.sqlite"
    url = f"sqlite:///{db}"
    assert finish(start(seeds_out, url, "--quiet"))[0] == 0
    b = derive(seeds_out, tmp_path / "b", edit_b)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        proc = start(b, url, "--lock-timeout", "60")
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("ingest: waiting for another publish")
        time.sleep(0.5)  # inside the wait
        sent = time.monotonic()
        proc.send_signal(sig)
        code, _, err = finish(proc)
        took = time.monotonic() - sent
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 128 + sig and "Traceback" not in err, err
    assert took < 2, f"answered {took:.1f} s after the signal"
    assert_rows_equal_jsonl(url, seeds_out)


# --- point 9: a SQLite file is removed only by its maker, and only empty ----------------------


def test_a_file_holding_a_publish_is_never_removed_by_the_publish_that_made_it(
    seeds_out: Path, tmp_path: Path
) -> None:
    """A makes the file and stops before its transaction; B publishes into the file and
    commits; A is then terminated: A made the file, but it holds B's publish, so it stays."""
    db = tmp_path / "site.sqlite"
    url = f"sqlite:///{db}"
    maker = start(seeds_out, url, fault="db_file_made:stop")
    stopped(maker)
    assert db.exists() and db.stat().st_size == 0
    code, out, err = finish(start(seeds_out, url))
    assert code == 0 and "(new database)" in out, err
    maker.send_signal(signal.SIGTERM)
    maker.send_signal(signal.SIGCONT)
    code, _, err = finish(maker)
    assert code == 128 + signal.SIGTERM and "Traceback" not in err, err
    assert_rows_equal_jsonl(url, seeds_out)


def test_a_new_file_goes_with_the_publish_that_made_it(seeds_out: Path, tmp_path: Path) -> None:
    db = tmp_path / "site.sqlite"
    code, _, err = finish(start(seeds_out, f"sqlite:///{db}", fault="db_locked:term"))
    assert code == 128 + signal.SIGTERM and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("site")) == []


def test_a_file_it_did_not_make_is_never_removed(seeds_out: Path, tmp_path: Path) -> None:
    """An empty file made by someone else (a DBA's ``touch``), a publish into it that is
    terminated: the file stays, though it holds nothing."""
    db = tmp_path / "site.sqlite"
    db.touch()
    code, _, err = finish(start(seeds_out, f"sqlite:///{db}", fault="db_locked:term"))
    assert code == 128 + signal.SIGTERM and "Traceback" not in err, err
    assert db.exists()


def test_a_publish_that_waited_never_writes_into_a_removed_file(
    seeds_out: Path, tmp_path: Path
) -> None:
    """A makes the file and takes its lock, B waits for the lock, A is terminated and
    removes the file it made (it holds no table). B must not report a publish into a file
    no path leads to: it either had the file first (and the file is there, holding its
    publish) or finds it gone and says so."""
    db = tmp_path / "site.sqlite"
    url = f"sqlite:///{db}"
    maker = start(seeds_out, url, fault="db_locked:stop")
    stopped(maker)
    said = tmp_path / "waiter.err"
    with said.open("w") as stderr:
        cmd = [sys.executable, "-m", "ingest", "publish", str(seeds_out), "--db", url]
        waiter = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True)
    deadline = time.monotonic() + WAIT
    while "waiting for another publish" not in said.read_text():
        assert time.monotonic() < deadline and waiter.poll() is None
        time.sleep(0.02)
    maker.send_signal(signal.SIGTERM)
    maker.send_signal(signal.SIGCONT)
    assert finish(maker)[0] == 128 + signal.SIGTERM
    code, out, _ = finish(waiter)
    err = said.read_text()
    if code == 0:
        assert "(new database)" in out
        assert_rows_equal_jsonl(url, seeds_out)
    else:
        assert code == 2 and "removed or replaced while this publish waited" in err, err
        assert not db.exists()


def _add_a_line(path: Path) -> None:
    with path.open("ab") as f:
        f.write(b"\n")


def _rewrite_a_title(path: Path) -> None:
    """A title's first character replaced by another of the same length: the file keeps
    its size and every line is still a valid record; only its checksum tells."""
    with path.open("r+b") as f:
        data = f.read()
        at = data.index(b'"title_zh":"') + len(b'"title_zh":"')
        first = data[at : at + 4].decode("utf-8", "ignore")[0]
        new = ("改", "变") if len(first.encode()) == 3 else ("X", "Y")
        f.seek(at)
        f.write((new[0] if first != new[0] else new[1]).encode())
        assert len(new[0].encode()) == len(first.encode())


@pytest.mark.parametrize("edit", [_add_a_line, _rewrite_a_title])
def test_a_folder_written_in_place_during_the_publish_is_refused(
    seeds_out: Path, tmp_path: Path, edit: Any
) -> None:
    """``ingest run`` swaps whole folders; a file written in place after the publish
    opened the folder (an editor, a copy) holds bytes that are not the publish's: refused,
    naming the file, nothing written."""
    db = tmp_path / "site.sqlite"
    proc = start(seeds_out, f"sqlite:///{db}", fault="db_locked:stop")
    stopped(proc)
    edit(seeds_out / "items.jsonl")
    proc.send_signal(signal.SIGCONT)
    code, out, err = finish(proc)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith("ingest: error: "), err
    assert "items.jsonl" in err and "Traceback" not in err, err
    assert not db.exists()
