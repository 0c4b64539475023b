"""An agent's A2A request handler is built once and kept (its running tasks live in it); edits to the
agent reach it through the one card object it was built with, refreshed in place."""

from __future__ import annotations

from pathlib import Path

from agentloft.a2a.server import build_card
from agentloft.agents.models import Agent
from agentloft.app import build_runtime
from agentloft.core.settings import load_settings

URL = "http://127.0.0.1:1"


async def test_an_edited_agent_keeps_its_handler_and_the_handler_sees_the_new_card(tmp_path: Path) -> None:
    rt = build_runtime(load_settings(data_dir=tmp_path))
    try:
        servers = rt.a2a
        agent = Agent(id=7, slug="coder", name="Coder", description="Writes code.")
        first_card = build_card(agent, URL)
        dispatcher = servers.dispatcher(agent, first_card)

        agent.name, agent.description = "Renamed", "Reviews code."
        assert servers.dispatcher(agent, build_card(agent, URL)) is dispatcher
        assert first_card.name == "Renamed" and first_card.skills[0].description == "Reviews code."
        # The SDK reads the card it was given (a2a-sdk is pinned exactly); a copy would stay stale.
        assert dispatcher.request_handler._agent_card is first_card
    finally:
        await rt.a2a.close()
        await rt.db.dispose()
