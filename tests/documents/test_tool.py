"""The ``document`` tool type, called through the shared wrapper against the live app's database:
each action, each per-action rule, the token budget, approval, and every error text of seed 000."""

from __future__ import annotations

import re

from tests.documents.conftest import ToolCaller, user_id
from tests.support import ApiClient, LiveApp

ID_SHAPE = re.compile(r"^ad_[0-9a-z]+_[0-9a-z]{10}$")


def _create(call: ToolCaller, uid: int, **args) -> dict:
    return call.ok(uid, {"action": "create", "title": "Title", "content": "Body", **args})


# --- create ------------------------------------------------------------------------------------------


def test_create_defaults_and_cut_summary(app: LiveApp, call_tool: ToolCaller, alice_id: int) -> None:
    content = "word " * 100  # 500 chars
    data = call_tool.ok(alice_id, {"action": "create", "title": "Notes", "content": content})
    assert set(data) == {"id", "title", "type", "createdAt"}
    assert ID_SHAPE.match(data["id"]) and data["type"] == "memory" and data["title"] == "Notes"
    (summary, kind, uid, sid), = app.sql(
        "SELECT summary, type, user_id, session_id FROM agent_documents WHERE id = ?", (data["id"],)
    )
    assert kind == "memory" and uid == alice_id and sid is None
    assert len(summary) <= 200 and summary.startswith("word word") and summary.endswith("…")


def test_create_uses_given_summary_type_and_tags(app: LiveApp, call_tool: ToolCaller, alice_id: int) -> None:
    data = _create(call_tool, alice_id, type="document", summary="Short.", tags=" a, b ,a，c ")
    row = app.sql("SELECT summary, type, tags FROM agent_documents WHERE id = ?", (data["id"],))
    assert row == [("Short.", "document", "a,b,c")]


def test_summary_length_comes_from_config(app: LiveApp, call_tool: ToolCaller, alice_id: int) -> None:
    data = call_tool.ok(
        alice_id, {"action": "create", "title": "T", "content": "x" * 100}, config={"defaultSummaryLength": 30}
    )
    (summary,), = app.sql("SELECT summary FROM agent_documents WHERE id = ?", (data["id"],))
    assert len(summary) == 30


def test_session_id_comes_from_the_run_never_the_model(
    app: LiveApp, call_tool: ToolCaller, alice_id: int
) -> None:
    data = _create(call_tool, alice_id, sessionId="as_forged")
    assert app.sql("SELECT session_id FROM agent_documents WHERE id = ?", (data["id"],)) == [(None,)]
    data = call_tool.ok(
        alice_id, {"action": "create", "title": "T", "content": "c", "sessionId": "as_forged"},
        session_id="as_real",
    )
    assert app.sql("SELECT session_id FROM agent_documents WHERE id = ?", (data["id"],)) == [("as_real",)]
    assert "sessionId" not in _input_properties(call_tool)


def _input_properties(call: ToolCaller) -> dict:
    return call.tool().input_schema["properties"]


def test_create_rules(call_tool: ToolCaller, alice_id: int) -> None:
    err = call_tool.fail(alice_id, {"action": "create", "content": "c"}).error
    assert err.startswith("invalid input") and 'title: required for action "create"' in err
    err = call_tool.fail(alice_id, {"action": "create", "title": "t"}).error
    assert 'content: required for action "create"' in err
    err = call_tool.fail(alice_id, {"action": "create", "title": "x" * 256, "content": "c"}).error
    assert "title:" in err and "255" in err
    err = call_tool.fail(alice_id, {"action": "create", "title": "t", "content": "c", "type": "note"}).error
    assert "type:" in err
    err = call_tool.fail(alice_id, {"action": "create", "title": "t", "content": "c", "tags": "x" * 501}).error
    assert "tags:" in err
    err = call_tool.fail(alice_id, {"action": "explode"}).error
    assert "action:" in err
    err = call_tool.fail(alice_id, {"action": "list", "bogus": 1}).error
    assert "bogus:" in err


def test_content_too_long(app: LiveApp, call_tool: ToolCaller, alice_id: int) -> None:
    res = call_tool.fail(alice_id, {"action": "create", "title": "t", "content": "x" * 50_001})
    assert "content exceeds the maximum length" in res.error and res.metadata["code"] == "content_too_long"
    res = call_tool.fail(alice_id, {"action": "create", "title": "t", "content": "x" * 101},
                         config={"maxContentLength": 100})
    assert "content exceeds the maximum length" in res.error
    call_tool.ok(alice_id, {"action": "create", "title": "t", "content": "x" * 100}, config={"maxContentLength": 100})
    doc = _create(call_tool, alice_id)
    res = call_tool.fail(alice_id, {"action": "update", "id": doc["id"], "content": "y" * 101},
                         config={"maxContentLength": 100})
    assert "content exceeds the maximum length" in res.error
    assert app.sql("SELECT count(*) FROM agent_documents") == [(2,)]


