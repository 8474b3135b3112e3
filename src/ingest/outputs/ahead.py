"""The state's page pack, written ahead of the publish by a child of low priority.

A first publish packs every input page (100 MB at 100 MB), and writing it while the
publish renders the other files cost the run 0.6 s: a thread re-reading 5,000 files
waited on the interpreter lock the other files' encoding held, and the page's child and
this process had both cores already. The bytes to pack are the inputs' own, known before
the run, so a child forked as the run starts (its parent still small) reads and writes
them beside the output folder at the lowest priority: it takes a core only when the run
leaves one idle (the steps after parsing leave the second core idle most of the time).

Before it lowers its priority, the child asks the kernel to read every input ahead (see
:func:`~ingest.extract.read.read_ahead`), for the parse as much as for itself: the parse
reads its files one after another, and a file out of the cache makes its process wait for
the disk. At 100 MB out of the cache, the parse took 4.30 s without and 3.45 s with (the
medians of five alternated runs, each after the cache was dropped); with the files in the
cache it is as fast either way.

The publish takes that file only if it is exactly the pack it would write: the same pages,
in the same order, of the same sha256 as the run parsed (so never other bytes than were
read). Anything else (a page changed between the reads, pages of the state to repack, a
child that failed or died) and the pack is written as before; the file written ahead is
removed either way, and a run killed meanwhile leaves one its next run removes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path

from ..engines.forked import Forked, forked
from ..errors import WorkerLost
from ..extract.discover import InputFile
from ..extract.read import read_ahead, read_bytes
from ..state.integrity import FileSum, Seal
from ..state.previous import Previous
from .files import write_file

#: (file name, sha256) of each page written ahead, in the pack's order; and the pack's
#: checksum.
Packed = tuple[list[tuple[str, str]], FileSum]


class PackAhead:
    """A pack being written ahead into ``path`` by a child."""

    def __init__(self, child: Forked[Packed], path: Path) -> None:
        self._child: Forked[Packed] | None = child
        self.path = path

    def take(self, pages: Sequence[tuple[str, str, bool]]) -> tuple[Path, FileSum] | None:
        """The file written ahead and its checksum, if it holds exactly ``pages`` (file,
        sha256, from the state) in that order; None if not (the caller writes the pack
        itself)."""
        if self._child is None or any(from_state for _, _, from_state in pages):
            return None
        child, self._child = self._child, None
        try:
            packed, found = child.result()
        except (OSError, WorkerLost):  # the disk, or a child killed: written the usual way
            return None
        return (self.path, found) if packed == [(n, sha) for n, sha, _ in pages] else None

    def discard(self) -> None:
        """Stop the child if it still works, and remove the file it wrote."""
        if self._child is not None:
            self._child.stop()
            self._child = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def pack_ahead(inputs: Sequence[InputFile], prev: Previous, path: Path) -> PackAhead | None:
    """A child packing into ``path`` every readable input whose bytes no earlier pack holds
    (each sha256 once, in input order); None where no child can be had."""
    known = frozenset(ref.sha256 for ref in prev.pages)
    usable = [(f.name, f.path) for f in inputs if f.problem is None]
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a killed run's, of a pid now ours
    child = forked(partial(_write_pack, usable, known, path))
    return None if child is None else PackAhead(child, path)


def _write_pack(inputs: list[tuple[str, Path]], known: frozenset[str], path: Path) -> Packed:
    """In the child: every input read ahead, then the pack written (and synced) at the
    lowest priority."""
    read_ahead(where for _, where in inputs)
    _lowest_priority()
    packed: list[tuple[str, str]] = []
    seen = set(known)

    def pieces() -> Iterator[bytes]:
        for name, where in inputs:
            data, _ = read_bytes(where)
            if data is None:
                continue
            sha = hashlib.sha256(data).hexdigest()
            if sha not in seen:
                seen.add(sha)
                packed.append((name, sha))
                yield data

    seal = Seal()  # the pack's checksum, taken from the bytes as they are written
    write_file(path, seal.sealed(path.name, pieces))
    return packed, seal.sum_of(path.name)


def _lowest_priority() -> None:
    """Run only on a core no other process wants (Linux's idle policy), else at nice 19."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)
