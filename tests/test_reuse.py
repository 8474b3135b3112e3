"""Daily runs take what the previous publish's run parsed, and publish what a run that
computes everything publishes (``--full``), byte for byte.

The property: random day-after-day sequences on a generated crawl (pages added, removed,
reworded, renamed, duplicated, re-encoded; ``--merge``; ``--jobs 1/2``; ``--crawled-at``),
each day run over the day before's publish and, from a copy of the same publish, with
``--full``; the two publishes must be the same, the state and its page entries included
(report.json's ``timing`` and ``reuse`` and the report page's line that shows ``reuse``
aside). A day whose pages are the live publish's, byte for byte, publishes nothing: the
``--full`` run then gives the same records and no change. ``INGEST_REUSE_EXAMPLES`` sets
the number of examples (``make test-slow``: 100 sequences). Then the page cache itself:
what it takes, what it parses again and why, an entry of another build.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conftest import REUSE_LINE, ROOT, SEEDS, reseal
from ingest.cli import main
from ingest.state import cache

EXAMPLES = int(os.environ.get("INGEST_REUSE_EXAMPLES", "6"))
_ENCODINGS = ("utf-8", "utf-8-sig", "utf-16", "gb18030")


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The pages days are made of: a generated crawl (cross-listed resources, near-
    duplicates, topic lists, item pages, four encodings) and the seeds."""
    folder = tmp_path_factory.mktemp("corpus") / "c"
    gen = [sys.executable, str(ROOT / "bench" / "gen_corpus.py"), "--out", str(folder)]
    subprocess.run([*gen, "--size", "300KB", "--seed", "3"], check=True, capture_output=True)
    pages = {p.name: p.read_bytes() for p in sorted((folder / "dumps").iterdir())}
    return {**pages, **{p.name: p.read_bytes() for p in sorted(SEEDS.iterdir())}}


# --------------------------------------------------------------------------- days


def _codec(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "gb18030"
    return "utf-8"


def reworded(data: bytes, n: int) -> bytes:
    """One clause of the page reworded, in the page's own encoding (a regenerated
    summary); a page with no clause to reword gets a line more."""
    codec = _codec(data)
    text = data.decode(codec)
    commas = [m.start() for m in re.finditer("，", text)]
    if not commas:
        return (text + "\n补充说明。\n").encode(codec)
    at = commas[n % len(commas)]
    return (text[:at] + "，并且新近" + text[at + 1 :]).encode(codec)


def apply(pages: dict[str, bytes], pool: dict[str, bytes], op: str, n: int) -> set[str]:
    """Apply one change to the day's pages; the names it touched."""
    names = sorted(pages)
    name = names[n % len(names)]
    if op == "add":
        absent = sorted(set(pool) - set(pages))
        if absent:
            new = absent[n % len(absent)]
            pages[new] = pool[new]
            return {new}
        return set()
    if op == "remove" and len(pages) > 1:
        del pages[name]
        return set()
    if op == "edit":
        pages[name] = reworded(pages[name], n)
    elif op == "rename":
        pages[f"r{n % 97}_{name}"] = pages.pop(name)
        return {f"r{n % 97}_{name}"}
    elif op == "duplicate":
        pages[f"d{n % 97}_{name}"] = pages[name]
        return {f"d{n % 97}_{name}"}
    elif op == "reencode":
        data = pages[name]
        codec = _codec(data)
        pages[name] = data.decode(codec).encode(_ENCODINGS[n % 4])
    return {name}


def write_pages(folder: Path, pages: dict[str, bytes]) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, data in pages.items():
        (folder / name).write_bytes(data)
    return folder


def run(inputs: Path, out: Path, *args: str) -> int:
    code = main(["run", str(inputs), "--out", str(out), "--quiet", "--allow-shrink", *args])
    assert isinstance(code, int)
    return code


def published(out: Path) -> dict[str, bytes]:
    """A publish's files as compared: every file, report.json without ``timing`` and
    ``reuse``, the report page without the line that shows ``reuse``, the marker without
    the digests of those two."""
    files = {
        p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
    }
    report = json.loads(files["report.json"])
    report.pop("timing")
    report.pop("reuse")
    files["report.json"] = json.dumps(report, sort_keys=True).encode()
    files["report.html"] = REUSE_LINE.sub(b"", files["report.html"])
    marker = json.loads(files[".ingest"])
    for name in ("report.json", "report.html"):
        marker["files"].pop(name)
    files[".ingest"] = json.dumps(marker, sort_keys=True).encode()
    return files


def reuse_of(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))["reuse"]
    return doc


