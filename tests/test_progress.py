"""What ``ingest run`` says of its steps as they go, on stderr: on a terminal, a row for each
step with its time; otherwise one line as each step ends; with ``--quiet``, nothing. stdout
stays the summary's."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, SEEDS, in_fresh_process, run_subprocess
from ingest.steps import STEPS

NAMES = [step.name for step in STEPS]
#: The line a step's end is told in when stderr is no terminal.
DONE = re.compile(r"ingest: (?P<name>.+) done in (?P<seconds>[0-9]+\.[0-9]{2}) s")
#: What a terminal is told: escape sequences (colour, cursor moves) and the rest.
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
INPUTS = len(list(SEEDS.iterdir()))
#: A finished step's row on a terminal: ticked, its name, its bar and count if it counts
#: its records, its seconds.
ROW = re.compile(
    r"✓ (?P<name>.+?) +(?:━+ (?P<count>[0-9]+/[0-9]+) +)?(?P<seconds>[0-9]+\.[0-9]{2}) s"
)


def _report_timing(out: Path) -> dict[str, float]:
    """The seconds of each step the report of the run into ``out`` holds, in the order the
    steps ended."""
    timing: dict[str, float] = json.loads((out / "report.json").read_text("utf-8"))["timing"]
    return timing


def _summary_only(stdout: str) -> None:
    """stdout holds the end summary, and nothing of the steps."""
    assert stdout.startswith("ingest → ") and "items added / changed / removed" in stdout
    assert "done in" not in stdout and "\x1b" not in stdout and "✓" not in stdout


@pytest.mark.parametrize("jobs", ["1", "2"])  # 2: the background steps run in forked children
def test_without_a_terminal_each_step_says_once_that_it_is_done(tmp_path: Path, jobs: str) -> None:
    out = tmp_path / "out"
    proc = run_subprocess("run", str(SEEDS), "--out", str(out), "--jobs", jobs)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    said = [DONE.fullmatch(line) for line in lines]
    assert all(said), f"stderr holds other lines than the steps': {lines}"
    names = [m["name"] for m in said if m]
    assert sorted(names) == sorted(NAMES)  # every step of the run, each once
    timing = _report_timing(out)
    assert names == list(timing)  # in the order they ended (the report's timing is too)
    for m in said:
        assert m is not None
        assert abs(float(m["seconds"]) - timing[m["name"]]) <= 0.0051, m.group()
    _summary_only(proc.stdout)


def test_a_closed_stderr_stops_the_lines_not_the_run(tmp_path: Path) -> None:
    """A log reader that went away (stderr a pipe closed at once) leaves the run to publish."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ingest", "run", str(SEEDS), "--out", str(out)]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT) as p:
        assert p.stderr is not None and p.stdout is not None
        p.stderr.close()
        stdout = p.stdout.read().decode()
        assert p.wait(timeout=120) == 0
    _summary_only(stdout)
    assert (out / "items.jsonl").stat().st_size > 0


