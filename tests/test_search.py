"""Search any word (docs/database.md, Search; issue 45): docs/database.md's one SQLite query
and one PostgreSQL query, run as written in the real clients ``sqlite3`` and ``psql``, find
for every word exactly the items a substring scan of ``title_zh``, ``title_original`` and
``summary_zh`` finds (A-Z and a-z the same, every other character only itself) — every one-
to four-character Chinese word of the seeds' texts, Latin words in either case, mixed ones,
the search syntaxes' special characters. Words of three characters or more are looked up in
the index; Datasette's own search box on ``items`` serves them.

The database holds A, the seeds' publish, then B derived from it (tests/dbtest.py): a
summary reworded, a title changed, items removed, merged and added. The words are those of
A and of B, so the search of B must also have forgotten what A had.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from sqlalchemy import text

from conftest import SEEDS
from dbtest import (
    SEARCHED,
    Json,
    connect,
    derive,
    edit_b,
    lines,
    psql_arg,
    readme_queries,
    scanner,
    search_query,
    sqlite3_arg,
    substring_scan,
)
from ingest.cli import main

CJK = r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"


def texts(*folders: Path) -> list[str]:
    """The searched texts of the items of ``folders``."""
    return [
        x[f] for folder in folders for x in lines(folder, "items.jsonl") for f in SEARCHED if x[f]
    ]


def chinese_words(found: list[str], lengths: range = range(1, 5)) -> set[str]:
    """Every substring of ``lengths`` characters of a run of Chinese characters."""
    words: set[str] = set()
    for run in (r for t in found for r in re.findall(f"{CJK}+", t)):
        for n in lengths:
            words.update(run[i : i + n] for i in range(len(run) - n + 1))
    return words


#: One and two letters in their cases; an accented name in its cases (only A-Z folds:
#: RÉMI finds nothing, where the seeds have Rémi); the search syntaxes' special characters;
#: a space inside a word.
FIXED = {"a", "I", "AI", "ai", "Ai", "rémi", "RéMI", "RÉMI", "Rémi", "RÉmi"}
FIXED |= {"%", "_", "\\", "'", '"', "*", "%_\\'\" OR *", "推理_", "推 理", "TRL 中"}


def other_words(found: list[str]) -> set[str]:
    """:data:`FIXED`; the Latin words of the texts as they are, in lower and in upper case;
    mixed words (Latin or digits beside Chinese, with or without the space between)."""
    words = set(FIXED)
    for t in found:
        for w in re.findall(r"[A-Za-z][A-Za-z0-9.-]+", t):
            words |= {w, w.lower(), w.upper()}
        words.update(re.findall(rf"[A-Za-z0-9]{{1,3}} ?{CJK}{{1,2}}", t))
        words.update(re.findall(rf"{CJK}{{1,2}} ?[A-Za-z0-9]{{1,3}}", t))
    return words


#: Sessions of the client run side by side, each with its share of the words.
SESSIONS = 2


def in_client(url: str, sql: str, words: list[str]) -> list[set[str]]:
    """The query run once for each word, one after the other in a session of ``sqlite3`` or
    ``psql`` (:data:`SESSIONS` of them side by side), ``:q`` set as docs/database.md says;
    the ids each run found."""
    program = "sqlite3" if url.startswith("sqlite") else "psql"
    if shutil.which(program) is None:
        pytest.fail(f"{program} is not installed (.ci/run installs it)")
    if program == "sqlite3":
        cmd = ["sqlite3", "-bail", "-csv", "-header", url.removeprefix("sqlite:///")]
        each = ".parameter set :q {arg}\n.print @@ {n}\n{sql}"
        arg = sqlite3_arg
    else:
        cmd = ["psql", url, "-X", "-q", "--csv", "-v", "ON_ERROR_STOP=1", "-f", "-"]
        each = "\\set q {arg}\n\\echo @@ {n}\n{sql}"
        arg = psql_arg
    shares = [words[k::SESSIONS] for k in range(SESSIONS)]
    with tempfile.TemporaryDirectory() as tmp:
        running = []
        for k, share in enumerate(shares):
            script = "".join(each.format(arg=arg(w), n=n, sql=sql) for n, w in enumerate(share))
            (Path(tmp) / f"{k}.sql").write_text(script, encoding="utf-8")
            with (
                (Path(tmp) / f"{k}.sql").open("rb") as stdin,
                (Path(tmp) / f"{k}.out").open("wb") as stdout,
            ):
                running.append(
                    subprocess.Popen(cmd, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
                )
        answers = []
        for k, proc in enumerate(running):
            _, stderr = proc.communicate(timeout=120)
            assert proc.returncode == 0 and not stderr, (program, stderr[:2000])
            answers.append(_answers((Path(tmp) / f"{k}.out").read_text("utf-8")))
    found: list[set[str]] = [set()] * len(words)
    for k, answered in enumerate(answers):
        assert len(answered) == len(shares[k])
        found[k::SESSIONS] = answered
    return found


def _answers(stdout: str) -> list[set[str]]:
    """A session's CSV output: each query's ids, in order (``@@ N`` before query N)."""
    found: list[set[str]] = []
    for row in csv.reader(io.StringIO(stdout)):
        if len(row) == 1 and row[0] == f"@@ {len(found)}":
            found.append(set())
        elif row != ["id", "title_zh", "title_original"]:
            found[-1].add(row[0])
    return found


def test_every_word_finds_what_a_substring_scan_finds(
    db_url: str, published: tuple[Path, Path]
) -> None:
    a, b = published
    backend = "sqlite" if db_url.startswith("sqlite") else "postgresql"
    everything = texts(a, b)
    chinese = chinese_words(everything)
    words = sorted(chinese | other_words(everything))
    scan = scanner(lines(b, "items.jsonl"))
    found = in_client(db_url, search_query(backend), words)
    wrong = [(w, got, scan(w)) for w, got in zip(words, found, strict=True) if got != scan(w)]
    assert not wrong, f"{len(wrong)} of {len(words)} words, e.g. {wrong[:5]}"
    # The words are what the issue says they are, and they find things.
    assert {len(w) for w in chinese} == {1, 2, 3, 4} and len(chinese) > 10_000
    assert {"推理", "模型", "学习", "算力", "内核", "显卡"} <= chinese
    assert all(scan(w) for w in ("推理", "模型", "学习", "算力", "内核", "显卡", "ai", "Rémi"))
    assert not scan("RÉMI") and scan("rémi") == scan("RéMI") == scan("Rémi")


def test_the_readme_gives_the_search_queries_this_test_runs() -> None:
    """The README's search queries (those taking ``:q``) are docs/database.md's two, so the
    test above runs them as well: one for SQLite, one for PostgreSQL, each for any length."""
    readme = sorted((w, " ".join(sql.split())) for w, sql in readme_queries() if ":q" in sql)
    docs = [(b, " ".join(search_query(b).split())) for b in ("postgresql", "sqlite")]
    assert readme == docs, "the README's search queries are not docs/database.md's"


# --- looked up in the index -----------------------------------------------------------------

#: Rows added to ``items`` (and its search) inside a transaction that is rolled back: a
#: hundred times the seeds' items, which a query reading the table would feel.
FILLER = 5000
LONG, SHORT = "推理性能", "推理"


def vm_steps(conn: sqlite3.Connection, sql: str, q: str) -> tuple[int, set[str]]:
    """SQLite's virtual-machine steps (in hundreds) to run the query, and the ids found."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(count, 100)
    found = {r[0] for r in conn.execute(sql, {"q": q})}
    conn.set_progress_handler(None, 100)
    return steps, found