def same_as_full(prev: Path, inputs: Path, work: Path, *args: str) -> dict[str, Any]:
    """Run over ``prev`` (replaced) and, from a copy of it, with --full; the two publishes
    must be the same. A run that finds nothing new leaves ``prev`` as it was, and the
    --full run then publishes its records again with no change. The daily run's ``reuse``
    (None: it found nothing new)."""
    full = work / "full"
    shutil.rmtree(full, ignore_errors=True)
    before = published(prev) if prev.exists() else None
    if prev.exists():
        shutil.copytree(prev, full)
    code_full = run(inputs, full, "--full", *args)
    code = run(inputs, prev, *args)
    assert code == code_full
    if code != 0:
        return {}
    ours, theirs = published(prev), published(full)
    if ours == before:  # nothing new: the --full run made the same records, and no change
        for name in ("items.jsonl", "topics.jsonl", "rejects.jsonl"):
            assert ours[name] == theirs[name], f"{name} differs from the --full run's"
        assert theirs["changes.jsonl"] == b""
        return {"nothing new": True}
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        assert ours[name] == theirs[name], f"{name} differs from the --full run's"
    return reuse_of(prev)


DAY = st.fixed_dictionaries(
    {
        "ops": st.lists(
            st.tuples(
                st.sampled_from(["add", "remove", "edit", "rename", "duplicate", "reencode"]),
                st.integers(0, 10**6),
            ),
            max_size=4,
        ),
        "merge": st.booleans(),
        "jobs": st.sampled_from(["1", "2"]),
        "crawled": st.sampled_from([None, "2026-11-28", "2026-11-29"]),
    }
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(first=st.integers(0, 10**6), days=st.lists(DAY, min_size=1, max_size=3))
def test_a_daily_run_publishes_what_a_full_run_publishes(
    pool: dict[str, bytes], first: int, days: list[dict[str, Any]]
) -> None:
    names = sorted(pool)
    pages = {n: pool[n] for i, n in enumerate(names) if (first >> (i % 20)) & 1 or i == first % 7}
    with tempfile.TemporaryDirectory() as tmp:
        work, prev = Path(tmp), Path(tmp) / "out"
        run(write_pages(work / "in", pages), prev)
        for day in days:
            touched: set[str] = set()
            for op, k in day["ops"]:
                touched |= apply(pages, pool, op, k)
                event(f"op {op}")
            merge = day["merge"]
            given_ = {k: pages[k] for k in touched if k in pages} if merge else pages
            args = ["--jobs", day["jobs"], *(["--merge"] if merge else [])]
            args += ["--crawled-at", day["crawled"]] if day["crawled"] else []
            took = same_as_full(prev, write_pages(work / "in", given_ or pages), work, *args)
            if took.get("nothing new"):
                event("nothing new")
            if took.get("pages_reused"):
                event("pages taken from the cache")
            if took.get("pages_reused") and took.get("pages_parsed"):
                event("some pages taken, some parsed")


# --------------------------------------------------------------------------- the cache


def seeds_in(folder: Path) -> Path:
    return write_pages(folder, {p.name: p.read_bytes() for p in sorted(SEEDS.iterdir())})


def test_the_same_pages_again_publish_nothing_and_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert run(SEEDS, out, "--crawled-at", "2026-11-28") == 0
    first = reuse_of(out)
    assert (first["pages_reused"], first["pages_parsed"]) == (0, 3)
    assert {r["reason"] for r in first["recomputed"]} == {"cache-missing"}
    before = published(out)
    inodes = {p: p.stat().st_ino for p in out.rglob("*")}
    renamed = write_pages(tmp_path / "again", {p.name: p.read_bytes() for p in SEEDS.iterdir()})
    capsys.readouterr()
    code = main(["run", str(renamed), "--out", str(out), "--crawled-at", "2026-11-29"])
    said = capsys.readouterr().out
    assert code == 0 and "nothing new: the 3 page(s) are byte for byte those of" in said
    assert published(out) == before and {p: p.stat().st_ino for p in out.rglob("*")} == inodes
    took = same_as_full(out, SEEDS, tmp_path, "--crawled-at", "2026-11-30")
    assert took == {"nothing new": True}


@pytest.mark.parametrize("unread", ["a folder named like a page", "a link out of the folder"])
def test_a_file_rejected_unread_gone_is_something_new(tmp_path: Path, unread: str) -> None:
    """A file the publish's run rejected without reading it (no bytes, no sha256) that is
    gone today: the day is no "nothing new" (the publish kept its reject), and publishes
    what a --full run does."""
    dumps = seeds_in(tmp_path / "dumps")
    odd = dumps / "old.txt"
    if unread.startswith("a folder"):
        odd.mkdir()
    else:
        odd.symlink_to(tmp_path / "elsewhere.txt")
        (tmp_path / "elsewhere.txt").write_bytes(ITEM_BYTES)
    out = tmp_path / "out"
    assert run(dumps, out) == 0
    assert [r["file"] for r in json_lines(out / "rejects.jsonl")] == ["old.txt"]
    if odd.is_symlink():
        odd.unlink()
    else:
        odd.rmdir()
    assert same_as_full(out, dumps, tmp_path) != {"nothing new": True}
    assert json_lines(out / "rejects.jsonl") == []


def test_strict_on_a_day_with_nothing_new_still_refuses_the_publish_rejects(
    tmp_path: Path,
) -> None:
    """--strict asks that a publish with rejects be refused (exit 1): the same pages again
    are no "nothing new" to let it pass quietly."""
    dumps = seeds_in(tmp_path / "dumps")
    (dumps / "empty.txt").write_bytes(b"")
    out = tmp_path / "out"
    assert run(dumps, out) == 0
    assert run(dumps, out) == 0  # nothing new
    assert run(dumps, out, "--strict") == 1


def json_lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


ITEM_BYTES = (SEEDS / "004_580ca6da1b58938c.txt").read_bytes()


def test_a_changed_page_is_parsed_again_and_the_report_says_why(tmp_path: Path) -> None:
    folder, out = seeds_in(tmp_path / "in"), tmp_path / "out"
    assert run(folder, out) == 0
    kept = {p.name: p.stat().st_ino for p in (out / "state" / "pages").iterdir()}
    item_page = folder / "004_580ca6da1b58938c.txt"
    item_page.write_bytes(reworded(item_page.read_bytes(), 3))
    took = same_as_full(out, folder, tmp_path)
    assert took["recomputed"] == [{"file": item_page.name, "reason": "new-bytes"}]
    assert took["pages_reused"] == 2
    now = {p.name: p.stat().st_ino for p in (out / "state" / "pages").iterdir()}
    new = hashlib.sha256(item_page.read_bytes()).hexdigest() + ".zst"
    assert set(now) == set(kept) - {n for n in kept if n not in now} | {new}
    assert all(now[n] == kept[n] for n in now if n != new)  # unchanged entries: linked
    line = REUSE_LINE.search((out / "report.html").read_bytes())
    assert line is not None and b"2 of 3 pages" in line.group() and b"1 (new-bytes)" in line.group()


def test_full_takes_nothing_and_leaves_a_cache_the_next_run_takes(tmp_path: Path) -> None:
    folder, out = seeds_in(tmp_path / "in"), tmp_path / "out"
    assert run(folder, out) == 0
    assert run(folder, out, "--full") == 0
    took = reuse_of(out)
    assert took["pages_reused"] == 0
    assert {r["reason"] for r in took["recomputed"]} == {"full"}
    (folder / "extra.txt").write_bytes((folder / "001_71f134887f74a7d3.txt").read_bytes())
    assert run(folder, out) == 0
    assert reuse_of(out)["pages_parsed"] == 0  # the same bytes under a new name: taken


def test_an_entry_of_another_build_is_parsed_again(tmp_path: Path) -> None:
    """An entry another build of ingest wrote holds the page's bytes, never what this
    build would make of them: the page is parsed again and its entry written anew."""
    folder, out = seeds_in(tmp_path / "in"), tmp_path / "out"
    assert run(folder, out) == 0
    for path in (out / "state" / "pages").iterdir():
        entry = cache.read_entry(path.read_bytes())
        assert entry is not None
        poisoned = msgspec.msgpack.decode(entry.page)
        poisoned[8] = ["file: POISON"]  # the page's warnings
        raw = msgspec.msgpack.encode(["0.0.0/older", entry.data, poisoned])
        import zstandard

        path.write_bytes(zstandard.ZstdCompressor().compress(raw))
    reseal(out)
    (folder / "extra.txt").write_bytes(b"# not a page of any kind\n")
    took = same_as_full(out, folder, tmp_path)
    assert {r["reason"] for r in took["recomputed"]} == {"other-version", "new-bytes"}
    assert b"POISON" not in (out / "report.json").read_bytes()
    assert run(folder, out, "--full") == 0 and reuse_of(out)["pages_reused"] == 0
