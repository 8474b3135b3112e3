"""``ingest`` as a process (``ingest.cli.entry``): it prints all it has to say, exits with
the command's code, and leaves nothing behind outside the folders it was given."""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path

from conftest import SEEDS, run_subprocess
from ingest import SCHEMA_VERSION


def test_the_command_prints_all_it_says_and_exits_with_its_code(tmp_path: Path) -> None:
    proc = run_subprocess("run", str(SEEDS), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "items added / changed / removed / merged" in proc.stdout
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = run_subprocess("validate", str(tmp_path / "out"), env=buffered)  # print() in a pipe
    assert proc.returncode == 0 and proc.stdout.endswith(f": valid (schema {SCHEMA_VERSION})\n")
    proc = run_subprocess("run", str(tmp_path / "missing"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and proc.stderr.startswith("ingest: error: ")


def test_a_run_leaves_the_users_home_and_temporary_folder_as_they_were(tmp_path: Path) -> None:
    """The seeds meet a split language vote, which loads the largest model: nothing of it
    (a decompressed copy, a cache) is left in the home folder or the temporary folder."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(home), TMPDIR=str(tmp))
    proc = run_subprocess("run", str(SEEDS), "--out", str(tmp_path / "out"), env=env)
    assert proc.returncode == 0, proc.stderr
    assert list(home.iterdir()) == [] and list(tmp.iterdir()) == []


def test_the_installed_command_is_the_entry() -> None:
    [script] = [e for e in entry_points(group="console_scripts") if e.name == "ingest"]
    assert script.value == "ingest.cli:entry"
