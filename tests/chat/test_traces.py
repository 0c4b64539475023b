"""A chat turn's trace: the request's span, under it the ``chat turn`` span (agent, model, session,
outcome), under that pydantic-ai's agent run with its model calls and tool calls (tool type and outcome
added); nothing anyone wrote in any span unless ``AGENTLOFT_TRACE_CONTENT`` is on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.chat.helpers import attach, chat, make_tool
from tests.fakes.openai_server import FakeModel, Step, ToolCall, text
from tests.fakes.otlp_receiver import Receiver
from tests.support import ApiClient, LiveApp
from tests.tracing_support import all_text, descends_from, named, traced_app, wait_for_spans

ASKED = "pelican-vermouth-31"  # the user's words
ARGUMENT = "tangerine-obelisk-52"  # the model's tool argument
ANSWERED = "saffron-gazebo-73"  # the model's reply


@pytest.fixture(params=[False], ids=["content-off"])
def content(request: pytest.FixtureRequest) -> bool:
    return request.param


@pytest.fixture
def traced(receiver: Receiver, tmp_path: Path, template_db: Path,
           content: bool) -> Iterator[tuple[LiveApp, InMemorySpanExporter]]:
    yield from traced_app(tmp_path, template_db, trace_content=content)


@pytest.fixture
def app(traced: tuple[LiveApp, InMemorySpanExporter]) -> LiveApp:
    return traced[0]


@pytest.fixture
def spans(traced: tuple[LiveApp, InMemorySpanExporter]) -> InMemorySpanExporter:
    return traced[1]


def _turn_with_tools(admin: ApiClient, user: ApiClient, agent: dict[str, Any],
                     fake_model: FakeModel) -> str:
    echo, boom = make_tool(admin, "echo", "test-echo"), make_tool(admin, "boom", "test-fail")
    attach(admin, agent["id"], {"toolId": echo["id"], "position": 0}, {"toolId": boom["id"], "position": 1})
    fake_model.push(
        Step(text="Looking.", tool_calls=[ToolCall("echo", {"text": ARGUMENT}, id="c1"),
                                          ToolCall("boom", {"text": "x"}, id="c2")]),
        text(ANSWERED),
    )
    res = chat(user, "helper", f"tell me about {ASKED}")
    assert ANSWERED in res.text
    return res.session_id


def _finished_turn(memory: InMemorySpanExporter) -> list[ReadableSpan]:
    return wait_for_spans(memory, lambda ss: bool(named(ss, "chat turn"))
                          and any(s.name.startswith("POST /api/agents/") for s in ss))


def test_a_turn_is_a_span_with_its_model_and_tool_calls_under_it(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    spans: InMemorySpanExporter, test_tools: None,
) -> None:
    session_id = _turn_with_tools(admin, user, agent, fake_model)
    finished = _finished_turn(spans)
    (turn,) = named(finished, "chat turn")
    attrs = dict(turn.attributes or {})
    assert attrs["agentloft.agent"] == "helper" and attrs["gen_ai.request.model"] == "fake-model"
    assert attrs["agentloft.session_id"] == session_id and attrs["agentloft.turn.outcome"] == "complete"
    (request,) = [s for s in finished if s.name == "POST /api/agents/{slug}/chat"]
    assert descends_from(turn, request, finished)  # the background turn stays in the request's trace

    models = named(finished, "chat fake-model")
    assert len(models) == 2 and all(descends_from(m, turn, finished) for m in models)
    tools = {str((s.attributes or {}).get("gen_ai.tool.name")): s for s in finished
             if s.name.startswith("execute_tool")}
    assert set(tools) == {"echo", "boom"}
    assert all(descends_from(t, turn, finished) for t in tools.values())
    assert tools["echo"].attributes["agentloft.tool.outcome"] == "success"  # type: ignore[index]
    assert tools["echo"].attributes["agentloft.tool.type"] == "test-echo"  # type: ignore[index]
    assert tools["boom"].attributes["agentloft.tool.outcome"] != "success"  # type: ignore[index]
    statements = [s for s in finished if "db.statement" in (s.attributes or {})]
    assert any(descends_from(s, turn, finished) for s in statements)  # the turn's own saves

    for span in finished:
        for words in (ASKED, ARGUMENT, ANSWERED):
            assert words not in all_text(span), (span.name, words)


@pytest.mark.parametrize("content", [True], ids=["content-on"], indirect=True)
def test_message_content_only_when_an_admin_turns_it_on(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    spans: InMemorySpanExporter, test_tools: None,
) -> None:
    _turn_with_tools(admin, user, agent, fake_model)
    finished = _finished_turn(spans)
    seen = "\n".join(all_text(s) for s in finished)
    assert ASKED in seen and ARGUMENT in seen and ANSWERED in seen

