"""Fixtures for the MCP server: an agent on the fake model, the user's API token, and the official SDK's
client (``streamable_http_client`` + ``ClientSession``) connected to the live app's ``/mcp``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.chat.helpers import make_agent, register_test_tools
from tests.support import ApiClient, LiveApp

T = TypeVar("T")


@pytest.fixture
def agent(admin: ApiClient, model_id: int) -> dict[str, Any]:
    return make_agent(admin, "help-desk", modelId=model_id, maxSteps=5, description="Answers questions.")


def token_of(client: ApiClient) -> str:
    """A personal API token of ``client``'s user, made as the Tokens page makes one."""
    return client.ok("POST", "/api/auth/tokens", json={"name": "mcp"})["token"]


@pytest.fixture
def token(user: ApiClient) -> str:
    return token_of(user)


@pytest.fixture
def mcp_url(app: LiveApp) -> str:
    return f"{app.url}/mcp"


@pytest.fixture
def test_tools(app: LiveApp) -> None:
    register_test_tools(app)


@asynccontextmanager
async def connected(url: str, token: str) -> AsyncIterator[ClientSession]:
    """An initialized SDK session with the token as its bearer header, as an MCP host's config gives it."""
    async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        yield session


def with_session(url: str, token: str, use: Callable[[ClientSession], Awaitable[T]]) -> T:
    """Run ``use`` on a connected session, from a synchronous test."""
    async def run() -> T:
        async with connected(url, token) as session:
            return await use(session)

    return asyncio.run(run())
