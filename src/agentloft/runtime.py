"""The per-app runtime: settings, database, secret box and the shared parts later domains hang here.

Routers reach it through the ``Rt`` dependency; background work (chat runs, A2A tasks) carries it
explicitly, since it outlives the request. Nothing here is a module-level global, so several apps (tests)
can live in one process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request

from agentloft.config import Settings
from agentloft.crypto import SecretBox
from agentloft.db import Database


@dataclass
class Runtime:
    settings: Settings
    db: Database
    box: SecretBox
    # Domains attach their shared singletons here at start-up (tool registry, stream buffers, ...).
    extras: dict[str, Any] = field(default_factory=dict)


async def get_runtime(request: Request) -> Runtime:
    """``async`` on purpose, as every dependency here: FastAPI runs a plain ``def`` dependency on a worker
    thread, a thread hop per request for nothing."""
    return request.app.state.runtime


Rt = Annotated[Runtime, Depends(get_runtime)]
