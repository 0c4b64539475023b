"""What an A2A request may carry, on both bindings: the chat's 100,000 characters, at most 100 parts, a
body of at most 2 MiB, JSON nested no deeper than it parses; refused in the binding's own error shape
before anything is created or any model is asked."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest
from a2a.utils.errors import InvalidParamsError

from tests.a2a import a2a_client as ac
from tests.a2a.conftest import CALLEE_PROMPT, callee_step
from tests.fakes.openai_server import FakeModel, Step
from tests.support import ApiClient, LiveApp

BINDINGS = ("JSONRPC", "HTTP+JSON")
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


@pytest.fixture
def coder(make_agent: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    return make_agent("coder", CALLEE_PROMPT, name="Coder", a2aCallable=True)


def message(*texts: str) -> Message:
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=t) for t in texts])


async def send(base: str, token: str, binding: str, msg: Message, streaming: bool) -> list[Any]:
    """Send ``msg`` with the SDK's client over one binding."""
    async with ac.http(token) as hc:
        card = await ac.card(base, "coder")
        config = ClientConfig(streaming=streaming, httpx_client=hc, supported_protocol_bindings=[binding])
        client = await create_client(card, client_config=config)
        return [ev async for ev in client.send_message(SendMessageRequest(message=msg))]


def nothing_created(app: LiveApp, fake_model: FakeModel) -> None:
    assert app.sql("SELECT count(*) FROM a2a_task_sessions") == [(0,)]
    assert app.sql("SELECT count(*) FROM agent_messages") == [(0,)]
    assert fake_model.requests == []


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "send"])
def test_too_many_parts_or_too_much_text_is_invalid_params(
    app: LiveApp, coder: dict[str, Any], token: str, fake_model: FakeModel, binding: str, streaming: bool
) -> None:
    with pytest.raises(InvalidParamsError, match="the message has 101 parts; at most 100 are accepted"):
        ac.run(send(app.url, token, binding, message(*["a"] * 101), streaming))
    with pytest.raises(InvalidParamsError, match="text is 100,001 characters long; at most 100,000"):
        ac.run(send(app.url, token, binding, message("b" * 100_001), streaming))
    # the parts are counted as the agent gets them: joined by a newline each
    with pytest.raises(InvalidParamsError, match="text is 100,001 characters long"):
        ac.run(send(app.url, token, binding, message("c" * 50_000, "d" * 50_000), streaming))
    nothing_created(app, fake_model)


def test_a_message_at_the_limits_is_answered(
    app: LiveApp, coder: dict[str, Any], token: str, fake_model: FakeModel
) -> None:
    """100 parts and 100,000 characters in all, the newlines between parts included, reach the model."""
    texts = ["x" * 999] * 99 + ["y" * (100_000 - 999 * 99 - 99)]
    fake_model.push(callee_step(Step(text="read it all")))
    events = ac.run(send(app.url, token, "JSONRPC", message(*texts), streaming=True))
    assert "".join(ac.artifact_text(events)) == "read it all"
    sent = fake_model.requests[-1]["messages"][-1]["content"]
    assert sent == "\n".join(texts) and len(sent) == 100_000


def test_the_issues_bodies_are_refused_before_they_are_parsed(
    app: LiveApp, anon: ApiClient, coder: dict[str, Any], token: str, fake_model: FakeModel
) -> None:
    """400,000 one-letter parts (a 6 MB body, 46 s of parsing before) and one 15 MB text part."""
    auth = {**HEADERS, "Authorization": f"Bearer {token}"}
    for parts in ([{"text": "a"}] * 400_000, [{"text": "z" * 15_000_000}]):
        params = {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": parts}}
        rpc = anon.post("/a2a/coder/", headers=auth,
                        content=json.dumps({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": params}))
        assert rpc.status_code == 200, rpc.text
        error = rpc.json()["error"]
        assert error["code"] == -32600 and "larger than 2,097,152 bytes" in error["message"], error
        rest = anon.post("/a2a/coder/rest/message:send", headers=auth, content=json.dumps(params))
        assert rest.status_code == 400 and rest.json()["error"]["status"] == "INVALID_ARGUMENT", rest.text
        assert "larger than 2,097,152 bytes" in rest.json()["error"]["message"]
    nothing_created(app, fake_model)


DEEP = {
    "brackets": "[" * 200_000,
    "field": '{"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}], "metadata": '
             + '{"a": ' * 5_000 + "1" + "}" * 5_000 + "}}",
}


@pytest.mark.parametrize("shape", DEEP)
def test_deeply_nested_json_is_a_client_error_on_every_path(
    app: LiveApp, anon: ApiClient, coder: dict[str, Any], token: str, fake_model: FakeModel, shape: str
) -> None:
    auth = {**HEADERS, "Authorization": f"Bearer {token}"}
    params = DEEP[shape]
    rpc_body = params if shape == "brackets" else f'{{"jsonrpc": "2.0", "id": 3, "method": "SendMessage", ' \
                                                  f'"params": {params}}}'
    for content_type in ("application/json", "text/plain"):  # the second took the content-type path: a 500
        r = anon.post("/a2a/coder/", content=rpc_body, headers={**auth, "Content-Type": content_type})
        assert r.status_code == 200, (content_type, r.status_code, r.text)
        assert r.json()["error"] == {"code": -32700, "message": "the request's JSON is nested too deeply"}
    for path in ("message:send", "message:stream"):
        r = anon.post(f"/a2a/coder/rest/{path}", content=params, headers=auth)
        assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT", (path, r.text)
        assert r.json()["error"]["message"] == "the request's JSON is nested too deeply"
    nothing_created(app, fake_model)


def test_other_methods_still_work_after_the_check(
    anon: ApiClient, coder: dict[str, Any], token: str
) -> None:
    """The checked body reaches the SDK whole: its answers are unchanged (not found, in each shape)."""
    auth = {**HEADERS, "Authorization": f"Bearer {token}"}
    rpc = anon.post("/a2a/coder/", headers=auth,
                    json={"jsonrpc": "2.0", "id": "g1", "method": "GetTask", "params": {"id": "nope"}})
    assert rpc.json()["error"]["code"] == -32001 and rpc.json()["id"] == "g1"
    rest = anon.post("/a2a/coder/rest/tasks/nope:cancel", headers=auth, content=b"{}")
    assert rest.status_code == 404, rest.text