# --- read --------------------------------------------------------------------------------------------


def test_read_small_document_returns_content(call_tool: ToolCaller, alice_id: int) -> None:
    doc = _create(call_tool, alice_id, content="The build uses uv.", tags="build")
    data = call_tool.ok(alice_id, {"action": "read", "id": doc["id"]})
    assert data["content"] == "The build uses uv." and data["summary"] == "The build uses uv."
    assert data["tags"] == "build" and data["type"] == "memory" and data["contentLength"] == 18
    assert "hint" not in data and data["createdAt"] and data["updatedAt"]
    only_summary = call_tool.ok(alice_id, {"action": "read", "id": doc["id"], "fullContent": False})
    assert "content" not in only_summary and only_summary["summary"] == "The build uses uv."


def test_read_over_budget_returns_summary_and_hint(call_tool: ToolCaller, alice_id: int) -> None:
    doc = _create(call_tool, alice_id, content="lorem ipsum " * 1000)  # 12,000 chars ≈ 3,000 tokens
    data = call_tool.ok(alice_id, {"action": "read", "id": doc["id"]})
    assert "content" not in data and data["summary"].startswith("lorem ipsum")
    assert "fullContent=true" in data["hint"] and "too long" in data["hint"]
    full = call_tool.ok(alice_id, {"action": "read", "id": doc["id"], "fullContent": True})
    assert full["content"] == "lorem ipsum " * 1000 and "hint" not in full
    roomy = call_tool.ok(alice_id, {"action": "read", "id": doc["id"]}, config={"tokenBudget": 5000})
    assert "content" in roomy


def test_budget_counts_chinese_as_about_a_token_per_character(call_tool: ToolCaller, alice_id: int) -> None:
    # 2,400 characters: English fits 2,000 tokens (≈600), Chinese does not (≈2,400).
    english = _create(call_tool, alice_id, content="abcdefgh " * 267)
    chinese = _create(call_tool, alice_id, content="记录重要的决策" * 343)
    assert "content" in call_tool.ok(alice_id, {"action": "read", "id": english["id"]})
    data = call_tool.ok(alice_id, {"action": "read", "id": chinese["id"]})
    assert "content" not in data and "fullContent=true" in data["hint"]
    assert 2300 <= data["contentTokens"] <= 2500


def test_read_by_search_returns_best_match(call_tool: ToolCaller, alice_id: int) -> None:
    _create(call_tool, alice_id, title="Groceries", content="milk, bread and the deployment notes")
    best = _create(call_tool, alice_id, title="Deployment checklist", content="run migrations first")
    data = call_tool.ok(alice_id, {"action": "read", "q": "deployment"})
    assert data["id"] == best["id"] and data["content"] == "run migrations first"
    assert data["totalMatches"] == 2 and [m["title"] for m in data["otherMatches"]] == ["Groceries"]
    res = call_tool.fail(alice_id, {"action": "read", "q": "nonexistent-term"})
    assert "no document matches" in res.error


def test_read_rules_and_not_found(call_tool: ToolCaller, alice_id: int) -> None:
    err = call_tool.fail(alice_id, {"action": "read"}).error
    assert "id:" in err and "needs an id or a search q" in err
    res = call_tool.fail(alice_id, {"action": "read", "id": "ad_nope_0000000000"})
    assert res.error == "document not found or no access" and res.metadata["code"] == "document_not_found"


# --- update ------------------------------------------------------------------------------------------


def test_update_fields_summary_and_versions(app: LiveApp, call_tool: ToolCaller, alice_id: int) -> None:
    doc = _create(call_tool, alice_id, content="first body", summary="my own summary")
    data = call_tool.ok(alice_id, {"action": "update", "id": doc["id"], "title": "Renamed"})
    assert set(data) == {"id", "title", "updatedAt"} and data["title"] == "Renamed"
    sql = "SELECT title, content, summary, tags FROM agent_documents WHERE id = ?"
    assert app.sql(sql, (doc["id"],)) == [("Renamed", "first body", "my own summary", None)]
    call_tool.ok(alice_id, {"action": "update", "id": doc["id"], "content": "second body"})
    assert app.sql(sql, (doc["id"],))[0][1:3] == ("second body", "second body")  # summary re-cut
    call_tool.ok(alice_id, {"action": "update", "id": doc["id"], "content": "third", "summary": "S3", "tags": "x"})
    assert app.sql(sql, (doc["id"],)) == [("Renamed", "third", "S3", "x")]
    versions = app.sql(
        "SELECT version, title, content FROM agent_document_versions WHERE document_id = ? ORDER BY version",
        (doc["id"],),
    )
    assert versions == [(1, "Title", "first body"), (2, "Renamed", "first body"), (3, "Renamed", "second body")]


