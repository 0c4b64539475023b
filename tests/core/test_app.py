"""Settings, the CLI, the OpenAPI document, and the one error shape."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from argon2 import PasswordHasher

import agentloft
from agentloft.core.settings import ConfigError, load_settings
from tests.fakes.openai_server import FakeModel
from tests.pg import database as pg
from tests.support import ApiClient, LiveApp, login, start_app


def test_secret_key_generated_once_and_kept(tmp_path: Path) -> None:
    s = load_settings(data_dir=tmp_path)
    key = s.ensure_secret_key()
    assert len(key) > 30 and (tmp_path / "secret_key").read_text() == key
    assert load_settings(data_dir=tmp_path).ensure_secret_key() == key


def test_production_requires_secret_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="AGENTLOFT_SECRET_KEY"):
        load_settings(data_dir=tmp_path, env="production")
    assert load_settings(data_dir=tmp_path, env="production", secret_key="x" * 40).secret_key


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTLOFT_PORT", "9123")
    monkeypatch.setenv("AGENTLOFT_HOST", "0.0.0.0")
    monkeypatch.setenv("AGENTLOFT_DATA_DIR", str(tmp_path))
    s = load_settings()
    assert (s.port, s.host, s.data_dir) == (9123, "0.0.0.0", tmp_path)
    assert s.resolved_database_url == f"sqlite+aiosqlite:///{tmp_path.resolve() / 'agentloft.db'}"


@pytest.mark.sqlite_only(reason="the embedded database's file")
def test_an_earlier_installs_database_is_the_one_served(tmp_path: Path, template_db: Path) -> None:
    """The data dir of an install made before the modules moved into ``core/`` holds ``agentloft.db``. The
    move renamed the file the server opens to ``agentloft.core.db``, so an upgraded server came up on an
    empty database and made the first visitor to sign up its administrator."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(template_db, data / "agentloft.db")
    hashed = PasswordHasher().hash("password123")
    with sqlite3.connect(data / "agentloft.db") as con:
        con.execute("INSERT INTO users (username, password_hash, role, disabled, created_at, updated_at) "
                    "VALUES ('boss', ?, 'admin', 0, '2026-01-01 00:00:00', '2026-01-01 00:00:00')", (hashed,))
    con.close()
    live = start_app(data)
    try:
        with live.client() as c:
            refused = c.post("/api/auth/signup", json={"username": "intruder", "password": "password123"})
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "signup_closed"
            assert login(c, "boss")["role"] == "admin"
    finally:
        live.stop()
    assert not (data / "agentloft.core.db").exists()


def test_a_data_dir_with_only_the_misnamed_file_keeps_it(tmp_path: Path) -> None:
    """Installs made while the file was misnamed keep their data too."""
    assert load_settings(data_dir=tmp_path).sqlite_path == tmp_path / "agentloft.db"
    (tmp_path / "agentloft.core.db").touch()
    assert load_settings(data_dir=tmp_path).sqlite_path == tmp_path / "agentloft.core.db"
    (tmp_path / "agentloft.db").touch()
    assert load_settings(data_dir=tmp_path).sqlite_path == tmp_path / "agentloft.db"


@pytest.mark.sqlite_only(reason="reads SQLite's journal mode")
def test_sqlite_runs_in_wal_mode(app: LiveApp, admin: ApiClient) -> None:
    assert app.sql("PRAGMA journal_mode")[0][0] == "wal"


