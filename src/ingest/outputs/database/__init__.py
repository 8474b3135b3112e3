"""The database sites read: a publish loaded into SQLite or PostgreSQL (``ingest publish``).

One code path for both (SQLAlchemy Core; Python's sqlite3 driver, psycopg 3):
``tables`` (what is stored), ``connect`` (URLs, drivers, errors as one line), ``versions``
(ingest's or not, create, migrate), ``rows`` (records → rows), ``sync`` (the change set
against the database, applied), ``readback`` (rows → records, for the fields a change
names), ``writer`` (one transaction per publish).
"""

from __future__ import annotations

from pathlib import Path

from .tables import DB_SCHEMA_VERSION
from .writer import DatabaseWriter, Outcome, files_digest

__all__ = ["DB_SCHEMA_VERSION", "DatabaseWriter", "Outcome", "default_url", "files_digest"]


def default_url(folder: Path) -> str:
    """``sqlite:///`` a file beside the folder, named after it: ``out/`` → ``out.sqlite``.
    Never inside the folder, which each run replaces."""
    here = folder.resolve()
    return f"sqlite:///{here.parent / (here.name + '.sqlite')}"
