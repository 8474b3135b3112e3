"""The queries docs/database.md and the README give a site run as they are written, in the
real clients: the ``psql`` and ``sqlite3`` programs (parameters set as the docs say),
SQLAlchemy's ``text()``, and Datasette opening the SQLite file (SPEC §6, §7).

The database holds A, the seeds' publish, then B derived from it (tests/dbtest.py). Each
query's answer is checked against B's JSONL: a topic's items in rank order, an item's
related items, the latest publish's changes, and for the search queries every item whose
Chinese or original title or summary contains the text — 推理 among them (two characters:
the trigram index cannot look it up; the same query reads the table for it).
tests/test_search.py runs the search queries over every short Chinese word of the seeds.
"""

from __future__ import annotations

import asyncio
import csv
import io
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from conftest import ROOT, SEEDS
from dbtest import (
    assert_rows_equal_jsonl,
    connect,
    lines,
    psql_arg,
    readme_queries,
    rows,
    sqlite3_arg,
    substring_scan,
)
from ingest.cli import main

Query = tuple[str, str]  # (where: "both", "sqlite" or "postgresql", the SQL)


def doc_queries() -> list[Query]:
    """Every ```sql block of docs/database.md: ``sql`` for both databases, ``sql sqlite`` or
    ``sql postgresql`` for one."""
    doc = (ROOT / "docs" / "database.md").read_text("utf-8")
    found = re.findall(r"```sql( \w+)?\n(.*?)```", doc, re.S)
    return [((where.strip() or "both"), sql) for where, sql in found]


def test_the_docs_give_the_queries_this_test_runs() -> None:
    kinds = [where for where, _ in doc_queries()]
    assert kinds.count("both") == 3 and kinds.count("sqlite") == 1, kinds
    assert kinds.count("postgresql") == 1, kinds
    assert len(readme_queries()) >= 3


# --- the clients ----------------------------------------------------------------------------


def in_sqlalchemy(url: str, sql: str, params: dict[str, str]) -> list[dict[str, Any]]:
    engine = connect(url)
    try:
        with engine.connect() as conn:
            return [
                {k: _plain(v) for k, v in r.items()}
                for r in conn.execute(text(sql), params).mappings()
            ]
    finally:
        engine.dispose()


def _plain(value: Any) -> Any:
    return None if value is None else str(value)


