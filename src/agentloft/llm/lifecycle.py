"""Start-up: create or refresh the bootstrap model named by the environment."""

from __future__ import annotations

from agentloft.core.runtime import Runtime
from agentloft.llm import service


async def startup(rt: Runtime) -> None:
    async with rt.db.session() as db:
        await service.ensure_bootstrap_model(db=db, box=rt.box, settings=rt.settings)
