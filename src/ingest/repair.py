"""``ingest repair DIR``: a damaged publish mended from what remains of it.

A run (and every command that opens a publish) refuses a publish with a file missing or not
what was written, naming this command. Repair takes the folder's lock, opens the publish as
a run would, and when it is damaged takes stock of what is whole — each file whose digest
is the one the marker lists (without a readable marker: each record file that reads as the
contract's records), the state's records, every page entry that is its page — and makes
the rest again:

- **The records whole, the state not:** the records (and the report, its pages) are kept;
  the state is made again from them and the page entries that remain.
- **Records or the report damaged:** the publish is computed again from its pages (their
  entries), building on the state's records for the ids (or, that lost too, on
  ``items.jsonl``), as the same publish; every file still whole is kept as it is.

What cannot be made again is said, one line each, and repair exits 1: a page whose entry is
gone (``--merge`` no longer has it), the earlier summaries items were known by, the
changes against the publish before. The mended publish goes in with one atomic swap, like
a run's; the shrink guard and the ids hold again on the next run.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
from msgspec import structs

from ingest.contract import Change, Item, ItemEvidence, Reject, Report, Topic
from ingest.errors import UsageError
from ingest.extract.pages import parse_bytes
from ingest.job import JobOptions, _marker, _write_publish, compute
from ingest.pipeline.steps import Context, PageCache
from ingest.publish.door import (
    MARKER,
    RECORDS,
    STATE,
    STATE_VERSION,
    Damaged,
    FileSum,
    Marker,
    NotAPublish,
    digest,
    open_publish,
    packed_pages,
    read_marker,
    read_regular,
)
from ingest.publish.folder import OWNED, Folder, Staging, target_of
from ingest.publish.signals import Stops
from ingest.records import RunOutput
from ingest.state import cache
from ingest.state.changes import counts
from ingest.state.previous import (
    RECORDS_FILE,
    PageRef,
    Previous,
    RunSettings,
    State,
    StoredPage,
    decode_state,
    earlier_item,
)

_KINDS: dict[str, type[msgspec.Struct]] = {
    "items.jsonl": Item,
    "topics.jsonl": Topic,
    "rejects.jsonl": Reject,
    "changes.jsonl": Change,
}


@dataclass(frozen=True, slots=True)
class Repair:
    """What repair found and did: ``damage`` None when the publish was whole."""

    damage: str | None = None
    done: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)


def repair(out_dir: Path, stops: Stops | None = None) -> Repair:
    """Mend the publish in ``out_dir`` if it is damaged."""
    target = target_of(out_dir, "repair")
    entries = set(os.listdir(target)) if target.is_dir() else set()
    if not entries & {*RECORDS, MARKER} or not entries <= OWNED:
        raise UsageError(f"{str(out_dir)!r} holds no publish of ingest to repair")
    try:
        marker = read_marker(target)
    except Damaged:
        marker = None
    if marker is not None and marker.kind != "publish":
        raise UsageError(f"{str(out_dir)!r} holds ingest's {marker.kind!r} output, not a publish")
    if stops is not None:
        stops.folder = out_dir
    with Folder(out_dir, flag="repair", owned=True) as folder:
        try:
            with open_publish(target, check=True):
                return Repair()
        except NotAPublish as e:
            raise UsageError(f"{str(out_dir)!r} holds no publish of ingest to repair ({e})") from e
        except Damaged as e:
            damage = e.what
        return _mend(folder, target, marker, damage)


@dataclass(slots=True)
class _Stock:
    """What is whole in a damaged publish."""

    whole: dict[str, bytes] = field(default_factory=dict)  # record files, by name
    state: State | None = None
    entries: dict[str, Path] = field(default_factory=dict)  # sha256 → a whole entry
    report: Report | None = None
    legacy: dict[str, bytes] = field(default_factory=dict)  # sha256 → ingest 0.2's page
    legacy_refs: list[PageRef] | None = None  # ingest 0.2's pages, as its manifest lists them


def _stock(target: Path, marker: Marker | None) -> _Stock:
    listed = {} if marker is None else marker.files
    found = _Stock()
    for name in RECORDS:
        data = _whole(target / name, listed.get(name))
        if data is not None and (listed or _reads(name, data)):
            found.whole[name] = data
    if "report.json" in found.whole:
        try:
            found.report = msgspec.json.decode(found.whole["report.json"], type=Report)
        except (msgspec.DecodeError, RecursionError):
            del found.whole["report.json"]
    raw = _whole(target / RECORDS_FILE, listed.get(RECORDS_FILE))
    if raw is not None:
        found.state = decode_state(raw)
    if not listed:
        _agreeing(found)
    if marker is not None and marker.state_version < STATE_VERSION:
        _legacy_pages(target, found)
    pages = target / cache.FOLDER
    for path in sorted(pages.iterdir()) if pages.is_dir() else []:
        blob = _whole(path, None)
        entry = None if blob is None else cache.read_entry(blob)
        sha256 = path.name.removesuffix(".zst")
        if entry is not None and hashlib.sha256(entry.data).hexdigest() == sha256:
            found.entries[sha256] = path
    return found


def _legacy_pages(target: Path, found: _Stock) -> None:
    """ingest 0.2's pages, from the packs its manifest lists (each page checked by its
    sha256): a publish of ingest 0.2 has no page entries."""
    manifest = _whole(target / STATE / "manifest.json", None)
    if manifest is None:
        return
    refs = []
    with contextlib.suppress(ValueError):  # a manifest that lists no pages: none to take
        for file, sha256, size, day, data in packed_pages(
            manifest, lambda n: _whole(target / STATE / n, None) or b""
        ):
            refs.append(PageRef(file, sha256, size, day))
            if data is not None:
                found.legacy[sha256] = data
        found.legacy_refs = refs


def _legacy_entries(staging: Staging, stock: _Stock, build: str) -> None:
    """The page entries of an ingest 0.2 publish's pages, parsed from its packs."""
    for ref in stock.legacy_refs or []:
        data = stock.legacy.get(ref.sha256)
        if data is not None and not (staging.path / cache.entry_name(ref.sha256)).exists():
            cache.keep(staging.path, build, data, parse_bytes(ref.file, data, ref.sha256))


def _agreeing(found: _Stock) -> None:
    """Without the marker's digests, the record files are held against each other: a file
    with fewer or more records than the report (else the state) counts, cut at a line's
    end, is not whole."""
    want: dict[str, int] = {}
    if found.report is not None:
        t = found.report.totals
        want = {"items.jsonl": t.items, "topics.jsonl": t.topics, "rejects.jsonl": t.rejects}
        ch = found.report.changes
        want["changes.jsonl"] = sum(structs.astuple(ch.items)) + sum(structs.astuple(ch.topics))
    elif found.state is not None:
        want = {"items.jsonl": len(found.state.items), "topics.jsonl": len(found.state.topics)}
    for name, count in want.items():
        data = found.whole.get(name)
        if data is not None and data.count(b"\n") != count:
            del found.whole[name]


def _whole(path: Path, listed: FileSum | None) -> bytes | None:
    """A file's bytes, when it is a regular file (of its listed digest, when listed)."""
    data = read_regular(path)
    if data is None:
        return None
    if listed is not None and (len(data) != listed.size or digest(data) != listed.xxh3_128):
        return None
    return data


def _reads(name: str, data: bytes) -> bool:
    """Does an unlisted record file read as the contract's records?"""
    try:
        if name == "report.json":
            msgspec.json.decode(data, type=Report)
        else:
            msgspec.json.Decoder(_KINDS[name]).decode_lines(data)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def _mend(folder: Folder, target: Path, marker: Marker | None, damage: str) -> Repair:
    stock = _stock(target, marker)
    done: list[str] = []
    lost: list[str] = []
    refs = _pages(stock, lost)
    previous = _reference(stock, refs, lost)
    this_build = cache.build()
    staging = folder.staging()
    try:
        staging.folder(cache.FOLDER)
        pages = stock.entries.keys() | stock.legacy.keys()
        if all(n in stock.whole for n in RECORDS if n != "changes.jsonl"):
            output = _kept(stock, previous, lost)
            _legacy_entries(staging, stock, this_build)
            done.append("the state made again from the records and the pages that remain")
        elif not any(r.sha256 in pages for r in refs):
            raise UsageError(
                f"cannot repair {str(target)!r}: its records are damaged and none of its "
                "pages remains to make them again"
            )
        else:
            output = _recomputed(target, stock, refs, previous, this_build, staging, lost)
            broken = ", ".join(n for n in RECORDS if n not in stock.whole)
            done.append(f"{broken} made again from the publish's pages")
        have = _carry_entries(staging, output, stock, lost)
        _write_publish(staging, output, previous, stock.whole, have)
        staging.publish(_marker(this_build), folder.keep_files())
    finally:
        staging.discard()
    return Repair(damage, done, lost)