def test_sqlite_looks_a_long_word_up_and_reads_the_table_for_a_short_one(
    ingest: Any, tmp_path: Path
) -> None:
    """The SQLite query's work for a word of three characters or more does not grow with
    the table (the FTS5 index is looked up, the rows reached by rowid); for a shorter word
    it does (the table is read)."""
    folder = ingest(SEEDS).folder
    path = tmp_path / "site.sqlite"
    assert main(["publish", str(folder), "--db", f"sqlite:///{path}", "--quiet"]) == 0
    sql = search_query("sqlite")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        before = {q: vm_steps(conn, sql, q) for q in (LONG, SHORT)}
        conn.execute("BEGIN")
        conn.execute(
            "WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < ?) "
            "INSERT INTO items (id, title_zh, summary_zh, digest) "
            "SELECT printf('zz%08d', k), '填充条目 ' || k, '一段与此无关的文字，编号 ' || k, '' "
            "FROM n",
            (FILLER,),
        )
        conn.execute("INSERT INTO items_fts (items_fts) VALUES ('rebuild')")
        after = {q: vm_steps(conn, sql, q) for q in (LONG, SHORT)}
        conn.execute("ROLLBACK")
    finally:
        conn.close()
    items = lines(folder, "items.jsonl")
    for q in (LONG, SHORT):
        assert before[q][1] == after[q][1] == substring_scan(items, q) != set(), q
    assert after[LONG][0] <= before[LONG][0] + 5, (before, after)
    assert after[SHORT][0] > 20 * before[SHORT][0], (before, after)


