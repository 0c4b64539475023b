"""A chat turn's trace: the request's span, under it the ``chat turn`` span (agent, model, session,
outcome), under that a span per model call (``llm.traced``: GenAI attributes, tokens, finish reason; a
failure's status) and per tool call (name, call id, tool type and outcome), and no agent-run span of
pydantic-ai's; a title's model call is a span too. Nothing anyone wrote goes in any span unless
``AGENTLOFT_TRACE_CONTENT`` is on: then the model spans carry the messages and the tool spans the
arguments and results."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.chat.helpers import attach, chat, make_tool, post_stream
from tests.chat.test_titles_and_search import title_step
from tests.fakes.openai_server import FakeModel, Step, ToolCall, text
from tests.fakes.otlp_receiver import Receiver
from tests.support import ApiClient, LiveApp
from tests.tracing_support import all_text, descends_from, named, traced_app, wait_for_spans

ASKED = "pelican-vermouth-31"  # the user's words
ARGUMENT = "tangerine-obelisk-52"  # the model's tool argument
ANSWERED = "saffron-gazebo-73"  # the model's reply
FAILURE = "marzipan-lighthouse-19"  # what a failing provider answered (it may quote the request)


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
    models.sort(key=lambda s: s.start_time or 0)
    for model, reason in zip(models, ("tool_call", "stop"), strict=True):
        attrs = dict(model.attributes or {})
        assert model.kind == trace.SpanKind.CLIENT and model.status.status_code == trace.StatusCode.UNSET
        assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.provider.name"] == "openai"
        assert attrs["gen_ai.request.model"] == "fake-model" and attrs["gen_ai.response.model"] == "fake-model"
        assert attrs["gen_ai.usage.input_tokens"] == 10 and int(str(attrs["gen_ai.usage.output_tokens"])) > 0
        assert tuple(attrs["gen_ai.response.finish_reasons"]) == (reason,)  # type: ignore[arg-type]
        assert attrs["server.address"] == "127.0.0.1"
        assert "gen_ai.tool.definitions" not in attrs and "gen_ai.input.messages" not in attrs
    # ours only: no agent-run span of pydantic-ai's repeating the turn
    assert {s.instrumentation_scope.name for s in finished if s.instrumentation_scope} == {"agentloft"}
    tools = {str((s.attributes or {}).get("gen_ai.tool.name")): s for s in finished
             if s.name.startswith("execute_tool")}
    assert set(tools) == {"echo", "boom"}
    assert all(descends_from(t, turn, finished) for t in tools.values())
    assert tools["echo"].attributes["agentloft.tool.outcome"] == "success"  # type: ignore[index]
    assert tools["echo"].attributes["agentloft.tool.type"] == "test-echo"  # type: ignore[index]
    assert tools["echo"].attributes["gen_ai.tool.call.id"] == "c1"  # type: ignore[index]
    assert tools["boom"].attributes["agentloft.tool.outcome"] != "success"  # type: ignore[index]
    assert tools["boom"].status.status_code == trace.StatusCode.ERROR
    assert not any("gen_ai.tool.call.arguments" in (t.attributes or {}) for t in tools.values())
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
    first, last = sorted(named(finished, "chat fake-model"), key=lambda s: s.start_time or 0)
    assert ASKED in str((first.attributes or {})["gen_ai.input.messages"])
    assert ARGUMENT in str((first.attributes or {})["gen_ai.output.messages"])  # the call it asked for
    assert ANSWERED in str((last.attributes or {})["gen_ai.output.messages"])
    assert "You are helper." in str((first.attributes or {})["gen_ai.system_instructions"])
    (echo,) = [s for s in finished if s.name == "execute_tool echo"]
    assert ARGUMENT in str((echo.attributes or {})["gen_ai.tool.call.arguments"])
    assert ARGUMENT in str((echo.attributes or {})["gen_ai.tool.call.result"])  # the echo tool says it back


@pytest.mark.parametrize("content", [False, True], ids=["content-off", "content-on"], indirect=True)
def test_a_failed_model_call_is_an_error_span(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel, spans: InMemorySpanExporter,
    content: bool,
) -> None:
    fake_model.push(Step(error_status=400, error_message=FAILURE))  # 400: the SDK does not retry it
    chat(user, "helper", f"tell me about {ASKED}")
    finished = _finished_turn(spans)
    (model,) = named(finished, "chat fake-model")
    attrs = dict(model.attributes or {})
    assert model.status.status_code == trace.StatusCode.ERROR
    assert str(attrs["error.type"]).startswith("pydantic_ai.exceptions.Model")  # the type, fully named
    assert [e.name for e in model.events] == ["exception"]
    assert (FAILURE in all_text(model) or FAILURE in str(model.status.description)) is content
    (turn,) = named(finished, "chat turn")
    assert descends_from(model, turn, finished)


def test_a_titles_model_call_is_a_span(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    spans: InMemorySpanExporter,
) -> None:
    admin.ok("PUT", "/api/admin/settings", json={"generateTitles": True})
    fake_model.push(text(ANSWERED), title_step("Pelicans"))
    session_id = chat(user, "helper", f"tell me about {ASKED}").session_id
    assert user.ok("POST", f"/api/agent-sessions/{session_id}/title")["title"] == "Pelicans"
    finished = wait_for_spans(spans, lambda ss: any(s.name.endswith("/title") for s in ss))
    (request,) = [s for s in finished if s.name.startswith("POST ") and s.name.endswith("/title")]
    titled = [s for s in named(finished, "chat fake-model") if descends_from(s, request, finished)]
    assert len(titled) == 1



def test_a_pause_for_approval_is_a_tool_span_without_error(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    spans: InMemorySpanExporter, test_tools: None,
) -> None:
    tool = make_tool(admin, "echo", "test-echo", needsApproval=True)
    attach(admin, agent["id"], {"toolId": tool["id"], "position": 0})
    fake_model.push(Step(tool_calls=[ToolCall("echo", {"text": ARGUMENT}, id="ap1")]))
    sid = chat(user, "helper", "please echo").session_id
    (paused,) = [s for s in _finished_turn(spans) if s.name == "execute_tool echo"]
    assert (paused.attributes or {})["agentloft.tool.outcome"] == "approval_required"
    assert paused.status.status_code == trace.StatusCode.UNSET  # a pause, not a failure
    spans.clear()
    fake_model.push(text(ANSWERED))
    answer = {"toolCallId": "ap1", "approved": True}
    assert post_stream(user, f"/api/agent-sessions/{sid}/approvals", answer).status == 200
    resumed = wait_for_spans(spans, lambda ss: bool(named(ss, "chat turn")) and bool(named(ss, "execute_tool echo")))
    (ran,) = named(resumed, "execute_tool echo")
    assert (ran.attributes or {})["agentloft.tool.outcome"] == "success"
