"""Reaching a database: URLs and drivers (errors as one line), one publish at a time (a
lock whose waits are said and bounded), and a SQLite file made and removed only by its
own publish."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import psycopg
from sqlalchemy import Engine, create_engine, event, exc, text
from sqlalchemy.engine import URL, Connection, make_url

from ingest.database.tables import dumps
from ingest.errors import PublishError, UsageError

USAGE = "use sqlite:///PATH or postgresql://USER@HOST:PORT/DB"
_SQLITE_DRIVERS = {"sqlite", "sqlite+pysqlite"}
_PG_DRIVERS = {"postgresql", "postgresql+psycopg", "postgres"}
PG_CONNECT_TIMEOUT = 10
_PASSWORD_PARAM = re.compile(r"(?i)((?:^|[?&;])password=)[^&;#]*")


def parse_url(text: str) -> URL:
    """A URL we can publish into, or a :class:`UsageError` that says why not (never with
    the password the URL holds)."""
    if text.partition("://")[0] in _PG_DRIVERS:
        url = _server_url(text)
    else:
        try:
            url = make_url(text)
        except exc.ArgumentError:
            raise UsageError(f"--db {masked(text)!r} is not a database URL; {USAGE}") from None
    if url.drivername in _SQLITE_DRIVERS:
        if url.host or url.username or url.password or "?" in text or "#" in text:
            raise UsageError(f"--db {masked(text)!r}: a SQLite URL names a file alone; {USAGE}")
        if not url.database or url.database == ":memory:" or url.database.startswith("file:"):
            raise UsageError(f"--db {masked(text)!r} names no database file; {USAGE}")
        path = Path(url.database)
        if path.exists() and not path.is_file():
            raise UsageError(f"--db {masked(text)!r}: {path} is not a file")
        if not path.parent.is_dir():
            raise UsageError(f"--db {masked(text)!r}: folder {str(path.parent)!r} missing")
        return url.set(drivername="sqlite+pysqlite")
    if url.drivername in _PG_DRIVERS:
        if not url.database:
            raise UsageError(f"--db {shown(url)}: names no database; {USAGE}")
        url = url.set(drivername="postgresql+psycopg")
        try:  # what the driver will be given: its hosts, ports and options read now
            url.get_dialect()().create_connect_args(url)
        except (exc.ArgumentError, ValueError) as e:
            raise UsageError(f"--db {shown(url)}: {first_lines(e)}; {USAGE}") from None
        return url
    raise UsageError(f"--db {shown(url)}: unsupported database {url.drivername!r}; {USAGE}")


def _server_url(text: str) -> URL:
    """A server's URL, read as RFC 3986 has it: the user information ends at the last
    ``@`` of the authority, so a password may hold one (SQLAlchemy's reading ends it at the
    first); percent-escapes decoded."""
    try:
        parts = urlsplit(text)
    except ValueError as e:
        raise UsageError(f"--db {masked(text)!r} is not a database URL ({e}); {USAGE}") from None
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"--db {masked(text)!r}: its port is not a number; {USAGE}") from None
    query: dict[str, str | tuple[str, ...]] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        old = query.get(key)
        query[key] = value if old is None else (*((old,) if isinstance(old, str) else old), value)
    return URL.create(
        parts.scheme,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password is not None else None,
        host=parts.hostname,
        port=port,
        database=unquote(parts.path.lstrip("/")) or None,
        query=query,
    )


def masked(text: str) -> str:
    """A URL as given, its password (in its user information, or a ``password=``
    parameter) shown as ``***``."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    last_at = rest.rfind("@")
    ends = [i for i in (rest.find(c, max(last_at, 0)) for c in "/?#") if i != -1]
    authority_end = min(ends, default=len(rest))  # the authority: up to the first of those
    authority, tail = rest[:authority_end], rest[authority_end:]
    user, found_at, host = authority.rpartition("@")
    if found_at and ":" in user:
        authority = f"{user.split(':', 1)[0]}:***@{host}"
    tail = _PASSWORD_PARAM.sub(r"\1***", tail)
    return f"{scheme}{sep}{authority}{tail}"


def shown(url: URL) -> str:
    """The URL as printed: the password hidden (a ``password=`` parameter too), no driver."""
    return masked(url.set(drivername=url.get_backend_name()).render_as_string(hide_password=True))


def open_engine(url: URL, wait: Wait) -> Engine:
    if url.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"timeout": wait.seconds}, json_serializer=dumps)
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", partial(sqlite_begin, wait))
        return engine
    # How a publish names itself to the server: what a waiting publish shows of it.
    name = f"ingest publish {socket.gethostname()} pid {os.getpid()}"[:63]
    args = {"connect_timeout": PG_CONNECT_TIMEOUT, "application_name": name}
    return create_engine(url, connect_args=args, json_serializer=dumps)


def _sqlite_connect(dbapi_conn: Any, record: object) -> None:
    dbapi_conn.isolation_level = None  # we say BEGIN ourselves (see sqlite_begin)
    dbapi_conn.execute("PRAGMA foreign_keys = ON")