def test_update_rules_and_not_found(call_tool: ToolCaller, alice_id: int) -> None:
    doc = _create(call_tool, alice_id)
    err = call_tool.fail(alice_id, {"action": "update", "id": doc["id"]}).error
    assert "at least one of title, content, type, summary, tags" in err
    err = call_tool.fail(alice_id, {"action": "update", "title": "x"}).error
    assert 'id: required for action "update"' in err
    res = call_tool.fail(alice_id, {"action": "update", "id": "ad_missing_0000000000", "title": "x"})
    assert res.error == "document not found or no access"


# --- delete and approval -----------------------------------------------------------------------------


def test_delete_needs_approval_then_is_hard(app: LiveApp, call_tool: ToolCaller, alice_id: int) -> None:
    doc = _create(call_tool, alice_id)
    call_tool.ok(alice_id, {"action": "update", "id": doc["id"], "content": "v2"})
    assert call_tool.needs_approval(alice_id, {"action": "delete", "id": doc["id"]}) is True
    for action in ({"action": "list"}, {"action": "read", "id": doc["id"]}, {"action": "create", "title": "t",
                                                                              "content": "c"}):
        assert call_tool.needs_approval(alice_id, action) is False
    res = call_tool.fail(alice_id, {"action": "delete", "id": doc["id"]})
    assert res.metadata["needsApproval"] is True and "approval" in res.error
    assert app.sql("SELECT count(*) FROM agent_documents WHERE id = ?", (doc["id"],)) == [(1,)]
    data = call_tool.ok(alice_id, {"action": "delete", "id": doc["id"]}, approved=True)
    assert data == {"id": doc["id"], "deleted": True}
    assert app.sql("SELECT count(*) FROM agent_documents WHERE id = ?", (doc["id"],)) == [(0,)]
    assert app.sql("SELECT count(*) FROM agent_document_versions") == [(0,)]
    res = call_tool.fail(alice_id, {"action": "delete", "id": doc["id"]}, approved=True)
    assert res.error == "document not found or no access"
    err = call_tool.fail(alice_id, {"action": "delete"}).error
    assert 'id: required for action "delete"' in err


def test_approval_list_comes_from_config(call_tool: ToolCaller, alice_id: int) -> None:
    doc = _create(call_tool, alice_id)
    no_approval = {"approvalRequiredActions": []}
    assert call_tool.needs_approval(alice_id, {"action": "delete", "id": doc["id"]}, no_approval) is False
    call_tool.ok(alice_id, {"action": "delete", "id": doc["id"]}, config=no_approval)
    strict = {"approvalRequiredActions": ["create", "update"]}
    args = {"action": "create", "title": "t", "content": "c"}
    assert call_tool.needs_approval(alice_id, args, strict) is True
    assert call_tool.fail(alice_id, args, config=strict).metadata["needsApproval"] is True
    assert call_tool.ok(alice_id, args, config=strict, approved=True)["title"] == "t"


# --- list --------------------------------------------------------------------------------------------


def test_list_shape_order_filter_and_page_size(call_tool: ToolCaller, alice_id: int) -> None:
    ids = [_create(call_tool, alice_id, title=f"doc {i}", type="document" if i % 2 else "memory")["id"]
           for i in range(25)]
    data = call_tool.ok(alice_id, {"action": "list"})
    assert data["total"] == 25 and data["pageSize"] == 10 and data["hasMore"] is True
    assert [i["id"] for i in data["items"]] == ids[::-1][:10]
    assert set(data["items"][0]) == {"id", "title", "summary", "type", "tags", "updatedAt"}
    assert data["next"] == {"action": "list", "pageSize": 10, "page": 2}
    capped = call_tool.ok(alice_id, {"action": "list", "pageSize": 50})
    assert capped["pageSize"] == 20 and len(capped["items"]) == 20
    smaller = call_tool.ok(alice_id, {"action": "list", "pageSize": 50}, config={"maxPageSize": 5})
    assert len(smaller["items"]) == 5
    last = call_tool.ok(alice_id, {"action": "list", "page": 3})
    assert len(last["items"]) == 5 and last["hasMore"] is False and "next" not in last
    docs = call_tool.ok(alice_id, {"action": "list", "filterType": "document", "pageSize": 20})
    assert docs["total"] == 12 and {i["type"] for i in docs["items"]} == {"document"}
    found = call_tool.ok(alice_id, {"action": "list", "q": "doc 13"})
    assert found["items"][0]["title"] == "doc 13"


