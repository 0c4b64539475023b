"""A tool call's turn stays in the trace of the ``POST /mcp`` that started it, as a chat's and a
completion's do, though the SDK runs the call in a task of its own; the request's span is named by the
route, as every other request's is."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.fakes.openai_server import FakeModel, text
from tests.mcp_server.conftest import with_session
from tests.support import LiveApp
from tests.tracing_support import descends_from, named, wait_for_spans


@pytest.fixture
def app(traced: tuple[LiveApp, InMemorySpanExporter]) -> LiveApp:
    return traced[0]


def test_the_turn_of_a_call_is_in_the_requests_trace(
    traced: tuple[LiveApp, InMemorySpanExporter], token: str, mcp_url: str, agent: dict[str, Any],
    fake_model: FakeModel,
) -> None:
    memory = traced[1]
    fake_model.push(text("traced reply"))

    async def ask(session: ClientSession) -> types.CallToolResult:
        result = await session.call_tool("ask_help_desk", {"message": "hi"})
        assert isinstance(result, types.CallToolResult)
        return result

    assert not with_session(mcp_url, token, ask).is_error
    finished = wait_for_spans(memory, lambda ss: bool(named(ss, "chat turn")))
    (turn,) = named(finished, "chat turn")
    calls = [s for s in finished if s.name == "POST /mcp" and descends_from(turn, s, finished)]
    assert len(calls) == 1  # the request's span, named by its route like any other
