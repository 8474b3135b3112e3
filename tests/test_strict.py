"""``ingest run --strict`` refuses to publish a run with rejects.

The previous publish stays byte for byte, the refused output goes where the shrink guard puts
its own (``NAME.refused/``), and one line says which publish is live and where the refused
output is.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import SEEDS, run_subprocess, without_steps, write_files
from ingest.cli import main
from test_state import snapshot


def with_a_bad_file(tmp_path: Path) -> Path:
    dumps = Path(shutil.copytree(SEEDS, tmp_path / "dumps"))
    (dumps / "zz.txt").write_bytes(b"\xff\xfe not a page of any kind")
    return dumps


def test_strict_with_rejects_leaves_the_previous_publish_live(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "site" / "data"
    out.parent.mkdir()
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    before = snapshot(out)
    capsys.readouterr()
    assert main(["run", str(with_a_bad_file(tmp_path)), "--out", str(out), "--strict"]) == 1
    err = without_steps(capsys.readouterr().err)
    refused = out.with_name("data.refused")
    assert err == (
        "ingest: refused: --strict: 1 reject(s) (ENCODING_UNDECODABLE); nothing was published: "
        f"the previous publish (sequence 1) stays live in {str(out)!r}; the refused output is "
        f"in {str(refused)!r}\n"
    )
    assert snapshot(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["data", "data.refused"]
    assert (refused / "rejects.jsonl").read_bytes().count(b"\n") == 1
    assert not (refused / "state").exists()
    # without the bad file the same run publishes (computed again: the pages are the
    # publish's), and the refused output may stay
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet", "--strict", "--full"]) == 0
    report = json.loads((out / "report.json").read_bytes())
    assert report["run"]["sequence"] == 2 and report["totals"]["rejects"] == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["data", "data.refused"]


def test_strict_on_a_first_run_publishes_nothing(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "in", {"empty.txt": b""})
    proc = run_subprocess("run", str(folder), "--out", str(tmp_path / "out"), "--strict")
    assert proc.returncode == 1 and without_steps(proc.stderr).count("\n") == 1, proc.stderr
    assert f"nothing was published: {str(tmp_path / 'out')!r} holds no publish" in proc.stderr
    assert not (tmp_path / "out").exists() and (tmp_path / "out.refused" / "report.json").exists()


def test_strict_refuses_even_with_allow_shrink_and_never_into_a_foreign_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    before = snapshot(out)
    dumps = with_a_bad_file(tmp_path)
    assert main(["run", str(dumps), "--out", str(out), "--strict", "--allow-shrink"]) == 1
    shutil.rmtree(tmp_path / "out.refused")
    write_files(tmp_path / "out.refused", {"notes.txt": "mine"})
    capsys.readouterr()
    assert main(["run", str(dumps), "--out", str(out), "--strict"]) == 2
    err = without_steps(capsys.readouterr().err)
    assert err.count("\n") == 1 and "is not an ingest output" in err, err
    assert snapshot(out) == before
    assert (tmp_path / "out.refused" / "notes.txt").read_text() == "mine"
