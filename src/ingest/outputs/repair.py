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

import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ..errors import UsageError
from ..records.run import Closing
from ..state.earlier import ITEMS, TOPICS
from ..state.integrity import DamagedState, checked
from ..state.previous import MARKER, READS, STATE
from ..state.rebuild import rebuilt
from .atomic import KEEP_FILES, publish
from .lock import OutputLock
from .ownership import check_owned, sealed_marker
from .published import load_publish
from .stops import Stops


@dataclass(frozen=True, slots=True)
class Repair:
    """What repair found and did: ``damage`` None when the state was whole (nothing done)."""

    damage: str | None = None
    done: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)


def repair(out_dir: Path, stops: Stops | None = None) -> Repair:
    """Rebuild the state of the publish in ``out_dir`` if it is damaged."""
    target = check_owned(out_dir, "repair")
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
        files = {**state.files, MARKER: Closing(partial(sealed_marker, state.seal))}
        publish(target, files, {**carried, **state.links}, stops)
    return Repair(damage, state.done, state.lost)
