"""A thin helper around the a2a-sdk client for the tests: discover the card, send, stream, fetch."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import AgentCard, GetTaskRequest, Message, Part, Role, SendMessageRequest, StreamResponse, Task

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def user_message(text: str) -> Message:
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])


def http(token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(headers=headers, timeout=30)


async def card(base: str, slug: str) -> AgentCard:
    async with httpx.AsyncClient(timeout=30) as hc:
        return await A2ACardResolver(hc, f"{base}/a2a/{slug}/").get_agent_card()


async def stream(base: str, slug: str, token: str, text: str) -> list[StreamResponse]:
    """Send a streaming message and collect every event, in order."""
    async with http(token) as hc:
        client = await create_client(f"{base}/a2a/{slug}/", client_config=ClientConfig(streaming=True,
                                                                                      httpx_client=hc))
        return [ev async for ev in client.send_message(SendMessageRequest(message=user_message(text)))]


async def send(base: str, slug: str, token: str, text: str) -> list[StreamResponse]:
    """Send a message without streaming (the SDK's blocking SendMessage)."""
    async with http(token) as hc:
        client = await create_client(f"{base}/a2a/{slug}/", client_config=ClientConfig(streaming=False,
                                                                                      httpx_client=hc))
        return [ev async for ev in client.send_message(SendMessageRequest(message=user_message(text)))]


async def get_task(base: str, slug: str, token: str, task_id: str) -> Task:
    async with http(token) as hc:
        client = await create_client(f"{base}/a2a/{slug}/", client_config=ClientConfig(httpx_client=hc))
        return await client.get_task(GetTaskRequest(id=task_id))


def artifact_text(events: list[StreamResponse]) -> list[str]:
    return [p.text for ev in events if ev.HasField("artifact_update") for p in ev.artifact_update.artifact.parts
            if p.text]


def task_id_of(events: list[StreamResponse]) -> str:
    for ev in events:
        if ev.HasField("task"):
            return ev.task.id
        if ev.HasField("status_update"):
            return ev.status_update.task_id
    raise AssertionError("no task in the events")


async def stream_cancel_and_subscribe(base: str, slug: str, token: str, text: str) -> dict[str, Any]:
    """Start a streaming task; once its first chunk arrives, follow it from a second connection
    (SubscribeToTask), then cancel it (CancelTask). Returns what each side saw."""
    from a2a.types import CancelTaskRequest, SubscribeToTaskRequest

    seen: dict[str, Any] = {"main": [], "subscribed": []}
    first = asyncio.Event()
    async with http(token) as hc:
        config = ClientConfig(streaming=True, httpx_client=hc)
        client = await create_client(f"{base}/a2a/{slug}/", client_config=config)

        async def main() -> None:
            async for ev in client.send_message(SendMessageRequest(message=user_message(text))):
                seen["main"].append(ev)
                if ev.HasField("artifact_update"):
                    first.set()

        async def follow(task_id: str) -> None:
            async for ev in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                seen["subscribed"].append(ev)

        runner = asyncio.create_task(main())
        await asyncio.wait_for(first.wait(), 20)
        task_id = task_id_of(seen["main"])
        follower = asyncio.create_task(follow(task_id))
        await asyncio.sleep(0.5)
        seen["canceled"] = await client.cancel_task(CancelTaskRequest(id=task_id))
        await asyncio.wait({runner, follower}, timeout=10)
        for t in (runner, follower):
            t.cancel()
        seen["task"] = await client.get_task(GetTaskRequest(id=task_id))
        seen["task_id"] = task_id
    return seen


async def list_tasks(base: str, slug: str, token: str, context_id: str = "") -> list[Task]:
    from a2a.types import ListTasksRequest

    async with http(token) as hc:
        client = await create_client(f"{base}/a2a/{slug}/", client_config=ClientConfig(httpx_client=hc))
        return list((await client.list_tasks(ListTasksRequest(context_id=context_id))).tasks)
