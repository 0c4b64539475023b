"""The isolation matrix for groups: an agent, a model, a tool and a knowledge collection limited to a group
are seen and reached by its members and admins, and by nobody else, on every path: agent lists, reads and
the chat page, chat, regenerate, the tools' lists and the model's tool list, agent-invoke (the caller
user's groups decide, and the tool's list of agents never names a hidden one), A2A (card and tasks), the
OpenAI-compatible API and the MCP server (by the API token's user), the plain chat's model, the knowledge
tool's collections. A user who leaves the group can neither continue their old sessions with a limited
agent (new message, edit, regenerate, a pending call's answer) nor read them, and nothing is written when
they try; joining again gives them back as they were."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import mcp_types
import pytest
from mcp.client.session import ClientSession

from tests.a2a.conftest import CALLEE_PROMPT, CALLER_PROMPT, caller_step
from tests.a2a.test_invoke import ask, requests_of, tool_output
from tests.chat.helpers import attach, chat, make_tool, post_stream
from tests.chat.helpers import make_agent as new_agent
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, ToolCall, call, text
from tests.knowledge.helpers import indexed
from tests.mcp_server.conftest import with_session
from tests.support import ApiClient, LiveApp


class World:
    """A group ``team`` with one member; an outsider; the admin."""

    def __init__(self, admin: ApiClient, make_user: Callable[..., ApiClient]) -> None:
        self.admin = admin
        self.member = make_user("member")
        self.outsider = make_user("outsider")
        users = {u["username"]: u["id"] for u in admin.ok("GET", "/api/admin/users?pageSize=100")["items"]}
        self.member_id = users["member"]
        self.team = admin.ok("POST", "/api/admin/groups", json={"name": "team"})["id"]
        admin.ok("PUT", f"/api/admin/groups/{self.team}/members", json=[self.member_id])

    def clients(self) -> dict[str, ApiClient]:
        return {"member": self.member, "outsider": self.outsider, "admin": self.admin}

    def leave(self) -> None:
        self.admin.ok("PUT", f"/api/admin/groups/{self.team}/members", json=[])


@pytest.fixture
def world(admin: ApiClient, make_user: Callable[..., ApiClient]) -> World:
    return World(admin, make_user)


def _tool_names(body: dict[str, Any]) -> list[str]:
    return sorted(t["function"]["name"] for t in body.get("tools", []))


def test_a_limited_agent_on_every_user_path(
    world: World, make_agent: Callable[..., dict[str, Any]], fake_model: FakeModel, model_id: int
) -> None:
    make_agent("secret", CALLEE_PROMPT, groupIds=[world.team])
    make_agent("open", CALLER_PROMPT)
    for who, client in world.clients().items():
        slugs = [a["slug"] for a in client.ok("GET", "/api/agents")["items"]]
        seen = who != "outsider"
        assert slugs == (["open", "secret"] if seen else ["open"]), who
        assert client.get("/api/agents/secret").status_code == (200 if seen else 404), who
        reply = chat(client, "secret", "hi")
        assert reply.status == (200 if seen else 404), who
        assert ('"secret"' in client.get("/chat").text) == seen, who  # the chat page's agent picker
    r = world.outsider.post("/api/agents/secret/chat", json={"message": "hi"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "agent_not_found"
    assert not requests_of(fake_model, CALLEE_PROMPT)[2:], "only the member's and the admin's turns ran"

    session = chat(world.member, "secret", "first").session_id
    assert session
    world.leave()
    assert world.member.get("/api/agents/secret").status_code == 404
    for url, body in (("/api/agents/secret/chat", {"message": "again", "sessionId": session}),
                      (f"/api/agent-sessions/{session}/regenerate", {})):
        r = world.member.post(url, json=body)
        assert r.status_code == 404 and r.json()["error"]["code"] == "agent_not_found", url


def test_a_limited_tool_never_reaches_an_outsiders_model(
    world: World, make_agent: Callable[..., dict[str, Any]], fake_model: FakeModel, model_id: int
) -> None:
    agent = make_agent("open", CALLER_PROMPT)
    limited = world.admin.ok("POST", "/api/agent-tools", json={
        "slug": "team-calc", "name": "Team calculator", "type": "calculator", "groupIds": [world.team]})
    public = world.admin.ok("POST", "/api/agent-tools", json={"slug": "calc", "name": "Calc", "type": "calculator"})
    world.admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools",
                   json=[{"toolId": limited["id"]}, {"toolId": public["id"]}])
    for who, client in world.clients().items():
        expected = ["calc"] if who == "outsider" else ["calc", "team-calc"]
        for url in ("/api/llm/chat/tools?agent=open", "/api/llm/chat/tools"):
            assert sorted(t["name"] for t in client.ok("GET", url)["items"]) == expected, (who, url)
        fake_model.requests.clear()
        assert chat(client, "open", "hi").status == 200
        assert post_stream(client, "/api/llm/chat", {"message": "hi"}).status == 200
        assert [_tool_names(r) for r in fake_model.requests] == [expected, expected], who
    warnings = world.admin.ok("POST", "/api/admin/agents/prompt-check",
                              json={"systemPrompt": "Use team-calc for sums."})["warnings"]
    assert len(warnings) == 1 and "group-limited" in warnings[0]


def test_agent_invoke_decides_by_the_calling_users_groups(
    app: LiveApp, world: World, make_agent: Callable[..., dict[str, Any]],
    invoke_tool: Callable[..., dict[str, Any]], fake_model: FakeModel, model_id: int,
) -> None:
    caller = make_agent("general", CALLER_PROMPT)
    make_agent("secret", CALLEE_PROMPT, a2aCallable=True, groupIds=[world.team])
    named = make_agent("named", "You name one.")
    invoke_tool(caller)
    invoke_tool(named, slug="ask-secret", allowedAgents=["secret"])
    outsider_tools = [t["name"] for t in world.outsider.ok("GET", "/api/llm/chat/tools?agent=named")["items"]]
    assert outsider_tools == [], "a tool that may call only hidden agents is left out"
    member_tools = world.member.ok("GET", "/api/llm/chat/tools?agent=named")["items"]
    assert [t["name"] for t in member_tools] == ["ask-secret"] and "secret" in member_tools[0]["description"]
    fake_model.requests.clear()
    assert chat(world.outsider, "named", "hi").status == 200
    assert "secret" not in json.dumps(fake_model.requests[-1].get("tools", [])), "never named to the model"

    fake_model.push(ask("secret", "q"), caller_step(text("could not")))
    reply = chat(world.outsider, "general", "go")
    assert tool_output(reply)["type"] == "tool-output-error"
    assert app.sql("SELECT COUNT(*) FROM a2a_task_sessions") == [(0,)]
    assert not requests_of(fake_model, CALLEE_PROMPT)
    fake_model.push(ask("secret", "q"), caller_step(text("done")))
    reply = chat(world.member, "general", "go")
    assert tool_output(reply)["type"] == "tool-output-available"
    assert requests_of(fake_model, CALLEE_PROMPT), "the member's call ran the callee"


def test_a2a_cards_and_tasks_follow_the_token_users_groups(
    app: LiveApp, world: World, make_agent: Callable[..., dict[str, Any]], fake_model: FakeModel, model_id: int
) -> None:
    make_agent("secret", CALLEE_PROMPT, a2aCallable=True, groupIds=[world.team])
    card = "/a2a/secret/.well-known/agent-card.json"
    message = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
    with httpx.Client(base_url=app.url, timeout=30) as anon:
        assert anon.get(card).status_code == 404
        for who, client in world.clients().items():
            token = client.ok("POST", "/api/auth/tokens", json={"name": "a2a"})["token"]
            auth = {"Authorization": f"Bearer {token}"}
            seen = who != "outsider"
            assert anon.get(card, headers=auth).status_code == (200 if seen else 404), who
            sent = anon.post("/a2a/secret/rest/message:send", json=message, headers=auth)
            assert (sent.status_code == 404) == (not seen), (who, sent.text)


def test_the_plain_chat_uses_a_model_the_user_may_use(
    world: World, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    base = {"provider": "openai", "baseUrl": fake_model_server.base_url}
    world.admin.ok("POST", "/api/admin/models", json={**base, "name": "Team", "model": "team-model",
                                                      "isDefault": True, "groupIds": [world.team]})
    world.admin.ok("POST", "/api/admin/models", json={**base, "name": "Open", "model": "open-model"})
    for who, client in world.clients().items():
        fake_model.requests.clear()
        assert post_stream(client, "/api/llm/chat", {"message": "hi"}).status == 200
        assert fake_model.requests[0]["model"] == ("open-model" if who == "outsider" else "team-model"), who


def test_the_knowledge_tool_searches_a_limited_collection_only_for_members(
    world: World, fake_model: FakeModel, model_id: int
) -> None:
    """A knowledge tool whose every collection is hidden from the caller never reaches their model (it
    would find nothing); one with a collection left stays, and searches only that one for them."""
    kb = indexed(world.admin, ("keys.md", "# Keys\n\nRotate the signing key every ninety days."))
    assert world.admin.ok("PUT", f"/api/knowledge/{kb}", json={"groupIds": [world.team]})["groupIds"] == [world.team]
    open_kb = indexed(world.admin, ("leave.md", "# Leave\n\nAsk for leave a week ahead."), name="Open")
    agent = new_agent(world.admin, "helper", modelId=model_id)
    tools = [make_tool(world.admin, slug, "knowledge", config={"collectionIds": ids, "topK": 3})
             for slug, ids in (("handbook", [kb]), ("wiki", [kb, open_kb]))]
    attach(world.admin, agent["id"], *({"toolId": t["id"]} for t in tools))
    for who, client in world.clients().items():
        seen = who != "outsider"
        expected = ["handbook", "wiki"] if seen else ["wiki"]
        listed = client.ok("GET", "/api/llm/chat/tools?agent=helper")["items"]
        assert sorted(t["name"] for t in listed) == expected, who
        fake_model.requests.clear()
        fake_model.push(call("handbook" if seen else "wiki", {"query": "signing key"}, id="c1"), text("done"))
        assert chat(client, "helper", "keys?").status == 200
        assert [_tool_names(r) for r in fake_model.requests] == [expected, expected], who
        sent = fake_model.requests[-1]["messages"][-1]["content"]
        assert ("ninety days" in sent) == seen, (who, sent)
    r = world.member.post("/api/knowledge", json={"name": "mine", "groupIds": [world.team]})
    assert r.status_code == 403 and r.json()["error"]["code"] == "admin_required"


_STATE_SQL = (
    ("SELECT id, role, status, content FROM agent_messages WHERE session_id IN (?, ?) ORDER BY id", 2),
    ("SELECT id, status, updated_at FROM agent_sessions WHERE id IN (?, ?) ORDER BY id", 2),
    ("SELECT tool_call_id, status, answered_at, answered_by FROM chat_approvals WHERE session_id = ?", 1),
    ("SELECT COUNT(*) FROM audit_events WHERE type = 'tool.approval'", 0),
)


def _state(app: LiveApp, done: str, paused: str) -> list[list[tuple[Any, ...]]]:
    """What a refused request must leave as it was: both sessions, their messages, the pending call and
    the approvals' audit trail."""
    params = (done, paused)
    return [app.sql(query, (paused,) if n == 1 else params[:n]) for query, n in _STATE_SQL]


