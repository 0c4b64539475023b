"""Request and response bodies of the chat API (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StringConstraints

from agentloft.chat.attachments import MAX_ATTACHMENTS
from agentloft.chat.knowledge import MAX_COLLECTIONS
from agentloft.core.schemas import ApiModel, ClientText

# The longest message a user may send an agent; A2A callers and the agent-invoke tool are held to it too.
MAX_MESSAGE_CHARS = 100_000

Message = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_MESSAGE_CHARS),
                    ClientText]
FileId = Annotated[str, StringConstraints(min_length=1, max_length=64)]
CollectionId = Annotated[str, StringConstraints(min_length=1, max_length=64)]
Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200), ClientText]


class ChatRequest(ApiModel):
    message: Message
    session_id: str | None = Field(default=None, description="Continue this session; omit to start one.")
    attachments: list[FileId] = Field(
        default_factory=list, max_length=MAX_ATTACHMENTS,
        description="Ids of the sender's own files (POST /api/files) to send with the message.",
    )
    knowledge_ids: list[CollectionId] | None = Field(
        default=None, max_length=MAX_COLLECTIONS,
        description="Ids of the sender's own knowledge collections the chat searches from this message on "
                    "(replacing those it had; [] for none); omit to keep them.",
    )


class ResendRequest(ApiModel):
    message: Message | None = Field(
        default=None, description="The message's new text; omit to send it again unchanged."
    )


class ApprovalAnswer(ApiModel):
    tool_call_id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    approved: StrictBool
    reason: Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000), ClientText] | None = None


class SessionUpdate(ApiModel):
    title: Title


class SessionRead(ApiModel):
    id: str
    title: str
    kind: str = Field(description="'agent' or 'llm' (the plain model chat).")
    agent_id: int | None
    agent_slug: str | None = None
    agent_name: str | None = None
    status: str = Field(description="idle | running | awaiting_approval")
    title_source: str = Field(
        default="auto",
        description="auto (the first words; POST …/title may name it) | generated | user (renamed)",
    )
    created_at: datetime
    updated_at: datetime


class AttachmentRead(ApiModel):
    id: str
    name: str
    media_type: str
    size: int
    deleted: bool = Field(default=False, description="The file was deleted since; the chip stays, the bytes are gone.")


class MessageRead(ApiModel):
    id: str
    role: str
    content: str
    parts: list[dict[str, Any]]
    status: str = Field(description="complete | streaming | failed | stopped | interrupted | awaiting_approval")
    error: str | None
    model_id: int | None
    model_name: str | None = Field(default=None, description="Name of the model configuration that wrote it.")
    input_tokens: int | None
    output_tokens: int | None
    sort_order: int
    attachments: list[AttachmentRead] = Field(default_factory=list, description="Files sent with a user message.")
    created_at: datetime
    updated_at: datetime


class KnowledgeRef(ApiModel):
    id: str
    name: str


class GroupName(ApiModel):
    id: int
    name: str


class PendingApproval(ApiModel):
    tool_call_id: str
    tool_name: str
    input: Any
    approver_groups: list[GroupName] = Field(
        default_factory=list, description="Whose members decide this call (``chat.approvals``); empty: the "
        "session's user does.")


class SessionDetail(SessionRead):
    messages: list[MessageRead]
    pending_approvals: list[PendingApproval]
    active: bool = Field(description="A reply is streaming now; GET …/stream follows it.")
    knowledge: list[KnowledgeRef] = Field(
        default_factory=list, description="The user's own knowledge collections the chat searches.")
    input_tokens: int
    output_tokens: int


class StopResult(ApiModel):
    stopped: bool


class ApprovalRecorded(ApiModel):
    """An approver's answer, recorded; ``resumed``: it was the last one and the requester's turn goes on."""

    tool_call_id: str
    approved: bool
    resumed: bool


class ApprovalContext(ApiModel):
    user_message: str | None = Field(description="The last user message before the call (its start).")
    assistant_text: str = Field(description="What the assistant wrote in this reply before the call.")


class ApprovalPerson(ApiModel):
    id: int
    name: str


class ApprovalAgent(ApiModel):
    id: int
    name: str


class InboxApproval(ApiModel):
    """A pending call the caller may decide (``GET /api/approvals``)."""

    session_id: str
    tool_call_id: str
    tool_id: str
    tool_slug: str
    tool_name: str
    input: Any
    requester: ApprovalPerson
    agent: ApprovalAgent | None
    session_title: str
    created_at: datetime
    approver_groups: list[GroupName]
    context: ApprovalContext


class ApprovalWaiting(ApiModel):
    """Answer recorded; the run continues once the other pending calls are answered too."""

    waiting_for: list[str]


class SnippetPart(ApiModel):
    text: str
    hit: bool = Field(description="This piece is a search term as found.")


class SessionMatch(ApiModel):
    """Where a searched session matched, with a short plain-text excerpt."""

    field: Literal["title", "message"] = Field(description="'message' when a message matched, else 'title'.")
    message_id: str | None = Field(description="The best matching message (most terms, newest first).")
    role: str | None = Field(description="That message's role.")
    snippet: str = Field(description="About 120 characters of plain text around the first hit, '…' where cut.")
    parts: list[SnippetPart] = Field(description="The snippet cut into pieces, the hits marked, in order.")


class SessionSearchHit(SessionRead):
    match: SessionMatch
