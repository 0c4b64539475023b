"""Files attached to a user message: checked when the message is sent, kept on it, turned into model input.

A message names its files by id (``"attachments": ["fl_…"]``, at most ``MAX_ATTACHMENTS``, duplicates
dropped, order kept). Each must be the sender's own and readable, as ``files.service`` says: another
user's (or a missing) file is ``404 file_not_found``, one still being read ``409 file_processing``, one
that could not be read ``422 file_unreadable`` with its reason. An image for a model whose row says it
has no vision (``model_configs.vision``) is ``422 model_without_vision``; other files are text for every
model. All of it is checked before anything is written, so a refused message leaves no trace; a
regeneration or an edit is checked the same way against the model that will answer it.

The message keeps ``{"id", "name", "mediaType", "size"}`` of each file (``agent_messages.attachments``),
so its chips still say what was sent after a file is deleted; the session's page marks such a file
``deleted``. A regeneration or an edit reads the files again and sends them as the first time; a file
deleted since then reaches the model as one line saying so (``attachment_text.gone``), rather than
refusing the turn: the user asked for a reply, and the rest of the message still stands.

Model input is the message's text first, then one text part per non-image file (``attachment_text``:
whole within the budget, else its chunks most relevant to the message, naming the file; cut and ranked
on a worker thread for long texts), then the images as ``BinaryContent`` parts,
which pydantic-ai sends as OpenAI ``image_url`` parts with a ``data:`` URL and as Anthropic image blocks.

Earlier messages' files: the model history keeps each turn's prompt as the model was sent it, images and
file texts included, so a follow-up question about an earlier file is answered with the file in view,
the way the conversation went. Nothing is read again for them (an earlier file deleted later stays in
the history it is part of, like the words the model said about it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import BinaryContent, UserContent

from agentloft.chat import attachment_text
from agentloft.core.errors import AppError
from agentloft.core.runtime import Runtime
from agentloft.core.textsearch import off_loop
from agentloft.files import service as files_service
from agentloft.files.errors import FileNotFound, FileProcessing, FileUnreadable
from agentloft.files.models import File
from agentloft.files.sniff import IMAGE_TYPES
from agentloft.llm.models import ModelConfig

MAX_ATTACHMENTS = 10
"""The most files one message may carry (the request is refused with 422 beyond it)."""

Prompt = str | list[UserContent]


class ModelWithoutVision(AppError):
    status = 422
    code = "model_without_vision"

    def __init__(self, model: str) -> None:
        super().__init__(f"the model {model} does not read images (its settings say it has no vision); send the "
                         "message without the image, or ask an administrator for a model that reads images")


def kept(row: File) -> dict[str, Any]:
    """What the message keeps of one attached file."""
    return {"id": row.id, "name": row.name, "mediaType": row.media_type, "size": row.size}


def is_image(media_type: str) -> bool:
    return media_type in IMAGE_TYPES


async def check(rt: Runtime, *, user_id: int, file_ids: Sequence[str]) -> list[File]:
    """The user's files named by ``file_ids`` (duplicates dropped, order kept), each ready, else the
    refusal ``files.service`` gives for it (see the module docstring)."""
    rows: list[File] = []
    for file_id in dict.fromkeys(file_ids):
        row = await files_service.get(rt=rt, user_id=user_id, file_id=file_id)
        if row.status == "processing":
            raise FileProcessing()
        if row.status == "failed":
            raise FileUnreadable(row.error or "unknown reason")
        rows.append(row)
    return rows


def refuse_images_without_vision(model: ModelConfig, attached: Sequence[dict[str, Any]]) -> None:
    """``422 model_without_vision`` when an image is attached for a model marked without vision; any other
    file is text for every model."""
    if not model.vision and any(is_image(a["mediaType"]) for a in attached):
        raise ModelWithoutVision(model.name)


async def model_input(rt: Runtime, *, user_id: int, text: str, attached: Sequence[dict[str, Any]]) -> Prompt:
    """The user prompt for ``text`` and the files a message keeps (``kept``): ``text`` alone without
    files, else its parts (see the module docstring). A file gone since it was attached becomes a line
    saying so; any other refusal of ``files.service`` goes to the caller."""
    if not attached:
        return text
    texts: list[attachment_text.FileText] = []
    notes: list[str] = []
    images: list[UserContent] = []
    for item in attached:
        try:
            if is_image(item["mediaType"]):
                data = await files_service.content(rt=rt, user_id=user_id, file_id=item["id"])
                images.append(BinaryContent(data=data, media_type=item["mediaType"], identifier=item["id"]))
                continue
            extracted = await files_service.extracted(rt=rt, user_id=user_id, file_id=item["id"])
        except FileNotFound:
            notes.append(attachment_text.gone(item["name"]))
            continue
        if extracted is not None:
            texts.append(attachment_text.FileText(item["name"], item["mediaType"], extracted))
    budget, chars = rt.settings.attachment_token_budget, sum(t.extracted.chars for t in texts)
    parts = await off_loop(chars, lambda: attachment_text.texts(texts, budget, text))
    return [text, *parts, *notes, *images]
