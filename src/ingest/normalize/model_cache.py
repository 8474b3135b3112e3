"""A model shipped xz-compressed, read from a decompressed copy kept in ingest's cache.

py3langid ships its model as a 4.6 MB xz file of 68 MB; decompressing it took 0.5 s of
every run that met a split vote (a tenth of a run over a 25 MB crawl), and every ``--jobs``
or Dask worker that judges titles paid it again. The first run writes the decompressed bytes to
``$INGEST_CACHE_DIR`` (default ``$XDG_CACHE_HOME/ingest``, else ``~/.cache/ingest``),
named by the compressed file's SHA-256, so a new model never meets an old copy; later runs
read that copy (about 0.1 s). ``INGEST_CACHE_DIR=`` (empty) turns the cache off.

A copy appears whole or not at all (written under a temporary name, then renamed). Where
the cache cannot be written (read-only home, full disk) or a copy cannot be read, the xz
file is read as before: the cache only ever saves time, it never stops a run.
"""

from __future__ import annotations

import contextlib
import hashlib
import lzma
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

__all__ = ["CACHE_ENV", "cache_dir", "read_xz"]

T = TypeVar("T")

CACHE_ENV = "INGEST_CACHE_DIR"


def cache_dir() -> Path | None:
    """Where copies are kept, or None when the cache is turned off."""
    if CACHE_ENV in os.environ:
        return Path(os.environ[CACHE_ENV]) if os.environ[CACHE_ENV] else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ingest"


def read_xz(source: Path, name: str, reader: Callable[[IO[bytes]], T]) -> T:
    """``reader`` applied to the decompressed bytes of the xz file ``source``: read from the
    cached copy (``name`` and a digest of ``source``), made now if missing. A copy
    ``reader`` cannot read (it raises OSError, ValueError or EOFError) is removed, and the
    xz file is read instead; the next run makes the copy again."""
    copy = _copy_of(source, name)
    if copy is not None:
        try:
            with open(copy, "rb") as stream:
                return reader(stream)
        except (OSError, ValueError, EOFError):
            with contextlib.suppress(OSError):
                os.unlink(copy)
    with lzma.open(source) as stream:
        return reader(stream)


def _copy_of(source: Path, name: str) -> Path | None:
    """The cached copy of ``source``, made if missing; None where there can be none."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
        copy = folder / f"{name}-{digest}"
        if not copy.is_file():
            _write_copy(source, copy)
        return copy
    except OSError:
        return None


def _write_copy(source: Path, copy: Path) -> None:
    copy.parent.mkdir(parents=True, exist_ok=True)
    partial = copy.with_name(f".{copy.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        with lzma.open(source) as stream, open(partial, "xb") as out:
            shutil.copyfileobj(stream, out, 1 << 20)
        os.replace(partial, copy)  # a reader sees the whole copy or none
    finally:
        with contextlib.suppress(OSError):
            os.unlink(partial)
