"""The SQL tool on SQLite (always) and PostgreSQL (with ``AGENTLOFT_TEST_POSTGRES_URL``): read-only, and
bounded in time, value size, rows and result bytes."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentloft.tools.types.sql_query import TOOL_TYPE as SQL
from agentloft.tools.types.sql_query import check_read_only
from tests.pg import database as pg
from tests.tools.types.conftest import Run


@pytest.fixture
def shop(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "shop.db"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, data BLOB);"
        "INSERT INTO items (name, price, data) VALUES ('apple', 1.5, x'0102'), ('pear', 2.25, NULL),"
        " ('fig', 4.0, NULL);"
    )
    con.commit()
    con.close()
    return {"url": f"sqlite:///{path}"}


def count_items(config: dict[str, str]) -> int:
    con = sqlite3.connect(config["url"].removeprefix("sqlite:///"))
    try:
        return con.execute("SELECT count(*) FROM items").fetchone()[0]
    finally:
        con.close()


async def test_select_with_parameters(run: Run, shop: dict[str, str]) -> None:
    result = await run(SQL, {"query": "SELECT name, price, data FROM items WHERE price > :min ORDER BY price;",
                             "params": {"min": 1}}, shop)
    assert result.success, result.error
    assert result.data == {"columns": ["name", "price", "data"],
                           "rows": [["apple", 1.5, "base64:AQI="], ["pear", 2.25, None], ["fig", 4.0, None]],
                           "rowCount": 3, "truncated": False}


async def test_with_query_and_row_limit(run: Run, shop: dict[str, str]) -> None:
    result = await run(SQL, {"query": "WITH cheap AS (SELECT * FROM items WHERE price < 3) SELECT name FROM cheap"},
                       {**shop, "maxRows": 1})
    assert result.data["rows"] == [["apple"]] and result.data["truncated"] is True


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM items",
        "UPDATE items SET price = 0",
        "DROP TABLE items",
        "INSERT INTO items (name) VALUES ('x')",
        "SELECT 1; DELETE FROM items",
        "ATTACH DATABASE '/tmp/x.db' AS x",
        "PRAGMA writable_schema = 1",
        "/* SELECT */ DELETE FROM items",
        "-- SELECT\nDELETE FROM items",
    ],
)
async def test_writes_are_refused(run: Run, shop: dict[str, str], query: str) -> None:
    result = await run(SQL, {"query": query}, shop)
    assert not result.success and result.error.startswith("refused: ")
    assert count_items(shop) == 3


async def test_the_connection_itself_is_read_only(run: Run, shop: dict[str, str]) -> None:
    """A write hidden behind an allowed keyword still fails: the database refuses it."""
    result = await run(SQL, {"query": "WITH x AS (SELECT 1) INSERT INTO items (name) SELECT 'sneaky' FROM x"}, shop)
    assert not result.success
    assert "readonly" in result.error or "read-only" in result.error or "query_only" in result.error
    assert count_items(shop) == 3


def test_statement_check_ignores_semicolons_in_strings_and_comments() -> None:
    assert check_read_only("SELECT ';' AS s; -- done") == "SELECT ';' AS s; -- done".rstrip(";").strip()
    assert check_read_only("(SELECT 1)") == "(SELECT 1)"


async def test_time_limit(run: Run, shop: dict[str, str]) -> None:
    slow = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
            "SELECT count(*) FROM c WHERE x < 0")
    started = time.perf_counter()
    result = await run(SQL, {"query": slow}, {**shop, "timeoutSeconds": 0.3})
    assert time.perf_counter() - started < 3
    assert not result.success and result.error == "the query ran longer than 0.3 s"


async def test_failures(run: Run, shop: dict[str, str], tmp_path: Path) -> None:
    unconfigured = await run(SQL, {"query": "SELECT 1"})
    assert unconfigured.error == "this SQL tool has no database URL configured"
    bad_sql = await run(SQL, {"query": "SELECT nope FROM items"}, shop)
    assert not bad_sql.success and bad_sql.error == "query failed: no such column: nope"
    missing_db = await run(SQL, {"query": "SELECT 1"}, {"url": f"sqlite:///{tmp_path}/absent.db"})
    assert not missing_db.success and "unable to open database file" in missing_db.error
    assert not (tmp_path / "absent.db").exists()  # read-only open never creates a file
    bad_url = await run(SQL, {"query": "SELECT 1"}, {"url": "not a url"})
    assert not bad_url.success and bad_url.error.startswith("refused: ")


def test_description_and_secret() -> None:
    assert SQL.secret_fields == ("url",)
    text = SQL.describe(SQL.Config(url="sqlite:////x.db", schema_hint="items(id, name, price)"))
    assert "read-only sqlite query" in text and "items(id, name, price)" in text
    assert "/x.db" not in text


async def test_bad_inputs(run: Run, shop: dict[str, str]) -> None:
    result = await run(SQL, {"query": "SELECT 1", "params": [1]}, shop)
    assert not result.success and "params: Input should be a valid dictionary" in result.error


# --- bounds, on SQLite and on PostgreSQL (the PostgreSQL half runs when AGENTLOFT_TEST_POSTGRES_URL is set) ---

@dataclass
class Database:
    backend: str
    config: dict[str, Any]
    count: Callable[[], int]


@pytest.fixture(scope="module")
def pg_shop() -> Iterator[str]:
    """One PostgreSQL database for the module's tests (none of them can change it): its app URL."""
    if not pg.server_url():
        pytest.skip("PostgreSQL half: set AGENTLOFT_TEST_POSTGRES_URL")
    name = pg.new_name("sql")
    url = pg.create_database(name)
    try:
        pg.query(url, "CREATE TABLE items (id serial PRIMARY KEY, name text, price numeric, data bytea)")
        pg.query(url, "INSERT INTO items (name, price, data) VALUES ('apple', 1.5, '\\x0102'), ('pear', 2.25, NULL),"
                      " ('fig', 4.0, NULL)")
        yield url
    finally:
        pg.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, shop: dict[str, str]) -> Database:
    if request.param == "sqlite":
        return Database("sqlite", shop, lambda: count_items(shop))
    url: str = request.getfixturevalue("pg_shop")
    return Database("postgresql", {"url": url.replace("+asyncpg", "")},
                    lambda: pg.query(url, "SELECT count(*) FROM items")[0][0])


