"""ingest never removes what it did not write, through the real command line.

Each case of docs/bad-inputs.md section O: a folder with files, the current folder, the inputs
themselves, inputs inside the output, and a symlink to a folder with files; then an older
publish, a foreign file in a publish, the lock, a read-only parent, the refused output of
the shrink guard and ``ingest schema --write``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    ITEM_PAGE,
    ROOT,
    SEEDS,
    TOPIC_LIST,
    reseal,
    run_subprocess,
    without_steps,
    write_files,
)
from ingest.cli import main


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder``: file bytes, None for folders, the target for links."""
    out: dict[str, bytes | None] = {}
    for p in sorted(folder.rglob("*")):
        name = p.relative_to(folder).as_posix()
        if p.is_symlink():
            out[name] = os.readlink(p).encode()
        else:
            out[name] = p.read_bytes() if p.is_file() else None
    return out


def user_folder(path: Path) -> Path:
    return write_files(path, {"notes.txt": "mine\n", "thesis.md": "# draft\n"})


def refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    said = without_steps(proc.stderr)
    assert said.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)


@pytest.fixture
def never_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any read of an input fails the test: a refusal must come before a single input is
    read (ahead, to parse it, or parsed)."""
    calls: list[str] = []

    def reader(name: str) -> Any:
        def read(*_: Any) -> None:
            calls.append(name)
            raise AssertionError("an input was read before the output folder was refused")

        return read

    for where in (
        "ingest.pipeline.steps.read_bytes",
        "ingest.pipeline.steps.parse_bytes",
    ):
        monkeypatch.setattr(where, reader(where))
    yield
    assert calls == []


# --------------------------------------------------------------------------- the table


def test_a_folder_with_files_is_refused_and_left_alone(tmp_path: Path, never_read: None) -> None:
    docs = user_folder(tmp_path / "Documents")
    (docs / "sub").mkdir()
    (docs / "sub" / "keep.txt").write_text("x")
    before = tree(docs)
    assert main(["run", str(SEEDS), "--out", str(docs), "--quiet"]) == 2
    assert tree(docs) == before
    proc = run_subprocess("run", str(SEEDS), "--out", str(docs))
    refused(proc, str(docs), "3 entries", "'notes.txt'", "'sub/'", "not an ingest output")
    assert tree(docs) == before and sorted(os.listdir(tmp_path)) == ["Documents"]


def test_the_current_folder_is_refused(tmp_path: Path) -> None:
    here = user_folder(tmp_path / "here")
    before = tree(here)
    proc = run_subprocess("run", str(SEEDS), "--out", ".", cwd=here)
    refused(proc, "'.'", "not an ingest output")
    assert tree(here) == before


def test_the_inputs_themselves_are_refused(tmp_path: Path) -> None:
    dumps = shutil.copytree(SEEDS, tmp_path / "seeds")
    before = tree(dumps)
    proc = run_subprocess("run", str(dumps), "--out", str(dumps))
    refused(proc, "is the output folder", "must not overlap")
    assert tree(dumps) == before


def test_inputs_inside_the_output_are_refused_even_in_an_ingest_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    shutil.copytree(SEEDS, out / "dumps")  # the user kept the dumps inside the output
    before = tree(out)
    proc = run_subprocess("run", str(out / "dumps"), "--out", str(out))
    refused(proc, "is inside the output folder")
    assert tree(out) == before


def test_an_input_holding_the_output_is_refused(tmp_path: Path) -> None:
    work = shutil.copytree(SEEDS, tmp_path / "work")
    before = tree(tmp_path)
    proc = run_subprocess("run", str(work), "--out", str(work / "out"))
    refused(proc, "holds the output folder")
    assert tree(tmp_path) == before


def test_a_symlink_to_a_folder_with_files_is_refused(tmp_path: Path) -> None:
    target = user_folder(tmp_path / "target")
    link = tmp_path / "link"
    link.symlink_to(target)
    before = tree(tmp_path)
    proc = run_subprocess("run", str(SEEDS), "--out", str(link))
    refused(proc, str(link), "not an ingest output")
    assert tree(tmp_path) == before and link.is_symlink()


def test_a_symlink_is_followed_into_an_ingest_output_and_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "data"
    target.mkdir()
    link = tmp_path / "site"
    link.symlink_to(target, target_is_directory=True)
    # an empty folder through the link, then (computed again) the publish it holds
    for sequence, args in enumerate(([], ["--full"]), start=1):
        assert main(["run", str(SEEDS), "--out", str(link), "--quiet", *args]) == 0
        assert link.is_symlink() and os.readlink(link) == str(target)
        assert (target / "items.jsonl").is_file() and (target / ".ingest").is_file()
        assert json.loads((target / "report.json").read_bytes())["run"]["sequence"] == sequence
    assert sorted(os.listdir(tmp_path)) == ["data", "site"]


def test_a_dangling_symlink_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "gone")
    refused(run_subprocess("run", str(SEEDS), "--out", str(link)), "missing folder")
    assert link.is_symlink() and not (tmp_path / "gone").exists()


# --------------------------------------------------------------------------- what is ingest's


def test_an_empty_folder_and_a_keep_file_are_accepted(tmp_path: Path) -> None:
    out = write_files(tmp_path / "out", {".keep": ""})
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    assert (out / ".keep").is_file() and (out / ".ingest").is_file()


def test_a_file_dropped_into_a_publish_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    (out / "notes.txt").write_text("the curator's notes")
    before = tree(out)
    proc = run_subprocess("run", str(SEEDS), "--out", str(out))
    refused(proc, "ingest output but also holds", "'notes.txt'")
    assert tree(out) == before


def test_a_forged_marker_is_refused(tmp_path: Path) -> None:
    out = write_files(tmp_path / "out", {".ingest": "{}", "a.txt": "x"})
    before = tree(out)
    refused(run_subprocess("run", str(SEEDS), "--out", str(out)), "not ingest's marker")
    assert tree(out) == before


def legacy_publish(out: Path) -> Path:
    """A publish of schema 1.0 as the previous release wrote it: four files, no marker."""
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    shutil.rmtree(out / "state")
    shutil.rmtree(out / "report")
    for name in (".ingest", "changes.jsonl", "report.html"):
        with contextlib.suppress(FileNotFoundError):
            (out / name).unlink()
    items = [json.loads(x) for x in (out / "items.jsonl").read_text("utf-8").splitlines()]
    for item in items:
        del item["published_estimate"]
    lines = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)
    (out / "items.jsonl").write_text(lines, encoding="utf-8")
    report = json.loads((out / "report.json").read_text("utf-8"))
    report["schema_version"] = "1.0.0"
    for key in ("run", "changes", "decisions"):
        del report[key]
    (out / "report.json").write_text(json.dumps(report), encoding="utf-8")
    return out


def test_a_publish_of_schema_1_0_is_migrated_and_its_ids_kept(tmp_path: Path) -> None:
    out = legacy_publish(tmp_path / "out")
    old_ids = sorted(json.loads(x)["id"] for x in (out / "items.jsonl").read_text().splitlines())
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    new_ids = sorted(json.loads(x)["id"] for x in (out / "items.jsonl").read_text().splitlines())
    assert new_ids == old_ids
    assert (out / "changes.jsonl").read_bytes() == b""  # a field 1.0 lacked is null: no change
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["sequence"] == 2 and report["run"]["previous_items"] == 47
    validated = run_subprocess("validate", str(out))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    # a publish of this ingest now, whose state holds the pages: the same run is nothing new
    again = run_subprocess("run", str(SEEDS), "--out", str(out))
    assert again.returncode == 0 and again.stdout.startswith("ingest: nothing new"), again


def test_a_newer_publish_is_refused_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    report["schema_version"] = "1.9.0"
    (out / "report.json").write_text(json.dumps(report))
    marker = json.loads((out / ".ingest").read_text())
    (out / ".ingest").write_text(json.dumps({**marker, "schema_version": "1.9.0"}))
    reseal(out)  # as a later ingest would have written it: whole
    before = tree(out)
    refused(run_subprocess("run", str(SEEDS), "--out", str(out)), "schema 1.9.0", "newer")
    assert tree(out) == before


LEGACY_NAMES = ("items.jsonl", "topics.jsonl", "rejects.jsonl", "report.json")


@pytest.mark.parametrize(
    "files",
    [
        {n: '{"schema_version": "2.0"}\n' for n in LEGACY_NAMES},
        # records a run could read, of a report that is no ingest 0.1's: never replaced
        {**{n: "" for n in LEGACY_NAMES}, "report.json": '{"schema_version": "2.0"}\n'},
        {"items.jsonl": '{"id": "0123456789abcdef"}\n'},  # a file of the same name alone
    ],
    ids=["four-files", "readable", "items-alone"],
)
def test_a_legacy_looking_folder_that_is_not_ingest_is_refused(
    tmp_path: Path, files: dict[str, str]
) -> None:
    out = write_files(tmp_path / "out", dict(files))
    before = tree(out)
    proc = run_subprocess("run", str(SEEDS), "--out", str(out), "--allow-shrink")
    refused(proc, "not an ingest output")
    assert tree(out) == before and sorted(os.listdir(tmp_path)) == ["out"]


# --------------------------------------------------------------------------- the lock


def test_a_run_leaves_nothing_beside_the_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for args in ([], []):  # a first publish, then nothing new
        assert main(["run", str(SEEDS), "--out", str(out), "--quiet", *args]) == 0
        assert sorted(os.listdir(tmp_path)) == ["out"]
    proc = run_subprocess("run", str(SEEDS), "--out", str(out), "--quiet", "--full")
    assert proc.returncode == 0, proc.stderr  # a publish replaced, by the installed command
    assert sorted(os.listdir(tmp_path)) == ["out"]
    assert json.loads((out / "report.json").read_bytes())["run"]["sequence"] == 2


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """No new entry can be made in ``folder``: immutable for root (who ignores mode bits)."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=True)
    else:
        folder.chmod(0o555)
    try:
        yield
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        else:
            folder.chmod(0o755)


