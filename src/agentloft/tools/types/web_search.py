"""Web search through a SearXNG instance's JSON API (``/search?q=...&format=json``).

SearXNG is self-hostable and needs no API key, which suits a self-hosted platform. It usually runs on the
LAN, so its host normally has to be in the admin's internal hosts setting for the network guard.
The instance must have ``json`` among its ``search.formats`` (SearXNG answers 403 otherwise).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field

from agentloft.core import netguard
from agentloft.core.schemas import ApiModel
from agentloft.tools import net
from agentloft.tools.base import ToolContext, ToolResult, ToolType


class Config(ApiModel):
    base_url: str = Field(
        default="", description="SearXNG base URL, e.g. http://searxng:8080 (the JSON format must be enabled)."
    )
    max_results: int = Field(default=5, ge=1, le=50, description="Results returned to the model.")
    language: str = Field(default="", description="Search language, e.g. 'en' or 'de'; empty for the default.")
    categories: str = Field(default="general", description="SearXNG categories, comma-separated.")
    safe_search: Literal[0, 1, 2] = Field(default=1, description="0 off, 1 moderate, 2 strict.")
    timeout_seconds: float = Field(default=15, gt=0, le=120, description="Time limit for a search.")
    max_snippet_chars: int = Field(default=500, ge=20, le=5_000, description="Longest snippet per result.")


class Input(ApiModel):
    query: str = Field(min_length=1, max_length=500, description="What to search for.")
    max_results: int | None = Field(default=None, ge=1, le=50, description="How many results (optional).")
    time_range: Literal["day", "week", "month", "year"] | None = Field(
        default=None, description="Only results from this recent period (optional)."
    )
    page: int = Field(default=1, ge=1, le=10, description="Result page, starting at 1.")


def _result(item: dict[str, Any], snippet_chars: int) -> dict[str, Any]:
    return {
        "title": item.get("title") or "",
        "url": item.get("url") or "",
        "snippet": (item.get("content") or "")[:snippet_chars],
        "engine": item.get("engine"),
        "publishedDate": item.get("publishedDate"),
    }


class WebSearchTool(ToolType[Config, Input]):
    slug = "web-search"
    name = "Web search"
    description = "Searches the web through a SearXNG instance."
    Config = Config
    needed_to_enable = ("base_url",)
    Input = Input

    def describe(self, config: Config) -> str:
        return (
            "Search the web and get a list of results (title, URL, snippet). Use it for current events or "
            f"facts you are unsure of; open promising results with a fetch tool. Returns up to "
            f"{config.max_results} results."
        )

    def _params(self, inp: Input, config: Config) -> dict[str, str]:
        params = {"q": inp.query, "format": "json", "pageno": str(inp.page), "safesearch": str(config.safe_search)}
        if config.language:
            params["language"] = config.language
        if config.categories:
            params["categories"] = config.categories
        if inp.time_range:
            params["time_range"] = inp.time_range
        return params

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        if not config.base_url:
            return ToolResult.fail("web search is not configured: an admin must set the SearXNG base URL")
        url = config.base_url.rstrip("/") + "/search"
        try:
            resp = await net.guarded_request(
                ctx, "GET", url, params=self._params(input, config), headers={"Accept": "application/json"},
                timeout_s=config.timeout_seconds, max_bytes=5_000_000,
            )
        except netguard.NetError as exc:
            return net.failure(exc)
        if not resp.ok:
            hint = " (is the json format enabled in SearXNG's settings?)" if resp.status_code == 403 else ""
            return ToolResult.fail(f"search failed: HTTP {resp.status_code}{hint}")
        try:
            body = json.loads(resp.content)
        except ValueError:
            return ToolResult.fail("search failed: the server did not answer with JSON")
        limit = input.max_results or config.max_results
        results = [_result(r, config.max_snippet_chars) for r in body.get("results", [])[:limit]]
        data: dict[str, Any] = {"query": input.query, "results": results}
        if body.get("answers"):
            data["answers"] = body["answers"]
        if body.get("suggestions"):
            data["suggestions"] = body["suggestions"][:5]
        return ToolResult.ok(data)


TOOL_TYPE = WebSearchTool()