def test_a_member_who_leaves_the_group_can_no_longer_continue_or_read(
    app: LiveApp, world: World, make_agent: Callable[..., dict[str, Any]], fake_model: FakeModel,
    model_id: int, test_tools: None,
) -> None:
    """Leaving the group closes every way back into the agent's sessions (new message, edit, regenerate,
    the pending call's answer, the session's read, lists and search) with 404 ``agent_not_found`` and
    nothing written; joining again opens them as they were."""
    agent = make_agent("secret", CALLEE_PROMPT, groupIds=[world.team])
    guard = make_tool(world.admin, "guard", "test-guarded")
    attach(world.admin, agent["id"], {"toolId": guard["id"], "needsApproval": True})
    done = chat(world.member, "secret", "first words").session_id
    fake_model.push(Step(text="Let me.", tool_calls=[ToolCall("guard", {"action": "read"}, id="ap1")]))
    paused = chat(world.member, "secret", "please act").session_id
    assert done and paused
    assert world.member.ok("GET", f"/api/agent-sessions/{paused}")["pendingApprovals"]
    sent = [m for m in world.member.ok("GET", f"/api/agent-sessions/{done}")["messages"] if m["role"] == "user"]
    before, asked = _state(app, done, paused), len(fake_model.requests)

    world.leave()
    refused: list[tuple[str, str, dict[str, Any] | None]] = [
        ("POST", "/api/agents/secret/chat", {"message": "again", "sessionId": done}),
        ("POST", f"/api/agent-sessions/{done}/regenerate", {}),
        ("POST", f"/api/agent-sessions/{done}/messages/{sent[0]['id']}/resend", {"message": "edited"}),
        ("POST", f"/api/agent-sessions/{done}/messages/{sent[0]['id']}/resend", {}),
        ("POST", f"/api/agent-sessions/{paused}/approvals", {"toolCallId": "ap1", "approved": True}),
        ("POST", f"/api/agent-sessions/{paused}/approvals", {"toolCallId": "ap1", "approved": False}),
        ("GET", f"/api/agent-sessions/{done}", None),
        ("GET", f"/api/agent-sessions/{paused}", None),
    ]
    for method, url, body in refused:
        r = world.member.request(method, url, json=body)
        assert r.status_code == 404 and r.json()["error"]["code"] == "agent_not_found", (method, url, r.text)
    assert _state(app, done, paused) == before, "a refused request wrote nothing"
    assert len(fake_model.requests) == asked, "and reached no model"
    for url in ("/api/agent-sessions", "/api/agent-sessions/search?q=words"):
        assert world.member.ok("GET", url)["items"] == [], url
    assert world.member.get(f"/chat/{done}").status_code == 404

    world.admin.ok("PUT", f"/api/admin/groups/{world.team}/members", json=[world.member_id])
    assert {s["id"] for s in world.member.ok("GET", "/api/agent-sessions")["items"]} == {done, paused}
    assert [s["id"] for s in world.member.ok("GET", "/api/agent-sessions/search?q=words")["items"]] == [done]
    fake_model.push(text("Done."))
    resumed = post_stream(world.member, f"/api/agent-sessions/{paused}/approvals",
                          {"toolCallId": "ap1", "approved": True})
    assert resumed.status == 200 and resumed.text == "Done.", "the call waited, untouched"


