"""The command line as users run it: exit codes, messages, rejects, schemas, --help."""

from __future__ import annotations

import gc
import gzip
import json
from pathlib import Path
from typing import Any

from conftest import ITEM_PAGE, ROOT, SEEDS, TOPIC_PAGE, run_subprocess, write_files
from ingest.schema import schemas

PROSE = "这是一段普通的文字，不是任何一种页面。\nIt is just prose, a note somebody saved.\n"


def test_bad_files_end_in_rejects_and_the_accounting_holds(ingest: Any, tmp_path: Path) -> None:
    folder = write_files(
        tmp_path / "in",
        {
            "empty.txt": b"",
            "blank.txt": " \n\u3000\n",
            "image.txt": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
            "seed.gz": gzip.compress(TOPIC_PAGE.read_bytes()),
            "prose.txt": PROSE,
            "page.txt": TOPIC_PAGE.read_bytes(),
        },
    )
    out = ingest(folder)
    assert out.code == 0
    reasons = {r["file"]: r["reason"] for r in out.rejects}
    assert reasons == {
        "empty.txt": "EMPTY_INPUT",
        "blank.txt": "EMPTY_INPUT",
        "image.txt": "BINARY_CONTENT",
        "seed.gz": "BINARY_CONTENT",
        "prose.txt": "UNKNOWN_FORMAT",
    }
    assert all(r["message"] and r["locator"] == "file" for r in out.rejects)
    status = {f["file"]: f["status"] for f in out.report["files"]}
    assert status["page.txt"] == "ok" and status["prose.txt"] == "rejected"
    t = out.report["totals"]
    assert (t["files"], t["items"], t["rejects"]) == (6, 44, 5)
    assert t["listings"] == t["listings_merged"] + t["listings_rejected"] == 44
    assert sum(len(i["sources"]) for i in out.items) == t["listings_merged"]


def test_strict_exits_1_when_anything_was_rejected(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "in", {"empty.txt": b"", "p.txt": ITEM_PAGE.read_bytes()})
    proc = run_subprocess("run", str(folder), "--out", str(tmp_path / "out"), "--strict")
    assert proc.returncode == 1
    assert "EMPTY_INPUT" in proc.stderr and "Traceback" not in proc.stderr
    assert (tmp_path / "out.refused" / "items.jsonl").exists()  # the run itself completed
    ok = run_subprocess("run", str(SEEDS), "--out", str(tmp_path / "out2"), "--strict")
    assert ok.returncode == 0, ok.stderr


def test_missing_path_exits_2_with_one_line(tmp_path: Path) -> None:
    proc = run_subprocess("run", str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "nope" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_subprocess("run", "--jobs", "0").returncode == 2
    assert run_subprocess("frobnicate").returncode == 2
    f = tmp_path / "file"
    f.write_text("x")
    proc = run_subprocess("run", str(SEEDS), "--out", str(f))
    assert proc.returncode == 2 and "not a folder" in proc.stderr


def test_help_explains_commands_and_exit_codes() -> None:
    proc = run_subprocess("--help")
    assert proc.returncode == 0
    for word in ("run", "validate", "schema", "exit codes"):
        assert word in proc.stdout
    run_help = run_subprocess("run", "--help").stdout
    for opt in ("--out", "--jobs", "--strict", "seeds/"):
        assert opt in run_help


def test_default_run_reads_seeds_into_out(tmp_path: Path) -> None:
    work = tmp_path / "proj"
    (work / "seeds").mkdir(parents=True)
    for p in SEEDS.iterdir():
        (work / "seeds" / p.name).write_bytes(p.read_bytes())
    proc = run_subprocess("run", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert len((work / "out" / "items.jsonl").read_text("utf-8").splitlines()) == 47


def test_committed_schemas_match_the_models() -> None:
    for name, data in schemas().items():
        committed = ROOT / "schemas" / name
        assert committed.read_bytes() == data, f"schemas/{name} drifted: run `make schema`"


def test_schema_write(tmp_path: Path) -> None:
    proc = run_subprocess("schema", "--write", "--dir", str(tmp_path / "s"))
    assert proc.returncode == 0
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == sorted(schemas())


def test_validate_reports_broken_output(ingest: Any, tmp_path: Path) -> None:
    out = ingest(SEEDS)
    items = out.folder / "items.jsonl"
    lines = items.read_text("utf-8").splitlines()
    bad = json.loads(lines[0])
    bad["kind"] = "novel"
    bad["related"] = ["does-not-exist"]
    items.write_text("\n".join([json.dumps(bad, ensure_ascii=False), *lines[1:]]) + "\n", "utf-8")
    proc = run_subprocess("validate", str(out.folder))
    assert proc.returncode == 1
    assert "kind" in proc.stdout
    (out.folder / "topics.jsonl").unlink()
    assert "missing" in run_subprocess("validate", str(out.folder)).stdout


def test_rerun_is_byte_identical(ingest: Any) -> None:
    a, b = ingest(SEEDS), ingest(SEEDS)
    for name in ("items.jsonl", "topics.jsonl", "rejects.jsonl"):
        assert a.bytes_of(name) == b.bytes_of(name)


def test_a_bug_in_one_file_becomes_an_internal_error_reject(
    ingest: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """A parser exception is a bug, but the run goes on: that file is INTERNAL_ERROR."""
    import ingest.extract.pages as parse
    from ingest.records.vocab import Format

    def broken(page: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setitem(parse._PARSERS, Format.ITEM_PAGE, broken)
    out = ingest(SEEDS)
    assert out.code == 0
    [rej] = out.rejects
    assert (rej["file"], rej["reason"], rej["locator"]) == (
        ITEM_PAGE.name,
        "INTERNAL_ERROR",
        "file",
    )
    assert "RuntimeError: boom" in rej["message"]
    assert len(out.items) == 44
    status = {f["file"]: f["status"] for f in out.report["files"]}
    assert status[ITEM_PAGE.name] == "rejected"


def test_a_finished_run_leaves_none_of_its_records_alive(tmp_path: Path) -> None:
    """Called in a process that lives on (a test, a service), a run must not keep its
    records, and must not leave them in reference cycles either: reference counts alone
    (the collector off here) free all of them."""
    from ingest.cli import main
    from ingest.records.internal import Listing
    from ingest.records.run import RunOutput

    def alive() -> set[int]:
        return {id(o) for o in gc.get_objects() if isinstance(o, RunOutput | Listing)}

    gc.collect()
    before = alive()  # what earlier tests in this process may still hold
    gc.disable()
    try:
        assert main(["run", str(SEEDS), "--out", str(tmp_path / "out"), "--quiet"]) == 0
        after = alive()
    finally:
        gc.enable()
    assert after <= before
