"""``ingest check FIXTURE [--update]`` and ``ingest.testing.assert_fixture`` (issue 47).

A fixture is ``pages/`` (the seed pages here), ``expected/`` (written by ``--update`` only)
and an optional ``fixture.json`` (``{"crawled_at": "YYYY-MM-DD"}``). ``check`` runs the pages
without touching the fixture and exits 0 when the records are the expected ones, 1 with a
review of the difference (per record and field, expected and found, the characters that
differ marked ``[-gone-]{+new+}``, a last line of counts) when not, and 2 with one line when
the fixture is not one. A parser rule is broken on purpose by patching a parse function of
the running process (or of a fresh ``python -m ingest`` for the order across processes).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import ITEM_PAGE, ROOT, SEEDS
from ingest.check import marked
from ingest.cli import main
from ingest.extract.parse import item_page, topic_page
from ingest.testing import assert_fixture

GOLDEN = ROOT / "tests" / "golden"
RECORDS = ("items.jsonl", "topics.jsonl", "rejects.jsonl")
SAME = "check: the records are the expected ones"
#: The item page's own entry: its Chinese title (the page's second line) and publisher.
ITEM_TITLE = ITEM_PAGE.read_text("utf-8").splitlines()[1]
PUBLISHER = "Hugging Face"
#: The five lines of the README's pytest example (a site's test of its own fixture).
README_TEST = """\
from ingest.testing import assert_fixture


def test_our_pages_give_the_records_we_rely_on():
    assert_fixture("tests/fixtures/learnmap")
"""
#: A parser rule broken in a fresh process: every listing of the topic page at level 进阶
#: (intermediate) read as 深入 (advanced). Run before ``python -m ingest``'s own code.
LEVELS_BROKEN = """\
import runpy
from ingest.extract.parse import topic_page
read_meta = topic_page._read_meta
def broken(raw):
    kind, level, problems = read_meta(raw)
    return kind, "深入" if level == "进阶" else level, problems
topic_page._read_meta = broken
runpy.run_module("ingest", run_name="__main__")
"""


# --- helpers ----------------------------------------------------------------------------


def check(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """``ingest check ARGS`` in this process: exit code, stdout, stderr."""
    capsys.readouterr()
    code = main(["check", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``python -m ingest ARGS`` in a fresh process, stopped after 30 s (a read that blocks)."""
    return subprocess.run(
        [sys.executable, "-m", "ingest", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def pages_of_seeds(fixture: Path) -> Path:
    """A fixture holding the seed pages and nothing else (no expected/ yet)."""
    shutil.copytree(SEEDS, fixture / "pages")
    return fixture


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text("utf-8").splitlines()]


def snapshot(folder: Path) -> dict[str, tuple[bytes | str | None, int]]:
    """Every entry of ``folder`` (itself too, links not followed): a regular file's bytes,
    a link's target (None for anything else) and its mtime."""
    entries = [folder]
    for here, folders, files in os.walk(folder):
        entries += [Path(here, name) for name in sorted([*folders, *files])]
    return {
        p.relative_to(folder).as_posix(): (
            os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else None,
            p.lstat().st_mtime_ns,
        )
        for p in entries
    }


def one_line_error(err: str) -> str:
    """The single line a refused check says on stderr."""
    assert "Traceback" not in err, err
    assert err.count("\n") == 1 and err.startswith("ingest: error: "), err
    return err


def review(out: str) -> tuple[list[str], str]:
    """A difference as printed: the lines naming a record (not its fields), the last line."""
    lines = out.splitlines()
    return [x for x in lines[:-1] if not x.startswith(" ")], lines[-1]


@pytest.fixture(scope="session")
def pinned_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeds' fixture with expected/ written by ``check --update`` (once a worker)."""
    fixture = pages_of_seeds(tmp_path_factory.mktemp("pinned") / "seeds")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["check", str(fixture), "--update"]) == 0
    return fixture


