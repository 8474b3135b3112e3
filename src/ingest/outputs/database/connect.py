"""From ``--db URL`` to a connection: which URLs are taken, and driver errors as one line.

``sqlite:///PATH`` goes through Python's own sqlite3 driver, ``postgresql://`` (or
``postgres://``) through psycopg 3; everything after the connection is the same SQLAlchemy
Core for both. SQLite is set up so it behaves like a server for our purpose: foreign keys
enforced, a transaction takes the write lock when it begins (``BEGIN IMMEDIATE``, waiting
as ``locking`` says), and the database file runs in WAL mode, so readers keep reading the
previous publish while one is being written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import Engine, create_engine, event, exc
from sqlalchemy.engine import URL, make_url

from ...errors import PublishError, UsageError
from .columns import dumps
from .locking import Wait, application_name, sqlite_begin

USAGE = "use sqlite:///PATH or postgresql://USER@HOST:PORT/DB"
_SQLITE_DRIVERS = {"sqlite", "sqlite+pysqlite"}
_PG_DRIVERS = {"postgresql", "postgresql+psycopg", "postgres"}
#: Seconds a publish waits for another one holding the lock (``--lock-timeout``).
LOCK_TIMEOUT = 60
PG_CONNECT_TIMEOUT = 10


def parse_url(text: str) -> URL:
    """A URL we can publish into, or a :class:`UsageError` that says why not."""
    try:
        url = make_url(text)
    except exc.ArgumentError:
        raise UsageError(f"--db {text!r} is not a database URL; {USAGE}") from None
    if url.drivername in _SQLITE_DRIVERS:
        return _sqlite_url(text, url)
    if url.drivername in _PG_DRIVERS:
        if not url.database:
            raise UsageError(f"--db {shown(url)}: names no database; {USAGE}")
        return url.set(drivername="postgresql+psycopg")
    raise UsageError(f"--db {shown(url)}: unsupported database {url.drivername!r}; {USAGE}")


def _sqlite_url(text: str, url: URL) -> URL:
    if not url.database or url.database == ":memory:" or url.database.startswith("file:"):
        raise UsageError(f"--db {text!r} names no database file; {USAGE}")
    path = Path(url.database)
    if path.exists() and not path.is_file():
        raise UsageError(f"--db {text!r}: {path} is not a file")
    if not path.parent.is_dir():
        raise UsageError(f"--db {text!r}: folder {str(path.parent)!r} missing")
    return url.set(drivername="sqlite+pysqlite")


def shown(url: URL) -> str:
    """The URL as printed: the password hidden, the driver left out."""
    return url.set(drivername=url.get_backend_name()).render_as_string(hide_password=True)


def sqlite_path(url: URL) -> Path | None:
    """The database file of a SQLite URL; None for a server."""
    return Path(url.database or "") if url.get_backend_name() == "sqlite" else None


def open_engine(url: URL, wait: Wait) -> Engine:
    if url.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"timeout": wait.seconds}, json_serializer=dumps)
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", partial(sqlite_begin, wait))
        return engine
    args = {"connect_timeout": PG_CONNECT_TIMEOUT, "application_name": application_name()}
    return create_engine(url, connect_args=args, json_serializer=dumps)


def _sqlite_connect(dbapi_conn: Any, record: object) -> None:
    dbapi_conn.isolation_level = None  # we say BEGIN ourselves (see locking.sqlite_begin)
    dbapi_conn.execute("PRAGMA foreign_keys = ON")


def use_wal(engine: Engine) -> None:
    """Readers see the last committed publish while the next is written (SQLite only; a
    server does this by itself). Persistent in the file, so set once; outside any
    transaction (on the driver's connection)."""
    if engine.dialect.name != "sqlite":
        return
    raw = engine.raw_connection()
    try:
        driver: Any = raw.driver_connection
        if driver.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            driver.execute("PRAGMA journal_mode = WAL")
    finally:
        raw.close()


@contextmanager
def one_line_errors(url: URL) -> Iterator[None]:
    """Driver errors (refused connection, not a database, locked, disk full) as a
    :class:`PublishError` with one line naming the database."""
    try:
        yield
    except exc.DBAPIError as e:
        raise PublishError(f"database {shown(url)}: {first_lines(e.orig)}") from e
    except (exc.SQLAlchemyError, sqlite3.Error, psycopg.Error) as e:
        raise PublishError(f"database {shown(url)}: {first_lines(e)}") from e


def first_lines(err: BaseException | None) -> str:
    """A driver's message on one line (psycopg's run over several)."""
    text = str(err) if err is not None else "unknown error"
    parts = [p.strip() for p in text.splitlines() if p.strip()]
    return "; ".join(parts) or type(err).__name__
