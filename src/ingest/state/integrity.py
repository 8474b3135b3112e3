"""The state's checksums: no file of ``state/`` is used before it is checked.

A state of version 3 lists, in ``state/manifest.json`` ``files``, every other file of
``state/`` with its size and xxh3-128 digest (``earlier.msgpack``, each ``pages-N.pack``,
and whatever file a later version adds: a publish seals every file it writes or links
under ``state/``, see :class:`Seal`), and ``.ingest`` keeps the manifest's own digest
(``state_manifest``). :func:`checked` reads them all before a run reads an input: a file
missing, of another size or digest, or a manifest that is not the one ``.ingest`` names, is
refused in one line that names the file and gives the command that rebuilds the state
(``ingest repair DIR``). Within a pack, each page is checked again by its sha256 whenever
its bytes are read (``--merge``, a pack written anew).

A state written before checksums (versions 1 and 2) has none: its pages are checked by
their sha256 (each pack read once, and its digest taken for the next publish, which
carries it), its other files read unchecked; the next publish writes version 3.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from xxhash import xxh3_128, xxh3_128_hexdigest

from ..errors import UsageError
from ..records.run import Alongside, Apart, Closing, Content, Pieces
from .earlier import STATE

#: The state's manifest, and the publish's marker (beside ``state/``).
MANIFEST, MARKER = "manifest.json", ".ingest"
#: The first state version whose files carry checksums.
SEALED = 3
_READ = 1 << 20


class FileSum(msgspec.Struct, frozen=True):
    """A state file's size and xxh3-128 digest (hex), as its manifest lists it."""

    size: int
    xxh3_128: str


def digest(data: bytes) -> str:
    """The digest a state file is listed with."""
    return xxh3_128_hexdigest(data)


def file_sum(path: Path) -> FileSum:
    """A file's size and digest, read a megabyte at a time."""
    h, size = xxh3_128(), 0
    with open(path, "rb") as fh:
        while piece := fh.read(_READ):
            h.update(piece)
            size += len(piece)
    return FileSum(size, h.hexdigest())


class Seal:
    """The checksums of a state as a publish writes it: each file under ``state/`` is
    hashed as its pieces are written (:meth:`sealed`), or is known already (a file linked
    from the previous state: :meth:`known`)."""

    def __init__(self) -> None:
        self._sums: dict[str, FileSum] = {}  # by name in the publish ("state/...")

    def sealed(self, name: str, content: Content) -> Content:
        """``content``, hashed for ``name`` as it is written."""
        if isinstance(content, bytes):
            self._sums[name] = FileSum(len(content), digest(content))
            return content
        if isinstance(content, Apart):  # made in a child: its pieces never pass here
            raise TypeError(f"{name}: a state file cannot be made apart")
        if isinstance(content, Alongside | Closing):
            return type(content)(self._hashing(name, content.pieces))
        return self._hashing(name, content)

    def _hashing(self, name: str, pieces: Pieces) -> Pieces:
        def made() -> Iterator[bytes]:
            h, size = xxh3_128(), 0
            for piece in pieces():
                h.update(piece)
                size += len(piece)
                yield piece
            self._sums[name] = FileSum(size, h.hexdigest())

        return made

    def known(self, name: str, found: FileSum) -> None:
        self._sums[name] = found

    def sum_of(self, name: str) -> FileSum:
        """The checksum of a file written (or linked) by now."""
        return self._sums[name]

    def listing(self) -> dict[str, FileSum]:
        """Every file of ``state/`` but the manifest, by its name there, sorted: what the
        manifest lists (made once they are all written)."""
        prefix = STATE + "/"
        names = sorted(n for n in self._sums if n.startswith(prefix) and n != prefix + MANIFEST)
        return {n[len(prefix) :]: self._sums[n] for n in names}