@pytest.fixture
def pinned(tmp_path: Path, pinned_once: Path) -> Path:
    """A copy of the seeds' fixture of this test's own."""
    return Path(shutil.copytree(pinned_once, tmp_path / "seeds", symlinks=True))


@pytest.fixture
def item_id(pinned_once: Path) -> str:
    """The id the expected records give the item page's own entry."""
    [item] = [
        i for i in lines_of(pinned_once / "expected" / "items.jsonl") if i["title_zh"] == ITEM_TITLE
    ]
    assert item["publisher"] == PUBLISHER
    return str(item["id"])


def break_publisher(monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser rule broken on purpose: the item page's byline gives its publisher with
    each space read as a hyphen ("Hugging Face" → "Hugging-Face")."""
    byline = item_page._byline

    def broken(page: Any, line: Any) -> tuple[str | None, str | None]:
        publisher, age = byline(page, line)
        return (publisher.replace(" ", "-") if publisher else publisher), age

    monkeypatch.setattr(item_page, "_byline", broken)


def break_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same break as ``LEVELS_BROKEN``, in this process."""
    read_meta = topic_page._read_meta

    def broken(raw: str) -> tuple[str | None, str | None, tuple[tuple[str, str], ...]]:
        kind, level, problems = read_meta(raw)
        return kind, "深入" if level == "进阶" else level, problems

    monkeypatch.setattr(topic_page, "_read_meta", broken)


@pytest.fixture
def publisher_rule_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    break_publisher(monkeypatch)


@pytest.fixture
def level_rule_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    break_levels(monkeypatch)


def intermediate_ids(fixture: Path) -> list[str]:
    """The expected items at level intermediate: those the broken level rule changes."""
    items = lines_of(fixture / "expected" / "items.jsonl")
    return sorted(
        i["id"] for i in items if i["topics"] and i["topics"][0]["level"] == "intermediate"
    )


# --- the seeds' fixture through the installed command --------------------------------------


def test_update_writes_expected_and_check_then_passes_through_the_installed_command(
    tmp_path: Path,
) -> None:
    fixture = pages_of_seeds(tmp_path / "site fixture")
    golden = {name: (GOLDEN / name).read_bytes() for name in RECORDS}
    records = sum(data.count(b"\n") for data in golden.values())

    first = cli("check", fixture, "--update")
    assert (first.returncode, first.stderr) == (0, "")
    written = f"ingest: wrote {fixture / 'expected'}: {records} record(s) changed\n"
    assert first.stdout == written
    # the expected records are those `ingest run` writes of the seeds (tests/golden)
    assert {n: (fixture / "expected" / n).read_bytes() for n in RECORDS} == golden

    same = cli("check", fixture)
    assert (same.returncode, same.stdout, same.stderr) == (0, SAME + "\n", "")


def test_check_leaves_every_file_of_the_fixture_as_it_was(
    capsys: pytest.CaptureFixture[str], pinned: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(pinned)
    assert check(capsys, pinned)[:2] == (0, SAME + "\n")
    break_levels(monkeypatch)
    assert check(capsys, pinned)[0] == 1
    assert snapshot(pinned) == before

    bare = pages_of_seeds(pinned.parent / "bare")  # no expected/: a plain check makes none
    before = snapshot(bare)
    code, out, err = check(capsys, bare)
    assert (code, out) == (2, "")
    assert f"ingest check {bare} --update" in one_line_error(err) and "expected/" in err
    assert snapshot(bare) == before


def test_the_fixture_moved_elsewhere_gives_the_same_records(
    capsys: pytest.CaptureFixture[str],
    pinned: Path,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing volatile is compared: no absolute path in the records (a file is named by
    its path in pages/), so a fixture copied to another place and run from another folder
    passes."""
    (pinned / "pages" / "junk.txt").write_text("just words\n", encoding="utf-8")  # a reject
    (pinned / "kept").mkdir()  # a page linked from beyond pages/: a reject that names it
    shutil.copy(pinned / "pages" / "junk.txt", pinned / "kept" / "page.txt")
    (pinned / "pages" / "linked.txt").symlink_to(Path("..", "kept", "page.txt"))
    assert check(capsys, pinned, "--update")[0] == 0
    expected = b"".join((pinned / "expected" / n).read_bytes() for n in RECORDS)
    assert str(tmp_path_factory.getbasetemp()).encode() not in expected
    named = [s["file"] for i in lines_of(pinned / "expected" / "items.jsonl") for s in i["sources"]]
    named += [r["file"] for r in lines_of(pinned / "expected" / "rejects.jsonl")]
    assert set(named) == {p.name for p in (pinned / "pages").iterdir()}
    assert "'kept/page.txt'" in (pinned / "expected" / "rejects.jsonl").read_text("utf-8")
    moved = Path(shutil.copytree(pinned, tmp_path / "elsewhere" / "renamed", symlinks=True))
    monkeypatch.chdir(moved / "pages")
    assert check(capsys, "..") == (0, SAME + "\n", "")


# --- a parser rule broken on purpose ----------------------------------------------------


def test_a_broken_rule_names_the_record_the_field_and_marks_the_characters(
    capsys: pytest.CaptureFixture[str], pinned: Path, item_id: str, publisher_rule_broken: None
) -> None:
    code, out, err = check(capsys, pinned)
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        f"item {item_id} ({ITEM_TITLE}):",
        "  publisher:",
        f"    expected: {PUBLISHER}",
        "    found:    Hugging-Face",
        "    marked:   Hugging[- -]{+-+}Face",
        "check: 1 item changed",
    ]
    assert check(capsys, pinned) == (code, out, err)  # the same review again


def test_a_field_of_records_names_the_entry_and_each_part_that_differs(
    capsys: pytest.CaptureFixture[str], pinned: Path, level_rule_broken: None
) -> None:
    changed = intermediate_ids(pinned)
    assert len(changed) > 1
    code, out, _ = check(capsys, pinned)
    assert code == 1
    titled, last = review(out)
    assert [x.split(" ")[1] for x in titled] == changed  # by id, in order
    assert all(x.startswith("item ") and x.endswith("):") for x in titled)
    fields = [x for x in out.splitlines() if x.startswith(" ")]
    assert fields == ["  topics[0]: level intermediate → advanced, level_label 进阶 → 深入"] * len(
        changed
    )
    assert last == f"check: {len(changed)} items changed"


def test_the_review_is_in_the_same_order_in_any_process(
    capsys: pytest.CaptureFixture[str], pinned: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh ``python -m ingest check`` with the level rule broken and another hash seed
    (other orders of sets and dicts of strings) prints the review this process prints."""
    done = subprocess.run(
        [sys.executable, "-c", LEVELS_BROKEN, "check", str(pinned)],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (1, "")
    changed = intermediate_ids(pinned)
    titled, last = review(done.stdout)
    assert [x.split(" ")[1] for x in titled] == changed
    assert last == f"check: {len(changed)} items changed"
    break_levels(monkeypatch)
    assert check(capsys, pinned) == (1, done.stdout, "")


def test_update_says_how_many_records_it_changed(
    capsys: pytest.CaptureFixture[str], pinned: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = intermediate_ids(pinned)
    wrote = f"ingest: wrote {pinned / 'expected'}: {{}} record(s) changed\n"
    break_levels(monkeypatch)  # a deliberate change of the rule
    assert check(capsys, pinned, "--update") == (0, wrote.format(len(changed)), "")
    assert check(capsys, pinned) == (0, SAME + "\n", "")
    items = {i["id"]: i for i in lines_of(pinned / "expected" / "items.jsonl")}
    assert {items[x]["topics"][0]["level"] for x in changed} == {"advanced"}
    assert check(capsys, pinned, "--update") == (0, wrote.format(0), "")

    monkeypatch.undo()  # the rule as it was: the same records differ again
    code, out, _ = check(capsys, pinned)
    assert (code, review(out)[1]) == (1, f"check: {len(changed)} items changed")
    assert check(capsys, pinned, "--update") == (0, wrote.format(len(changed)), "")


# --- records and rejects added and gone -------------------------------------------------


def test_pages_gone_and_back_give_items_gone_and_added(
    capsys: pytest.CaptureFixture[str], pinned: Path, tmp_path: Path
) -> None:
    items = lines_of(pinned / "expected" / "items.jsonl")
    files = {i["id"]: {s["file"] for s in i["sources"]} for i in items}
    title = {i["id"]: i["title_zh"] for i in items}
    only = sorted(x for x, f in files.items() if f == {ITEM_PAGE.name})
    also = sorted(x for x, f in files.items() if ITEM_PAGE.name in f and len(f) > 1)
    assert only and also

    page = pinned / "pages" / ITEM_PAGE.name
    page.rename(tmp_path / ITEM_PAGE.name)
    code, out, _ = check(capsys, pinned)
    assert code == 1
    titled, last = review(out)
    assert titled == [
        f"item {x} ({title[x]}): gone" if x in only else f"item {x} ({title[x]}):"
        for x in sorted(only + also)
    ]
    assert last == f"check: {len(also)} items changed, {len(only)} items gone"

    assert check(capsys, pinned, "--update")[0] == 0
    (tmp_path / ITEM_PAGE.name).rename(page)
    code, out, _ = check(capsys, pinned)
    titled, last = review(out)
    assert code == 1
    assert [x for x in titled if x.endswith(": added")] == [
        f"item {x} ({title[x]}): added" for x in only
    ]
    assert last == f"check: {len(also)} items changed, {len(only)} items added"


def test_a_junk_page_is_a_reject_added_and_gone_with_its_reason(
    capsys: pytest.CaptureFixture[str], pinned: Path
) -> None:
    junk = pinned / "pages" / "junk.txt"
    junk.write_text("nothing a curation site shows\njust words\n", encoding="utf-8")
    code, out, _ = check(capsys, pinned)
    assert code == 1
    [said, last] = out.splitlines()
    assert said.startswith("reject added: junk.txt: file: UNKNOWN_FORMAT: ")
    assert last == "check: 1 reject added"

    assert check(capsys, pinned, "--update")[1].endswith(": 1 record(s) changed\n")
    junk.unlink()
    code, out, _ = check(capsys, pinned)
    assert code == 1
    assert out.splitlines() == [
        said.replace("reject added", "reject gone"),
        "check: 1 reject gone",
    ]


def test_a_reject_for_another_reason_is_one_gone_and_one_added(
    capsys: pytest.CaptureFixture[str], pinned: Path
) -> None:
    """The expected reject says another reason (an older ingest's): both are named."""
    (pinned / "pages" / "junk.txt").write_text("just words\n", encoding="utf-8")
    assert check(capsys, pinned, "--update")[0] == 0
    rejects = pinned / "expected" / "rejects.jsonl"
    [reject] = lines_of(rejects)
    rejects.write_text(json.dumps({**reject, "reason": "EMPTY_INPUT"}) + "\n", encoding="utf-8")
    code, out, _ = check(capsys, pinned)
    assert code == 1
    [gone, added, last] = out.splitlines()
    assert gone.startswith("reject gone: junk.txt: file: EMPTY_INPUT: ")
    assert added.startswith("reject added: junk.txt: file: UNKNOWN_FORMAT: ")
    assert last == "check: 1 reject added, 1 reject gone"


# --- fixture.json: the crawl day of relative ages ---------------------------------------


def test_relative_ages_are_read_on_the_day_the_fixture_declares(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, item_id: str
) -> None:
    fixture = pages_of_seeds(tmp_path / "dated")
    (fixture / "fixture.json").write_text('{"crawled_at": "2026-11-29"}\n', encoding="utf-8")
    assert check(capsys, fixture, "--update")[0] == 0
    # the records of `ingest run --crawled-at` that day, byte for byte
    publish = tmp_path / "out"
    run = ["run", f"{fixture}/pages", "--out", f"{publish}", "--quiet"]
    assert main([*run, "--crawled-at", "2026-11-29"]) == 0
    for name in RECORDS:
        assert (fixture / "expected" / name).read_bytes() == (publish / name).read_bytes()
    items = {i["id"]: i for i in lines_of(fixture / "expected" / "items.jsonl")}
    estimate = items[item_id]["published_estimate"]
    assert estimate is not None and estimate["latest"] < "2026-11-29"
    assert check(capsys, fixture) == (0, SAME + "\n", "")

    (fixture / "fixture.json").write_text('{"crawled_at": "2027-01-29"}\n', encoding="utf-8")
    code, out, _ = check(capsys, fixture)
    assert code == 1
    lines = out.splitlines()
    assert lines[:3] == [
        f"item {item_id} ({ITEM_TITLE}):",
        "  published_estimate:",
        f"    expected: {json.dumps(estimate)}",
    ]
    found = json.loads(lines[3].removeprefix("    found:    "))
    assert found["earliest"] > estimate["earliest"] and found["latest"] < "2027-01-29"
    assert lines[4:] == ["check: 1 item changed"]

    (fixture / "fixture.json").unlink()  # no crawl day: no estimate
    code, out, _ = check(capsys, fixture)
    assert (code, out.splitlines()[3]) == (1, "    found:    null")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("{crawled_at: 2026-11-29}", id="not-json"),
        pytest.param('{"crawled_at": "2026-13-29"}', id="no-such-day"),
        pytest.param('{"crawled_at": "29/11/2026"}', id="another-format"),
        pytest.param('{"crawled_at": 20261129}', id="a-number"),
        pytest.param('{"crawled_at": "20261129"}', id="iso-basic-format"),
        pytest.param('["2026-11-29"]', id="a-list"),
        pytest.param('{"crawled_at": "2026-11', id="cut"),
    ],
)
def test_a_damaged_fixture_json_is_one_line(
    capsys: pytest.CaptureFixture[str], pinned: Path, text: str
) -> None:
    (pinned / "fixture.json").write_text(text, encoding="utf-8")
    code, out, err = check(capsys, pinned)
    assert (code, out) == (2, "")
    assert "fixture.json" in one_line_error(err) and "crawled_at" in err


# --- hostile fixture folders ------------------------------------------------------------


def _cut(fixture: Path) -> None:
    items = fixture / "expected" / "items.jsonl"
    data = items.read_bytes()
    items.write_bytes(data[: data.index(b"\n") + 1 + 40])


def _line(text: str) -> Callable[[Path], None]:
    def put(fixture: Path) -> None:
        items = fixture / "expected" / "items.jsonl"
        lines = items.read_text("utf-8").splitlines(keepends=True)
        items.write_text("".join([lines[0], text + "\n", *lines[2:]]), encoding="utf-8")

    return put


def _topic_in_items(fixture: Path) -> None:
    topic = (fixture / "expected" / "topics.jsonl").read_text("utf-8").splitlines()[0]
    _line(topic)(fixture)


def _replace(name: str, how: Callable[[Path, Path], object]) -> Callable[[Path], None]:
    """``name`` in the fixture replaced by what ``how(fixture, path)`` makes at its path."""

    def put(fixture: Path) -> None:
        path = fixture / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif os.path.lexists(path):
            path.unlink()
        how(fixture, path)

    return put


def _moved_out(name: str) -> Callable[[Path], None]:
    """``name`` moved out of the fixture (beside it), a link to it left in its place: the
    fixture as it was, but for a link leading out of it."""

    def put(fixture: Path) -> None:
        path = fixture / name
        twin = fixture.parent / "outside" / name
        twin.parent.mkdir(parents=True)
        if os.path.lexists(path):
            shutil.move(path, twin)
        else:
            twin.write_text('{"crawled_at": "2026-11-29"}\n', encoding="utf-8")
        path.symlink_to(twin)

    return put


def _loop(fixture: Path, path: Path) -> None:
    path.symlink_to("b.txt")
    path.with_name("b.txt").symlink_to(path.name)


def _nothing(fixture: Path, path: Path) -> None:
    pass


def _a_file(fixture: Path, path: Path) -> None:
    path.write_text("x\n", encoding="utf-8")


def _fifo(fixture: Path, path: Path) -> None:
    os.mkfifo(path)


def _folder(fixture: Path, path: Path) -> None:
    path.mkdir()


def _list(fixture: Path, path: Path) -> None:
    path.write_text("[1, 2]\n", encoding="utf-8")


def _to_pages(fixture: Path, path: Path) -> None:
    path.symlink_to("pages")


def _nowhere(fixture: Path, path: Path) -> None:
    path.symlink_to("/nonexistent/gone.txt")


PAGE = f"pages/{ITEM_PAGE.name}"
#: A hostile fixture: what is done to the seeds' fixture, and what the error line says.
HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    "fixture-missing": (_replace("", _nothing), "is not a folder"),
    "fixture-a-file": (_replace("", _a_file), "is not a folder"),
    "no-pages": (_replace("pages", _nothing), "has no pages/ folder"),
    "pages-a-file": (_replace("pages", _a_file), "has no pages/ folder"),
    "pages-empty": (_replace("pages", _folder), "pages/ holds no page"),
    "expected-linked-to-pages": (_replace("expected", _to_pages), "expected is a link"),
    "expected-a-file": (_replace("expected", _a_file), "expected is not a folder"),
    "items-gone": (_replace("expected/items.jsonl", _nothing), "items.jsonl: cannot be read"),
    "items-a-fifo": (_replace("expected/items.jsonl", _fifo), "not a regular file"),
    "items-a-folder": (_replace("expected/items.jsonl", _folder), "items.jsonl: cannot be read"),
    "items-line-cut": (_cut, "items.jsonl: line 2: "),
    "items-not-json": (_line("this is no JSON"), "items.jsonl: line 2: "),
    "items-holding-a-topic": (_topic_in_items, "items.jsonl: line 2: "),
    "items-another-shape": (_line('{"id": "a1b2c3d4e5f6"}'), "items.jsonl: line 2: "),
    "rejects-a-list": (_replace("expected/rejects.jsonl", _list), "rejects.jsonl: line 1: "),
    "fixture-json-a-fifo": (_replace("fixture.json", _fifo), "fixture.json: not a fixture file"),
    "page-linked-out": (_moved_out(PAGE), f"{PAGE} is a link to "),
    "pages-linked-out": (_moved_out("pages"), "pages is a link to "),
    "items-linked-out": (
        _moved_out("expected/items.jsonl"),
        "expected/items.jsonl is a link to ",
    ),
    "expected-linked-out": (_moved_out("expected"), "expected is a link to "),
    "fixture-json-linked-out": (_moved_out("fixture.json"), "fixture.json is a link"),
    "page-linked-nowhere-outside": (_replace("pages/gone.txt", _nowhere), "pages/gone.txt is a"),
    "loop-of-links": (_replace("pages/a.txt", _loop), "is a link that leads nowhere"),
}


def refused(case: str, code: int, out: str, err: str) -> None:
    """The check of a hostile fixture: exit 2, one line naming what is wrong, nothing
    written."""
    assert (code, out) == (2, ""), err
    assert HOSTILE[case][1] in one_line_error(err)
    if "linked-out" in case:
        assert "outside the fixture" in err


#: A FIFO is read only through the installed command, where a read that blocks is stopped.
IN_PROCESS = [case for case in HOSTILE if "fifo" not in case]
THROUGH_THE_COMMAND = ["no-pages", "items-line-cut", "pages-linked-out"]
THROUGH_THE_COMMAND += [case for case in HOSTILE if "fifo" in case]


@pytest.mark.parametrize("case", IN_PROCESS)
def test_a_hostile_fixture_is_one_line(
    capsys: pytest.CaptureFixture[str], pinned: Path, case: str
) -> None:
    HOSTILE[case][0](pinned)
    before = snapshot(pinned) if pinned.is_dir() else None
    refused(case, *check(capsys, pinned))
    assert (snapshot(pinned) if pinned.is_dir() else None) == before


@pytest.mark.parametrize("case", THROUGH_THE_COMMAND)
def test_a_hostile_fixture_is_one_line_through_the_installed_command(
    pinned: Path, case: str
) -> None:
    HOSTILE[case][0](pinned)
    before = snapshot(pinned)
    done = cli("check", pinned)
    refused(case, done.returncode, done.stdout, done.stderr)
    assert snapshot(pinned) == before


# --- ingest.testing.assert_fixture and the README's test --------------------------------


def test_assert_fixture_passes_and_fails_with_the_review_check_prints(
    capsys: pytest.CaptureFixture[str], pinned: Path, publisher_rule_broken: None
) -> None:
    code, out, _ = check(capsys, pinned)
    assert code == 1
    with pytest.raises(AssertionError) as failed:
        assert_fixture(pinned)
    assert str(failed.value) == out.removesuffix("\n")
    assert "publisher:" in str(failed.value)


def test_assert_fixture_passes_on_the_expected_records(pinned: Path) -> None:
    assert_fixture(pinned)  # raises nothing
    assert_fixture(str(pinned))


def test_the_readme_example_runs_under_pytest(tmp_path: Path, pinned: Path) -> None:
    """The README's five lines, as a site's test file, under pytest in a fresh process:
    it passes on the fixture, and fails with the review once a record is not as expected."""
    assert README_TEST in (ROOT / "README.md").read_text("utf-8"), "the README shows others"
    site = tmp_path / "site"
    shutil.copytree(pinned, site / "tests" / "fixtures" / "learnmap")
    (site / "tests" / "test_pages.py").write_text(README_TEST, encoding="utf-8")
    edited = site / "tests" / "fixtures" / "edited"
    shutil.copytree(pinned, edited)
    items = edited / "expected" / "items.jsonl"
    was = f'"publisher":"{PUBLISHER}"'
    assert items.read_text("utf-8").count(was) == 1
    items.write_text(items.read_text("utf-8").replace(was, was[:-1] + ' Inc"'), "utf-8")
    (site / "tests" / "test_edited.py").write_text(
        README_TEST.replace("learnmap", "edited"), encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q"],
        cwd=site,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert "FAILED tests/test_edited.py::test_our_pages_give_the_records_we_rely_on" in done.stdout
    assert "publisher:" in done.stdout
    assert f"marked:   {PUBLISHER}[- Inc-]" in done.stdout


@pytest.mark.parametrize(
    ("old", "new", "shown"),
    [
        ("Hugging Face", "Hugging Face", "Hugging Face"),
        ("Hugging Face", "Hugging Face Inc", "Hugging Face{+ Inc+}"),
        ("Hugging Face Inc", "Hugging Face", "Hugging Face[- Inc-]"),
        ("值得看", "值得一看", "值得{+一+}看"),
        ("5 个月前", "6 个月前", "[-5-]{+6+} 个月前"),
        ("", "new", "{+new+}"),
    ],
)
def test_marked_shows_what_is_gone_and_what_is_new(old: str, new: str, shown: str) -> None:
    assert marked(old, new) == shown