def test_an_approvers_answer_waits_while_the_requester_is_outside_the_group(
    app: LiveApp, world: World, make_agent: Callable[..., dict[str, Any]], fake_model: FakeModel,
    model_id: int, test_tools: None,
) -> None:
    """The run resumes as its requester: an approver's answer that could not resume it (the requester left
    the agent's group) is refused before anything is recorded, as the requester's own would be."""
    agent = make_agent("secret", CALLEE_PROMPT, groupIds=[world.team])
    reviewers = world.admin.ok("POST", "/api/admin/groups", json={"name": "reviewers"})["id"]
    guard = make_tool(world.admin, "guard", "test-guarded", approverGroupIds=[reviewers])
    attach(world.admin, agent["id"], {"toolId": guard["id"], "needsApproval": True})
    fake_model.push(Step(text="Let me.", tool_calls=[ToolCall("guard", {"action": "read"}, id="ap1")]))
    paused = chat(world.member, "secret", "please act").session_id
    assert paused
    before = _state(app, paused, paused)
    world.leave()
    r = world.admin.post(f"/api/agent-sessions/{paused}/approvals", json={"toolCallId": "ap1", "approved": True})
    assert r.status_code == 404 and r.json()["error"]["code"] == "agent_not_found", r.text
    assert _state(app, paused, paused) == before
    world.admin.ok("PUT", f"/api/admin/groups/{world.team}/members", json=[world.member_id])
    fake_model.push(text("Done."))
    answered = world.admin.ok("POST", f"/api/agent-sessions/{paused}/approvals",
                              json={"toolCallId": "ap1", "approved": True})
    assert answered["resumed"] is True