def _cli(*args: str, data_dir: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENTLOFT_DATA_DIR": str(data_dir)}
    if pg.current is not None:  # PostgreSQL pass: the same database a server on this data dir will use
        env["AGENTLOFT_DATABASE_URL"] = pg.current.for_dir(data_dir, empty=True)
    return subprocess.run([sys.executable, "-m", "agentloft.cli", *args], env=env, capture_output=True,
                          text=True, timeout=120, input=stdin)


def test_cli_db_upgrade_and_user_create(tmp_path: Path) -> None:
    data = tmp_path / "data"
    r = _cli("db", "upgrade", data_dir=data)
    assert r.returncode == 0, r.stderr
    r = _cli("user", "create", "boss", "--admin", "--password", "password123", data_dir=data)
    assert r.returncode == 0, r.stderr
    r = _cli("user", "create", "boss", "--password", "password123", data_dir=data)
    assert r.returncode == 1 and "taken" in r.stderr
    live = start_app(data)
    try:
        with live.client() as c:
            assert login(c, "boss")["role"] == "admin"
    finally:
        live.stop()


def test_cli_alone_helps_says_its_version_and_never_echoes_a_rejected_password(tmp_path: Path) -> None:
    data = tmp_path / "data"
    r = _cli(data_dir=data)
    assert r.returncode == 0 and r.stdout.startswith("usage: agentloft") and "user" in r.stdout, r.stderr
    r = _cli("--version", data_dir=data)
    assert r.returncode == 0 and r.stdout.strip() == f"agentloft {agentloft.__version__}"
    for extra, stdin in ((["--password", "sh0rt!"], ""), ([], "sh0rt!\n")):  # given, or on stdin
        r = _cli("user", "create", "boss", *extra, data_dir=data, stdin=stdin)
        assert r.returncode == 1 and r.stderr == "error: password: String should have at least 8 characters\n"
    r = _cli("user", "password", "boss", data_dir=data, stdin="sh0rt!\n")
    assert r.returncode == 1 and r.stderr == "error: password: String should have at least 8 characters\n"


def test_cli_reads_a_password_from_stdin_and_resets_one(tmp_path: Path) -> None:
    """Without a terminal the password is stdin's first line (a script got getpass's traceback), and
    ``user password`` is the way back in for an admin who forgot theirs."""
    data = tmp_path / "data"
    r = _cli("user", "create", "boss", "--admin", data_dir=data)
    assert r.returncode == 1 and "no password given" in r.stderr and "Traceback" not in r.stderr
    r = _cli("user", "create", "boss", "--admin", data_dir=data, stdin="password123\n")
    assert r.returncode == 0, r.stderr
    r = _cli("user", "password", "boss", data_dir=data, stdin="short\n")
    assert r.returncode == 1 and "at least 8" in r.stderr
    r = _cli("user", "password", "nobody", "--password", "new-password", data_dir=data)
    assert r.returncode == 1 and "no account named 'nobody'" in r.stderr
    live = start_app(data)
    try:
        with live.client() as old, live.client() as new:
            login(old, "boss")
            assert old.get("/api/auth/me").status_code == 200
            r = _cli("user", "password", "BOSS", data_dir=data, stdin="new-password\n")
            assert r.returncode == 0, r.stderr
            assert new.post("/api/auth/login", json={"username": "boss", "password": "password123"}).status_code == 401
            assert login(new, "boss", "new-password")["role"] == "admin"
            session = old.cookies.get("agentloft_session")
            trail = new.get("/api/admin/audit", params={"type": "admin.change"}).json()["items"]
            hashes = [row[0] for row in live.sql("SELECT password_hash FROM users")]
    finally:
        live.stop()
    _assert_cli_changes_audited(trail, hashes)
    r = _cli("audit", "verify", data_dir=data)
    assert r.returncode == 0 and r.stdout.startswith("OK: "), r.stdout + r.stderr
    # A SQLite server keeps who a cookie belongs to in memory and does not see another process's writes:
    # the old browser is out once the server has restarted (at once on PostgreSQL).
    live = start_app(data)
    try:
        with live.client() as old:
            old.cookies.set("agentloft_session", session)
            assert old.get("/api/auth/me").status_code == 401
    finally:
        live.stop()


def _assert_cli_changes_audited(trail: list[dict[str, Any]], hashes: list[str]) -> None:
    """Both account changes the command line made (the refused ones made none) are on the trail, as ``cli``,
    with what they changed and never a password hash."""
    created, reset = reversed(trail)
    for event, command in ((created, "user create"), (reset, "user password")):
        assert (event["actorId"], event["actorName"], event["ip"]) == (None, "cli", None)
        assert event["target"] == f"agentloft {command}"
        assert (event["detail"]["command"], event["detail"]["username"]) == (command, "boss")
    [row] = created["detail"]["changes"]
    assert (row["table"], row["op"], row["after"]["username"], row["after"]["role"]) == ("users", "insert", "boss",
                                                                                          "admin")
    assert row["after"]["password_hash"] == "[redacted]"
    assert [(c["table"], c["op"]) for c in reset["detail"]["changes"]] == [("users", "update"),
                                                                            ("auth_sessions", "delete")]
    assert reset["detail"]["changes"][0]["values"]["password_hash"] == "[redacted]"
    kept = json.dumps(trail)
    assert hashes and not any(h in kept for h in hashes) and "$argon2" not in kept


def test_cli_serve_honours_port(tmp_path: Path) -> None:
    from tests.fakes.openai_server import free_port

    port = free_port()
    env = {**os.environ, "AGENTLOFT_DATA_DIR": str(tmp_path / "d"), "AGENTLOFT_PORT": str(port)}
    proc = subprocess.Popen([sys.executable, "-m", "agentloft.cli", "serve"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        import time

        import httpx

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            pytest.fail("server did not start")
        assert (tmp_path / "d" / "agentloft.db").exists()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_openapi_lists_endpoints(anon: ApiClient) -> None:
    doc = anon.ok("GET", "/openapi.json")
    paths = doc["paths"]
    for p in ["/api/auth/signup", "/api/auth/login", "/api/auth/logout", "/api/auth/me", "/api/auth/tokens",
              "/api/admin/users", "/api/admin/models", "/api/admin/models/{model_id}/test",
              "/api/admin/agents", "/api/agents", "/api/agents/{slug}"]:
        assert p in paths, p
    assert anon.get("/docs").status_code == 200


def test_unknown_api_route_uses_error_shape(anon: ApiClient) -> None:
    r = anon.get("/api/nope")
    assert r.status_code == 404 and r.json() == {"error": {
        "code": "not_found", "message": "Not Found", "requestId": r.headers["x-request-id"]}}
    r = anon.request("PATCH", "/api/auth/me")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"


def test_malformed_json_is_422(anon: ApiClient) -> None:
    r = anon.post("/api/auth/login", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error"
    # The body is named, with where and why it stopped parsing; not a field called "1".
    assert r.json()["error"]["fields"] == {"body": "not valid JSON at character 1: Expecting property name "
                                                   "enclosed in double quotes"}


def test_field_problems_carry_codes_pages_can_word(admin: ApiClient) -> None:
    """Next to the English words, each field's problem as a code with its values: pages say it in the
    reader's language (``dom.fieldText``)."""
    r = admin.post("/api/llm/chat", json={"message": "x" * 100_001})
    error = r.json()["error"]
    assert r.status_code == 422 and error["fields"] == {"message": "String should have at most 100000 characters"}
    assert error["fieldCodes"] == {"message": {"code": "string_too_long", "params": {"max_length": 100_000}}}
    r = admin.post("/api/llm/chat", json={"message": "a\u0000b", "extra": 1})
    assert r.json()["error"]["fieldCodes"] == {"message": {"code": "unstorable_text"},
                                               "extra": {"code": "extra_forbidden"}}
    r = admin.get("/api/agent-sessions/search", params={"q": "  \u3000 "})  # no words to search for
    assert r.status_code == 422 and r.json()["error"]["fieldCodes"] == {"q": {"code": "no_search_terms"}}
    r = admin.post("/api/auth/login", content=b"{not json", headers={"content-type": "application/json"})
    assert r.json()["error"]["fieldCodes"] == {"body": {"code": "json_invalid"}}


def test_hand_written_field_problems_carry_codes_too(admin: ApiClient) -> None:
    """The services' own checks name a code for each field like pydantic's do, so a page in Chinese does not
    show the English words (``core.errors.problem``)."""

    def codes(r: httpx.Response, status: int = 422) -> dict[str, object]:
        assert r.status_code == status, r.text
        error = r.json()["error"]
        assert set(error["fields"]) == set(error["fieldCodes"])  # the English words stay beside the codes
        return error["fieldCodes"]

    r = admin.post("/api/agent-documents", json={"title": "t", "content": "x" * 200_001})
    assert codes(r, 413) == {"content": {"code": "string_too_long", "params": {"max_length": 200_000}}}
    r = admin.post("/api/auth/password", json={"currentPassword": "not-it", "newPassword": "a-new-secret"})
    assert codes(r) == {"currentPassword": {"code": "wrong_password"}}
    r = admin.post("/api/admin/mcp-servers", json={"slug": "files", "name": "Files", "transport": "http",
                                                   "url": "ftp://files.example"})
    assert codes(r) == {"url": {"code": "not_http_url"}}
    r = admin.post("/api/admin/mcp-servers", json={"slug": "files", "name": "Files", "transport": "stdio"})
    assert codes(r) == {"command": {"code": "required_for_transport", "params": {"transport": "stdio"}}}
    r = admin.post("/api/agent-tools", json={"slug": "odd", "name": "Odd", "type": "no-such-type"})
    assert codes(r) == {"type": {"code": "unknown_tool_type", "params": {"type": "no-such-type"}}}
    r = admin.put("/api/admin/settings", json={"allowedInternalHosts": ["10.0.0.0/33"]})
    assert codes(r) == {"allowedInternalHosts": {"code": "not_a_cidr", "params": {"entry": "10.0.0.0/33"}}}
    r = admin.post("/api/admin/agents", json={"slug": "far", "name": "Far", "kind": "remote"})
    assert codes(r) == {"cardUrl": {"code": "required_for_remote_agent"}}
    r = admin.post("/api/agent-tools", json={"slug": "clock", "name": "Clock", "type": "datetime",
                                             "config": {"defaultTimezone": "Mars/Olympus"}})
    assert codes(r) == {"config.defaultTimezone": {"code": "unknown_time_zone", "params": {"zone": "Mars/Olympus"}}}


def test_ids_have_the_seeds_shape_and_a_uniform_random_part() -> None:
    import re
    from collections import Counter

    from agentloft.core.ids import new_id

    ids = [new_id("am") for _ in range(5000)]
    assert all(re.fullmatch(r"am_[0-9a-z]+_[0-9a-z]{10}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    counts = Counter(ch for i in ids for ch in i.rsplit("_", 1)[1])
    assert len(counts) == 36 and min(counts.values()) > 0.7 * max(counts.values())  # every character, evenly


def test_model_calls_are_not_logged_one_line_each(
    caplog: pytest.LogCaptureFixture, admin: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    """httpx2 logs every request at INFO; the app lowers it to WARNING, so a log shown at INFO is not one
    'HTTP Request: POST …' line per model call."""
    caplog.set_level(logging.INFO)
    reply = admin.post("/api/llm/chat", json={"message": "hello"})
    assert reply.status_code == 200 and fake_model.requests, "the model was called"
    assert [r.getMessage() for r in caplog.records if r.name == "httpx2"] == []
    assert logging.getLogger("httpx2").isEnabledFor(logging.WARNING)
