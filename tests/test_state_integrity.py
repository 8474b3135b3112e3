"""A state you can trust: a damaged or missing file of ``state/`` is refused before any work,
in one line that gives the command that rebuilds it, and ``ingest repair`` rebuilds it from
the publish's own records and pages, saying what it could not keep.

Each damage is one a disk or a hand can do: a bit flipped in a file that still decodes
(``earlier.msgpack`` giving a language "ej"), a byte of a page pack, a byte of the manifest,
a file deleted. Every state a run leaves is checked page by page against the sha256 the
manifest gives each page: a damaged page is never carried into a new state.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from xxhash import xxh3_128_hexdigest

from conftest import SEEDS, TOPIC_LIST, TOPIC_PAGE, run_subprocess
from ingest.cli import main
from ingest.outputs.lock import OutputLock
from test_state import snapshot

STATE = "state"
EARLIER = f"{STATE}/earlier.msgpack"
MANIFEST = f"{STATE}/manifest.json"


def run(out: Path, *args: str, dumps: Path = SEEDS) -> int:
    return main(["run", str(dumps), "--out", str(out), "--quiet", *args])


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("first") / "out"
    assert run(out) == 0
    return out


@pytest.fixture
def out(first: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(first, tmp_path / "out"))


def flip(path: Path, at: int, bit: int = 1) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= bit
    path.write_bytes(bytes(data))


def manifest(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / MANIFEST).read_bytes())
    return doc


def pack_of(out: Path) -> Path:
    [pack] = {p["pack"] for p in manifest(out)["pages"]}
    return out / STATE / pack


def pages_hold_their_bytes(out: Path) -> list[str]:
    """The files of the state's pages, each checked: its bytes in its pack are its sha256."""
    found = []
    for page in manifest(out)["pages"]:
        with open(out / STATE / page["pack"], "rb") as fh:
            fh.seek(page["offset"])
            data = fh.read(page["size"])
        assert hashlib.sha256(data).hexdigest() == page["sha256"], page["file"]
        found.append(page["file"])
    return sorted(found)


def refused(out: Path, capsys: pytest.CaptureFixture[str], *args: str, dumps: Path = SEEDS) -> str:
    """A run onto ``out`` refused for its state: exit 2, one line, the folder untouched."""
    before = snapshot(out)
    assert run(out, *args, dumps=dumps) == 2
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and line.startswith(
        f"ingest: error: the state of the publish in {str(out)!r} is damaged: "
    ), line
    assert line.endswith(
        f"rebuild the state from the publish's records and pages with: ingest repair {out}\n"
    ), line
    assert snapshot(out) == before
    return line


def repaired(out: Path, capsys: pytest.CaptureFixture[str], code: int) -> tuple[str, str]:
    assert main(["repair", str(out)]) == code
    said = capsys.readouterr()
    return said.out, said.err


# --------------------------------------------------------------------------- refused


