"""What ``ingest publish`` refuses, and where it writes (SPEC §6): a wrong URL, a refused
connection, a database that is not ingest's, a newer database schema, a folder that is not
a publish — one line on stderr, exit 2, nothing written (an older schema is migrated:
test_database_migrations.py). Without ``--db`` the SQLite file goes beside the folder,
never inside it.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from conftest import ROOT, SEEDS, run_subprocess
from dbtest import (
    connect,
    derive,
    edit_b,
    reseal,
    snapshot,
)
from ingest.cli import main
from ingest.database import tables

FILES = ["changes.jsonl", "items.jsonl", "rejects.jsonl", "report.json", "topics.jsonl"]


@pytest.fixture
def seeds_out(ingest: Any) -> Path:
    folder: Path = ingest(SEEDS).folder
    return folder


def refused(args: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> str:
    capsys.readouterr()
    assert main(["publish", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("ingest: error: ")
    for word in words:
        assert word in captured.err, captured.err
    return captured.err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_wrong_urls_and_refused_connections(
    seeds_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(tmp_path.iterdir())
    cases = [
        ("not a url", "not a database URL"),
        ("mysql://user@127.0.0.1/site", "unsupported database 'mysql'"),
        ("sqlite://", "names no database file"),
        (f"sqlite:///{tmp_path}/missing/site.sqlite", "missing"),
        (f"sqlite:///{tmp_path}", "is not a file"),
        (f"postgresql://postgres:s3cret@127.0.0.1:{free_port()}/test", "refused"),
    ]
    for url, words in cases:
        err = refused([str(seeds_out), "--db", url], capsys, words)
        assert "s3cret" not in err
    assert sorted(tmp_path.iterdir()) == before


def test_a_postgresql_database_that_does_not_exist(
    pg_url: str, seeds_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = pg_url.rsplit("/", 1)[0] + "/ingest_no_such_database"
    refused([str(seeds_out), "--db", url], capsys, "does not exist")


def test_files_and_databases_that_are_not_ingests(
    seeds_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text_file = tmp_path / "notes.sqlite"
    text_file.write_text("not a database at all\n" * 100)
    other = tmp_path / "app.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO users VALUES (1, 'ada')")
    conn.close()
    saved = {p: p.read_bytes() for p in (text_file, other)}
    names = sorted(p.name for p in tmp_path.iterdir())
    refused([str(seeds_out), "--db", f"sqlite:///{text_file}"], capsys, "not a database")
    refused([str(seeds_out), "--db", f"sqlite:///{other}"], capsys, "not ingest's", "users")
    assert {p: p.read_bytes() for p in saved} == saved
    assert sorted(p.name for p in tmp_path.iterdir()) == names


def test_a_postgresql_database_of_another_application(
    pg_url: str, seeds_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = connect(pg_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE orders (id integer PRIMARY KEY, total numeric)"))
        conn.execute(text("INSERT INTO orders VALUES (1, 9.5)"))
    engine.dispose()
    before = snapshot(pg_url)
    refused([str(seeds_out), "--db", pg_url], capsys, "not ingest's", "orders")
    assert snapshot(pg_url) == before


def _set_meta(url: str, key: str, value: str) -> None:
    engine = connect(url)
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE ingest_meta SET value = :v WHERE key = :k"), {"v": value, "k": key}
        )
    engine.dispose()


NOW = tables.DB_SCHEMA_VERSION


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("schema_version", str(NOW + 1), (f"version {NOW + 1}, newer than this ingest's {NOW}",)),
        ("application", "other", ("does not mark it as ingest's",)),
    ],
)
def test_a_newer_or_unmarked_database_is_refused(
    db_url: str,
    seeds_out: Path,
    capsys: pytest.CaptureFixture[str],
    key: str,
    value: str,
    words: tuple[str, ...],
) -> None:
    assert main(["publish", str(seeds_out), "--db", db_url, "--quiet"]) == 0
    _set_meta(db_url, key, value)
    before = snapshot(db_url)
    refused([str(seeds_out), "--db", db_url], capsys, *words)
    assert snapshot(db_url) == before


def test_without_db_the_file_goes_beside_the_folder(seeds_out: Path, tmp_path: Path) -> None:
    work = tmp_path / "site"
    work.mkdir()
    shutil.copytree(seeds_out, work / "out", symlinks=True)
    inside = sorted(str(p.relative_to(work / "out")) for p in (work / "out").rglob("*"))
    done = run_subprocess("publish", cwd=work)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in work.iterdir()) == ["out", "out.sqlite"]
    assert sorted(str(p.relative_to(work / "out")) for p in (work / "out").rglob("*")) == inside
    assert f"into sqlite:///{work / 'out.sqlite'}" in done.stdout
    digest = hashlib.sha256(
        "".join(
            f"{hashlib.sha256((work / 'out' / n).read_bytes()).hexdigest()}  {n}\n" for n in FILES
        ).encode()
    ).hexdigest()
    with sqlite3.connect(work / "out.sqlite") as conn:
        assert conn.execute("SELECT digest FROM publishes").fetchall() == [(digest,)]
    conn.close()


def test_help_says_where_the_default_database_goes() -> None:
    done = run_subprocess("publish", "--help")
    assert done.returncode == 0
    for words in ("sqlite:///PATH", "postgresql://USER@HOST:PORT/DB", "out/ -> ./out.sqlite"):
        assert words in done.stdout


def _break_a_line(folder: Path) -> None:
    path = folder / "items.jsonl"
    path.write_text(path.read_text("utf-8").replace('"summary_zh":', '"summary":', 1), "utf-8")


def _dangling_related(folder: Path) -> None:
    path = folder / "items.jsonl"
    recs = [json.loads(x) for x in path.read_text("utf-8").splitlines()]
    recs[0]["related"] = ["nosuchitem0000"]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), "utf-8")


def _edit_items(folder: Path, edit: Any) -> None:
    path = folder / "items.jsonl"
    recs = [json.loads(x) for x in path.read_text("utf-8").splitlines()]
    edit(recs)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), "utf-8")


def _edit_report(folder: Path, edit: Any) -> None:
    path = folder / "report.json"
    path.write_text(edit(path.read_text("utf-8")), "utf-8")


def _drop_a_topic_member(recs: list[dict[str, Any]]) -> None:
    [item] = [r for r in recs if r["topics"]][:1]
    item["topics"] = []


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (
            lambda f: (f / "report.json").unlink(),
            ("is damaged: report.json is missing", "ingest repair"),
        ),
        (_break_a_line, ("items.jsonl: line 1", "summary")),
        (_dangling_related, ("related 'nosuchitem0000' is not in the folder",)),
        (lambda f: (f / "topics.jsonl").write_text("{}\n"), ("topics.jsonl: line 1",)),
        (lambda f: _edit_items(f, lambda r: r.reverse()), ("items.jsonl: line 2", "comes after")),
        (lambda f: _edit_items(f, lambda r: r.insert(1, r[0])), ("line 2", "appears twice")),
        (lambda f: _edit_items(f, _drop_a_topic_member), ("disagree on membership",)),
        (lambda f: _edit_report(f, lambda t: t[: len(t) // 2]), ("report.json: not JSON",)),
        (lambda f: _edit_report(f, lambda t: f"[{t}]"), ("report.json: not JSON", "object")),
        (
            lambda f: _edit_report(f, lambda t: t.replace('"totals"', '"sums"', 1)),
            ("report.json: not a report of ingest run (no totals)",),
        ),
        (
            lambda f: _edit_report(f, lambda t: t.replace('"sequence": 1', '"sequence": 0', 1)),
            ("report.json: not a report of ingest run: ", "Expected `int` >= 1", "sequence"),
        ),
    ],
)
def test_a_folder_that_is_not_a_publish(
    seeds_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, words: Any
) -> None:
    """Records no run would write, in a publish whose marker lists them as they are (so
    the door lets them through): each one is still refused, naming what is wrong."""
    damage(seeds_out)
    reseal(seeds_out)
    db = tmp_path / "site.sqlite"
    refused([str(seeds_out), "--db", f"sqlite:///{db}"], capsys, *words)
    assert not db.exists()
    refused([str(tmp_path / "nowhere"), "--db", f"sqlite:///{db}"], capsys, "no such folder")
    assert not db.exists()


def test_a_publish_edited_by_hand_is_damaged(
    seeds_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file of a publish changed after ingest sealed it: the door names it as damaged
    and the way to mend it; no database is made."""
    path = seeds_out / "items.jsonl"  # the same size: only the checksum tells
    path.write_text(path.read_text("utf-8").replace('"summary_zh":', '"summary_zx":', 1), "utf-8")
    db = tmp_path / "site.sqlite"
    err = refused([str(seeds_out), "--db", f"sqlite:///{db}"], capsys)
    assert err == (
        f"ingest: error: the publish in {str(seeds_out)!r} is damaged: items.jsonl does not "
        "match its checksum. Nothing was changed; mend it from what remains with: ingest "
        f"repair {seeds_out}\n"
    )
    assert not db.exists()


