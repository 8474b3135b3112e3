"""Shared helpers: the seed pages, variants of them, and running the real command line."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from ingest.cli import main

#: The database tests' fixtures (``pg_url``, ``db_url``, ``published``): see dbtest.py.
pytest_plugins = ["dbtest"]

#: Hypothesis profiles. ``default`` (``make test``): few examples of each property that runs
#: the whole command line; ``slow`` (``make test-slow``, ``HYPOTHESIS_PROFILE=slow``): the
#: full sweep. Both derandomized: a failure is found again on the next run.
SLOW = os.environ.get("HYPOTHESIS_PROFILE") == "slow"
_SUPPRESSED = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "default", derandomize=True, database=None, deadline=None, suppress_health_check=_SUPPRESSED
)
settings.register_profile("slow", settings.get_profile("default"))
settings.load_profile("slow" if SLOW else "default")


def cli_examples(full: int) -> int:
    """The examples a property that runs ``ingest run`` once an example gets: ``full``
    under the slow profile, a twentieth of it (at least 5) otherwise."""
    return full if SLOW else max(5, full // 20)


ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
TOPIC_PAGE = SEEDS / "000_323494b48c0530e6.txt"
TOPIC_LIST = SEEDS / "001_71f134887f74a7d3.txt"
ITEM_PAGE = SEEDS / "004_580ca6da1b58938c.txt"


def seed_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def multiline_topic_page(text: str) -> str:
    """The flattened seed topic page with its line breaks put back."""
    text = text.replace("# 模型服务与算力 学习", "# 模型服务与算力\n学习", 1)
    text = text.replace(" - 所属：", "\n- 所属：").replace(" - 网站：", "\n- 网站：")
    text = text.replace(" ## 推荐学习顺序 ", "\n\n## 推荐学习顺序\n\n")
    text = re.sub(r" (?=[0-9]+\. \[)", "\n", text)
    text = text.replace(" --- ", "\n\n---\n").replace(" 来源：", "\n来源：")
    return text + "\n"


class Out:
    """A finished run's output folder, parsed."""

    def __init__(self, folder: Path, code: int) -> None:
        self.folder = folder
        self.code = code

    def lines(self, name: str) -> list[dict[str, Any]]:
        text = (self.folder / name).read_text(encoding="utf-8")
        return [json.loads(x) for x in text.splitlines()]

    @property
    def items(self) -> list[dict[str, Any]]:
        return self.lines("items.jsonl")

    @property
    def topics(self) -> list[dict[str, Any]]:
        return self.lines("topics.jsonl")

    @property
    def rejects(self) -> list[dict[str, Any]]:
        return self.lines("rejects.jsonl")

    @property
    def report(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((self.folder / "report.json").read_text("utf-8"))
        return doc

    def by_title(self, title_zh: str) -> dict[str, Any]:
        [item] = [i for i in self.items if i["title_zh"] == title_zh]
        return item

    def bytes_of(self, name: str) -> bytes:
        return (self.folder / name).read_bytes()


@pytest.fixture
def ingest(tmp_path: Path) -> Any:
    """Run ``ingest run`` in-process through the CLI entry point; returns an :class:`Out`."""
    counter = iter(range(1000))

    def _run(*paths: Path | str, args: tuple[str, ...] = ()) -> Out:
        out = tmp_path / f"out{next(counter)}"
        code = main(["run", *map(str, paths), "--out", str(out), "--quiet", *args])
        return Out(out, code)

    return _run


def every_string(value: Any) -> list[str]:
    """Every string inside a JSON-like value, for properties over all output text."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in every_string(v)]
    if isinstance(value, list):
        return [s for v in value for s in every_string(v)]
    return []


def write_files(folder: Path, files: dict[str, str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        p = folder / name
        if isinstance(data, str):
            p.write_text(data, encoding="utf-8")
        else:
            p.write_bytes(data)
    return folder


#: The report page's line on what the run took from the previous publish's cache: the one
#: part of a publish that differs between a daily run and ``--full`` or another engine.
REUSE_LINE = re.compile(rb'<p class="reuse">.*?</p>\n')
#: The line each step of a run prints on stderr as it ends, when stderr is no terminal.
#: A line the log prints as a phase of a run ends (read, resolved, wrote, published), and
#: its last one (done).
STEP_LINE = re.compile(r"ingest: (?:read|resolved|wrote|published|done)\b[^\n]* in \d+\.\d\d s\n")


def without_steps(err: str) -> str:
    """What a run said on stderr besides the lines its phases print as they end."""
    return STEP_LINE.sub("", err)


@contextlib.contextmanager
def running(*args: str) -> Iterator[subprocess.Popen[bytes]]:
    """``ingest ARGS`` started in a session of its own (its workers in its process group, as
    a terminal's Ctrl-C finds them), its stderr piped; whatever of the group is left at the
    end of the block is killed (a test that fails leaves nothing running)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ingest", *args],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    with proc:
        try:
            yield proc
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def run_subprocess(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed command line in a fresh process, as a user would run it."""
    return run_python("-m", "ingest", *args, cwd=cwd, env=env)


def run_python(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in a fresh process of the tests' interpreter, output captured."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd or ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def in_fresh_process(module: str, func: str, arg: str) -> str:
    """``func(arg)`` of the test module ``module``, run in a fresh process: what it printed
    (or, if it printed nothing, its error). For what this process cannot show: a fork (the
    Dask tests leave threads here), a platform call taken away, a first import."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    done = run_python("-c", f"import {module} as t; print(t.{func}({arg!r}))", env=env)
    return done.stdout.strip() or done.stderr


def load_script(path: Path, name: str) -> ModuleType:
    """A script that is not a module of the package (bench/, a generator), imported from its
    path as ``name``, which ``sys.modules`` holds (dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def outliving(pids: list[int], seconds: float = 5) -> list[int]:
    """Those of ``pids`` still alive ``seconds`` from now, at most (a zombie no one has
    reaped yet counts as dead: this machine's init reaps once a second). Every one of them
    is killed before this returns, so a test that finds some leaves none behind (Linux)."""
    deadline = time.monotonic() + seconds
    while (alive := [p for p in pids if not _dead(p)]) and time.monotonic() < deadline:
        time.sleep(0.01)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return alive


def _dead(pid: int) -> bool:
    state = proc_state(pid)
    return state is None or state[0] == "Z"


def proc_state(pid: int) -> tuple[str, int] | None:
    """A process's state letter (``Z``: a zombie) and its parent's pid, from /proc; None if
    it is gone (Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def reseal(folder: Path) -> None:
    """The marker of the publish in ``folder`` listing its files as they are now (each
    file's size and xxh3-128): a publish as another writer would have made it, edits and
    all, that the door takes as whole."""
    from xxhash import xxh3_128_hexdigest

    marker_path = folder / ".ingest"
    marker = json.loads(marker_path.read_bytes())
    files = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if (
            path.is_file()
            and not path.is_symlink()
            and name not in (".ingest", ".keep", ".gitkeep")
        ):
            data = path.read_bytes()
            files[name] = {"size": len(data), "xxh3_128": xxh3_128_hexdigest(data)}
    marker["files"] = files
    marker_path.write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
