"""Trace context reaches the MCP servers a chat calls: the server sees a ``traceparent`` header of the
calling turn's trace (over streamable HTTP)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel, call, text
from tests.support import ApiClient, LiveApp
from tests.tools.mcp.conftest import TOKEN, HttpPeer, tools_by_name
from tests.tracing_support import named, wait_for_spans


@pytest.fixture
def app(traced: tuple[LiveApp, InMemorySpanExporter]) -> LiveApp:
    return traced[0]


def test_an_mcp_call_carries_the_turns_trace(
    traced: tuple[LiveApp, InMemorySpanExporter], admin: ApiClient, user: ApiClient, mcp_http: HttpPeer,
    allow_local: None, add_server: Callable[..., dict[str, Any]], make_agent: Callable[..., dict[str, Any]],
    fake_model: FakeModel,
) -> None:
    _, memory = traced
    server = add_server(transport="http", url=mcp_http.url, secret=TOKEN)
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    admin.ok("PUT", f"/api/agent-tools/{tools['add']['toolId']}", json={"enabled": True})
    agent = make_agent("calc")
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=[{"toolId": tools["add"]["toolId"]}])
    seen_before = len(mcp_http.guard.headers)

    fake_model.push(call("testing__add", {"a": 20, "b": 22}), text("It is 42."))
    reply = chat(user, "calc", "what is 20 + 22?")
    assert reply.text == "It is 42."
    spans = wait_for_spans(memory, lambda ss: bool(named(ss, "chat turn")))
    (turn,) = named(spans, "chat turn")
    assert turn.context is not None
    trace_id = f"{turn.context.trace_id:032x}"

    calls = [h for h in mcp_http.guard.headers[seen_before:] if h.get("mcp-method") == "tools/call"]
    parents = [h.get("traceparent", "") for h in calls]
    assert calls and any(p.split("-")[1:2] == [trace_id] for p in parents if p), mcp_http.guard.headers[seen_before:]