def _as_a_user() -> None:
    """In the child: root's power to write where the permission bits say no is dropped
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER leave the bounding set), so a
    read-only folder is read-only to it, as to any user."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2, 3):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def publish_as_a_user(folder: Path, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ingest", "publish", str(folder), "--db", url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=_as_a_user if os.geteuid() == 0 else None,
    )


def test_a_sqlite_file_in_a_folder_that_cannot_be_written(seeds_out: Path, tmp_path: Path) -> None:
    """A new file there, and a database there that needs its journal beside it: one line,
    exit 2, nothing written, no traceback."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    done = publish_as_a_user(seeds_out, f"sqlite:///{locked / 'site.sqlite'}")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("ingest: error: sqlite:///")
    assert f"cannot create the database file in {str(locked)!r} (Permission denied)" in done.stderr
    assert list(locked.iterdir()) == []

    shut = tmp_path / "shut"
    shut.mkdir()
    url = f"sqlite:///{shut / 'site.sqlite'}"
    assert main(["publish", str(seeds_out), "--db", url, "--quiet"]) == 0
    (shut / "site.sqlite").chmod(0o666)
    before = snapshot(url)
    shut.chmod(0o555)
    b = derive(seeds_out, tmp_path / "b", edit_b)
    done = publish_as_a_user(b, url)
    shut.chmod(0o755)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"ingest: error: database {url}: "), done.stderr
    assert snapshot(url) == before