# --- a non-member on every path of the contract ------------------------------------------------------------


class Limited:
    """Everything limited to ``team`` at once: the agent ``secret`` (A2A-callable), the default model
    ``team-model`` (``fake-model`` stays open), and the tool ``team-calc`` on the open agent ``open``, which
    may also call any agent (``ask-agent``) or the agents it names (``ask-named``: ``secret`` and ``open``)."""

    def __init__(self, app: LiveApp, world: World, make_agent: Callable[..., dict[str, Any]],
                 invoke_tool: Callable[..., dict[str, Any]], fake_model_server: FakeModelServer,
                 fake_model: FakeModel, model_id: int) -> None:
        self.app, self.world, self.fake_model = app, world, fake_model
        admin, team = world.admin, world.team
        admin.ok("POST", "/api/admin/models", json={
            "provider": "openai", "baseUrl": fake_model_server.base_url, "name": "Team", "model": "team-model",
            "isDefault": True, "groupIds": [team]})
        make_agent("secret", CALLEE_PROMPT, a2aCallable=True, modelId=model_id, groupIds=[team])
        agent = make_agent("open", CALLER_PROMPT)
        limited = make_tool(admin, "team-calc", "calculator", groupIds=[team])
        attach(admin, agent["id"], {"toolId": limited["id"]}, {"toolId": make_tool(admin, "calc", "calculator")["id"]})
        invoke_tool(agent)
        invoke_tool(agent, slug="ask-named", allowedAgents=["secret", "open"])
        self.tokens = {who: c.ok("POST", "/api/auth/tokens", json={"name": "t"})["token"]
                       for who, c in world.clients().items()}

    def token(self, client: ApiClient) -> str:
        return self.tokens[next(w for w, c in self.world.clients().items() if c is client)]

    def bearer(self, client: ApiClient) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token(client)}"}

    def last_request(self) -> dict[str, Any]:
        return self.fake_model.requests[-1]