@dataclass(frozen=True, slots=True)
class Checked:
    """A publish's state manifest, and every file of ``state/`` it lists, as checked."""

    manifest: dict[str, Any]
    files: dict[str, FileSum]
    cache_damaged: str | None = None  # why the reuse cache fails its check (see is_cache)


def is_cache(name: str) -> bool:
    """A file of the reuse cache (``state/reuse.py``): what it holds is made again by any
    run, so one that fails its check is ignored and rebuilt, never a damaged state."""
    return name == "reuse.msgpack" or (name.startswith("reuse-") and name.endswith(".pack"))


def repair_command(folder: Path) -> str:
    return f"ingest repair {shlex.quote(str(folder))}"


class DamagedState(UsageError):
    """A state that is not what was written, refused in one line: ``what`` says which file
    and how; the message adds the command that rebuilds it from the publish's own records
    and pages."""

    def __init__(self, folder: Path, what: str) -> None:
        super().__init__(
            f"the state of the publish in {str(folder)!r} is damaged: {what}. Nothing was "
            f"changed; rebuild the state from the publish's records and pages with: "
            f"{repair_command(folder)}"
        )
        self.what = what


def checked(folder: Path, reads: tuple[int, ...]) -> Checked | None:
    """The state of the publish in ``folder`` (None: it has none, a publish of schema
    1.0), every file checked; :class:`DamagedState` when one is not what was written. A state
    of a version not in ``reads`` is returned unchecked (its reader refuses it)."""
    marker = _marker(folder)
    sealed_by = marker.get("state_manifest")
    path = folder / STATE / MANIFEST
    if not path.is_file():
        if marker:  # every publish with a marker has a state (schema 1.0 had neither)
            raise DamagedState(folder, f"{STATE}/{MANIFEST} is missing")
        return None
    data = _read(folder, path)
    version = marker.get("state_version")
    if isinstance(version, int) and version not in reads:
        return Checked(_decoded(folder, data), {})
    if sealed_by is not None and sealed_by != digest(data):
        raise DamagedState(folder, f"{STATE}/{MANIFEST} does not match its checksum in {MARKER}")
    manifest = _decoded(folder, data)
    version = manifest.get("state_version")
    if not isinstance(version, int) or version not in reads:
        return Checked(manifest, {})
    if version < SEALED:  # no checksums: a reuse cache there cannot be trusted
        cache = [n for n in sorted(os.listdir(folder / STATE)) if is_cache(n)]
        why = f"{STATE}/{cache[0]} has no checksum" if cache else None
        return Checked(manifest, _legacy(folder, manifest), why)
    if sealed_by is None:
        raise DamagedState(folder, f"the checksum of {STATE}/{MANIFEST} is missing from {MARKER}")
    return _listed(folder, manifest)


def read_manifest(folder: Path) -> tuple[dict[str, Any] | None, bool]:
    """The manifest as well as it can be read (None: not at all), and whether it is the
    one ``.ingest`` names (a state without checksums: whether it decodes)."""
    try:
        marker = _marker(folder)
    except UsageError:
        marker = {}
    try:
        data = (folder / STATE / MANIFEST).read_bytes()
        doc = msgspec.json.decode(data)
    except (OSError, msgspec.DecodeError):
        return None, False
    if not isinstance(doc, dict):
        return None, False
    sealed_by = marker.get("state_manifest")
    if sealed_by is None:
        return doc, doc.get("state_version") in (1, 2)
    return doc, sealed_by == digest(data)


def _marker(folder: Path) -> dict[str, Any]:
    try:
        doc = json.loads((folder / MARKER).read_bytes())
    except FileNotFoundError:
        return {}  # a publish of schema 1.0
    except (OSError, ValueError) as e:
        raise DamagedState(folder, f"{MARKER} cannot be read ({e})") from e
    if not isinstance(doc, dict) or doc.get("written_by") != "ingest":
        raise DamagedState(folder, f"{MARKER} is not ingest's marker")
    return doc


