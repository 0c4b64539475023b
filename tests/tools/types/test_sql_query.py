from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from agentloft.tools.types.sql_query import TOOL_TYPE as SQL
from agentloft.tools.types.sql_query import check_read_only
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