def in_cli(url: str, sql: str, params: dict[str, str]) -> list[dict[str, Any]]:
    """The query in ``psql`` or ``sqlite3``, its parameters set as docs/database.md says."""
    if url.startswith("sqlite"):
        program = "sqlite3"
        sets = "".join(f".parameter set :{k} {sqlite3_arg(v)}\n" for k, v in params.items())
        cmd = ["sqlite3", "-bail", "-csv", "-header", url.removeprefix("sqlite:///")]
    else:
        program = "psql"
        sets = "".join(f"\\set {k} {psql_arg(v)}\n" for k, v in params.items())
        cmd = ["psql", url, "-X", "-q", "--csv", "-v", "ON_ERROR_STOP=1", "-f", "-"]
    if shutil.which(program) is None:
        pytest.fail(f"{program} is not installed (.ci/run installs it)")
    done = subprocess.run(
        cmd, input=sets + sql, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and not done.stderr, (program, done.stderr)
    return [
        {k: (v if v != "" else None) for k, v in row.items()}
        for row in csv.DictReader(io.StringIO(done.stdout))
    ]


def in_datasette(path: Path, sql: str, params: dict[str, str]) -> list[dict[str, Any]]:
    """The query through Datasette's own HTTP API, on the file as ingest left it."""
    from datasette.app import Datasette

    query = urlencode({"sql": sql, "_shape": "array", **params})
    response = asyncio.run(_get(Datasette([str(path)]), f"/{path.stem}.json?{query}"))
    assert response.status_code == 200, response.text[:500]
    return [{k: _plain(v) for k, v in row.items()} for row in response.json()]


async def _get(ds: Any, path: str) -> Any:
    return await ds.client.get(path)


def answers(url: str, sql: str, params: dict[str, str]) -> list[list[dict[str, Any]]]:
    """The query's rows in every client that can run it on this database."""
    found = [in_sqlalchemy(url, sql, params), in_cli(url, sql, params)]
    if url.startswith("sqlite"):
        found.append(in_datasette(Path(url.removeprefix("sqlite:///")), sql, params))
    return found


# --- the answers ------------------------------------------------------------------------------


def runnable(url: str, queries: list[Query]) -> list[str]:
    backend = "sqlite" if url.startswith("sqlite") else "postgresql"
    return [sql for where, sql in queries if where in ("both", backend)]


@pytest.mark.parametrize("source", ["docs", "readme"])
def test_the_example_queries_answer_what_a_site_asks(
    db_url: str, published: tuple[Path, Path], source: str
) -> None:
    queries = doc_queries() if source == "docs" else readme_queries()
    _, b = published
    [topic] = lines(b, "topics.jsonl")
    [item] = [x for x in lines(b, "items.jsonl") if x["related"]]
    changes = [(c["entity"], c["op"], c["id"]) for c in lines(b, "changes.jsonl")]
    ran = 0
    for sql in runnable(db_url, queries):
        if ":slug" in sql:
            for rows in answers(db_url, sql, {"slug": topic["slug"]}):
                assert [r["id"] for r in rows] == topic["items"]
        elif ":id" in sql:
            for rows in answers(db_url, sql, {"id": item["id"]}):
                assert [r["related_id"] for r in rows] == item["related"]
                assert {r["summary_zh"] for r in rows} == {item["summary_zh"]}
        elif "max(id) FROM publishes" in sql:
            for rows in answers(db_url, sql, {}):
                assert {r["publish_id"] for r in rows} == {"2"}
                assert [(r["entity"], r["op"], r["id"]) for r in rows] == changes
        else:
            continue
        ran += 1
    assert ran == (3 if source == "docs" else 2)  # the README: a topic's items, the changes


def containing(folder: Path, q: str) -> set[str]:
    """What a search for ``q`` must find: items with it in one of the three texts (ASCII
    letters in either case)."""
    return substring_scan(lines(folder, "items.jsonl"), q)


def searches(a: Path, b: Path) -> list[str]:
    """推理, one character, a Latin word of an original title in upper case, three Chinese
    characters, text full of the search syntaxes' special characters, B's reworded summary,
    and text only an item A had and B removed (the search rows follow every publish)."""
    items = lines(b, "items.jsonl")
    word = next(w for x in items for w in (x["title_original"] or "").split() if len(w) > 5)
    chinese = next(x["title_zh"][:3] for x in items if x["title_zh"] and len(x["title_zh"]) > 3)
    texts = "\n".join(f"{x['title_zh']}\n{x['summary_zh']}" for x in items)
    ids = {x["id"] for x in items}
    removed = next(
        m
        for x in lines(a, "items.jsonl")
        if x["id"] not in ids
        for m in re.findall(r"[\u4e00-\u9fff]{3}", x["summary_zh"])
        if m not in texts
    )
    return ["推理", "模", word.upper(), chinese, "%_\\'\" OR *", "推理_", "（改写）", removed]


def serves_every_length(sql: str) -> bool:
    """A search query of the README or the docs that answers for a word of any length: not
    a bare FTS5 MATCH (which finds nothing under three characters)."""
    return " MATCH " not in sql or "length(:q)" in sql


def test_search_finds_every_item_whose_text_contains_the_words(
    db_url: str, published: tuple[Path, Path]
) -> None:
    a, b = published
    [search] = [sql for sql in runnable(db_url, doc_queries()) if ":q" in sql]
    readme = [sql for sql in runnable(db_url, readme_queries()) if ":q" in sql]
    assert containing(b, "推理"), "the seeds speak of 推理"
    for q in searches(a, b):
        fitting = [search, *(sql for sql in readme if len(q) >= 3 or serves_every_length(sql))]
        for sql in fitting:
            for found in answers(db_url, sql, {"q": q}):
                assert {r["id"] for r in found} == containing(b, q), q
    if db_url.startswith("postgresql"):
        assert "items_title_zh_trgm" in pg_plan(db_url, search, "推理服务")


def pg_plan(url: str, sql: str, q: str) -> str:
    """PostgreSQL's plan of the query when it may not read the whole table."""
    engine = connect(url)
    with engine.connect() as conn:
        conn.execute(text("SET enable_seqscan = off"))
        conn.execute(text("SET enable_indexscan = off"))
        plan = "\n".join(conn.execute(text(f"EXPLAIN {sql}"), {"q": q}).scalars())
    engine.dispose()
    return plan


def test_datasette_searches_items_with_its_own_search_box(ingest: Any, tmp_path: Path) -> None:
    """Datasette's own search (``?_search=``) on the ``items`` table of a SQLite file, with
    no options: it finds ``items_fts`` by itself (it splits the text at spaces, each word
    needing three characters)."""
    from datasette.app import Datasette

    folder = ingest(SEEDS).folder
    path = tmp_path / "site.sqlite"
    assert main(["publish", str(folder), "--db", f"sqlite:///{path}", "--quiet"]) == 0
    items = lines(folder, "items.jsonl")
    q = next(m[0] for x in items if (m := re.search(r"[\u4e00-\u9fff]{4}", x["summary_zh"])))
    query = urlencode({"_search": q, "_shape": "array", "_size": "max", "_col": "id"})
    response = asyncio.run(_get(Datasette([str(path)]), f"/{path.stem}/items.json?{query}"))
    assert response.status_code == 200, response.text[:500]
    assert {r["id"] for r in response.json()} == containing(folder, q) != set()


@pytest.fixture
def role_url(pg_url: str) -> Iterator[str]:
    """``pg_url``'s database reached as a new role that may create tables there but not
    extensions (no CREATE on the database), as a site's own account often is."""
    role = f"ingest_test_{uuid.uuid4().hex[:10]}"
    admin = connect(pg_url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE ROLE "{role}" LOGIN'))
        conn.execute(text(f'GRANT USAGE, CREATE ON SCHEMA public TO "{role}"'))
    try:
        yield make_url(pg_url).set(username=role).render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP OWNED BY "{role}"'))
            conn.execute(text(f'DROP ROLE "{role}"'))
        admin.dispose()


def test_without_pg_trgm_the_publish_goes_on_with_one_warning(
    ingest: Any, pg_url: str, role_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = ingest(SEEDS).folder
    capsys.readouterr()
    assert main(["publish", str(folder), "--db", role_url]) == 0
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("ingest: warning: "), err
    assert "cannot create extension pg_trgm" in err and "permission denied" in err, err
    assert "as publish 1 (new database)" in out
    assert_rows_equal_jsonl(pg_url, folder)
    [search] = [sql for where, sql in doc_queries() if where == "postgresql"]
    found = in_sqlalchemy(role_url, search, {"q": "推理"})
    assert {r["id"] for r in found} == containing(folder, "推理")
    trgm = "SELECT indexname FROM pg_indexes WHERE indexname LIKE '%trgm'"
    assert rows(pg_url, trgm) == []

    admin = connect(pg_url)
    with admin.begin() as conn:
        conn.execute(text("CREATE EXTENSION pg_trgm"))
    admin.dispose()
    assert main(["publish", str(folder), "--db", role_url]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "no record changed (search indexes added)" in out, (out, err)
    assert len(rows(pg_url, trgm)) == 3
