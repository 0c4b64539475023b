"""Chat titles from the first exchange: one short call to the session's own model after its first reply.

Until then (and whenever that call fails, or an admin turned it off, or the session holds an A2A task)
the title is the first words of the first message, markdown dropped (``service.title_from``). The page
asks for the title once the first reply is complete (``POST /api/agent-sessions/{id}/title``), as
ChatGPT's client does, so a turn's own path never waits for it; a title the user chose is never
replaced, and each session is named at most once.
"""

from __future__ import annotations

import logging

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from agentloft.auth.models import User
from agentloft.chat import engine, service
from agentloft.chat.models import TITLE_AUTO, AgentSession
from agentloft.core.plaintext import markdown_to_plain
from agentloft.core.runtime import Runtime
from agentloft.groups import access
from agentloft.llm import service as llm_service
from agentloft.llm.clients import wait_settings
from agentloft.system import service as system_service
from agentloft.usage import service as usage_service

log = logging.getLogger(__name__)

MAX_TITLE_TOKENS = 20
# The longest a title call may take in all, every retry of the provider's SDK included, and never more
# than the model's own timeout (``model_timeout_seconds``, as a chat reply's wait for its first words):
# a per-attempt timeout alone let three attempts and their backoff keep a silent model's call ~60 s.
TIMEOUT_S = 20.0
# How much of the exchange the model reads: enough to know what it is about.
EXCERPT = 1500
INSTRUCTIONS = (
    "You name conversations. Reply with a title for the conversation below: at most six words, in the "
    "language the user wrote in, no quotes, no final punctuation, nothing else."
)


async def name_session(rt: Runtime, *, user: User, session_id: str) -> AgentSession:
    """Give the session a generated title if it still has its first-words one; return the session."""
    viewer = await access.viewer_of(rt.db, user_id=user.id, role=user.role)
    async with rt.db.read_session() as db:
        row = await service.get_readable_session(db=db, session_id=session_id, user_id=user.id, viewer=viewer)
        if row.title_source != TITLE_AUTO or await service.is_a2a_session(db=db, session_id=session_id):
            return row
        if not (await system_service.get_settings(db=db, settings=rt.settings)).generate_titles:
            return row
        exchange = await service.first_exchange(db=db, session_id=session_id)
        names = await service.agent_names(db=db, agent_ids=[row.agent_id])
    if exchange is None:
        return row  # no complete reply yet: ask again after one
    slug = names.get(row.agent_id, (None, None))[0] if row.agent_id is not None else None
    title, used, model_row = None, usage_service.Tokens(), None
    try:
        _, inputs = await engine.chat_inputs(rt, agent_slug=slug, user_id=user.id, user_role=user.role)
        model_row = inputs.model_row
        model = rt.models.model(llm_service.spec_of(row=model_row, box=rt.box))
        title, used = await ask_for_title(rt, model, *exchange)
    except Exception:  # the agent or its model went away: the first words stay
        log.info("no title for session %s", session_id, exc_info=True)
    async with rt.db.session() as db:
        # the call's tokens count for the session's owner, whose turn it names (``usage.service``)
        await usage_service.record(db=db, user_id=user.id, source="title", tokens=used, model=model_row,
                             agent_id=row.agent_id, session_id=session_id)
        await service.set_generated_title(db=db, session_id=session_id, title=title)
        return await service.get_session(db=db, session_id=session_id, user_id=user.id)


async def ask_for_title(rt: Runtime, model: Model, question: str,
                        answer: str) -> tuple[str | None, usage_service.Tokens]:
    """The model's title for one exchange, cleaned to one plain line (None when it gave none), and the
    tokens the call used (none when it failed: a failed call's usage is not known)."""
    prompt = f"User: {question[:EXCERPT]}\n\nAssistant: {answer[:EXCERPT]}"
    bound = min(TIMEOUT_S, rt.models.timeout_seconds)
    settings = wait_settings(bound) | ModelSettings(max_tokens=MAX_TITLE_TOKENS, request_timeout=bound)
    try:
        result = await rt.models.agent(model, INSTRUCTIONS).run(prompt, model_settings=settings)
    except Exception as exc:
        log.info("title call failed: %r", exc)
        return None, usage_service.Tokens()
    return clean_title(result.output if isinstance(result.output, str) else ""), usage_service.tokens_of(result.usage)


def clean_title(text: str) -> str | None:
    """The first line, markdown and wrapping quotes dropped, cut to the title length."""
    line = markdown_to_plain(text.strip().splitlines()[0] if text.strip() else "")
    for prefix in ("Title:", "title:", "标题：", "标题:"):
        line = line.removeprefix(prefix).strip()
    line = line.strip(" \"'“”‘’「」《》").rstrip("。.!！")
    return service.title_from(line) if line else None
