"""One publish at a time per database, and what a publish says while it waits.

PostgreSQL: the first statement of every publish takes a transaction-level advisory lock,
:data:`PG_LOCK` — before the schema version is read, before any table is created or
migrated — so two publishes, two first ones into an empty database and two migrations
included, run one after the other. SQLite: ``BEGIN IMMEDIATE`` takes the file's write lock
as the transaction begins. Either way the lock goes with the transaction's end (commit,
rollback, or the process gone).

A publish that finds the lock held says once, on stderr, what it waits for (on PostgreSQL,
who holds the lock: the other publish's host and pid, the server process, since when), and
waits at most its lock timeout; then it gives up with a one-line error, nothing written.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import exc, text
from sqlalchemy.engine import Connection

from ...errors import PublishError

#: The advisory lock of ``ingest publish`` (``pg_advisory_xact_lock(1768843109, 1937010800)``,
#: "inge", "stpu"): another session holding it, e.g. during maintenance, holds publishes off.
PG_LOCK = (1768843109, 1937010800)
_LOCK_TIMEOUT = "55P03"  # PostgreSQL's lock_not_available


@dataclass(frozen=True, slots=True)
class Wait:
    """How long a publish waits for the lock, and where it says that it waits."""

    where: str  # the database, as messages show it
    seconds: float
    say: Callable[[str], None]

    def waiting(self, holder: str) -> None:
        self.say(
            f"waiting for another publish to {self.where} ({holder}) to finish; giving up "
            f"after {self.seconds:g} s (--lock-timeout)"
        )

    def gave_up(self, holder: str) -> PublishError:
        return PublishError(
            f"gave up after {self.seconds:g} s waiting for another publish to {self.where} "
            f"({holder}); nothing written; publish again later or raise --lock-timeout"
        )


def application_name() -> str:
    """How a publish names itself to the server: what a waiting publish shows of it."""
    return f"ingest publish {socket.gethostname()} pid {os.getpid()}"[:63]


def pg_lock(conn: Connection, wait: Wait) -> None:
    """The publish lock, as the transaction's first statement; waits up to the timeout."""
    keys = {"a": PG_LOCK[0], "b": PG_LOCK[1]}
    if conn.execute(text("SELECT pg_try_advisory_xact_lock(:a, :b)"), keys).scalar():
        return
    holder = _pg_holder(conn)
    if wait.seconds <= 0:
        raise wait.gave_up(holder)
    wait.waiting(holder)
    before = conn.execute(text("SELECT current_setting('lock_timeout')")).scalar()
    ms = {"ms": f"{max(1, round(wait.seconds * 1000))}ms"}
    conn.execute(text("SELECT set_config('lock_timeout', :ms, true)"), ms)
    try:
        conn.execute(text("SELECT pg_advisory_xact_lock(:a, :b)"), keys)
    except exc.OperationalError as e:
        if getattr(e.orig, "sqlstate", None) == _LOCK_TIMEOUT:
            raise wait.gave_up(holder) from e
        raise
    conn.execute(text("SELECT set_config('lock_timeout', :ms, true)"), {"ms": before})


def _pg_holder(conn: Connection) -> str:
    query = text(
        "SELECT a.application_name, a.pid, a.xact_start FROM pg_locks AS l "
        "JOIN pg_stat_activity AS a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 "
        "AND l.classid::bigint = :a AND l.objid::bigint = :b "
        "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    )
    row = conn.execute(query, {"a": PG_LOCK[0], "b": PG_LOCK[1]}).first()
    if row is None:
        return "its holder just let go"
    name, pid, since = row
    who = name or "a session"
    when = f", since {since:%Y-%m-%d %H:%M:%S %Z}" if since is not None else ""
    return f"held by {who}, server pid {pid}{when}"


def sqlite_begin(wait: Wait, conn: Connection) -> None:
    """SQLite's ``BEGIN IMMEDIATE``, as the engine's ``begin`` listener: at once if the
    write lock is free, else after saying so, waiting up to the timeout."""
    raw: Any = conn.connection.driver_connection
    holder = "another process holds its write lock"
    raw.execute("PRAGMA busy_timeout = 0")
    try:
        raw.execute("BEGIN IMMEDIATE")
        return
    except sqlite3.OperationalError as e:
        if not _busy(e):
            raise
        if wait.seconds <= 0:
            raise wait.gave_up(holder) from e
    wait.waiting(holder)
    raw.execute(f"PRAGMA busy_timeout = {max(1, round(wait.seconds * 1000))}")
    try:
        raw.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as e:
        if _busy(e):
            raise wait.gave_up(holder) from e
        raise


def _busy(e: sqlite3.Error) -> bool:
    return getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY
