"""``state/earlier.msgpack``: the previous publish's records as the next run reads them.

A run reads the one file instead of the records' JSON, and compares only the records whose
digest changed. What it builds on must be what it would build on from the JSON: the same
ids, evidence, languages and change set, byte for byte, through the command line.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TypeVar

import msgspec
import pytest
from msgspec import structs

from conftest import REUSE_LINE, SEEDS, run_subprocess
from ingest.cli import main
from ingest.records.output import Item, ItemEvidence, Source, Topic
from ingest.records.serial import jsonl
from ingest.state.changes import changes_against
from ingest.state.earlier import EARLIER, digest, line_digest, read
from ingest.state.previous import MARKER, STATE, load
from test_state import CLAUSE, ITEM, LIST, PAGE, REWORDED, crawl, entry, listing, snapshot

T = TypeVar("T")
EARLIER_FILE = f"{STATE}/{EARLIER}"
OUTPUTS = ("items.jsonl", "topics.jsonl", "changes.jsonl", "rejects.jsonl", "report.html")
# (and the whole state/earlier.msgpack: every item's facts and evidence, as the next run reads it)


def run(dumps: Path, out: Path) -> None:
    assert main(["run", str(dumps), "--out", str(out), "--quiet"]) == 0


@pytest.fixture
def day1(tmp_path: Path) -> Path:
    """Day 1, after a first publish of the seeds: a summary regenerated on both its pages
    (the evidence remembers both), and the list's entry 2 with a summary of its own (two
    items, one resource)."""
    out = tmp_path / "day1"
    run(SEEDS, out)
    _, summary2 = entry(LIST, 2)
    rewritten = "一篇关于在亚马逊云上训练与部署基础模型的企业博客，讲解缩放定律与后训练阶段。"
    page, item = PAGE.replace(CLAUSE, REWORDED), ITEM.replace(CLAUSE, REWORDED)
    run(crawl(tmp_path / "d1", page, LIST.replace(summary2, rewritten), item), out)
    return out


@pytest.fixture
def day2(tmp_path: Path) -> Path:
    """Day 2: the summary as it was first (a key the evidence remembers), a listing gone,
    the list's entry 2 as it was (the two items of day 1 merge)."""
    return crawl(tmp_path / "d2", PAGE.replace(listing(PAGE, 42), ""))


def outputs(out: Path) -> dict[str, bytes]:
    """The outputs, but for the report page's line on what the reuse cache gave the run."""
    got = {name: (out / name).read_bytes() for name in OUTPUTS}
    got["report.html"] = REUSE_LINE.sub(b"", got["report.html"])
    return got


def as_version_1(folder: Path) -> Path:
    """The publish as state version 1 kept it: the keys each item is known by and the
    publish that first had it in ``evidence.jsonl``, no ``earlier.msgpack``, no reuse cache."""
    evidence = [
        ItemEvidence(e.id, e.since, [*e.facts.keys], [*e.facts.titles])
        for e in read(folder / EARLIER_FILE).items
    ]
    (folder / STATE / "evidence.jsonl").write_bytes(b"".join(jsonl(evidence)))
    (folder / EARLIER_FILE).unlink()
    for cache in (folder / STATE).glob("reuse*"):
        cache.unlink()
    for name in (f"{STATE}/manifest.json", MARKER):  # and no checksums
        doc = msgspec.json.decode((folder / name).read_bytes())
        doc = {k: v for k, v in doc.items() if k not in ("files", "state_manifest")}
        (folder / name).write_bytes(msgspec.json.encode({**doc, "state_version": 1}))
    return folder


def test_a_run_on_the_state_equals_a_run_on_the_json(
    day1: Path, day2: Path, tmp_path: Path
) -> None:
    """The same day 2 onto day 1, once with its earlier.msgpack, once as state version 1
    kept it: the same records, ids, evidence and change set."""
    from_json = as_version_1(Path(shutil.copytree(day1, tmp_path / "from-json")))
    run(day2, day1)
    run(day2, from_json)
    assert outputs(day1) == outputs(from_json)
    ops = {(c["op"], tuple(c["fields"])) for c in map(msgspec.json.decode, changes(day1))}
    assert {("changed", ("summary_zh",)), ("removed", ()), ("merged", ())} <= ops
    assert (from_json / EARLIER_FILE).read_bytes() == (day1 / EARLIER_FILE).read_bytes()


def changes(out: Path) -> list[bytes]:
    return (out / "changes.jsonl").read_bytes().splitlines()


def test_the_state_gives_what_the_json_gives(day1: Path, tmp_path: Path) -> None:
    """Every earlier item's facts (what identity weighs), the publish that first had it,
    its original title and language, and its line, read both ways; only the JSON lacks
    digests."""
    from_json = as_version_1(Path(shutil.copytree(day1, tmp_path / "from-json")))
    state, json = load(day1), load(from_json)
    assert list(state.items) == list(json.items) and len(state.items) == 48
    for item_id, item in state.items.items():
        assert item.digest is not None
        assert structs.replace(item, digest=None) == json.items[item_id]
    assert any(len(i.facts.keys) > 1 for i in state.items.values())  # remembered keys too
    assert {s: structs.replace(t, digest=None) for s, t in state.topics.items()} == json.topics
    assert state.json == {} and set(json.json) == {"item", "topic"}


def test_only_the_records_whose_digest_changed_are_read(day1: Path) -> None:
    """Compared with itself, a publish reads no earlier line; with one item changed, that
    item's line alone."""
    items = records(day1 / "items.jsonl", Item)
    topics = records(day1 / "topics.jsonl", Topic)
    prev = load(day1)
    assert changes_against(prev, items, topics, {}) == []
    assert prev.json == {}
    items[3] = structs.replace(items[3], rating="5")
    [change] = changes_against(prev, items, topics, {})
    assert (change.op, change.id, change.fields) == ("changed", items[3].id, ["rating"])
    assert list(prev.json) == ["item"] and list(prev.json["item"]) == [items[3].id]


def records(path: Path, kind: type[T]) -> list[T]:
    return [msgspec.json.decode(x, type=kind) for x in path.read_bytes().splitlines()]


def test_a_digest_sees_every_field_but_the_sources(day1: Path) -> None:
    lines = (day1 / "items.jsonl").read_bytes().splitlines()
    items = [msgspec.json.decode(x, type=Item) for x in lines]
    assert [digest(i) for i in items] == [line_digest(x) for x in lines]
    topic_lines = (day1 / "topics.jsonl").read_bytes().splitlines()
    topics = [msgspec.json.decode(x, type=Topic) for x in topic_lines]
    assert [digest(t) for t in topics] == [line_digest(x) for x in topic_lines]
    assert [d.digest for d in read(day1 / EARLIER_FILE).items] == [digest(i) for i in items]
    item = next(i for i in items if i.title_original and i.related)
    other = Source("x.txt", "0" * 64, "topic_page", "listing 1", 0, 1)
    assert digest(structs.replace(item, sources=[other])) == digest(item)
    for name in Item.__struct_fields__:
        if name in ("sources",):
            continue
        value = getattr(item, name)
        changed = structs.replace(item, **{name: _other(value)})
        assert digest(changed) != digest(item), name


def _other(value: object) -> object:
    """A value of the same shape, different."""
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    return None if value is not None else "x"


def test_records_edited_since_their_publish_are_read_as_json(tmp_path: Path) -> None:
    """items.jsonl edited by hand: the state no longer names it, and the run compares what
    the file holds (the seeds again restore the title: a change)."""
    day1 = tmp_path / "out"
    run(SEEDS, day1)
    lines = (day1 / "items.jsonl").read_bytes().splitlines(keepends=True)
    doc = msgspec.json.decode(lines[5])
    doc["title_zh"] = "手工改过的标题"
    lines[5] = msgspec.json.encode(doc) + b"\n"
    (day1 / "items.jsonl").write_bytes(b"".join(lines))
    run(SEEDS, day1)
    [change] = [msgspec.json.decode(x) for x in changes(day1)]
    assert change == {
        "entity": "item",
        "op": "changed",
        "id": doc["id"],
        "fields": ["title_zh"],
        "into": None,
    }


@pytest.mark.parametrize("damage", [b"not msgpack", b"\x92\x01", None])
def test_a_damaged_earlier_file_is_one_line_and_nothing_changes(
    day1: Path, damage: bytes | None
) -> None:
    """Garbage, a file of the wrong shape, none at all (the state lists it): refused by
    its checksum, with the command that rebuilds it."""
    if damage is None:
        (day1 / EARLIER_FILE).unlink()
    else:
        (day1 / EARLIER_FILE).write_bytes(damage)
    before = snapshot(day1)
    proc = run_subprocess("run", str(SEEDS), "--out", str(day1))
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("ingest: error: the state of the publish in") and EARLIER in line
    assert line.endswith(f"ingest repair {day1}") and snapshot(day1) == before


def test_records_edited_since_keep_what_the_state_remembers(day1: Path, tmp_path: Path) -> None:
    """Read as JSON because an item was edited by hand, a publish still knows its items by
    every key the state remembers (not only their own summaries')."""
    edited = Path(shutil.copytree(day1, tmp_path / "edited"))
    lines = (edited / "items.jsonl").read_bytes().splitlines(keepends=True)
    doc = msgspec.json.decode(lines[0])
    lines[0] = msgspec.json.encode({**doc, "rating": "手工"}) + b"\n"
    (edited / "items.jsonl").write_bytes(b"".join(lines))
    state, json = load(day1), load(edited)
    assert json.json and not state.json  # read as JSON, and not
    assert {k: (i.since, i.facts) for k, i in json.items.items()} == {
        k: (i.since, i.facts) for k, i in state.items.items()
    }
    assert any(len(i.facts.keys) > 1 for i in json.items.values())
