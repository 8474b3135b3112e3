"""One base error for everything ingest raises on purpose.

Bad *input* never raises: it becomes a reject record or a warning. These errors are for
conditions that stop a run (unusable paths, a held lock, a full disk) and carry enough
context for a one-line message on the command line.
"""

from __future__ import annotations


class IngestError(Exception):
    """Base of all deliberate ingest errors; ``str(err)`` is a one-line message."""


class UsageError(IngestError):
    """The command line or a path given on it cannot be used (exit code 2)."""


class OutputLocked(IngestError):
    """Another run holds the lock on the output folder (exit code 2)."""


class PublishError(IngestError):
    """Writing or publishing the output failed; the previous output is left intact (exit 2)."""


class WorkerLost(IngestError):
    """A worker process (of ``--jobs``, or Dask's) stopped before its work was done;
    nothing was published (exit code 2)."""


class ReadError(IngestError):
    """A publish could not be read (``read_publish``): a file missing or damaged, or a
    publish of a newer major schema; ``str(err)`` names the file and line."""
