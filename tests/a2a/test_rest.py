"""The fuller A2A server: the HTTP+JSON (REST) binding next to JSON-RPC, both listed in every card and
both driven here by a2a-sdk's own client; and the JSON-RPC content-type rule the conformance kit checks
(-32005 for a body not declared as JSON, -32700 for JSON that does not parse)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import GetTaskRequest, SendMessageRequest, StreamResponse, Task

from tests.a2a import a2a_client as ac
from tests.a2a.conftest import CALLEE_PROMPT, callee_step
from tests.fakes.openai_server import FakeModel, Step
from tests.support import ApiClient, LiveApp

RPC = {"jsonrpc": "2.0", "id": "req-7", "method": "GetTask", "params": {"id": "nope"}}


async def rest_client_run(base: str, token: str, text: str, streaming: bool) -> tuple[list[StreamResponse], Task]:
    """Send through the REST binding only (the client picks it from the card), then read the task back."""
    async with ac.http(token) as hc:
        card = await ac.card(base, "coder")
        config = ClientConfig(streaming=streaming, httpx_client=hc, supported_protocol_bindings=["HTTP+JSON"])
        client = await create_client(card, client_config=config)
        events = [ev async for ev in client.send_message(SendMessageRequest(message=ac.user_message(text)))]
        task_id = next(ev.task.id if ev.HasField("task") else ev.status_update.task_id for ev in events
                       if ev.HasField("task") or ev.HasField("status_update"))
        return events, await client.get_task(GetTaskRequest(id=task_id))


def test_card_lists_both_bindings(app: LiveApp, make_agent: Callable[..., dict[str, Any]]) -> None:
    make_agent("coder", CALLEE_PROMPT, a2aCallable=True)
    card = ac.run(ac.card(app.url, "coder"))
    assert [(i.protocol_binding, i.url) for i in card.supported_interfaces] == [
        ("JSONRPC", f"{app.url}/a2a/coder/"), ("HTTP+JSON", f"{app.url}/a2a/coder/rest")]


def test_rest_streaming_and_blocking(
    app: LiveApp, make_agent: Callable[..., dict[str, Any]], token: str, fake_model: FakeModel
) -> None:
    make_agent("coder", CALLEE_PROMPT, a2aCallable=True)
    fake_model.push(callee_step(Step(text="def add(a, b): return a + b", chunks=4, delay=0.1)))
    events, task = ac.run(rest_client_run(app.url, token, "write add()", streaming=True))
    assert "".join(ac.artifact_text(events)) == "def add(a, b): return a + b"
    assert len(ac.artifact_text(events)) > 1, "streamed in pieces"
    assert task.status.state == 3  # TASK_STATE_COMPLETED
    fake_model.push(callee_step(Step(text="pong")))
    events, task = ac.run(rest_client_run(app.url, token, "ping", streaming=False))
    assert "".join(p.text for a in task.artifacts for p in a.parts) == "pong"


def test_rest_needs_a_token_and_a_known_method(
    anon: ApiClient, make_agent: Callable[..., dict[str, Any]], token: str
) -> None:
    make_agent("coder", CALLEE_PROMPT, a2aCallable=True)
    headers = {"A2A-Version": "1.0"}
    assert anon.get("/a2a/coder/rest/tasks/nope", headers=headers).status_code == 401
    auth = {**headers, "Authorization": f"Bearer {token}"}
    missing = anon.get("/a2a/coder/rest/tasks/nope", headers=auth)
    assert missing.status_code == 404, missing.text
    unknown = anon.get("/a2a/coder/rest/no/such/thing/here", headers=auth)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    wrong = anon.delete("/a2a/coder/rest/message:send", headers=auth)
    assert wrong.status_code == 405 and wrong.json()["error"] == {
        "code": "method_not_allowed", "message": "no A2A REST method at DELETE /message:send",
        "requestId": wrong.headers["x-request-id"]}
    assert anon.get("/a2a/nobody/rest/tasks/x", headers=auth).status_code == 404


def test_jsonrpc_content_type_rule(
    anon: ApiClient, make_agent: Callable[..., dict[str, Any]], token: str
) -> None:
    make_agent("coder", CALLEE_PROMPT, a2aCallable=True)
    auth = {"A2A-Version": "1.0", "Authorization": f"Bearer {token}"}
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
        headers = {**auth, **({"Content-Type": content_type} if content_type else {})}
        r = anon.post("/a2a/coder/", content=json.dumps(RPC), headers=headers)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["error"]["code"] == -32005 and body["id"] == "req-7", (content_type, body)
    bad_json = anon.post("/a2a/coder/", content=b"{not json", headers={**auth, "Content-Type": "application/json"})
    assert bad_json.json()["error"]["code"] == -32700
    charset = anon.post("/a2a/coder/", content=json.dumps(RPC),
                        headers={**auth, "Content-Type": "application/json; charset=utf-8"})
    assert charset.json()["error"]["code"] == -32001, "JSON with a charset is JSON"


def test_rest_error_shape_for_unknown_task(anon: ApiClient, make_agent: Callable[..., dict[str, Any]], token: str
                                           ) -> None:
    make_agent("coder", CALLEE_PROMPT, a2aCallable=True)
    r = httpx.get(f"{anon.base_url}/a2a/coder/rest/tasks/nope",
                  headers={"A2A-Version": "1.0", "Authorization": f"Bearer {token}"})
    assert r.status_code == 404 and r.headers["content-type"].startswith("application/")


def test_rest_answers_plain_json_and_takes_either_json_type(
    anon: ApiClient, make_agent: Callable[..., dict[str, Any]], token: str, fake_model: FakeModel
) -> None:
    """The A2A 1.0 specification's section 11.1: the HTTP+JSON binding answers ``application/json`` (the
    conformance kit's HTTP_JSON-SVC-001); a2a-sdk labels its answers ``application/a2a+json``. Requests
    of both types are taken."""
    make_agent("coder", CALLEE_PROMPT, a2aCallable=True)
    auth = {"A2A-Version": "1.0", "Authorization": f"Bearer {token}"}
    for n, media in enumerate(("application/json", "application/a2a+json")):
        fake_model.push(callee_step(Step(text=f"pong {n}")))
        body = {"message": {"messageId": f"m{n}", "role": "ROLE_USER", "parts": [{"text": "ping"}]}}
        sent = httpx.post(f"{anon.base_url}/a2a/coder/rest/message:send", json=body, timeout=30,
                          headers={**auth, "Content-Type": media})
        assert sent.status_code == 200, sent.text
        assert sent.headers["content-type"] == "application/json", media
        task = sent.json()["task"]
        read = httpx.get(f"{anon.base_url}/a2a/coder/rest/tasks/{task['id']}", headers=auth)
        assert read.status_code == 200 and read.headers["content-type"] == "application/json"
        assert read.json()["id"] == task["id"]
