"""The PostgreSQL pass reads the database with the same SQL the SQLite pass uses; ``?`` placeholders become
asyncpg's numbered ones, except inside quoted text."""

from tests.pg.database import database_url, to_dollar_params


def test_placeholders_are_numbered_in_order() -> None:
    assert to_dollar_params("SELECT a FROM t WHERE b = ? AND c IN (?, ?)") == (
        "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)"
    )


def test_quoted_question_marks_stay() -> None:
    sql = "SELECT '?', \"odd?name\" FROM t WHERE x = ? AND y = 'it''s ?'"
    assert to_dollar_params(sql) == "SELECT '?', \"odd?name\" FROM t WHERE x = $1 AND y = 'it''s ?'"


def test_database_url_keeps_server_and_credentials(monkeypatch) -> None:
    monkeypatch.setenv("AGENTLOFT_TEST_POSTGRES_URL", "postgresql+asyncpg://u:p%40w@db.example:6543/postgres")
    assert database_url("t_1") == "postgresql+asyncpg://u:p%40w@db.example:6543/t_1"
