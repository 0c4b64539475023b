"""An A2A hop in one trace: a turn that calls a remote agent over A2A sends its trace context, and the
callee (here the same server, reached over HTTP like any remote agentloft) continues it, its request and
its turn in the caller's trace."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.a2a.conftest import CALLEE_PROMPT, CALLER_PROMPT, callee_step, caller_step
from tests.a2a.test_invoke import tool_output
from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel, call, text
from tests.support import ApiClient, LiveApp
from tests.tracing_support import wait_for_spans


@pytest.fixture
def app(traced: tuple[LiveApp, InMemorySpanExporter]) -> LiveApp:
    return traced[0]


def _turns(spans: list[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {str((s.attributes or {}).get("agentloft.agent")): s for s in spans if s.name == "chat turn"}


def test_the_callee_continues_the_callers_trace(
    traced: tuple[LiveApp, InMemorySpanExporter], app: LiveApp, admin: ApiClient, user: ApiClient,
    make_agent: Callable[..., dict[str, Any]], invoke_tool: Callable[..., dict[str, Any]], fake_model: FakeModel,
) -> None:
    _, memory = traced
    make_agent("coder", CALLEE_PROMPT, name="Coder", a2aCallable=True)
    token = admin.ok("POST", "/api/auth/tokens", json={"name": "self"})["token"]
    admin.ok("PUT", "/api/admin/settings", json={"allowedInternalHosts": ["127.0.0.1"]})
    caller = make_agent("general", CALLER_PROMPT, name="General")
    invoke_tool(caller, timeoutMs=30_000)
    admin.ok("POST", "/api/admin/agents", json={
        "slug": "far-coder", "name": "Far coder", "kind": "remote", "a2aCallable": True,
        "cardUrl": f"{app.url}/a2a/coder/.well-known/agent-card.json", "remoteToken": token})

    fake_model.push(caller_step(call("ask-agent", {"agentSlug": "far-coder", "input": "write add()"})),
                    callee_step(text("def add(a, b): return a + b")),
                    caller_step(text("Done.")))
    reply = chat(user, "general", "get me add()")
    assert tool_output(reply)["type"] == "tool-output-available"

    spans = wait_for_spans(memory, lambda ss: {"general", "coder"} <= set(_turns(ss)))
    turns = _turns(spans)
    caller_turn, callee_turn = turns["general"], turns["coder"]
    assert caller_turn.context is not None and callee_turn.context is not None
    assert callee_turn.context.trace_id == caller_turn.context.trace_id
    # it came over HTTP: the callee's request span has a remote parent in the caller's trace
    hops = [s for s in spans if s.kind.name == "SERVER" and s.parent is not None and s.parent.is_remote
            and str((s.attributes or {}).get("http.route", "")).startswith("/a2a/")]
    assert hops and all(s.context is not None and s.context.trace_id == caller_turn.context.trace_id for s in hops)
