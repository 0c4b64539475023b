"""``POST /api/render/markdown``: the server's markdown renderer for live previews and streamed replies,
so the browser never parses markdown itself. ``…/batch`` renders several texts in one request (a saved
conversation's replies when it opens). Both render in the render pool (``web.render_pool``), whatever the
size: never on the event loop."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from pydantic import Field, StringConstraints

from agentloft.auth.dependencies import CurrentUser
from agentloft.core.errors import Invalid, problem
from agentloft.core.schemas import ApiModel
from agentloft.web.render_pool import Renderer

router = APIRouter(prefix="/api/render", tags=["web"])

MAX_TEXT = 1_000_000
BATCH_SIZE = 50


class MarkdownInput(ApiModel):
    text: str = Field(max_length=MAX_TEXT)


class MarkdownOutput(ApiModel):
    html: str = Field(description="Sanitised HTML, safe to insert into a page.")


class MarkdownBatchInput(ApiModel):
    texts: list[Annotated[str, StringConstraints(max_length=MAX_TEXT)]] = Field(max_length=BATCH_SIZE)


class MarkdownBatchOutput(ApiModel):
    html: list[str] = Field(description="Sanitised HTML of each text, in the order given.")


@router.post("/markdown", response_model=MarkdownOutput)
async def render_markdown(body: MarkdownInput, _: CurrentUser, renderer: Renderer) -> MarkdownOutput:
    return MarkdownOutput(html=await renderer.render(body.text))


@router.post("/markdown/batch", response_model=MarkdownBatchOutput)
async def render_markdown_batch(body: MarkdownBatchInput, _: CurrentUser, renderer: Renderer) -> MarkdownBatchOutput:
    if sum(len(t) for t in body.texts) > MAX_TEXT:
        too_long = problem("string_too_long", f"at most {MAX_TEXT} characters", max_length=MAX_TEXT)
        raise Invalid("the texts together are too long", fields={"texts": too_long})
    return MarkdownBatchOutput(html=await renderer.render_many(body.texts))
