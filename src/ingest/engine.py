"""Local execution of the per-file map: in this process, or in N worker processes.

Results come back in input order whatever order the workers finish in, so the output is
byte-identical for any ``--jobs``. An unexpected exception inside one file's parse is a
bug, but it must not lose the run: it becomes an INTERNAL_ERROR reject of that file.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from collections.abc import Callable, Iterator

from .models import PageReject, PageResult, Provenance
from .parse import parse_file
from .read import InputFile

Progress = Callable[[PageResult], None]


def parse_one(f: InputFile) -> PageResult:
    try:
        return parse_file(f)
    except Exception as e:  # a bug: keep the run going, count it, say where
        r = PageResult(f.name, "", 0, None, None)
        where = traceback.extract_tb(e.__traceback__)[-1]
        msg = f"{type(e).__name__}: {e} (at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})"
        r.rejects.append(
            PageReject(Provenance(f.name, "", "", "file", 0, 1), "INTERNAL_ERROR", msg, "", False)
        )
        return r


def parse_all(inputs: list[InputFile], jobs: int, progress: Progress | None) -> list[PageResult]:
    """Parse every input file; ``jobs`` > 1 uses that many worker processes."""
    results = []
    for r in _map(inputs, jobs):
        if progress is not None:
            progress(r)
        results.append(r)
    return results


def _map(inputs: list[InputFile], jobs: int) -> Iterator[PageResult]:
    if jobs <= 1 or len(inputs) <= 1:
        yield from map(parse_one, inputs)
        return
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    chunk = max(1, min(64, len(inputs) // (jobs * 8)))
    with ctx.Pool(jobs) as pool:
        yield from pool.imap(parse_one, inputs, chunksize=chunk)