def _refused(r: httpx.Response, code: str = "agent_not_found") -> bool:
    """False (not reached) for the contract's refusal, 404 with ``code``; True for a success; else fails."""
    if r.status_code == 404:
        assert r.json()["error"]["code"] == code, r.text
        return False
    assert r.status_code == 200, r.text
    return True


def _sees_agent_in_list(w: Limited, c: ApiClient) -> bool:
    return "secret" in [a["slug"] for a in c.ok("GET", "/api/agents")["items"]]


def _reads_agent(w: Limited, c: ApiClient) -> bool:
    return _refused(c.get("/api/agents/secret"))


def _sees_agent_on_chat_page(w: Limited, c: ApiClient) -> bool:
    page = c.get("/chat")
    assert page.status_code == 200
    return '"secret"' in page.text


def _chats_with_agent(w: Limited, c: ApiClient) -> bool:
    reached = _refused(c.post("/api/agents/secret/chat", json={"message": "hi"}))
    assert bool(requests_of(w.fake_model, CALLEE_PROMPT)) == reached
    return reached


def _invokes_agent(w: Limited, c: ApiClient) -> bool:
    w.fake_model.push(ask("secret", "q"), caller_step(text("done")))
    outcome = tool_output(chat(c, "open", "go"))["type"]
    assert bool(requests_of(w.fake_model, CALLEE_PROMPT)) == (outcome == "tool-output-available")
    return outcome == "tool-output-available"


def _reads_a2a_card(w: Limited, c: ApiClient) -> bool:
    with httpx.Client(base_url=w.app.url, timeout=30) as anon:
        return _refused(anon.get("/a2a/secret/.well-known/agent-card.json", headers=w.bearer(c)),
                        "a2a_agent_not_found")


def _sends_a2a_task(w: Limited, c: ApiClient) -> bool:
    message = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
    with httpx.Client(base_url=w.app.url, timeout=30) as anon:
        sent = anon.post("/a2a/secret/rest/message:send", json=message,
                         headers={**w.bearer(c), "A2A-Version": "1.0"})
    assert sent.status_code in (200, 404), sent.text
    assert bool(requests_of(w.fake_model, CALLEE_PROMPT)) == (sent.status_code == 200)
    return sent.status_code == 200


def _lists_openai_model(w: Limited, c: ApiClient) -> bool:
    with httpx.Client(base_url=w.app.url, timeout=30) as anon:
        ids = [m["id"] for m in anon.get("/v1/models", headers=w.bearer(c)).raise_for_status().json()["data"]]
    assert "open" in ids
    return "secret" in ids


