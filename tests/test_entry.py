"""``ingest`` as a process (``ingest.cli.entry``): it prints all it has to say and exits
with the command's code, and ends without freeing its run object by object."""

from __future__ import annotations

import gc
import os
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from conftest import SEEDS, TOPIC_PAGE, run_python, run_subprocess
from ingest import SCHEMA_VERSION
from ingest.cli import main
from ingest.engines import heap
from ingest.job import JobResult
from ingest.transform.merge import Component

#: ``python -m ingest``, with an exit handler that says the interpreter was torn down.
TORN_DOWN = """
import atexit, runpy, sys
atexit.register(lambda: print("torn down"))
sys.argv = ["ingest", *sys.argv[1:]]
runpy.run_module("ingest", run_name="__main__")
"""


def test_the_command_prints_all_it_says_and_exits_with_its_code(tmp_path: Path) -> None:
    proc = run_subprocess("run", str(SEEDS), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "items added / changed / removed / merged" in proc.stdout
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = run_subprocess("validate", str(tmp_path / "out"), env=buffered)  # print() in a pipe
    assert proc.returncode == 0 and proc.stdout.endswith(f": valid (schema {SCHEMA_VERSION})\n")
    proc = run_subprocess("run", str(tmp_path / "missing"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and proc.stderr.startswith("ingest: error: ")


def test_the_process_ends_without_its_teardown(tmp_path: Path) -> None:
    proc = run_python("-c", TORN_DOWN, "run", str(TOPIC_PAGE), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "items added" in proc.stdout and "torn down" not in proc.stdout


def test_a_run_leaves_its_result_for_the_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept: list[object] = []
    monkeypatch.setattr(heap, "KEPT", kept)
    try:
        assert main(["run", str(TOPIC_PAGE), "--out", str(tmp_path / "out"), "--quiet"]) == 0
        assert not gc.isenabled()  # nothing collects over the records kept alive
    finally:
        gc.enable()
    assert [type(k) for k in kept if not isinstance(k, list)] == [JobResult]
    assert isinstance(kept[-1], JobResult)  # the result last, after the run's collections
    # the collections the run let go are left for the exit too, the resolved components
    # (every listing of the crawl) among them: freeing them is time the exit saves
    assert any(c and isinstance(c[0], Component) for c in kept if isinstance(c, list))


def test_a_library_caller_keeps_nothing(tmp_path: Path) -> None:
    assert heap.KEPT is None
    assert main(["run", str(TOPIC_PAGE), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert heap.KEPT is None and gc.isenabled()


def test_the_installed_command_is_the_entry() -> None:
    [script] = [e for e in entry_points(group="console_scripts") if e.name == "ingest"]
    assert script.value == "ingest.cli:entry"
