"""The command line as users run it: exit codes, messages, rejects, schemas, --help."""

from __future__ import annotations

import gc
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import ITEM_PAGE, ROOT, SEEDS, TOPIC_PAGE, run_subprocess, write_files
from dbtest import reseal
from ingest import SCHEMA_VERSION
from ingest.cli import main
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


@pytest.mark.parametrize("command", ["run", "publish", "validate", "repair", "check"])
def test_an_unknown_option_is_told_with_its_commands_usage(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main([command, str(SEEDS), "--bogus"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: ingest {command} ")
    assert err.endswith("ingest " + command + ": error: unrecognized arguments: --bogus\n")


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


def _validate(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["validate", str(folder)])
    said = capsys.readouterr()
    return code, said.out, said.err


def _damaged(folder: Path, what: str) -> str:
    return (
        f"ingest: error: the publish in {str(folder)!r} is damaged: {what}. Nothing was "
        f"changed; mend it from what remains with: ingest repair {folder}\n"
    )


def test_validate_reports_broken_output(
    ingest: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ingest(SEEDS)
    folder = out.folder
    assert _validate(folder, capsys) == (0, f"{folder}: valid (schema {SCHEMA_VERSION})\n", "")
    # a record no run writes, in a publish sealed as it is: a problem found (exit 1)
    items = folder / "items.jsonl"
    lines = items.read_text("utf-8").splitlines()
    bad = json.loads(lines[0])
    bad["kind"] = "novel"
    items.write_text("\n".join([json.dumps(bad, ensure_ascii=False), *lines[1:]]) + "\n", "utf-8")
    reseal(folder)
    code, said, err = _validate(folder, capsys)
    assert code == 1 and f"{items}: record 1: kind: 'novel' is not valid" in said, said
    assert err == f"ingest: {len(said.splitlines())} problem(s) in {folder}\n"
    # records that agree with their schema but not with each other or with the report
    bad["kind"] = json.loads(lines[0])["kind"]
    bad["related"] = ["does-not-exist"]
    items.write_text("\n".join([json.dumps(bad, ensure_ascii=False), *lines[1:]]) + "\n", "utf-8")
    report = json.loads((folder / "report.json").read_text("utf-8"))
    report["totals"]["items"] += 1
    (folder / "report.json").write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    reseal(folder)
    code, said, _ = _validate(folder, capsys)
    assert code == 1
    assert said.splitlines() == [
        f"item {bad['id']}: related id does-not-exist not in items.jsonl",
        f"{folder}/report.json: totals.items is 48, files hold 47",
    ]
    # a file changed after it was sealed (here: as long as it was), or gone: the publish is
    # damaged (exit 2)
    items.write_bytes(items.read_bytes().replace(b"does-not-exist", b"does-not-exisT"))
    damaged = _damaged(folder, "items.jsonl does not match its checksum")
    assert _validate(folder, capsys) == (2, "", damaged)
    (folder / "topics.jsonl").unlink()
    assert _validate(folder, capsys) == (2, "", _damaged(folder, "topics.jsonl is missing"))


def test_validate_refuses_what_is_not_a_publish(
    ingest: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2, one line: no folder, a folder ingest did not write, a refused run's output,
    a publish of another major schema."""
    empty = tmp_path / "empty"
    empty.mkdir()
    code, said, err = _validate(tmp_path / "nowhere", capsys)
    assert (code, said) == (2, "")
    assert err == f"ingest: error: {str(tmp_path / 'nowhere')!r}: no such folder\n"
    code, said, err = _validate(empty, capsys)
    assert (code, said) == (2, "") and err.count("\n") == 1 and "holds no publish" in err, err
    folder = ingest(SEEDS).folder
    marker = json.loads((folder / ".ingest").read_text("utf-8"))
    (folder / ".ingest").write_text(json.dumps({**marker, "kind": "refused"}), "utf-8")
    code, said, err = _validate(folder, capsys)
    assert (code, said) == (2, "") and "'refused' output, not a publish" in err, err
    (folder / ".ingest").write_text(json.dumps({**marker, "schema_version": "2.0.0"}), "utf-8")
    code, said, err = _validate(folder, capsys)
    assert (code, said) == (2, "") and err == (
        f"ingest: error: {str(folder)!r} declares schema 2.0.0; this ingest validates schema "
        f"{SCHEMA_VERSION.split('.')[0]}.x ({SCHEMA_VERSION})\n"
    )


def test_rerun_is_byte_identical(ingest: Any) -> None:
    a, b = ingest(SEEDS), ingest(SEEDS)
    for name in ("items.jsonl", "topics.jsonl", "rejects.jsonl"):
        assert a.bytes_of(name) == b.bytes_of(name)


def test_a_bug_in_one_file_becomes_an_internal_error_reject(
    ingest: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """A parser exception is a bug, but the run goes on: that file is INTERNAL_ERROR."""
    import ingest.extract.pages as parse
    from ingest.records import Format

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
    from ingest.records import Listing, RunOutput

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
