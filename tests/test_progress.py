"""What ``ingest run`` says of itself as it goes, on stderr: the phases a user knows (read,
resolve, write, publish), each with what it did and its seconds — otherwise one line as
each ends and a last one with the total; on a terminal, a row for each, drawn by rich;
with ``--quiet``, nothing. stdout stays the summary's."""

from __future__ import annotations

import fcntl
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
from pathlib import Path

import pytest

from conftest import ROOT, SEEDS, TOPIC_PAGE, run_subprocess

INPUTS = len(list(SEEDS.iterdir()))
S = r"(?P<seconds>[0-9]+\.[0-9]{2}) s"
#: What each phase did, as its line (no terminal) and its row (a terminal) say it.
READ = r"(?P<files>[0-9,]+) files?(?: \((?P<cached>[0-9,]+) from the page cache\))?"
RESOLVE = (
    r"(?P<listings>[0-9,]+) listings? into (?P<items>[0-9,]+) items?"
    r" and (?P<topics>[0-9,]+) topics?"
)
WRITE = r"(?P<written>[0-9,]+) files?, (?P<mb>[0-9,]+\.[0-9]) MB"
PUBLISH = r"(?P<out>'.+') \(sequence (?P<sequence>[0-9]+)\)"
#: The lines without a terminal, in order: the phases, then the whole run.
LINES = [
    re.compile(rf"ingest: read {READ} in {S}"),
    re.compile(rf"ingest: resolved {RESOLVE} in {S}"),
    re.compile(rf"ingest: wrote {WRITE} in {S}"),
    re.compile(rf"ingest: published {PUBLISH} in {S}"),
    re.compile(rf"ingest: done in {S}"),
]
#: A terminal's last drawing: a ticked row for each phase, with what it did and its seconds.
ROWS = [
    re.compile(rf"✓ read {READ} +{S}"),
    re.compile(rf"✓ resolve {RESOLVE} +{S}"),
    re.compile(rf"✓ write {WRITE} +{S}"),
    re.compile(rf"✓ publish {PUBLISH} +{S}"),
]
#: What distributed says when a local cluster's scheduler finds port 8787 taken (by a
#: cluster beside it): not the log's (test_dask_engine holds a run to saying nothing of it).
PORT_TAKEN = re.compile(
    r"\S+/distributed/node\.py:[0-9]+: UserWarning: Port 8787 is already in use\.\n"
    r"Perhaps you already have a cluster running\?\n"
    r"Hosting the HTTP server on port [0-9]+ instead\n"
    r"  warnings\.warn\(\n"
)
#: What a terminal is told: escape sequences (colour, cursor moves) and the rest.
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: The steps the read phase is made of (the rest are the resolve phase's).
READING = ("parse", "topics")


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _told(matches: list[re.Match[str]], out: Path) -> None:
    """Each phase said what the publish in ``out`` holds, and the seconds its report gives
    the steps of the phase."""
    report = json.loads((out / "report.json").read_text("utf-8"))
    marker = json.loads((out / ".ingest").read_text("utf-8"))
    read, resolved, wrote, published = matches[:4]
    timing = report["timing"]
    reading = sum(timing[name] for name in READING)
    assert abs(float(read["seconds"]) - reading) <= 0.0052, read.group()
    resolving = sum(seconds for name, seconds in timing.items() if name not in READING)
    assert abs(float(resolved["seconds"]) - resolving) <= 0.0052, resolved.group()
    totals = report["totals"]
    assert _number(read["files"]) == totals["files"], read.group()
    cached = report["reuse"]["pages_reused"]
    assert _number(read["cached"] or "0") == cached, (read.group(), report["reuse"])
    assert [_number(resolved[k]) for k in ("listings", "items", "topics")] == [
        totals["listings"],
        totals["items"],
        totals["topics"],
    ], resolved.group()
    files = marker["files"]
    assert _number(wrote["written"]) == len(files), wrote.group()
    size = sum(f["size"] for f in files.values())
    assert wrote["mb"] == f"{size / 1e6:,.1f}", wrote.group()
    assert published["sequence"] == str(report["run"]["sequence"]), published.group()


def _lines(stderr: str, out: Path) -> list[re.Match[str]]:
    """The run's lines without a terminal, each as it must be, and telling the truth."""
    lines = stderr.splitlines()
    assert len(lines) == len(LINES), lines
    matches = [pattern.fullmatch(line) for pattern, line in zip(LINES, lines, strict=True)]
    assert all(matches), lines
    found = [m for m in matches if m is not None]
    assert found[3]["out"] == repr(str(out)), lines
    _told(found, out)
    phases = sum(float(m["seconds"]) for m in found[:4])
    assert float(found[4]["seconds"]) >= phases - 0.02, lines  # the whole run, wall clock
    return found


def _summary_only(stdout: str) -> None:
    """stdout holds the end summary, and nothing of the phases."""
    assert stdout.startswith("ingest → ") and "items added / changed / removed" in stdout
    assert "ingest:" not in stdout and "\x1b" not in stdout and "✓" not in stdout


@pytest.mark.parametrize("jobs", ["1", "2"])  # 2: the parse in worker processes
def test_without_a_terminal_each_phase_says_once_what_it_did(tmp_path: Path, jobs: str) -> None:
    out = tmp_path / "out"
    proc = run_subprocess("run", str(SEEDS), "--out", str(out), "--jobs", jobs)
    assert proc.returncode == 0, proc.stderr
    read = _lines(proc.stderr, out)[0]
    assert (read["files"], read["cached"]) == (str(INPUTS), None)
    _summary_only(proc.stdout)


def test_the_read_line_counts_what_the_page_cache_gave(tmp_path: Path) -> None:
    """The pages the read phase took from the page cache, as the report counts them: none
    on a first run, even with the same bytes under two names (the second is parsed as the
    first is); on the next run, every unchanged page, under each of its names."""
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    for name in ("a.txt", "b.txt"):
        (dumps / name).write_bytes(TOPIC_PAGE.read_bytes())
    changing = dumps / "c.txt"
    changing.write_bytes((SEEDS / "001_71f134887f74a7d3.txt").read_bytes())
    out = tmp_path / "out"
    said = []
    for _ in range(2):
        proc = run_subprocess("run", str(dumps), "--out", str(out), "--allow-shrink")
        assert proc.returncode == 0, proc.stderr
        said.append(_lines(proc.stderr, out)[0])
        changing.write_bytes(changing.read_bytes() + b"\n")
    assert [(m["files"], m["cached"]) for m in said] == [("3", None), ("3", "2")]


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


def test_a_terminal_shows_a_row_for_each_phase(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, shown = _on_a_terminal("run", str(SEEDS), "--out", str(out), "--jobs", "2")
    assert code == 0, shown
    _summary_only(stdout)
    text = ESCAPE.sub("", shown)
    assert re.search(rf"read +━+ 0/{INPUTS} ", text)  # the read's bar, at its start
    assert "resolve: " in text  # the resolve's row says the step at work
    # the last drawing: every phase, ticked, with what it did and its seconds
    last = ESCAPE.sub("", shown.rsplit("\x1b[2K", 1)[1]).strip()
    rows = [line.strip() for line in last.splitlines()]
    assert len(rows) == len(ROWS), last
    matches = [pattern.fullmatch(row) for pattern, row in zip(ROWS, rows, strict=True)]
    assert all(matches), last
    found = [m for m in matches if m is not None]
    assert found[3]["out"] == repr(str(out)), last
    _told(found, out)


def test_the_dask_engine_says_each_phase_once(tmp_path: Path) -> None:
    """Its steps run on a local cluster's workers; each phase is told once, by the run."""
    pytest.importorskip("distributed")
    out = tmp_path / "out"
    proc = run_subprocess("run", str(SEEDS), "--out", str(out), "--engine", "dask", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    _lines(PORT_TAKEN.sub("", proc.stderr), out)  # (test_dask_engine holds the run to it)
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