def test_a_bit_flip_in_earlier_that_still_decodes_is_refused(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flip that made an item's original_language "ej" on the next run."""
    data = (out / EARLIER).read_bytes()
    flip(out / EARLIER, data.index(b"\xa2en") + 2, 0x04)
    line = refused(out, capsys)
    assert "state/earlier.msgpack does not match its checksum" in line
    out2, err = repaired(out, capsys, 1)
    assert "earlier.msgpack made again from items.jsonl and topics.jsonl" in out2
    assert err.startswith("ingest: repair could not keep the earlier summaries")
    assert run(out) == 0
    assert b'"ej"' not in (out / "items.jsonl").read_bytes()
    assert (out / "changes.jsonl").read_bytes() == b""  # the same pages: nothing changed


def test_a_flipped_byte_in_a_pack_is_refused_and_never_carried_forward(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was hard-linked into every later state with exit 0; --merge then failed with no
    way out but deleting state/."""
    page = next(p for p in manifest(out)["pages"] if p["file"] == TOPIC_PAGE.name)
    flip(pack_of(out), page["offset"] + 100)
    assert "state/pages-1.pack does not match its checksum" in refused(out, capsys)
    refused(out, capsys, "--merge")
    _, err = repaired(out, capsys, 1)
    assert "1 of the 3 pages" in err and repr(TOPIC_PAGE.name) in err
    assert pages_hold_their_bytes(out) == sorted(p.name for p in SEEDS.iterdir())[1:]
    assert main(["repair", str(out)]) == 0  # whole now
    assert capsys.readouterr().out == f"{out}: the state is whole; nothing to repair\n"
    # the page lost comes back with a merge that brings it; the others come from the state
    dumps = Path(shutil.copytree(SEEDS, out.parent / "topic", ignore=_only(TOPIC_PAGE.name)))
    assert run(out, "--merge", dumps=dumps) == 0
    assert pages_hold_their_bytes(out) == sorted(p.name for p in SEEDS.iterdir())
    assert (out / "changes.jsonl").read_bytes() == b""


def _only(name: str) -> Any:
    return lambda folder, names: [n for n in names if n != name]


def test_a_flipped_manifest_is_refused_and_repaired_without_loss(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = {p.name: p.read_bytes() for p in (out / "report").iterdir()}
    assert pages  # the report's pages beside report.html are carried by a repair
    text = (out / MANIFEST).read_bytes()
    flip(out / MANIFEST, text.index(b'"offset": ') + len(b'"offset": '))  # still decodes
    assert "state/manifest.json does not match its checksum in .ingest" in refused(out, capsys)
    said, err = repaired(out, capsys, 0)
    assert said.startswith("ingest: repaired the state of ") and err == ""
    assert pages_hold_their_bytes(out) == sorted(p.name for p in SEEDS.iterdir())
    assert {p.name: p.read_bytes() for p in (out / "report").iterdir()} == pages
    assert run(out, "--merge", dumps=TOPIC_LIST) == 0


def test_a_manifest_that_cannot_be_read_loses_the_pages_and_says_so(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (out / MANIFEST).write_bytes(b'{"state_version": 3, "pag')
    assert "state/manifest.json does not match its checksum" in refused(out, capsys)
    _, err = repaired(out, capsys, 1)
    assert "all 3 pages of the state: state/manifest.json cannot be read" in err
    assert manifest(out)["pages"] == [] and run(out) == 0
    assert (out / "changes.jsonl").read_bytes() == b""


@pytest.mark.parametrize("gone", [EARLIER, "pack", MANIFEST, STATE])
def test_a_missing_state_file_is_refused_at_the_start(
    out: Path, capsys: pytest.CaptureFixture[str], gone: str
) -> None:
    """A deleted pack failed only at the very end of a run, when it was to be linked; a
    state deleted whole was read as a publish of before states."""
    path = pack_of(out) if gone == "pack" else out / gone
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    line = refused(out, capsys, "--allow-shrink", dumps=TOPIC_LIST)
    missing = MANIFEST if gone == STATE else f"{STATE}/{path.name}"
    assert f"{missing} is missing" in line
    repaired(out, capsys, 1)
    assert run(out) == 0 and pages_hold_their_bytes(out) == sorted(p.name for p in SEEDS.iterdir())


def test_a_file_in_state_its_manifest_does_not_list_is_refused(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every file of state/ carries a checksum: one that does not is not used, nor carried."""
    (out / STATE / "cache-1.msgpack").write_bytes(b"\x90")
    assert "state/cache-1.msgpack is not in its manifest" in refused(out, capsys)
    repaired(out, capsys, 0)
    assert not (out / STATE / "cache-1.msgpack").exists() and run(out) == 0


def test_a_damaged_marker_checksum_is_refused_and_repaired(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = json.loads((out / ".ingest").read_bytes())
    marker["state_manifest"] = marker["state_manifest"][::-1]
    (out / ".ingest").write_text(json.dumps(marker))
    refused(out, capsys)
    assert repaired(out, capsys, 0)[1] == ""
    assert run(out) == 0


def test_a_marker_that_no_longer_reads_is_written_again_by_repair(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The marker says the folder is ingest's: unreadable, a run refuses the folder (as
    anything not ingest's) and names repair, which writes it again."""
    flip(out / ".ingest", 2, 0x40)  # a space becomes a backtick: not JSON
    before = snapshot(out)
    assert run(out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith(
        f"its .ingest file is not ingest's marker; if it is a publish whose marker was "
        f"damaged: ingest repair {out}\n"
    ), err
    assert snapshot(out) == before
    said, err = repaired(out, capsys, 0)
    assert "(.ingest cannot be read" in said and err == ""
    assert run(out) == 0 and (out / "changes.jsonl").read_bytes() == b""


def test_repair_leaves_the_guards_refused_output_alone(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = Path(shutil.copytree(SEEDS, tmp_path / "bad"))
    (bad / "empty.txt").write_bytes(b"")
    assert run(out, "--strict", dumps=bad) == 1
    refused_dir = out.with_name("out.refused")
    before = snapshot(refused_dir)
    capsys.readouterr()
    assert main(["repair", str(refused_dir)]) == 2
    assert "holds ingest's 'refused' output, not a publish" in capsys.readouterr().err
    assert snapshot(refused_dir) == before


def test_a_crafted_manifest_with_its_own_checksum_cannot_reach_outside_state(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manifest whose digest was made to match (.ingest rewritten too) still only names
    files in state/, and pages inside them."""
    secret = out.parent / "secret"
    secret.write_bytes(b"not ingest's")
    for files, pages in (
        ({"../../secret": {"size": 12, "xxh3_128": "0" * 32}}, None),
        (None, [{**manifest(out)["pages"][0], "offset": 10**9}]),
    ):
        doc = manifest(out)
        doc["files"] = {**doc["files"], **(files or {})}
        doc["pages"] = pages or doc["pages"]
        data = json.dumps(doc).encode()
        (out / MANIFEST).write_bytes(data)
        marker = json.loads((out / ".ingest").read_bytes())
        marker["state_manifest"] = xxh3_128_hexdigest(data)
        (out / ".ingest").write_text(json.dumps(marker))
        line = refused(out, capsys)
        assert "lists a file '../../secret'" in line or "outside its pack" in line, line


# --------------------------------------------------------------------------- repair


def test_repair_of_a_whole_state_changes_nothing(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(out)
    assert repaired(out, capsys, 0) == (f"{out}: the state is whole; nothing to repair\n", "")
    assert snapshot(out) == before


def test_repair_refuses_what_it_cannot_rebuild_in_one_line(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flip(out / EARLIER, 100)
    lines = (out / "items.jsonl").read_bytes().splitlines(keepends=True)
    (out / "items.jsonl").write_bytes(b"".join([b'{"id": \n', *lines[1:]]))
    before = snapshot(out)
    empty = tmp_path / "empty"
    empty.mkdir()
    for folder, words in (
        (out, "cannot repair: the publish's records cannot be read: "),
        (empty, "holds no publish of ingest run to repair"),
        (tmp_path / "nowhere", "holds no publish of ingest run to repair"),
    ):
        assert main(["repair", str(folder)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err and "Traceback" not in err, err
    assert snapshot(out) == before
    with OutputLock(out):  # a run holds the folder
        assert main(["repair", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is in use by another ingest run" in err, err
    assert snapshot(out) == before


def test_a_state_without_checksums_is_checked_page_by_page_and_sealed_by_the_next_run(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A publish of state version 2 (before checksums): its pages are checked by sha256 —
    a damaged one is refused like any — and the next publish lists every file's checksum."""
    for name, drop in ((MANIFEST, "files"), (".ingest", "state_manifest")):
        doc = msgspec.json.decode((out / name).read_bytes())
        doc = {k: v for k, v in doc.items() if k != drop}
        (out / name).write_bytes(msgspec.json.encode({**doc, "state_version": 2}))
    older = Path(shutil.copytree(out, out.parent / "older"))
    flip(pack_of(older), 10)
    assert f"page {TOPIC_PAGE.name!r} in state/pages-1.pack is not its bytes" in refused(
        older, capsys
    )
    assert run(out) == 0
    listed = set(manifest(out)["files"])
    assert manifest(out)["state_version"] == 3 and {"earlier.msgpack", "pages-1.pack"} <= listed
    assert listed == set(os.listdir(out / STATE)) - {"manifest.json"}  # the new cache too
    assert run(out) == 0 and (out / "changes.jsonl").read_bytes() == b""


def test_repair_through_the_installed_command(out: Path) -> None:
    flip(out / EARLIER, 100)
    proc = run_subprocess("run", str(SEEDS), "--out", str(out))
    assert proc.returncode == 2 and proc.stderr.rstrip().endswith(f"ingest repair {out}")
    fixed = run_subprocess(*proc.stderr.rstrip().rsplit(": ingest ", 1)[1].split())
    assert fixed.returncode == 1 and fixed.stdout.startswith("ingest: repaired"), fixed.stderr
    assert run_subprocess("run", str(SEEDS), "--out", str(out)).returncode == 0