def _pages(stock: _Stock, lost: list[str]) -> list[PageRef]:
    """The pages the publish was built from: as its state lists them, else as its report
    does (a page's crawl day then that of the run, for the pages it read), else as its
    items name them."""
    if stock.state is not None:
        return stock.state.pages
    if stock.legacy_refs is not None:
        return stock.legacy_refs
    if stock.report is not None:
        day = stock.report.run.crawled_at
        if any(f.origin == "state" for f in stock.report.files):
            lost.append("the crawl day of each page kept from earlier publishes")
        return [
            PageRef(
                f.file, f.sha256, f.bytes, day.isoformat() if day and f.origin == "input" else None
            )
            for f in stock.report.files
            if f.sha256
        ]
    lost.append("the crawl day of each page, and the pages that gave no item")
    found: dict[tuple[str, str], None] = {}
    for line in stock.whole.get("items.jsonl", b"").splitlines():
        for s in msgspec.json.decode(line, type=Item).sources:
            found[(s.file, s.sha256)] = None
    return [PageRef(f, s, 0) for f, s in sorted(found)]


def _reference(stock: _Stock, refs: list[PageRef], lost: list[str]) -> Previous:
    """The publish as its own previous publish: its state's records (else its items, else
    nothing: the ids are minted again) and its pages with their crawl days."""
    if stock.state is not None:
        return Previous(
            items={i.id: i for i in stock.state.items},
            topics={t.slug: t for t in stock.state.topics},
            sequence=stock.state.sequence,
            pages=refs,
        )
    lost.append("the earlier summaries and titles each item was known by")
    sequence = stock.report.run.sequence if stock.report else 1
    if "items.jsonl" not in stock.whole:
        lost.append("the ids of the publish: its items have their ids made again")
        return Previous(sequence=sequence, pages=refs)
    items = [
        earlier_item(msgspec.json.decode(line, type=Item), n, None, None, sequence)
        for n, line in enumerate(stock.whole["items.jsonl"].splitlines())
    ]
    return Previous(items={i.id: i for i in items}, sequence=sequence, pages=refs)


def _kept(stock: _Stock, previous: Previous, lost: list[str]) -> RunOutput:
    """The records kept, as a run's output, with what the state knew of each item (the
    change set lost when it is not whole: the report then says there is none)."""
    w = stock.whole
    assert stock.report is not None
    changes = msgspec.json.Decoder(Change).decode_lines(w.get("changes.jsonl", b""))
    report = stock.report
    if "changes.jsonl" not in w:
        lost.append("the changes against the publish before (changes.jsonl is empty now)")
        report = structs.replace(report, changes=counts([]))
        w.pop("report.json")
    output = RunOutput(
        msgspec.json.Decoder(Item).decode_lines(w["items.jsonl"]),
        msgspec.json.Decoder(Topic).decode_lines(w["topics.jsonl"]),
        msgspec.json.Decoder(Reject).decode_lines(w["rejects.jsonl"]),
        report,
        changes,
    )
    output.evidence = [
        ItemEvidence(id=i.id, since=i.since, keys=list(i.facts.keys), titles=list(i.facts.titles))
        for i in previous.items.values()
    ]
    return output


