"""``ingest repair DIR``: the state of a publish rebuilt from its own records and pages.

A run refuses a damaged state (see :mod:`ingest.state.integrity`) and names this command.
It takes the folder's lock, checks the state as a run would, and when it is damaged reads
the publish's records (every line checked, as ``ingest publish`` reads them) and makes the
state again from them and from the pages whose bytes still match their sha256 (see
:mod:`ingest.state.rebuild`: what is kept, what is made again, what is lost). The records,
the report and its page are carried as they are; the new state is published with them in
one atomic swap, like a run's, so a reader never sees a folder half repaired.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ..errors import UsageError
from ..records.run import PAGES, Closing
from ..state.earlier import ITEMS, TOPICS
from ..state.integrity import DamagedState, checked
from ..state.previous import MARKER, READS, STATE
from ..state.rebuild import rebuilt
from .atomic import KEEP_FILES, publish
from .lock import OutputLock
from .ownership import OWNED, check_owned, sealed_marker, target_of
from .published import load_publish
from .stops import Stops


@dataclass(frozen=True, slots=True)
class Repair:
    """What repair found and did: ``damage`` None when the state was whole (nothing done)."""

    damage: str | None = None
    done: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)


def _owned(out_dir: Path) -> Path:
    """The folder, if ingest may replace it: as a run would have it, or a publish whose
    marker is damaged (nothing in it but what a publish holds; its records are read and
    checked before anything is written)."""
    try:
        return check_owned(out_dir, "repair")
    except UsageError:
        target = target_of(out_dir, "repair")
        entries = set(os.listdir(target)) if target.is_dir() else set()
        if MARKER not in entries or "report.json" not in entries or not entries <= OWNED:
            raise
        try:
            ours = json.loads((target / MARKER).read_bytes()).get("written_by") == "ingest"
        except (OSError, ValueError, AttributeError):
            ours = False
        if ours:  # refused for another reason (the shrink guard's output, ...)
            raise
        return target


def repair(out_dir: Path, stops: Stops | None = None) -> Repair:
    """Rebuild the state of the publish in ``out_dir`` if it is damaged."""
    target = _owned(out_dir)
    if not (target / "report.json").is_file():
        raise UsageError(f"{str(out_dir)!r} holds no publish of ingest run to repair")
    if stops is not None:
        stops.folder = out_dir
    with OutputLock(target):
        try:
            found = checked(target, READS)
        except DamagedState as e:
            damage = e.what
        else:
            version = None if found is None else found.manifest.get("state_version")
            if version is not None and version not in READS:
                raise UsageError(
                    f"{str(out_dir)!r} has state version {version!r}; this ingest reads "
                    f"versions {READS[0]} to {READS[-1]}: repair it with the ingest that wrote it"
                )
            return Repair()
        try:
            run = load_publish(target)
        except UsageError as e:
            raise UsageError(f"cannot repair: the publish's records cannot be read: {e}") from e
        state = rebuilt(target, run, *((target / n).read_bytes() for n in (ITEMS, TOPICS)))
        carried = {
            name: target / name
            for name in sorted(os.listdir(target))
            if name not in (STATE, MARKER, *KEEP_FILES) and (target / name).is_file()
        }
        if (target / PAGES).is_dir():  # the report's pages beside report.html
            for name in sorted(os.listdir(target / PAGES)):
                carried[f"{PAGES}/{name}"] = target / PAGES / name
        files = {**state.files, MARKER: Closing(partial(sealed_marker, state.seal))}
        publish(target, files, {**carried, **state.links}, stops)
    return Repair(damage, state.done, state.lost)