def _read(folder: Path, path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise DamagedState(folder, f"{STATE}/{path.name} cannot be read ({e.strerror})") from e


def _decoded(folder: Path, data: bytes) -> dict[str, Any]:
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as e:
        raise DamagedState(folder, f"{STATE}/{MANIFEST} is not JSON ({e})") from e
    if not isinstance(doc, dict):
        raise DamagedState(folder, f"{STATE}/{MANIFEST} is not an object")
    return doc


def _listed(folder: Path, manifest: Mapping[str, Any]) -> Checked:
    """Every file of ``state/`` listed, and every file the manifest lists checked: there,
    of its size, of its digest; and every page it names inside a file it lists. A file of
    the reuse cache that fails is left out of what is checked, and said."""
    try:
        files = msgspec.convert(manifest["files"], dict[str, FileSum])
    except (KeyError, msgspec.ValidationError) as e:
        raise DamagedState(folder, f"{STATE}/{MANIFEST} has no list of files ({e})") from e
    cache: list[str] = []
    for name in sorted(set(os.listdir(folder / STATE)) - {MANIFEST, *files}):
        if not is_cache(name):
            raise DamagedState(folder, f"{STATE}/{name} is not in its manifest")
        cache.append(f"{STATE}/{name} is not in its manifest")
    for name, listed in list(files.items()):
        if "/" in name or name in ("", ".", "..", MANIFEST):
            raise DamagedState(folder, f"{STATE}/{MANIFEST} lists a file {name!r}")
        try:
            found = file_sum(folder / STATE / name)
            what = None if found == listed else f"{STATE}/{name} does not match its checksum"
        except FileNotFoundError:
            what = f"{STATE}/{name} is missing"
        except OSError as e:
            what = f"{STATE}/{name} cannot be read ({e.strerror})"
        if what is not None and not is_cache(name):
            raise DamagedState(folder, what)
        if what is not None:
            cache.append(what)
            del files[name]
    for page in _pages(folder, manifest):
        pack = files.get(page["pack"])
        if (
            pack is None
            or min(page["offset"], page["size"]) < 0
            or (page["offset"] + page["size"] > pack.size)
        ):
            raise DamagedState(folder, f"{STATE}/{MANIFEST} puts {page['file']!r} outside its pack")
    return Checked(dict(manifest), files, "; ".join(cache) or None)


def _legacy(folder: Path, manifest: Mapping[str, Any]) -> dict[str, FileSum]:
    """A state without checksums: every page checked by its sha256, and each pack's
    checksum taken (the next publish lists the packs it carries)."""
    by_pack: dict[str, list[dict[str, Any]]] = {}
    for page in _pages(folder, manifest):
        by_pack.setdefault(page["pack"], []).append(page)
    files = {}
    for name, pages in sorted(by_pack.items()):
        if "/" in name or name in ("", ".", ".."):
            raise DamagedState(folder, f"{STATE}/{MANIFEST} names a pack {name!r}")
        data = _read(folder, folder / STATE / name)
        for page in pages:
            view = data[page["offset"] : page["offset"] + page["size"]]
            if hashlib.sha256(view).hexdigest() != page["sha256"]:
                raise DamagedState(
                    folder, f"page {page['file']!r} in {STATE}/{name} is not its bytes"
                )
        files[name] = FileSum(len(data), digest(data))
    return files


_PAGE = {"file": str, "sha256": str, "size": int, "pack": str, "offset": int}


def _pages(folder: Path, manifest: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    pages = manifest.get("pages")
    if not isinstance(pages, list):
        raise DamagedState(folder, f"{STATE}/{MANIFEST} has no list of pages")
    for page in pages:
        if not isinstance(page, dict) or any(
            not isinstance(page.get(k), t) for k, t in _PAGE.items()
        ):
            raise DamagedState(
                folder, f"{STATE}/{MANIFEST} has a page it cannot name: {page!r:.80}"
            )
        yield page