def test_postgresql_answers_a_long_word_from_its_trigram_indexes(pg_url: str, ingest: Any) -> None:
    """The PostgreSQL query, as written, is one the three trigram indexes can answer for a
    word of three characters or more: with the table scans that need no such index turned
    off, the plan reads the three indexes (were the query's expressions not those of the
    indexes, it could not). On 100,000 items the planner takes them by itself (measured, not
    tested here: the rows it takes to show it cost seconds)."""
    folder = ingest(SEEDS).folder
    assert main(["publish", str(folder), "--db", pg_url, "--quiet"]) == 0
    sql = search_query("postgresql")
    engine = connect(pg_url)
    try:
        with engine.connect() as conn:
            conn.execute(text("SET enable_seqscan = off"))
            conn.execute(text("SET enable_indexscan = off"))
            plan = "\n".join(conn.execute(text(f"EXPLAIN {sql}"), {"q": LONG}).scalars())
            found = {r[0] for r in conn.execute(text(sql), {"q": LONG})}
    finally:
        engine.dispose()
    for index in ("items_title_zh_trgm", "items_title_original_trgm", "items_summary_zh_trgm"):
        assert f"Bitmap Index Scan on {index}" in plan, plan
    assert found == substring_scan(lines(folder, "items.jsonl"), LONG) != set()


# --- Datasette -------------------------------------------------------------------------------