def use_wal(engine: Engine) -> None:
    """SQLite's readers see the last committed publish while the next is written (a server
    does this by itself). Persistent in the file, so set once; outside any transaction (on
    the driver's connection)."""
    with contextlib.closing(engine.raw_connection()) as raw:
        driver: Any = raw.driver_connection
        if driver.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            driver.execute("PRAGMA journal_mode = WAL")


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


#: The advisory lock of ``ingest publish`` (``pg_advisory_xact_lock(1768843109, 1937010800)``,
#: "inge", "stpu"): another session holding it, e.g. during maintenance, holds publishes off.
PG_LOCK = {"a": 1768843109, "b": 1937010800}


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


def pg_lock(conn: Connection, wait: Wait) -> None:
    """The publish lock, as the transaction's first statement; waits up to the timeout."""
    if conn.execute(text("SELECT pg_try_advisory_xact_lock(:a, :b)"), PG_LOCK).scalar():
        return
    holder = _pg_holder(conn)
    if wait.seconds <= 0:
        raise wait.gave_up(holder)
    wait.waiting(holder)
    before = conn.execute(text("SELECT current_setting('lock_timeout')")).scalar()
    ms = {"ms": f"{max(1, round(wait.seconds * 1000))}ms"}
    conn.execute(text("SELECT set_config('lock_timeout', :ms, true)"), ms)
    try:
        conn.execute(text("SELECT pg_advisory_xact_lock(:a, :b)"), PG_LOCK)
    except exc.OperationalError as e:
        if getattr(e.orig, "sqlstate", None) == "55P03":  # lock_not_available
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
    row = conn.execute(query, PG_LOCK).first()
    if row is None:
        return "its holder just let go"
    name, pid, since = row
    when = f", since {since:%Y-%m-%d %H:%M:%S %Z}" if since is not None else ""
    return f"held by {name or 'a session'}, server pid {pid}{when}"


def sqlite_begin(wait: Wait, conn: Connection) -> None:
    """SQLite's ``BEGIN IMMEDIATE``, as the engine's ``begin`` listener: at once if the
    write lock is free, else after saying so, waiting up to the timeout."""
    raw: Any = conn.connection.driver_connection
    holder = "another process holds its write lock"
    raw.execute("PRAGMA busy_timeout = 0")
    if (busy := _begin_immediate(raw)) is None:
        return
    if wait.seconds > 0:
        wait.waiting(holder)
        deadline = time.monotonic() + wait.seconds
        while (left := deadline - time.monotonic()) > 0:  # in slices: a signal is answered
            raw.execute(f"PRAGMA busy_timeout = {max(1, round(min(left, 0.25) * 1000))}")
            if (busy := _begin_immediate(raw)) is None:
                return
    raise wait.gave_up(holder) from busy


def _begin_immediate(raw: Any) -> sqlite3.OperationalError | None:
    """``BEGIN IMMEDIATE``; the error if the write lock stayed taken (busy)."""
    try:
        raw.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as e:
        if getattr(e, "sqlite_errorcode", None) != sqlite3.SQLITE_BUSY:
            raise
        return e
    return None


@dataclass(frozen=True, slots=True)
class SqliteFile:
    path: Path
    made: bool  # by this publish, with O_EXCL
    identity: tuple[int, int]  # (device, inode) of the file as found or made


def claim(path: Path, where: str) -> SqliteFile:
    """The database file at ``path``: made here if there is none."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
        made = True
    except FileExistsError:
        made = False
    except OSError as e:
        raise PublishError(
            f"{where}: cannot create the database file in {str(path.parent)!r} ({e.strerror})"
        ) from e
    try:
        st = os.stat(path)
    except OSError as e:
        raise PublishError(f"{where}: cannot read the database file ({e.strerror})") from e
    return SqliteFile(path, made, (st.st_dev, st.st_ino))


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def still_there(file: SqliteFile, where: str) -> None:
    """Under the write lock: the path still leads to the file this publish opened."""
    if _identity(file.path) != file.identity:
        raise PublishError(
            f"{where}: the database file was removed or replaced while this publish waited "
            "for it (the publish that made it failed); nothing written; publish again"
        )


def remove_if_unused(file: SqliteFile) -> None:
    """After a failed publish: the file goes if this publish made it and it holds no
    table, checked and removed under its write lock (no wait: a publish holding the lock
    is using the file, which then stays)."""
    if not file.made:
        return
    try:
        conn = sqlite3.connect(file.path, timeout=0, isolation_level=None)
    except sqlite3.Error:
        return
    # an error: the file is in use, or not ours to judge; it stays
    with contextlib.closing(conn), contextlib.suppress(sqlite3.Error, OSError):
        conn.execute("BEGIN IMMEDIATE")
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables == 0 and _identity(file.path) == file.identity:
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{file.path}{suffix}").unlink()
