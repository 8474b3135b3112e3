"""Daily runs take what the previous publish's run computed, and publish what a run that
computes everything publishes (``--full``), byte for byte.

The property: random day-after-day sequences on a generated crawl (pages added, removed,
reworded, renamed, duplicated, re-encoded; ``--merge``; ``--jobs 1/2``; ``--crawled-at``),
each day run over the day before's publish and, from a copy of the same publish, with
``--full``; the two publishes must be the same (report.json's ``timing`` and ``reuse``
and the report page's line that shows ``reuse`` aside). ``INGEST_REUSE_EXAMPLES`` sets
the number of examples (``make test-slow``: 100 sequences). Then the cache's trouble:
another build's cache, a damaged index, damaged blobs: ignored, said, rebuilt, the output
the same.
"""

from __future__ import annotations

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
from xxhash import xxh3_128_digest

from conftest import REUSE_LINE, ROOT, SEEDS
from ingest.cli import main
from ingest.state import reuse as cache
from ingest.state.integrity import MANIFEST, digest, file_sum

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
    """A publish's files as compared: report.json without ``timing`` and ``reuse``, the
    report page without the line that shows ``reuse``; and the state the next run reads."""
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}
    report = json.loads(files["report.json"])
    report.pop("timing")
    report.pop("reuse")
    files["report.json"] = json.dumps(report, sort_keys=True).encode()
    files["report.html"] = REUSE_LINE.sub(b"", files["report.html"])
    for page in sorted((out / "report").iterdir()):
        files[f"report/{page.name}"] = page.read_bytes()
    files["state/earlier.msgpack"] = (out / "state" / "earlier.msgpack").read_bytes()
    # the state's checksums aside from the cache's own files (which differ by design)
    manifest = json.loads((out / "state" / "manifest.json").read_bytes())
    manifest["files"] = {n: v for n, v in manifest["files"].items() if not n.startswith("reuse")}
    files["state/manifest.json"] = json.dumps(manifest, sort_keys=True).encode()
    marker = json.loads(files[".ingest"])
    marker.pop("state_manifest")  # the manifest's checksum: it lists the cache's files too
    files[".ingest"] = json.dumps(marker, sort_keys=True).encode()
    return files


def reuse_of(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))["reuse"]
    return doc


def same_as_full(prev: Path, inputs: Path, work: Path, *args: str) -> dict[str, Any]:
    """Run over ``prev`` (replaced) and, from a copy of it, with --full; the two publishes
    must be the same. The daily run's ``reuse``."""
    full = work / "full"
    shutil.rmtree(full, ignore_errors=True)
    if prev.exists():
        shutil.copytree(prev, full)
    code_full = run(inputs, full, "--full", *args)
    code = run(inputs, prev, *args)
    assert code == code_full
    if code == 0:
        ours, theirs = published(prev), published(full)
        assert sorted(ours) == sorted(theirs)
        for name in ours:
            assert ours[name] == theirs[name], f"{name} differs from the --full run's"
    return reuse_of(prev) if code == 0 else {}


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
            if took.get("pages_reused"):
                event("pages taken from the cache")
            if took.get("groups_reused"):
                event("groups taken from the cache")
            if took.get("groups_reused") and took.get("groups_recomputed"):
                event("some groups taken, some computed")


# --------------------------------------------------------------------------- the cache


def seeds_in(folder: Path) -> Path:
    return write_pages(folder, {p.name: p.read_bytes() for p in sorted(SEEDS.iterdir())})


