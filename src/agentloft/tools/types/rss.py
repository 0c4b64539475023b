"""RSS: read an RSS or Atom feed and return its latest items.

The feed is fetched through the network guard and only then handed to feedparser as bytes — feedparser
would otherwise open the URL itself, past every check.
"""

from __future__ import annotations

import time
from typing import Any

import feedparser
from pydantic import Field

from agentloft.core import netguard
from agentloft.core.schemas import ApiModel
from agentloft.tools import net
from agentloft.tools.base import ToolContext, ToolResult, ToolType
from agentloft.tools.types.fetch import html_to_text


class Config(ApiModel):
    max_items: int = Field(default=10, ge=1, le=100, description="Items returned at most.")
    max_summary_chars: int = Field(default=500, ge=0, le=20_000, description="Longest item summary (0 = none).")
    allowed_domains: list[str] = Field(
        default_factory=list, description="If not empty, only feeds on these domains may be read."
    )
    timeout_seconds: float = Field(default=20, gt=0, le=120, description="Time limit for fetching a feed.")
    max_bytes: int = Field(default=5_000_000, ge=1_000, le=50_000_000, description="Largest feed read, in bytes.")


class Input(ApiModel):
    url: str = Field(min_length=1, max_length=4_000, description="URL of the RSS or Atom feed.")
    limit: int | None = Field(default=None, ge=1, le=100, description="How many of the newest items (optional).")


def _when(entry: Any) -> str | None:
    parsed = entry.get("published_parsed") or entry.get("updated_parsed")
    if parsed:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", parsed)
    return entry.get("published") or entry.get("updated")


def _item(entry: Any, summary_chars: int) -> dict[str, Any]:
    summary = entry.get("summary") or ""
    if summary and summary_chars:
        summary = html_to_text(summary, keep_links=False)[1][:summary_chars]
    return {
        "title": entry.get("title") or "",
        "link": entry.get("link"),
        "published": _when(entry),
        "author": entry.get("author"),
        "summary": summary if summary_chars else None,
    }


def _sort_key(entry: Any) -> float:
    parsed = entry.get("published_parsed") or entry.get("updated_parsed")
    return time.mktime(parsed) if parsed else 0.0


class RssTool(ToolType[Config, Input]):
    slug = "rss"
    name = "RSS feed"
    description = "Reads an RSS or Atom feed and returns its latest items."
    Config = Config
    Input = Input

    def describe(self, config: Config) -> str:
        text = (
            f"Read an RSS or Atom feed and get its newest items (up to {config.max_items}): "
            "title, link, date, summary."
        )
        if config.allowed_domains:
            text += " Allowed feed domains: " + ", ".join(config.allowed_domains) + "."
        return text

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        try:
            resp = await net.guarded_request(
                ctx, "GET", input.url,
                headers={"Accept": "application/rss+xml, application/atom+xml, application/xml;q=0.9, */*;q=0.5"},
                timeout_s=config.timeout_seconds, max_bytes=config.max_bytes,
                allowed_domains=config.allowed_domains,
            )
        except netguard.NetError as exc:
            return net.failure(exc)
        if not resp.ok:
            return ToolResult.fail(f"the feed answered HTTP {resp.status_code}")
        feed = feedparser.parse(resp.content, response_headers={"content-type": resp.headers.get("content-type", "")})
        if not feed.entries and (feed.bozo or not feed.feed.get("title")):
            return ToolResult.fail(f"{resp.url} is not an RSS or Atom feed")
        entries = sorted(feed.entries, key=_sort_key, reverse=True)
        limit = min(input.limit or config.max_items, config.max_items)
        return ToolResult.ok({
            "feed": {"title": feed.feed.get("title"), "link": feed.feed.get("link"),
                     "description": feed.feed.get("subtitle")},
            "items": [_item(e, config.max_summary_chars) for e in entries[:limit]],
        })


TOOL_TYPE = RssTool()
