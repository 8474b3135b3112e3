"""The state's page pack written ahead (``ingest.outputs.ahead``), through ``ingest run``.

A child writes the pack beside the output folder while the run goes on; the publish links
it only if it is exactly the pack of the pages the run parsed, and writes the pack itself
otherwise. Each run here is a fresh process whose code is patched first: to fail if the
publish writes the pack itself, to hand the child other bytes than the parse read, or to
kill the child. Every pack published is checked against the sha256 of each page the state
says it holds, and nothing may be left beside the folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import SEEDS, TOPIC_LIST, in_fresh_process, run_python
from ingest.extract.discover import collect_inputs
from ingest.outputs.ahead import pack_ahead
from ingest.outputs.atomic import publish
from ingest.outputs.lock import OutputLock
from ingest.state.integrity import file_sum
from ingest.state.previous import PageRef, Previous
from test_write import dead_pid

#: The publish may not write the pack itself: it was written ahead.
NOT_AGAIN = """
import ingest.state.pages as pages
def _pack(*args):
    raise RuntimeError("the pack was written again")
pages._pack = _pack
"""
#: The child reads other bytes of the topic list than the parse will.
OTHER_BYTES = f"""
import ingest.outputs.ahead as ahead
read = ahead.read_bytes
def read_bytes(path):
    data, problem = read(path)
    return (data + b"\\n" if path.name == {TOPIC_LIST.name!r} else data), problem
ahead.read_bytes = read_bytes
"""
#: The child is killed before it writes anything.
KILLED = """
import os, signal
import ingest.outputs.ahead as ahead
ahead._write_pack = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
"""


def run(patch: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``ingest run ARGS`` in a fresh process, after ``patch`` ran in it."""
    code = f"{patch}\nimport sys\nfrom ingest.cli import main\nsys.exit(main(sys.argv[1:]))"
    return run_python("-c", code, "run", *args, "--quiet")


def packed(out: Path) -> dict[str, list[str]]:
    """Each pack of the publish and the files it holds, every page checked by its sha256."""
    manifest = json.loads((out / "state" / "manifest.json").read_bytes())
    held: dict[str, list[str]] = {}
    for ref in manifest["pages"]:
        data = (out / "state" / ref["pack"]).read_bytes()[
            ref["offset"] : ref["offset"] + ref["size"]
        ]
        assert hashlib.sha256(data).hexdigest() == ref["sha256"], ref
        held.setdefault(ref["pack"], []).append(ref["file"])
    return held


def beside(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name != out.name)


def test_a_first_publish_links_the_pack_written_ahead(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run(NOT_AGAIN, str(SEEDS), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    held = packed(out)
    assert list(held) == ["pages-1.pack"] and len(held["pages-1.pack"]) == len(
        list(SEEDS.iterdir())
    )
    assert beside(out) == []


def test_a_rerun_packs_ahead_only_the_page_that_changed(tmp_path: Path) -> None:
    dumps, out = tmp_path / "dumps", tmp_path / "out"
    shutil.copytree(SEEDS, dumps)
    assert run("", str(dumps), "--out", str(out)).returncode == 0
    with open(dumps / TOPIC_LIST.name, "ab") as fh:
        fh.write(b"\n")
    proc = run(NOT_AGAIN, str(dumps), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    held = packed(out)
    assert held["pages-2.pack"] == [TOPIC_LIST.name]
    assert (out / "state" / "pages-2.pack").read_bytes() == (dumps / TOPIC_LIST.name).read_bytes()
    assert beside(out) == ["dumps"]


def test_a_pack_ahead_of_other_bytes_than_parsed_is_not_published(tmp_path: Path) -> None:
    out, plain = tmp_path / "out", tmp_path / "plain" / "out"
    plain.parent.mkdir()
    proc = run(OTHER_BYTES, str(SEEDS), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert run("", str(SEEDS), "--out", str(plain)).returncode == 0
    packed(out)
    assert (out / "state" / "pages-1.pack").read_bytes() == (
        plain / "state" / "pages-1.pack"
    ).read_bytes()
    assert beside(out) == ["plain"]


def test_a_child_killed_while_packing_ahead_leaves_the_publish_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run(KILLED, str(SEEDS), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    packed(out)
    assert beside(out) == []


def fresh(case: str, folder: Path) -> str:
    """``case(folder)`` of this module in a fresh process (a child is forked only by a
    process of one thread, and the Dask tests leave threads in this one): what it said."""
    return in_fresh_process("test_pack_ahead", case, str(folder))


def in_input_order(folder: str) -> str:
    tmp = Path(folder)
    for name, data in (("a.txt", b"one"), ("b.txt", b"two"), ("c.txt", b"one"), ("d", b"old")):
        (tmp / name).write_bytes(data)
    sha = {d: hashlib.sha256(d).hexdigest() for d in (b"one", b"two", b"old")}
    prev = Previous(pages=[PageRef("d", sha[b"old"], 3, "pages-1.pack", 0)])
    ahead = pack_ahead(collect_inputs([folder]), prev, tmp / ".out.pack-1")
    assert ahead is not None
    pages = [("a.txt", sha[b"one"], False), ("b.txt", sha[b"two"], False)]
    taken = ahead.take(pages) == (ahead.path, file_sum(ahead.path))  # with its checksum
    data = ahead.path.read_bytes()
    ahead.discard()
    return f"{taken} {data!r} {ahead.path.exists()}"


def from_the_state(folder: str) -> str:
    (Path(folder) / "a.txt").write_bytes(b"one")
    ahead = pack_ahead(collect_inputs([folder]), Previous(), Path(folder) / ".out.pack-1")
    assert ahead is not None
    taken = ahead.take([("a.txt", hashlib.sha256(b"one").hexdigest(), True)])
    ahead.discard()
    return f"{taken} {ahead.path.exists()}"


def test_the_pack_ahead_holds_each_new_page_once_in_input_order(tmp_path: Path) -> None:
    assert fresh("in_input_order", tmp_path) == "True b'onetwo' False"


def test_a_pack_ahead_is_not_taken_for_pages_of_the_state(tmp_path: Path) -> None:
    assert fresh("from_the_state", tmp_path) == "None False"


def test_packs_ahead_of_dead_runs_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ours, alive = tmp_path / f".out.pack-{os.getpid()}", tmp_path / f".out.pack-{os.getppid()}"
    dead = tmp_path / f".out.pack-{dead_pid()}"
    for path in (ours, alive, dead):
        path.write_bytes(b"pages")
    publish(out, {"report.json": b"{}"})
    assert beside(out) == sorted([ours.name, alive.name])
    with OutputLock(out):
        publish(out, {"report.json": b"{}"})
    assert beside(out) == [ours.name]  # its own run's: linked into the publish, then removed


PRIORITY = """
import os
from ingest.outputs import ahead
if {no_idle}:
    del os.sched_setscheduler
before = os.nice(0)
ahead._lowest_priority()
print(os.sched_getscheduler(0) == os.SCHED_IDLE, os.nice(0) == (19 if {no_idle} else before))
"""


@pytest.mark.parametrize(("no_idle", "said"), [(False, "True True"), (True, "False True")])
def test_the_pack_is_written_ahead_only_on_a_core_left_idle(no_idle: bool, said: str) -> None:
    """Linux's idle policy: the child never slows the parse; elsewhere, nice 19."""
    code = PRIORITY.format(no_idle=no_idle)
    done = run_python("-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == said.split()