def _recomputed(
    target: Path,
    stock: _Stock,
    refs: list[PageRef],
    previous: Previous,
    this_build: str,
    staging: Staging,
    lost: list[str],
) -> RunOutput:
    """The publish computed again from the pages whose entries remain, as the same publish:
    building on its own records for the ids; its change set kept when whole, else lost."""
    inputs = []
    for ref in refs:
        if ref.sha256 in stock.entries or ref.sha256 in stock.legacy:
            day = dt.date.fromisoformat(ref.crawled_at) if ref.crawled_at else None
            inputs.append(StoredPage(ref.file, ref.sha256, day, stock.legacy.get(ref.sha256)))
    previous.sequence -= 1  # the publish computed again is the one it was
    pages = PageCache(target, frozenset(stock.entries), this_build, staging.path)
    days = [dt.date.fromisoformat(r.crawled_at) for r in refs if r.crawled_at]
    day = stock.report.run.crawled_at if stock.report is not None else max(days, default=None)
    ctx = Context.building_on(previous, RunSettings("snapshot", day), pages)
    output = compute(JobOptions([], target), list(inputs), ctx)
    previous.sequence += 1
    files = [structs.replace(f, origin="input") for f in output.report.files]
    if len(inputs) < len(refs) or stock.legacy:  # pages gone, or of ingest 0.2: all made again
        run_info = stock.report.run if stock.report is not None else None
        for name in RECORDS:
            stock.whole.pop(name, None)
        stock.report = None
        for ref in refs:
            if ref.sha256 not in stock.entries and ref.sha256 not in stock.legacy:
                lost.append(f"page {ref.file!r}: its bytes are gone, and what records held of it")
    else:
        run_info = None
    if "changes.jsonl" in stock.whole:
        output.changes = msgspec.json.Decoder(Change).decode_lines(stock.whole["changes.jsonl"])
    else:
        output.changes = []
        lost.append("the changes against the publish before (changes.jsonl is empty now)")
    report = structs.replace(output.report, files=files, changes=counts(output.changes))
    if stock.report is not None:  # whole: the report of the run that made the publish
        report = stock.report
    elif run_info is not None:  # its run as it was, of the pages that remain
        report = structs.replace(report, run=run_info)
    else:
        run = structs.replace(report.run, previous_items=None, previous_topics=None)
        report = structs.replace(report, run=run)
        lost.append("the report's count of the items and topics of the publish before")
    output.report = report
    return output


def _carry_entries(staging: Staging, output: RunOutput, stock: _Stock, lost: list[str]) -> set[str]:
    """Each page's entry: the one that remains (carried by a hard link), or the one the
    recomputation wrote; the pages that have one (the state lists no other: a run that
    brings a page back parses it)."""
    have = set()
    for sha256 in sorted({f.sha256 for f in output.report.files if f.sha256}):
        name = cache.entry_name(sha256)
        made = staging.path / name
        source = made if made.exists() else stock.entries.get(sha256)
        if source is None:
            files = sorted(f.file for f in output.report.files if f.sha256 == sha256)
            lost.append(f"page {files[0]!r}: its bytes are gone (a --merge run no longer has it)")
            continue
        data = source.read_bytes()
        have.add(sha256)
        if source == made:
            staging.written(name, FileSum(len(data), digest(data)))
        else:
            staging.link(name, source, FileSum(len(data), digest(data)))
    return have