def test_the_same_pages_again_are_taken_whole_and_the_state_stays_its_size(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    assert run(SEEDS, out) == 0
    first = reuse_of(out)
    assert (first["pages_reused"], first["pages_parsed"], first["groups_reused"]) == (0, 3, 0)
    assert {r["reason"] for r in first["recomputed"]} == {"cache-missing"}
    before = {p.name: p.stat().st_size for p in (out / "state").iterdir()}
    took = same_as_full(out, SEEDS, tmp_path)
    assert (took["pages_reused"], took["pages_parsed"], took["recomputed"]) == (3, 0, [])
    assert (took["groups_reused"], took["groups_recomputed"]) == (first["groups_recomputed"], 0)
    after = {p.name: p.stat().st_size for p in (out / "state").iterdir()}
    assert after == before  # nothing new to keep: no new pack, an index of the same size
    line = REUSE_LINE.search((out / "report.html").read_bytes())
    assert line is not None and b": 3 of 3 pages, 47 of 47 groups" in line.group()


def test_a_changed_page_is_parsed_again_and_the_report_says_why(tmp_path: Path) -> None:
    folder, out = seeds_in(tmp_path / "in"), tmp_path / "out"
    assert run(folder, out) == 0
    item_page = folder / "004_580ca6da1b58938c.txt"
    item_page.write_bytes(reworded(item_page.read_bytes(), 3))
    took = same_as_full(out, folder, tmp_path)
    assert took["recomputed"] == [{"file": item_page.name, "reason": "new-bytes"}]
    assert took["pages_reused"] == 2
    assert took["groups_reused"] > 0 and took["groups_recomputed"] > 0
    line = REUSE_LINE.search((out / "report.html").read_bytes())
    assert line is not None and b"2 of 3 pages" in line.group() and b"1 (new-bytes)" in line.group()


def test_full_takes_nothing_and_leaves_a_cache_the_next_run_takes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(SEEDS, out) == 0
    assert run(SEEDS, out, "--full") == 0
    took = reuse_of(out)
    assert took["pages_reused"] == took["groups_reused"] == 0
    assert {r["reason"] for r in took["recomputed"]} == {"full"}
    assert run(SEEDS, out) == 0
    assert reuse_of(out)["pages_parsed"] == 0


def rewrite_index(out: Path, change: Any) -> None:
    """Write the cache's index again, whole and checksummed, as ``change`` makes it."""
    path = out / "state" / cache.INDEX
    data = path.read_bytes()
    body = data[len(cache._MAGIC) + 16 :]
    index = change(msgspec.msgpack.decode(body, type=cache.Index))
    body = msgspec.msgpack.encode(index)
    path.write_bytes(cache._MAGIC + xxh3_128_digest(body) + body)


def resealed(out: Path) -> None:
    """The state's checksums taken again for the cache's files, as a publish would have
    written them: what the run meets then is the cache's own check, not the state's."""
    manifest_path = out / "state" / MANIFEST
    manifest = json.loads(manifest_path.read_bytes())
    for name in manifest["files"]:
        if name.startswith("reuse"):
            found = file_sum(out / "state" / name)
            manifest["files"][name] = {"size": found.size, "xxh3_128": found.xxh3_128}
    data = json.dumps(manifest, indent=1).encode()
    manifest_path.write_bytes(data)
    marker = json.loads((out / ".ingest").read_bytes())
    marker["state_manifest"] = digest(data)
    (out / ".ingest").write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")


def poisoned(index: cache.Index) -> cache.Index:
    """Every page's facts with a warning no parse gives: a run that trusted them says so."""
    pages = {
        sha: msgspec.structs.replace(
            e, facts=msgspec.structs.replace(e.facts, warnings=["file: POISON"])
        )
        for sha, e in index.pages.items()
    }
    return msgspec.structs.replace(index, pages=pages)


def test_a_cache_of_another_build_is_ignored_with_a_warning_and_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with monkeypatch.context() as m:
        m.setattr("ingest.steps.cache.build", lambda: "0/an older ingest/0")
        assert run(SEEDS, out) == 0
    rewrite_index(out, poisoned)  # whole and checksummed, but of another build
    resealed(out)
    capsys.readouterr()
    took = same_as_full(out, SEEDS, tmp_path)
    assert took["pages_reused"] == took["groups_reused"] == 0
    assert {r["reason"] for r in took["recomputed"]} == {"other-version"}
    said = capsys.readouterr().err
    assert "ingest: warning: the reuse cache in" in said and "another version" in said
    assert took["warnings"] and "another version" in took["warnings"][0]
    assert run(SEEDS, out) == 0  # rebuilt: the next run takes it
    assert reuse_of(out)["pages_reused"] == 3


def test_a_damaged_index_is_ignored_with_a_warning_and_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert run(SEEDS, out) == 0
    rewrite_index(out, poisoned)
    index = out / "state" / cache.INDEX
    data = bytearray(index.read_bytes())
    data[-1] ^= 0xFF  # after the checksum was taken
    index.write_bytes(bytes(data))
    capsys.readouterr()
    took = same_as_full(out, SEEDS, tmp_path)
    assert took["pages_reused"] == 0
    assert {r["reason"] for r in took["recomputed"]} == {"checksum-failed"}
    assert "failed its checksum" in capsys.readouterr().err
    assert run(SEEDS, out) == 0
    assert reuse_of(out)["pages_reused"] == 3


def test_damaged_blobs_are_never_used_and_what_they_held_is_computed_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, out = seeds_in(tmp_path / "in"), tmp_path / "out"
    assert run(folder, out) == 0
    [pack] = (out / "state").glob("reuse-*.pack")
    data = bytearray(pack.read_bytes())
    for at in range(0, len(data), 97):
        data[at] ^= 0x5A
    pack.write_bytes(bytes(data))
    resealed(out)  # past the state's check: the blobs' own checksums must catch it
    topic_list = folder / "001_71f134887f74a7d3.txt"  # its groups hold the topic page's
    topic_list.write_bytes(reworded(topic_list.read_bytes(), 5))
    capsys.readouterr()
    took = same_as_full(out, folder, tmp_path)
    reasons = {r["file"]: r["reason"] for r in took["recomputed"]}
    assert reasons[topic_list.name] == "new-bytes"
    assert reasons["000_323494b48c0530e6.txt"] == "checksum-failed"
    assert took["groups_reused"] == 0
    assert "failed their checksum" in capsys.readouterr().err
    assert run(folder, out) == 0  # what was damaged is kept anew
    again = reuse_of(out)
    assert again["pages_parsed"] == 0 and again["groups_recomputed"] == 0


def test_the_dask_engine_takes_nothing_and_the_next_run_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert run(SEEDS, out) == 0
    took = same_as_full(out, SEEDS, tmp_path, "--engine", "dask", "--jobs", "2")
    assert took["pages_reused"] == 0
    assert {r["reason"] for r in took["recomputed"]} == {"dask-engine"}
    assert not list((out / "state").glob("reuse*"))
    capsys.readouterr()
    assert run(SEEDS, out) == 0
    assert "keeps no reuse cache" in capsys.readouterr().err
    assert {r["reason"] for r in reuse_of(out)["recomputed"]} == {"cache-missing"}


def test_a_group_taken_is_finished_again_when_what_finishing_reads_changed(
    tmp_path: Path,
) -> None:
    """The same pages crawled a day later: no page is parsed, yet the items that show a
    relative age get other estimates: their groups are resolved and finished again."""
    out = tmp_path / "out"
    assert run(SEEDS, out, "--crawled-at", "2026-11-01") == 0
    took = same_as_full(out, SEEDS, tmp_path, "--crawled-at", "2026-11-20")
    assert took["pages_parsed"] == 0
    assert 0 < took["groups_recomputed"] < took["groups_reused"]
    items = [json.loads(x) for x in (out / "items.jsonl").read_text("utf-8").splitlines()]
    assert any(i["published_estimate"] for i in items)
