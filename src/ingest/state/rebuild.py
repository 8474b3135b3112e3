"""A publish's state rebuilt from its own records and pages (what ``ingest repair`` does).

What is whole is kept; what is not is made again from what the publish holds, and what
cannot be made again is said:

- ``earlier.msgpack`` is kept when it matches the checksum its manifest lists (even a
  manifest that does not match its own: a digest that still matches is the file's) and
  names the publish's records; else it is made again from ``items.jsonl`` and
  ``topics.jsonl``. Only it knew the earlier summaries and original titles an item was
  known by (the item is then known by its own) and the publish that first had each id
  (then: this publish for the items it added, an earlier one for the others).
- Pages (see :mod:`.salvage`): a page is kept where bytes of its size have the sha256 the
  publish's report gives it, found where the manifest says or, a manifest misplacing it,
  at the boundaries of the other pages of its pack; a pack that lost no page is carried
  as it is, the pages kept from the others are written into a new pack. A page not kept
  is gone from the state: a ``--merge`` run no longer has it. With no readable manifest,
  no page can be found in the packs: none is kept.
- A page's crawl day: from the manifest while it matches its checksum; else, for a page
  this publish read, the run's day from its report, and for one kept from earlier
  publishes none (lost).
"""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
from xxhash import xxh64_intdigest

from ..errors import UsageError
from ..normalize.text import key_of, match_key
from ..records.output import ItemEvidence
from ..records.run import Closing, RunOutput
from .earlier import EARLIER, ITEMS, STATE, TOPICS, Witness, read, written
from .integrity import MANIFEST, FileSum, file_sum, read_manifest
from .pages import manifest_bytes
from .salvage import Rebuilt, salvaged


def rebuilt(folder: Path, run: RunOutput, items: bytes, topics: bytes) -> Rebuilt:
    """The state of the publish in ``folder`` made again from ``run`` (its records, read
    and checked) and ``items`` and ``topics`` (the bytes of its two files of records)."""
    for name, data in ((ITEMS, items), (TOPICS, topics)):
        if data and not data.endswith(b"\n"):
            raise UsageError(
                f"cannot repair {str(folder)!r}: {name} does not end with a line break"
            )
    manifest, trusted = read_manifest(folder)
    out = Rebuilt()
    _earlier(out, folder, run, items, topics, _listed(manifest).get(EARLIER))
    refs = salvaged(out, folder, run, manifest, trusted)
    name = f"{STATE}/{MANIFEST}"
    made = Closing(partial(manifest_bytes, run.report.run.sequence, refs, out.seal))
    out.files[name] = out.seal.sealed(name, made)
    return out


def _listed(manifest: dict[str, Any] | None) -> dict[str, FileSum]:
    """The checksums a manifest lists, as far as they read."""
    try:
        return msgspec.convert((manifest or {}).get("files", {}), dict[str, FileSum])
    except msgspec.ValidationError:
        return {}


def _earlier(
    out: Rebuilt, folder: Path, run: RunOutput, items: bytes, topics: bytes, listed: FileSum | None
) -> None:
    name, path = f"{STATE}/{EARLIER}", folder / STATE / EARLIER
    why = _unusable(path, listed, items, topics)
    if why is None:
        out.links[name] = path
        out.seal.known(name, file_sum(path))
        return
    out.files[name] = out.seal.sealed(name, _made_again(run, items, topics))
    out.done.append(f"{EARLIER} made again from {ITEMS} and {TOPICS} ({why})")
    out.lost.append(
        f"the earlier summaries and original titles the {len(run.items)} items were known by "
        "(each is now known by its own), and the publish that first had each id (now: this "
        "publish for the items it added, an earlier one for the others)"
    )


def _unusable(path: Path, listed: FileSum | None, items: bytes, topics: bytes) -> str | None:
    """Why the earlier file cannot be kept; None: it can."""
    if listed is None:
        return "no checksum of it could be read"
    try:
        if file_sum(path) != listed:
            return "it does not match its checksum"
        earlier = read(path)
    except FileNotFoundError:
        return "it is missing"
    except (OSError, UsageError):
        return "it cannot be read"
    if (earlier.items_file, earlier.topics_file) != (
        xxh64_intdigest(items),
        xxh64_intdigest(topics),
    ):
        return f"it names other {ITEMS} and {TOPICS} than the publish holds"
    return None


def _made_again(run: RunOutput, items: bytes, topics: bytes) -> bytes:
    """``earlier.msgpack`` from the records alone: each item known by its own summary and
    original title, first had by this publish if it added it, else by the one before."""
    sequence = run.report.run.sequence
    added = {c.id for c in run.changes if c.entity == "item" and c.op == "added"}
    evidence = [
        ItemEvidence(
            id=i.id,
            since=sequence if i.id in added else max(sequence - 1, 1),
            keys=[key_of(i.summary_zh)],
            titles=[match_key(i.title_original)] if i.title_original else [],
        )
        for i in run.items
    ]
    seen = Witness(lambda: [items]), Witness(lambda: [topics])
    for witness in seen:
        for _ in witness():  # the files as they are: their digests, and each line's
            pass
    return written(dataclasses.replace(run, evidence=evidence), *seen)
