"""Ownership: ingest replaces only what it wrote, and never a folder it did not write.

Every publish carries a marker, ``.ingest`` (written atomically with the rest), naming
ingest and the schema. An output folder is accepted when it does not exist, is empty (git
keep files aside), holds ingest's marker and nothing but what ingest writes, or is a
publish of schema 1.0 (written before the marker existed: exactly its four files). Any
other folder is refused before a single input is read, with one line that says what is
in it. A symlink is followed: the folder it points to is checked and replaced, and the
link itself stays a link. Inputs and output never overlap.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from .. import SCHEMA_VERSION
from ..errors import UsageError
from ..records.run import FILES, PAGE, PAGES
from ..state.integrity import MANIFEST, Seal, repair_command
from ..state.previous import MARKER, STATE, STATE_VERSION
from .atomic import KEEP_FILES

#: What ingest writes into an output folder.
OWNED = frozenset({*FILES, PAGE, PAGES, MARKER, STATE, *KEEP_FILES})
#: A publish of schema 1.0: these four files and nothing else of ingest's.
LEGACY_FILES = frozenset({"items.jsonl", "topics.jsonl", "rejects.jsonl", "report.json"})


def marker(kind: str = "publish", state_manifest: str | None = None) -> bytes:
    """The marker's bytes: written by ingest, which schema and state, what kind of folder,
    and (a publish) the checksum of its state's manifest."""
    doc: dict[str, object] = {
        "written_by": "ingest",
        "kind": kind,
        "schema_version": SCHEMA_VERSION,
        "state_version": STATE_VERSION,
    }
    if state_manifest is not None:
        doc["state_manifest"] = state_manifest
    return json.dumps(doc, indent=1).encode() + b"\n"


def sealed_marker(seal: Seal) -> list[bytes]:
    """A publish's marker, once its state's manifest is written (see
    :mod:`ingest.state.integrity`)."""
    return [marker(state_manifest=seal.sum_of(f"{STATE}/{MANIFEST}").xxh3_128)]


def target_of(out_dir: Path, flag: str = "--out") -> Path:
    """The real folder ``out_dir`` names (a symlink followed), checked to be usable."""
    if out_dir.is_symlink() and not out_dir.exists():
        raise UsageError(f"{flag} {str(out_dir)!r} is a symlink to a missing folder")
    target = Path(os.path.realpath(out_dir))
    if target.exists() and not target.is_dir():
        raise UsageError(f"{flag} {str(out_dir)!r} exists and is not a folder")
    if not target.parent.is_dir():
        raise UsageError(f"{flag} {str(out_dir)!r}: parent folder {str(target.parent)!r} missing")
    if target == target.parent:
        raise UsageError(f"{flag} {str(out_dir)!r} is the root folder")
    return target


def check_owned(out_dir: Path, flag: str = "--out", kind: str = "publish") -> Path:
    """Refuse (UsageError) a folder ingest may not replace; return the real folder."""
    target = target_of(out_dir, flag)
    if not target.exists():
        return target
    entries = sorted(os.listdir(target))
    if set(entries) <= set(KEEP_FILES):
        return target
    if MARKER in entries:
        foreign = [e for e in entries if e not in OWNED]
        _check_marker(target, flag, kind, mended=not foreign and "report.json" in entries)
        if foreign:
            raise UsageError(
                f"{flag} {str(out_dir)!r} is an ingest output but also holds "
                f"{_listing(target, foreign)}, which ingest did not write; move them away first"
            )
        return target
    if set(entries) - set(KEEP_FILES) == LEGACY_FILES and _is_legacy_report(target):
        return target
    raise UsageError(
        f"{flag} {str(out_dir)!r} holds {_listing(target, entries)} and is not an ingest "
        "output; name a new or empty folder (ingest replaces the whole folder)"
    )


def _check_marker(target: Path, flag: str, kind: str, mended: bool) -> None:
    """Refuse a marker that is not ingest's (``mended``: the folder holds nothing else but
    what a publish does, so the message says how to write the marker again)."""
    try:
        doc = json.loads((target / MARKER).read_text(encoding="utf-8"))
        ok = isinstance(doc, dict) and doc.get("written_by") == "ingest"
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        ok = False
    if not ok:
        how = f"; if it is a publish whose marker was damaged: {repair_command(target)}"
        raise UsageError(
            f"{flag} {str(target)!r}: its {MARKER} file is not ingest's marker{how * mended}"
        )
    if doc.get("kind", "publish") != kind:
        raise UsageError(
            f"{flag} {str(target)!r} holds ingest's {doc.get('kind')!r} output, not a {kind}"
        )


def _is_legacy_report(target: Path) -> bool:
    try:
        doc = json.loads((target / "report.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(doc, dict) and str(doc.get("schema_version", "")).startswith("1.0.")


def _listing(folder: Path, names: Iterable[str]) -> str:
    shown = [n + ("/" if (folder / n).is_dir() else "") for n in names]
    head = ", ".join(repr(n) for n in shown[:5])
    more = f" and {len(shown) - 5} more" if len(shown) > 5 else ""
    return f"{len(shown)} entr{'y' if len(shown) == 1 else 'ies'} ({head}{more})"


def check_apart(inputs: Iterable[str], out_dir: Path) -> None:
    """Inputs and output never overlap: an input equal to, inside, or containing the output
    folder (symlinks and ``..`` resolved) is a usage error."""
    out = Path(os.path.realpath(out_dir))
    for raw in inputs:
        path = Path(os.path.realpath(raw))
        if path == out or path.is_relative_to(out) or out.is_relative_to(path):
            how = "is" if path == out else ("is inside" if path.is_relative_to(out) else "holds")
            raise UsageError(
                f"input {raw!r} {how} the output folder {str(out_dir)!r}: ingest replaces the "
                "output folder as a whole, so inputs and output must not overlap"
            )