def peak_growth_mb(before: Callable[[], Any]) -> Callable[[], int]:
    """Reset this process's peak resident size, run ``before``'s setup, and return a function that says
    how far the peak rose since (in MB): a query that pulled a big value into the server shows here."""
    Path("/proc/self/clear_refs").write_text("5")  # 5: reset the peak (VmHWM) to the current size
    start = _peak_kb()
    before()
    return lambda: (_peak_kb() - start) // 1024


def _peak_kb() -> int:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1])


async def test_rows_parameters_and_order_on_both(run: Run, db: Database) -> None:
    result = await run(SQL, {"query": "SELECT name, price, data FROM items WHERE price > :min ORDER BY price DESC",
                             "params": {"min": 2}}, db.config)
    assert result.success, result.error
    assert result.data == {"columns": ["name", "price", "data"], "rows": [["fig", 4.0, None], ["pear", 2.25, None]],
                           "rowCount": 2, "truncated": False}
    capped = await run(SQL, {"query": "SELECT name FROM items ORDER BY id"}, {**db.config, "maxRows": 2})
    assert capped.data == {"columns": ["name"], "rows": [["apple"], ["pear"]], "rowCount": 2, "truncated": True,
                           "note": "stopped after 2 rows: more rows exist; only the first 2 are shown (maxRows)"}
    missing = await run(SQL, {"query": "SELECT name FROM items WHERE price > :min"}, db.config)
    assert not missing.success


async def test_a_huge_value_never_reaches_the_server(run: Run, db: Database) -> None:
    """SQLite refuses to build it (SQLITE_LIMIT_LENGTH); PostgreSQL builds it but only its length leaves."""
    query = {"sqlite": "SELECT length(randomblob(300000000))",
             "postgresql": "SELECT length(repeat('x', 300000000))"}[db.backend]
    growth = peak_growth_mb(lambda: None)
    result = await run(SQL, {"query": query}, {**db.config, "timeoutSeconds": 60})
    assert result.success, result.error
    assert growth() < 30
    if db.backend == "sqlite":
        assert result.data == {"columns": [], "rows": [], "rowCount": 0, "truncated": True,
                               "note": "stopped after 0 rows: the next row holds a value larger than 1000000 bytes "
                                       "(maxValueBytes)"}
    else:
        assert result.data["rows"] == [[300_000_000]] and result.data["truncated"] is False


async def test_a_40_mb_value_is_cut_off_with_a_note(run: Run, db: Database) -> None:
    query = {"sqlite": "SELECT 'before' AS x UNION ALL SELECT hex(randomblob(20000000))",
             "postgresql": "SELECT 'before' AS x UNION ALL SELECT repeat('ab', 20000000)"}[db.backend]
    growth = peak_growth_mb(lambda: None)
    result = await run(SQL, {"query": query}, {**db.config, "timeoutSeconds": 60})
    assert result.success, result.error
    assert growth() < 30  # the value is 40 MB
    kept = [] if db.backend == "sqlite" else [["before"]]  # the standard library's cursor reads a row ahead
    assert result.data["rows"] == kept and result.data["truncated"] is True
    assert result.data["note"] == (f"stopped after {len(kept)} rows: the next row holds a value larger than "
                                   "1000000 bytes (maxValueBytes)")


async def test_many_rows_stop_at_the_result_byte_cap(run: Run, db: Database) -> None:
    query = {"sqlite": "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 1000000) "
                       "SELECT hex(randomblob(500)) FROM s",
             "postgresql": "SELECT repeat('x', 1000) FROM generate_series(1, 1000000)"}[db.backend]
    growth = peak_growth_mb(lambda: None)
    started = time.perf_counter()
    result = await run(SQL, {"query": query}, {**db.config, "maxRows": 10_000, "maxResultBytes": 50_000})
    assert result.success, result.error
    assert time.perf_counter() - started < 5 and growth() < 30
    rows = result.data["rows"]
    assert 40 <= len(rows) <= 50 and len(json.dumps(rows)) <= 50_000
    assert result.data["note"] == (f"stopped after {len(rows)} rows: the next row would take the result past "
                                   "50000 bytes (maxResultBytes)")


async def test_writes_are_refused_by_both_databases(run: Run, db: Database) -> None:
    for query in ("WITH x AS (SELECT 1) INSERT INTO items (name) SELECT 'sneaky' FROM x",
                  "WITH d AS (DELETE FROM items RETURNING *) SELECT * FROM d"):
        result = await run(SQL, {"query": query}, db.config)
        assert not result.success, query
    assert db.count() == 3


async def test_time_limit_on_both(run: Run, db: Database) -> None:
    query = {"sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c "
                       "WHERE x < 0",
             "postgresql": "SELECT pg_sleep(30)"}[db.backend]
    started = time.perf_counter()
    result = await run(SQL, {"query": query}, {**db.config, "timeoutSeconds": 0.5})
    assert time.perf_counter() - started < 3
    assert not result.success and result.error == "the query ran longer than 0.5 s"
