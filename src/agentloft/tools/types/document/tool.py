"""The ``document`` tool type (seed 000, chapters 2–4): one tool, five actions dispatched to
``operations``.

Approval: ``needs_approval`` tells the engine's wrapper which calls must wait for the user (the actions
in ``approvalRequiredActions``); ``execute`` checks again and refuses an unapproved one with
``needsApproval: true``, so a caller that skips the wrapper still cannot delete without approval.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agentloft.core.errors import AppError
from agentloft.documents.errors import LOGIN_REQUIRED_MESSAGE
from agentloft.tools.base import ToolContext, ToolResult, ToolType
from agentloft.tools.types.document.config import Config, Input
from agentloft.tools.types.document.operations import create, delete, read, update
from agentloft.tools.types.document.operations import list as list_docs

Operation = Callable[[Input, Config, ToolContext], Awaitable[ToolResult]]
OPERATIONS: dict[str, Operation] = {
    "create": create.run,
    "read": read.run,
    "update": update.run,
    "delete": delete.run,
    "list": list_docs.run,
}


class DocumentTool(ToolType[Config, Input]):
    slug = "document"
    name = "Documents"
    description = (
        "Memory that lasts across conversations and documents written for the user, private to each user."
    )
    Config = Config
    Input = Input

    def describe(self, config: Config) -> str:
        budget, size = config.token_budget, config.max_page_size
        approval = ", ".join(config.approval_required_actions) or "none"
        return (
            "Keep notes that last across conversations and write documents for the user. Everything is "
            "private to the current user. Actions:\n"
            "- create: title and content (markdown) required; type 'memory' for your own notes (default) "
            "or 'document' for a deliverable; optional summary (else the start of the content) and "
            "comma-separated tags.\n"
            f"- read: id, or q to get the best match; returns the summary and metadata, plus the content "
            f"when it fits in about {budget} tokens; fullContent=true returns the whole content.\n"
            "- update: id and at least one of title, content, type, summary, tags; the previous version "
            "is kept.\n"
            "- delete: id; permanent.\n"
            f"- list: optional q (words in Chinese or English, all must match), filterType, page, "
            f"pageSize (at most {size}); returns id, title, summary, type, tags, updatedAt within about "
            f"{budget} tokens, and 'next' when there is more.\n"
            f"Content is limited to {config.max_content_length} characters. "
            f"Actions that need the user's approval: {approval}."
        )

    def needs_approval(self, input: Input, config: Config, ctx: ToolContext) -> bool:
        return input.action in config.approval_required_actions

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        if self.needs_approval(input, config, ctx) and not ctx.approved:
            return ToolResult.fail(f'action "{input.action}" needs the user\'s approval', needsApproval=True,
                                   code="approval_required")
        if ctx.user_id is None:
            return ToolResult.fail(LOGIN_REQUIRED_MESSAGE, code="login_required")
        try:
            return await OPERATIONS[input.action](input, config, ctx)
        except AppError as err:
            return ToolResult.fail(err.message, code=err.code)