def test_a_read_only_parent_exits_2_with_a_message(tmp_path: Path) -> None:
    parent = tmp_path / "ro"
    parent.mkdir()
    with read_only(parent):
        proc = run_subprocess("run", str(SEEDS), "--out", str(parent / "out"))
    refused(proc, "cannot lock output folder", str(parent))
    assert os.listdir(parent) == []


# --------------------------------------------------------------------------- other writes


def test_the_refused_output_never_replaces_a_foreign_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    user_folder(tmp_path / "out.refused")
    before = tree(tmp_path)
    proc = run_subprocess("run", str(TOPIC_LIST), "--out", str(out))
    refused(proc, "the refused output", "out.refused")
    assert tree(tmp_path) == before


def test_the_refused_output_replaces_an_earlier_refused_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    for page in (TOPIC_LIST, ITEM_PAGE):  # two shrinking runs in a row
        assert main(["run", str(page), "--out", str(out), "--quiet"]) == 3
    items = (tmp_path / "out.refused" / "items.jsonl").read_text().splitlines()
    assert len(items) == 7  # the second refused run's output: the item page's 1 + 6


def test_schema_write_refuses_a_folder_with_other_files(tmp_path: Path) -> None:
    folder = user_folder(tmp_path / "schemas")
    before = tree(folder)
    refused(run_subprocess("schema", "--write", "--dir", str(folder)), "did not write")
    assert tree(folder) == before
    fake = write_files(tmp_path / "s2", {"item.schema.json": '{"$id": "other"}'})
    refused(run_subprocess("schema", "--write", "--dir", str(fake)), "'item.schema.json'")


def test_schema_write_rewrites_its_own_files(tmp_path: Path) -> None:
    folder = shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    (folder / "item.schema.json").write_text('{"$id": "item.schema.json"}')
    proc = run_subprocess("schema", "--write", "--dir", str(folder))
    assert proc.returncode == 0, proc.stderr
    assert tree(folder) == tree(ROOT / "schemas")
