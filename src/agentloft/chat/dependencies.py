"""``OwnedSession``: the caller's own, not deleted session from the path, else 404."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from agentloft.auth.dependencies import CurrentUser
from agentloft.chat import service
from agentloft.chat.models import AgentSession
from agentloft.core.dependencies import DbSession


async def _owned_session(session_id: str, user: CurrentUser, db: DbSession) -> AgentSession:
    return await service.get_session(db=db, session_id=session_id, user_id=user.id)


OwnedSession = Annotated[AgentSession, Depends(_owned_session)]
