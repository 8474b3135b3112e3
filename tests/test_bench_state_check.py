"""bench/state_check.py: the figure it prints is of a state it checked whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT, SEEDS, load_script
from ingest.cli import main


def test_it_checks_a_publish_and_refuses_a_folder_without_a_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script(ROOT / "bench" / "state_check.py", "bench_state_check")
    out = tmp_path / "out"
    assert main(["run", str(SEEDS), "--out", str(out), "--quiet"]) == 0
    assert script.main([str(out), "--repeat", "2"]) == 0
    listed = [f for f in (out / "state").iterdir() if f.name != "manifest.json"]
    whole = f"{len(listed)} files, {sum(f.stat().st_size for f in listed) / 1e6:.1f} MB"
    assert len(listed) >= 4  # the earlier records, a page pack, the reuse index and its pack
    assert capsys.readouterr().out.startswith(f"state of {out}: {whole}; check median ")
    assert script.main([str(tmp_path)]) == 2
    assert "no state with checksums" in capsys.readouterr().err
