"""Local execution of the per-file map: in this process, or in N worker processes.

Results come back in input order whatever order the workers finish in, so the output is
byte-identical for any ``--jobs``. An unexpected exception inside one file's parse is a
bug, but it must not lose the run: it becomes an INTERNAL_ERROR reject of that file.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from .models import PageReject, PageResult, Provenance
from .parse import parse_file
from .read import InputFile

Progress = Callable[[PageResult], None]
T = TypeVar("T")
R = TypeVar("R")


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
    for r in pmap(parse_one, inputs, jobs):
        if progress is not None:
            progress(r)
        results.append(r)
    return results


def pmap(func: Callable[[T], R], items: Sequence[T], jobs: int) -> Iterator[R]:
    """``map`` in ``jobs`` processes (forked where possible), results in input order."""
    if jobs <= 1 or len(items) <= 1:
        yield from map(func, items)
        return
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    chunk = max(1, min(64, len(items) // (jobs * 8)))
    with ctx.Pool(jobs, initializer=_worker_signals) as pool:
        yield from pool.imap(func, items, chunksize=chunk)


def _worker_signals() -> None:
    """Workers die quietly with the run: the parent alone handles SIGTERM and Ctrl-C."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def languages(titles: Iterable[str | None], jobs: int) -> dict[str, str | None]:
    """Language of each distinct title, judged once, in ``jobs`` processes."""
    from .langid import language_of

    distinct = sorted({t for t in titles if t})
    return dict(zip(distinct, pmap(language_of, distinct, jobs), strict=True))
