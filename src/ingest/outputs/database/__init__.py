"""The database sites read: a publish loaded into SQLite or PostgreSQL (``ingest publish``).

One code path for both (SQLAlchemy Core; Python's sqlite3 driver, psycopg 3):
``tables`` and ``columns`` (what is stored), ``search`` (FTS5 / pg_trgm), ``connect`` (URLs,
drivers, errors as one line), ``locking`` (one publish at a time, waits said and bounded),
``sqlite_file`` (a file made and removed only by its own publish), ``versions`` and
``migrations`` (ingest's or not, create, migrate), ``checks`` (the folder checked first),
``delta`` (the database walked beside the folder), ``rows`` (records → rows), ``sync``
(the change set logged and applied in batches), ``readback`` (rows → records, for the
fields a change names), ``writer`` (one transaction per publish).
"""

from __future__ import annotations

from pathlib import Path

from .tables import DB_SCHEMA_VERSION
from .writer import DatabaseWriter, Outcome

__all__ = ["DB_SCHEMA_VERSION", "DatabaseWriter", "Outcome", "default_url"]


def default_url(folder: Path) -> str:
    """``sqlite:///`` a file beside the folder, named after it: ``out/`` → ``out.sqlite``.
    Never inside the folder, which each run replaces."""
    here = folder.resolve()
    return f"sqlite:///{here.parent / (here.name + '.sqlite')}"