@pytest.fixture
def sqlite_published(ingest: Any, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A and B published one after the other into a SQLite file; the file."""
    a = ingest(SEEDS).folder
    b = derive(a, tmp_path / "b", edit_b)
    path = tmp_path / "site.sqlite"
    for folder in (a, b):
        assert main(["publish", str(folder), "--db", f"sqlite:///{path}", "--quiet"]) == 0
    return a, b, path


def datasette_gets(path: Path, urls: list[str]) -> list[str]:
    """``datasette FILE --get URL`` (no other option) for each URL, the programs run side
    by side; what each printed."""
    program = Path(sys.executable).with_name("datasette")
    running = [
        subprocess.Popen(
            [str(program), str(path), "--get", url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for url in urls
    ]
    out = []
    for proc, url in zip(running, urls, strict=True):
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, (url, stderr[-2000:])
        out.append(stdout)
    return out


def unicode_scan(items: list[Json], q: str) -> set[str]:
    """A substring scan with every cased letter folded, as FTS5's trigram tokenizer folds."""
    return {x["id"] for x in items if any(q.lower() in (x[f] or "").lower() for f in SEARCHED)}


def test_datasette_opened_on_the_file_searches_items_in_its_own_box(
    sqlite_published: tuple[Path, Path, Path],
) -> None:
    """Datasette with no options shows a search box on ``items``; ``?_search=`` there finds,
    for words of three characters or more, what the substring scan finds: after a second
    publish too (a changed title found by its new text, not its old; a removed item's text
    finds nothing), each space-separated word required, letters folded as the tokenizer
    folds them."""
    a, b, path = sqlite_published
    items, old = lines(b, "items.jsonl"), {x["id"]: x for x in lines(a, "items.jsonl")}
    [retitled] = [x for x in items if x["title_zh"] == "新的标题"]
    ids = {x["id"] for x in items}
    b_texts = "\n".join(texts(b))
    gone = next(
        w
        for x in old.values()
        if x["id"] not in ids
        for w in re.findall(f"{CJK}{{4}}", x["summary_zh"])
        if w not in b_texts
    )
    words = [
        "新的标题",
        old[retitled["id"]]["title_zh"],
        gone,
        "（改写）",
        "TRILLION",
        "强化学习 TRL",
    ]
    scan = scanner(items)
    expected = [set.intersection(*(scan(w) for w in q.split())) for q in words]
    words.append("RÉMI")
    expected.append(unicode_scan(items, "RÉMI"))
    urls = [
        f"/{path.stem}/items.json?" + urlencode({"_search": q, "_shape": "array", "_col": "id"})
        for q in words
    ]
    # The program itself for a search; Datasette's app in this process (the same requests,
    # without a second's start each) for the page and every search.
    [first] = datasette_gets(path, urls[:1])
    page, *answers = in_datasette(path, [f"/{path.stem}/items", *urls])
    assert '<input id="_search" type="search" name="_search"' in page
    found = [{r["id"] for r in json.loads(answer)} for answer in answers]
    assert {r["id"] for r in json.loads(first)} == found[0]
    assert found == expected, list(zip(words, found, expected, strict=True))
    assert retitled["id"] in found[0] and retitled["id"] not in found[1]
    assert found[2] == set() and all(found[3:])


def in_datasette(path: Path, urls: list[str]) -> list[str]:
    """Each URL's answer, from one Datasette app opened on the file with no options."""
    from datasette.app import Datasette

    async def get_all() -> list[str]:
        ds = Datasette([str(path)])
        out = []
        for url in urls:
            response = await ds.client.get(url)
            assert response.status_code == 200, (url, response.text[:500])
            out.append(response.text)
        return out

    return asyncio.run(get_all())


def test_the_search_table_is_in_step_with_items_after_every_publish(
    sqlite_published: tuple[Path, Path, Path],
) -> None:
    """``items_fts`` as Datasette's box uses it (``rowid IN (SELECT rowid FROM items_fts
    WHERE items_fts MATCH escape_fts(word))``, no other check) finds every three- and
    four-character Chinese word of A and B in exactly B's items, and FTS5's own check of
    the index against ``items`` passes."""
    from datasette.utils import detect_fts, escape_fts

    a, b, path = sqlite_published
    scan = scanner(lines(b, "items.jsonl"))
    conn = sqlite3.connect(path)
    try:
        assert detect_fts(conn, "items") == "items_fts"
        conn.execute("INSERT INTO items_fts (items_fts, rank) VALUES ('integrity-check', 1)")
        box = (
            "SELECT id FROM items "
            "WHERE rowid IN (SELECT rowid FROM items_fts WHERE items_fts MATCH ?)"
        )
        words = sorted(chinese_words(texts(a, b), range(3, 5)))
        wrong = [w for w in words if {r[0] for r in conn.execute(box, (escape_fts(w),))} != scan(w)]
    finally:
        conn.close()
    assert len(words) > 7_000 and not wrong, wrong[:10]
