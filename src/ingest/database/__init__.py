"""The database sites read: a publish loaded into SQLite or PostgreSQL (``ingest publish``),
one code path for both (SQLAlchemy Core; Python's sqlite3 driver, psycopg 3): ``tables``
(what is stored, search, versions), ``connect`` (URLs, errors, the lock, the SQLite file),
``rows`` (records ↔ rows, the folder checked, the delta), ``load`` (the transaction)."""

from __future__ import annotations

from pathlib import Path

from ingest.database.load import DatabaseWriter, Outcome
from ingest.database.tables import DB_SCHEMA_VERSION

__all__ = ["DB_SCHEMA_VERSION", "DatabaseWriter", "Outcome", "default_url"]


def default_url(folder: Path) -> str:
    """``sqlite:///`` a file beside the folder (``out/`` → ``out.sqlite``), never inside it:
    each run replaces the folder."""
    here = folder.resolve()
    return f"sqlite:///{here.parent / (here.name + '.sqlite')}"
