"""``POST /api/render/markdown``: the server's markdown renderer for live previews and streamed replies,
so the browser never parses markdown itself."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import Field

from agentloft.auth.dependencies import CurrentUser
from agentloft.core.schemas import ApiModel
from agentloft.web import markdown

router = APIRouter(prefix="/api/render", tags=["web"])


class MarkdownInput(ApiModel):
    text: str = Field(max_length=1_000_000)


class MarkdownOutput(ApiModel):
    html: str = Field(description="Sanitised HTML, safe to insert into a page.")


@router.post("/markdown", response_model=MarkdownOutput)
async def render_markdown(body: MarkdownInput, _: CurrentUser) -> MarkdownOutput:
    return MarkdownOutput(html=markdown.render(body.text))