def test_quiet_says_nothing(tmp_path: Path) -> None:
    proc = run_subprocess("run", str(SEEDS), "--out", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 0
    assert (proc.stdout, proc.stderr) == ("", "")
    code, stdout, shown = _on_a_terminal(
        "run", str(SEEDS), "--out", str(tmp_path / "o2"), "--quiet"
    )
    assert (code, stdout, shown) == (0, "", "")


def test_a_terminal_shows_each_step_with_its_time(tmp_path: Path) -> None:
    args = ("run", str(SEEDS), "--out", str(tmp_path / "out"), "--jobs", "2")
    code, stdout, shown = _on_a_terminal(*args)
    assert code == 0, shown
    _summary_only(stdout)
    assert re.search(rf"parse +━+ 0/{INPUTS} ", ESCAPE.sub("", shown))  # its bar, at its start
    # the last drawing: every step, ticked, with its seconds (the parse with its bar, full)
    last = ESCAPE.sub("", shown.rsplit("\x1b[2K", 1)[1]).strip()
    rows = [ROW.fullmatch(line.strip()) for line in last.splitlines()]
    assert all(rows), last
    assert [r["name"] for r in rows if r] == NAMES, last  # in the order they began
    timing = _report_timing(tmp_path / "out")
    for r in rows:
        assert r is not None
        assert abs(float(r["seconds"]) - timing[r["name"]]) <= 0.0051, r.group()
        assert r["count"] == (f"{INPUTS}/{INPUTS}" if r["name"] == "parse" else None), r.group()


def test_a_terminal_leaves_the_background_steps_to_forked_children() -> None:
    """The rows are drawn by the run's own thread: a thread of their own would keep the
    local engine from forking its background steps (it forks a process of one thread)."""
    background = sum(step.background for step in STEPS)
    assert background > 0
    assert in_fresh_process("test_progress", "children_on_a_terminal", "") == f"{background} 0"


def children_on_a_terminal(_: str) -> str:
    """In a fresh process: ``ingest run`` of the seeds with ``--jobs 2`` and stderr a
    terminal; how many forked children computed background steps, and the exit code."""
    import tempfile

    import ingest.engines.local as local
    from ingest.cli import main
    from ingest.engines.forked import can_fork, forked

    if not can_fork():
        return "this process cannot fork, terminal or not"
    children: list[bool] = []

    def counted(compute: Callable[[], Any]) -> Any:
        child = forked(compute)
        children.append(child is not None)
        return child

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    setattr(local, "forked", counted)  # noqa: B010 - what the local engine calls to fork
    terminal = Terminal()
    sys.stderr, stderr, sys.stdout, stdout = terminal, sys.stderr, io.StringIO(), sys.stdout
    try:
        with tempfile.TemporaryDirectory() as tmp:
            code = main(["run", str(SEEDS), "--out", f"{tmp}/out", "--jobs", "2"])
    finally:
        sys.stderr, sys.stdout = stderr, stdout
    shown = ESCAPE.sub("", terminal.getvalue())
    if "✓ assemble" not in shown:
        return f"no rows drawn: {shown[-300:]!r}"
    return f"{sum(children)} {code}"


def test_the_dask_engine_says_each_step_once(tmp_path: Path) -> None:
    """Its steps run on a local cluster's workers; each is told once, by the run."""
    pytest.importorskip("distributed")
    out = tmp_path / "out"
    proc = run_subprocess("run", str(SEEDS), "--out", str(out), "--engine", "dask", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    said = [DONE.fullmatch(line) for line in proc.stderr.splitlines()]
    assert all(said), proc.stderr
    names = [m["name"] for m in said if m]
    assert sorted(names) == sorted(NAMES)
    assert names == list(_report_timing(out))
    _summary_only(proc.stdout)


def _on_a_terminal(*args: str) -> tuple[int, str, str]:
    """``python -m ingest ARGS`` with stderr a terminal of 120 columns and 40 rows: its exit
    code, its stdout, and what it showed on the terminal."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in {"COLUMNS", "LINES", "NO_COLOR"}}
    env["TERM"] = "xterm-256color"
    cmd = [sys.executable, "-m", "ingest", *args]
    deadline = time.monotonic() + 120
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=follower, cwd=ROOT, env=env) as p:
        os.close(follower)
        shown = b""
        while True:  # read as it comes: a terminal holds little before its writer waits
            if not select.select([leader], [], [], max(0, deadline - time.monotonic()))[0]:
                p.kill()
                pytest.fail(f"no end after 120 s: {shown[-500:]!r}")
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every end of the terminal is closed
                break
            if not chunk:
                break
            shown += chunk
        os.close(leader)
        assert p.stdout is not None
        stdout = p.stdout.read().decode()
        code = p.wait(timeout=120)
    return code, stdout, shown.decode()
