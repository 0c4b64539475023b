"""Each event is written with its action, by the real server: sign-in (and its failures), sign-out, admin
changes (before and after, secrets redacted), and an action whose event cannot be written fails whole."""

from __future__ import annotations

from typing import Any

from tests.support import ApiClient, LiveApp, login


def events(admin: ApiClient, **query: Any) -> list[dict[str, Any]]:
    return admin.ok("GET", "/api/admin/audit", params={"limit": 200, **query})["items"]


def of_type(admin: ApiClient, kind: str) -> list[dict[str, Any]]:
    return events(admin, type=kind)


def test_sign_in_failures_and_sign_out_are_recorded(app: LiveApp, admin: ApiClient) -> None:
    signup = of_type(admin, "auth.sign_in")
    assert [(e["actorName"], e["detail"]["method"], e["ip"]) for e in signup] == [("admin", "signup", "127.0.0.1")]
    with app.client() as other:
        wrong = other.post("/api/auth/login", json={"username": "admin", "password": "wrong-password"})
        assert wrong.status_code == 401
        unknown = other.post("/api/auth/login", json={"username": "nobody", "password": "wrong-password"})
        assert unknown.status_code == 401
        failed = of_type(admin, "auth.sign_in_failed")
        assert [(e["detail"]["username"], e["detail"]["reason"], e["actorId"], e["ip"]) for e in failed] == [
            ("nobody", "invalid_credentials", None, "127.0.0.1"), ("admin", "invalid_credentials", None, "127.0.0.1")]
        login(other, "admin")
        assert [e["detail"]["method"] for e in of_type(admin, "auth.sign_in")] == ["password", "signup"]
        other.ok("POST", "/api/auth/logout")
        other.ok("POST", "/api/auth/logout")  # no session any more: nothing to record
    out = of_type(admin, "auth.sign_out")
    assert [(e["actorName"], e["target"]) for e in out] == [("admin", "user:1")]


def test_a_disabled_account_signing_in_is_recorded_with_its_reason(app: LiveApp, admin: ApiClient) -> None:
    user = admin.ok("POST", "/api/admin/users", json={"username": "bob", "password": "password123"})
    admin.ok("PATCH", f"/api/admin/users/{user['id']}", json={"disabled": True})
    with app.client() as c:
        assert c.post("/api/auth/login", json={"username": "bob", "password": "password123"}).status_code == 403
    assert [e["detail"]["reason"] for e in of_type(admin, "auth.sign_in_failed")] == ["account_disabled"]


def test_admin_changes_keep_before_and_after_with_secrets_redacted(app: LiveApp, admin: ApiClient) -> None:
    model = admin.ok("POST", "/api/admin/models", json={"name": "M", "provider": "openai",
                                                        "baseUrl": "http://127.0.0.1:9/v1", "model": "m",
                                                        "apiKey": "sk-very-secret"})
    admin.ok("PUT", f"/api/admin/models/{model['id']}", json={"name": "M2", "apiKey": "sk-other-secret"})
    admin.ok("DELETE", f"/api/admin/models/{model['id']}")
    changes = of_type(admin, "admin.change")
    deleted, updated, created = changes[0], changes[1], changes[2]
    assert created["target"] == "POST /api/admin/models" and created["actorName"] == "admin"
    row = next(c for c in created["detail"]["changes"] if c["table"] == "model_configs")
    assert row["op"] == "insert" and row["after"]["name"] == "M" and row["after"]["api_key_enc"] == "[redacted]"
    row = next(c for c in updated["detail"]["changes"] if c["table"] == "model_configs")
    assert row["before"]["name"] == "M" and row["after"]["name"] == "M2"
    assert row["before"]["api_key_enc"] == row["after"]["api_key_enc"] == "[redacted]"
    assert next(c for c in deleted["detail"]["changes"] if c["table"] == "model_configs")["before"]["name"] == "M2"
    trail = admin.get("/api/admin/audit.jsonl").text
    assert "sk-very-secret" not in trail and "sk-other-secret" not in trail and "gAAAA" not in trail
    # a password set by an admin (a Core UPDATE) is kept as its table, the hash redacted
    user = admin.ok("POST", "/api/admin/users", json={"username": "carol", "password": "password123"})
    admin.ok("PATCH", f"/api/admin/users/{user['id']}", json={"password": "new-password-1"})
    change = of_type(admin, "admin.change")[0]["detail"]["changes"]
    assert {"table": "users", "op": "update"}.items() <= change[0].items()
    assert change[0]["values"]["password_hash"] == "[redacted]"
    assert "$argon2" not in admin.get("/api/admin/audit.jsonl").text


def test_tool_admin_endpoints_are_on_the_trail(app: LiveApp, admin: ApiClient) -> None:
    tool = admin.ok("POST", "/api/agent-tools", json={"slug": "calc", "name": "Calc", "type": "calculator"})
    admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"auditArguments": True})
    assert admin.ok("GET", f"/api/agent-tools/{tool['id']}")["auditArguments"] is True
    update = of_type(admin, "admin.change")[0]
    assert update["target"] == f"PUT /api/agent-tools/{tool['id']}"
    assert update["detail"]["changes"][0]["after"] == {"audit_arguments": True}


def test_reads_and_refused_requests_record_nothing(app: LiveApp, admin: ApiClient, user: ApiClient) -> None:
    before = len(events(admin))
    admin.ok("GET", "/api/admin/models")
    assert admin.post("/api/admin/models", json={"name": ""}).status_code == 422
    assert user.post("/api/admin/models", json={"name": "x"}).status_code == 403
    assert user.get("/api/admin/audit").status_code == 403
    assert user.get("/api/admin/audit.jsonl").status_code == 403
    assert len(events(admin)) == before


def test_an_action_whose_event_cannot_be_written_fails_and_keeps_nothing(app: LiveApp, admin: ApiClient) -> None:
    app.sql("DELETE FROM audit_chain")  # appending now fails: no chain head to take the next id from
    failed = admin.post("/api/admin/users", json={"username": "dave", "password": "password123"})
    assert failed.status_code == 500
    assert app.sql("SELECT count(*) FROM users WHERE username = 'dave'") == [(0,)]
    with app.client() as c:
        assert c.post("/api/auth/login", json={"username": "admin", "password": "password123"}).status_code == 500
        assert app.sql("SELECT count(*) FROM auth_sessions") == [(1,)]  # the admin fixture's only
        assert "agentloft_session" not in c.cookies  # no session was handed out either