def test_list_stays_within_token_budget_and_resumes(call_tool: ToolCaller, alice_id: int) -> None:
    # Chinese summaries of 200 characters ≈ 230 tokens per item: a 2,000 budget holds 8 of them.
    for i in range(15):
        _create(call_tool, alice_id, title=f"会议纪要 {i}", content="项目进度良好，需要继续跟进。" * 20)
    first = call_tool.ok(alice_id, {"action": "list", "pageSize": 20})
    assert 5 <= len(first["items"]) < 15 and first["hasMore"] is True and first["tokens"] <= 2000
    assert first["next"]["offset"] == len(first["items"]) and "token budget" in first["hint"]
    seen = [i["id"] for i in first["items"]]
    args = first["next"]
    while True:
        page = call_tool.ok(alice_id, args)
        seen += [i["id"] for i in page["items"]]
        if not page["hasMore"]:
            break
        args = page["next"]
    assert len(seen) == 15 == len(set(seen))
    # The same page in English fits easily: the estimate is not the seed's chars / 4 for both.
    for i in range(15):
        _create(call_tool, alice_id, title=f"minutes {i}", content="progress is good, keep following up. " * 8,
                type="document")
    english = call_tool.ok(alice_id, {"action": "list", "pageSize": 15, "filterType": "document"})
    assert len(english["items"]) == 15


# --- who ---------------------------------------------------------------------------------------------


def test_no_user_is_refused(call_tool: ToolCaller) -> None:
    for args in ({"action": "list"}, {"action": "create", "title": "t", "content": "c"},
                 {"action": "read", "id": "ad_x_0000000000"}):
        assert call_tool.fail(None, args).error == "this tool requires a signed-in session"


def test_second_user_gets_not_found_from_every_action(
    app: LiveApp, call_tool: ToolCaller, alice_id: int, bob: ApiClient
) -> None:
    doc = _create(call_tool, alice_id, title="Alice secret plan", content="the secret plan details")
    bob_id = user_id(bob)
    nf = "document not found or no access"
    assert call_tool.fail(bob_id, {"action": "read", "id": doc["id"]}).error == nf
    assert call_tool.fail(bob_id, {"action": "update", "id": doc["id"], "title": "mine"}).error == nf
    assert call_tool.fail(bob_id, {"action": "delete", "id": doc["id"]}, approved=True).error == nf
    assert "no document matches" in call_tool.fail(bob_id, {"action": "read", "q": "secret plan"}).error
    listed = call_tool.ok(bob_id, {"action": "list"})
    assert listed["items"] == [] and listed["total"] == 0
    assert call_tool.ok(bob_id, {"action": "list", "q": "secret"})["total"] == 0
    assert app.sql("SELECT title FROM agent_documents WHERE id = ?", (doc["id"],)) == [("Alice secret plan",)]


def test_description_is_built_from_config(call_tool: ToolCaller) -> None:
    tool = call_tool.tool(tokenBudget=500, maxPageSize=7, maxContentLength=1234,
                          approvalRequiredActions=["update", "delete"])
    text = tool.description
    assert "500 tokens" in text and "at most 7" in text and "1234 characters" in text
    assert "approval: update, delete" in text
    assert "approval: none" in call_tool.tool(approvalRequiredActions=[]).description


def test_nul_from_the_model_is_stored_as_a_standin(app: LiveApp, call_tool: ToolCaller, alice_id: int) -> None:
    """U+0000 in what the model writes (text from a binary page, a program's output) is no reason to lose
    the document, as the API's 422 would lose it: it is stored as U+FFFD, on both databases."""
    data = call_tool.ok(alice_id, {"action": "create", "title": "T\x00", "content": "a\x00b", "summary": "s\x00",
                                   "tags": "x\x00"})
    call_tool.ok(alice_id, {"action": "update", "id": data["id"], "content": "c\x00d"})
    found = call_tool.ok(alice_id, {"action": "list", "q": "c\x00d"})
    assert [d["id"] for d in found["items"]] == [data["id"]], found
    assert app.sql("SELECT title, content, tags FROM agent_documents") == [("T\ufffd", "c\ufffdd", "x\ufffd")]
    assert app.sql("SELECT content, summary FROM agent_document_versions") == [("a\ufffdb", "s\ufffd")]