def _completes_with_openai_api(w: Limited, c: ApiClient) -> bool:
    body = {"model": "secret", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(base_url=w.app.url, timeout=30) as anon:
        r = anon.post("/v1/chat/completions", json=body, headers=w.bearer(c))
    if r.status_code == 404:
        assert r.json()["error"]["code"] == "model_not_found", r.text
        assert not requests_of(w.fake_model, CALLEE_PROMPT)
        return False
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"], r.text
    return True


def _lists_mcp_tool(w: Limited, c: ApiClient) -> bool:
    async def names(session: ClientSession) -> list[str]:
        return [t.name for t in (await session.list_tools()).tools]

    listed = with_session(f"{w.app.url}/mcp", w.token(c), names)
    assert "ask_open" in listed
    return "ask_secret" in listed


def _calls_mcp_tool(w: Limited, c: ApiClient) -> bool:
    async def ask(session: ClientSession) -> mcp_types.CallToolResult:
        result = await session.call_tool("ask_secret", {"message": "hi"})
        assert isinstance(result, mcp_types.CallToolResult)
        return result

    result = with_session(f"{w.app.url}/mcp", w.token(c), ask)
    said = "".join(part.text for part in result.content if isinstance(part, mcp_types.TextContent))
    assert bool(requests_of(w.fake_model, CALLEE_PROMPT)) == (not result.is_error)
    if result.is_error:
        assert said == "Unknown tool: ask_secret", said
    return not result.is_error


def _lists_tool(w: Limited, c: ApiClient) -> bool:
    listed = [t["name"] for t in c.ok("GET", "/api/llm/chat/tools?agent=open")["items"]]
    assert "calc" in listed
    return "team-calc" in listed


def _agents_model_gets_tool(w: Limited, c: ApiClient) -> bool:
    """The model's tool list of the open agent, and whether anything it is sent names the hidden tool or
    the hidden agent (the system prompt, a tool's description such as agent-invoke's list of agents)."""
    assert chat(c, "open", "hi").status == 200
    request = w.last_request()
    names = _tool_names(request)
    assert "calc" in names and "ask-agent" in names and "ask-named" in names
    sent = json.dumps(request)
    named = "team-calc" in sent and "secret" in sent
    assert named == ("team-calc" in names), "named to the model exactly when it may use them"
    assert CALLER_PROMPT in json.dumps(request["messages"][0])
    return named


def _plain_chats_model_gets_tool(w: Limited, c: ApiClient) -> bool:
    assert post_stream(c, "/api/llm/chat", {"message": "hi"}).status == 200
    names = _tool_names(w.last_request())
    assert "calc" in names
    assert ("team-calc" in json.dumps(w.last_request())) == ("team-calc" in names)
    return "team-calc" in names


def _uses_limited_model(w: Limited, c: ApiClient) -> bool:
    models = set()
    assert post_stream(c, "/api/llm/chat", {"message": "hi"}).status == 200
    models.add(w.last_request()["model"])
    assert chat(c, "open", "hi").status == 200  # an agent without a model of its own: the caller's default
    models.add(w.last_request()["model"])
    assert len(models) == 1
    return models == {"team-model"}


PATHS: dict[str, Callable[[Limited, ApiClient], bool]] = {
    "GET /api/agents": _sees_agent_in_list,
    "GET /api/agents/{slug}": _reads_agent,
    "GET /chat (agent picker)": _sees_agent_on_chat_page,
    "POST /api/agents/{slug}/chat": _chats_with_agent,
    "agent-invoke": _invokes_agent,
    "A2A agent card": _reads_a2a_card,
    "A2A message:send": _sends_a2a_task,
    "GET /v1/models": _lists_openai_model,
    "POST /v1/chat/completions": _completes_with_openai_api,
    "MCP tools/list": _lists_mcp_tool,
    "MCP tools/call": _calls_mcp_tool,
    "GET /api/llm/chat/tools": _lists_tool,
    "agent chat: the model's tools and prompt": _agents_model_gets_tool,
    "plain chat: the model's tools and prompt": _plain_chats_model_gets_tool,
    "the default model (plain chat, agent without a model)": _uses_limited_model,
}


@pytest.mark.parametrize("path", PATHS)
def test_a_non_member_never_reaches_what_is_limited_to_a_group(
    app: LiveApp, world: World, make_agent: Callable[..., dict[str, Any]],
    invoke_tool: Callable[..., dict[str, Any]], fake_model_server: FakeModelServer, fake_model: FakeModel,
    model_id: int, path: str,
) -> None:
    """The contract's every path, for the outsider (never reached, refused as the contract says), the
    member and an admin (reached)."""
    limited = Limited(app, world, make_agent, invoke_tool, fake_model_server, fake_model, model_id)
    for who, client in world.clients().items():
        fake_model.requests.clear()
        assert PATHS[path](limited, client) == (who != "outsider"), who
