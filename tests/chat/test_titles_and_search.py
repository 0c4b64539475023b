"""Chat titles from the first exchange and the chat search (issue 14 point 5), over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel, Step, text
from tests.support import ApiClient, LiveApp


def _asks_for_title(body: dict[str, Any]) -> bool:
    return any("You name conversations" in str(m.get("content")) for m in body["messages"])


def title_step(value: str, **kw: Any) -> Step:
    return Step(text=value, match=_asks_for_title, **kw)


@pytest.fixture(autouse=True)
def titles_on(admin: ApiClient) -> None:
    """The test servers start with generated titles off (tests.support); these tests are about them."""
    admin.ok("PUT", "/api/admin/settings", json={"generateTitles": True})


def test_titles_are_on_unless_switched_off() -> None:
    from agentloft.core.settings import load_settings

    assert load_settings(secret_key="x").generate_titles is True


def test_a_title_is_asked_for_once_from_the_first_exchange(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("Use **pandas** `read_csv`."), title_step('"Reading CSV files with pandas."'))
    sid = chat(user, "helper", "How do I read a *CSV* in Python?").session_id
    listed = user.ok("GET", "/api/agent-sessions")["items"][0]
    assert (listed["title"], listed["titleSource"]) == ("How do I read a CSV in Python?", "auto")
    named = user.ok("POST", f"/api/agent-sessions/{sid}/title")
    assert (named["title"], named["titleSource"]) == ("Reading CSV files with pandas", "generated")
    request = fake_model.requests[-1]
    assert 20 in (request.get("max_tokens"), request.get("max_completion_tokens"))
    said = " ".join(str(m.get("content")) for m in request["messages"])
    assert "How do I read a *CSV* in Python?" in said and "read_csv" in said
    calls = len(fake_model.requests)
    assert user.ok("POST", f"/api/agent-sessions/{sid}/title")["title"] == "Reading CSV files with pandas"
    assert len(fake_model.requests) == calls  # named once


def test_failure_keeps_the_first_words_and_a_rename_is_never_replaced(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("hi"), Step(error_status=400, match=_asks_for_title))
    sid = chat(user, "helper", "# **Plan** for the trip").session_id
    named = user.ok("POST", f"/api/agent-sessions/{sid}/title")
    assert (named["title"], named["titleSource"]) == ("Plan for the trip", "generated")

    fake_model.push(text("hello"))
    other = chat(user, "helper", "something").session_id
    user.ok("PATCH", f"/api/agent-sessions/{other}", json={"title": "My name for it"})
    calls = len(fake_model.requests)
    named = user.ok("POST", f"/api/agent-sessions/{other}/title")
    assert (named["title"], named["titleSource"]) == ("My name for it", "user")
    assert len(fake_model.requests) == calls


def test_no_title_call_before_a_complete_reply_or_when_switched_off(
    user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(error_status=400))
    sid = chat(user, "helper", "first try").session_id
    calls = len(fake_model.requests)
    assert user.ok("POST", f"/api/agent-sessions/{sid}/title")["titleSource"] == "auto"
    assert len(fake_model.requests) == calls

    assert admin.ok("PUT", "/api/admin/settings", json={"generateTitles": False})["generateTitles"] is False
    fake_model.push(text("ok"))
    chat(user, "helper", "second try", sid)
    assert user.ok("POST", f"/api/agent-sessions/{sid}/title")["title"] == "first try"
    assert len(fake_model.requests) == calls + 1  # the reply only


def test_never_for_the_sessions_of_a2a_tasks(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("done"))
    sid = chat(user, "helper", "task text").session_id
    app.sql("UPDATE agent_messages SET source = 'a2a' WHERE session_id = ?", (sid,))
    calls = len(fake_model.requests)
    assert user.ok("POST", f"/api/agent-sessions/{sid}/title")["titleSource"] == "auto"
    assert len(fake_model.requests) == calls


def test_search_finds_titles_and_messages_of_ones_own_chats(
    app: LiveApp, user: ApiClient, make_user: Any, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("Brew it at 93 degrees."), text("Tea is different."), text("Coffee too."),
                    text("x"), text("y"))
    coffee = chat(user, "helper", "How do I make 咖啡 with a **pour-over**?").session_id
    tea = chat(user, "helper", "Green tea").session_id
    bob = make_user("bob")
    chat(bob, "helper", "咖啡 for bob")
    gone = chat(user, "helper", "咖啡 again").session_id
    user.ok("DELETE", f"/api/agent-sessions/{gone}")
    a2a = chat(user, "helper", "咖啡 in a task").session_id
    app.sql("UPDATE agent_sessions SET hidden = true WHERE id = ?", (a2a,))  # as an A2A task's session is

    found = user.ok("GET", "/api/agent-sessions/search", params={"q": "咖啡"})
    assert [s["id"] for s in found["items"]] == [coffee] and found["total"] == 1
    assert set(found) >= {"items", "total", "page", "pageSize", "hasMore"}
    found = user.ok("GET", "/api/agent-sessions/search", params={"q": "93 DEGREES"})  # reply text, any case
    assert [s["id"] for s in found["items"]] == [coffee]
    assert "Brew it at 93 degrees." in found["items"][0]["match"]["snippet"]
    found = user.ok("GET", "/api/agent-sessions/search", params={"q": "pour-over 咖啡"})  # every word must match
    assert [s["id"] for s in found["items"]] == [coffee]
    assert "**" not in found["items"][0]["title"]
    # a title hit ranks before a message hit
    fake_model.push(text("about tea"))
    chat(user, "helper", "different question, tea in the answer", coffee)
    found = user.ok("GET", "/api/agent-sessions/search", params={"q": "tea"})
    assert [s["id"] for s in found["items"]] == [tea, coffee]
    assert user.ok("GET", "/api/agent-sessions/search", params={"q": "100%"})["total"] == 0  # % is no wildcard
    r = user.get("/api/agent-sessions/search", params={"q": "   "})
    assert r.status_code == 422
