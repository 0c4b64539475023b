"""Attached images and files reach each provider in its own format, over HTTP to the fake servers: OpenAI
``image_url`` parts with a ``data:`` URL, Anthropic base64 image blocks, and the file text as text parts."""

from __future__ import annotations

import base64
from typing import Any

from tests.chat.helpers import make_agent, post_stream
from tests.fakes.anthropic_server import FakeAnthropic, FakeAnthropicServer, say
from tests.fakes.openai_server import FakeModel, text
from tests.files.samples import JPEG, PNG
from tests.support import ApiClient

NOTE = "Quarterly numbers: 42 widgets."


def _attach(user: ApiClient) -> list[str]:
    ids = []
    for name, data in (("photo.png", PNG), ("shot.jpg", JPEG), ("numbers.txt", NOTE.encode())):
        ids.append(user.ok("POST", "/api/files", files={"file": (name, data, "application/octet-stream")})["id"])
    return ids


def _send(user: ApiClient, slug: str, ids: list[str]) -> None:
    res = post_stream(user, f"/api/agents/{slug}/chat", {"message": "Describe these", "attachments": ids})
    assert res.status == 200 and not res.of("error"), res.body


def test_openai_gets_image_url_parts_with_data_urls(
    admin: ApiClient, user: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    admin.ok("PUT", f"/api/admin/models/{model_id}", json={"vision": True})
    make_agent(admin, "looker", modelId=model_id)
    fake_model.push(text("Two images and a note."))
    _send(user, "looker", _attach(user))
    content: list[dict[str, Any]] = fake_model.requests[-1]["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "Describe these"}
    assert content[1]["type"] == "text" and 'name="numbers.txt"' in content[1]["text"] and NOTE in content[1]["text"]
    assert [p["image_url"]["url"] for p in content[2:]] == [
        "data:image/png;base64," + base64.b64encode(PNG).decode(),
        "data:image/jpeg;base64," + base64.b64encode(JPEG).decode()]


def test_anthropic_gets_base64_image_blocks(
    admin: ApiClient, user: ApiClient, anthropic_server: FakeAnthropicServer, fake_anthropic: FakeAnthropic
) -> None:
    model = admin.ok("POST", "/api/admin/models", json={
        "name": "Claude", "provider": "anthropic", "baseUrl": anthropic_server.base_url,
        "model": "claude-sonnet-4-5", "apiKey": "sk-ant-test"})
    make_agent(admin, "claude", modelId=model["id"])
    fake_anthropic.push(say("Two images and a note."))
    _send(user, "claude", _attach(user))
    blocks: list[dict[str, Any]] = fake_anthropic.requests[-1]["messages"][-1]["content"]
    assert blocks[0]["type"] == "text" and blocks[0]["text"] == "Describe these"
    assert blocks[1]["type"] == "text" and NOTE in blocks[1]["text"]
    assert [b["source"] for b in blocks[2:]] == [
        {"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()},
        {"type": "base64", "media_type": "image/jpeg", "data": base64.b64encode(JPEG).decode()}]
    assert all(b["type"] == "image" for b in blocks[2:])
