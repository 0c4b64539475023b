"""Fetch: GET or POST a URL through the network guard and hand the model readable text.

HTML is reduced to its text with the standard library's ``html.parser`` (scripts, styles and other
non-content elements dropped, block elements on their own lines, links kept as ``text (url)`` so the
model can follow them). JSON is pretty-printed; other text is passed through; binary bodies are refused.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Literal
from urllib.parse import urljoin

from pydantic import Field

from agentloft.core import netguard
from agentloft.core.schemas import ApiModel
from agentloft.tools import net
from agentloft.tools.base import ToolContext, ToolResult, ToolType

SKIP_TAGS = {"script", "style", "noscript", "template", "svg", "canvas", "iframe", "object"}
# Paragraph-like elements are set apart by a blank line, line-like ones start a new line.
PARAGRAPH_TAGS = {
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "dl", "pre", "blockquote", "figure",
    "section", "article", "header", "footer", "nav", "main", "aside", "form", "details", "hr", "address",
}
LINE_TAGS = {"br", "div", "tr", "li", "dt", "dd", "summary", "figcaption"}
VOID_TAGS = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "wbr"}
# Markers while collecting: a paragraph break, and spaces/newlines inside <pre> that must survive.
PARA, PRE_SPACE, PRE_NEWLINE = "\x03", "\x01", "\x02"
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "+json", "+xml")


class _TextExtractor(HTMLParser):
    """Collects visible text; remembers the title and the links' targets."""

    def __init__(self, base_url: str, keep_links: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.keep_links = keep_links
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False
        self._pre = 0
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in SKIP_TAGS and tag not in VOID_TAGS:
            self._skip += 1
        if self._skip:
            return
        self._break(tag)
        if tag == "li":
            self.parts.append("- ")
        elif tag in ("td", "th"):
            self.parts.append(" | ")
        elif tag == "pre":
            self._pre += 1
        elif tag == "a":
            href = dict(attrs).get("href")
            self._href = urljoin(self.base_url, href) if href and not href.startswith("#") else None
        elif tag == "img":
            alt = dict(attrs).get("alt")
            if alt:
                self.parts.append(f"[{alt}]")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in SKIP_TAGS and tag not in VOID_TAGS:
            self._skip = max(0, self._skip - 1)
            return
        if self._skip:
            return
        if tag == "pre":
            self._pre = max(0, self._pre - 1)
        if tag == "a" and self._href:
            if self.keep_links and not self._href.startswith(("javascript:", "mailto:")):
                self.parts.append(f" ({self._href})")
            self._href = None
        self._break(tag)

    def _break(self, tag: str) -> None:
        if tag in PARAGRAPH_TAGS:
            self.parts.append(PARA)
        elif tag in LINE_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._skip:
            return
        if self._pre:
            self.parts.append(data.replace(" ", PRE_SPACE).replace("\n", PRE_NEWLINE))
        else:
            self.parts.append(re.sub(r"\s+", " ", data))

    def text(self) -> str:
        text = re.sub(r"[ \t]*([\n\x03])[ \t]*", r"\1", "".join(self.parts))
        text = re.sub(r"[\n\x03]+", lambda m: "\n\n" if PARA in m.group() else "\n", text)
        return text.replace(PRE_SPACE, " ").replace(PRE_NEWLINE, "\n").strip()


def html_to_text(html: str, base_url: str = "", keep_links: bool = True) -> tuple[str, str]:
    """Return ``(title, readable text)`` of an HTML document or fragment."""
    parser = _TextExtractor(base_url, keep_links)
    parser.feed(html)
    parser.close()
    return parser.title.strip(), parser.text()


class Config(ApiModel):
    allowed_domains: list[str] = Field(
        default_factory=list,
        description="If not empty, only these domains (and their subdomains) may be fetched, redirects included.",
    )
    allow_post: bool = Field(default=True, description="Whether the model may send POST requests.")
    max_bytes: int = Field(default=2_000_000, ge=1_000, le=50_000_000, description="Largest body read, in bytes.")
    max_chars: int = Field(
        default=20_000, ge=500, le=1_000_000, description="Longest text handed to the model, in characters."
    )
    timeout_seconds: float = Field(default=20, gt=0, le=300, description="Time limit for the whole request.")
    max_redirects: int = Field(default=5, ge=0, le=20, description="Redirects followed at most.")
    keep_links: bool = Field(default=True, description="Keep link targets in the text as 'text (url)'.")


class Input(ApiModel):
    url: str = Field(min_length=1, max_length=4_000, description="The http(s) URL to open.")
    method: Literal["GET", "POST"] = Field(default="GET", description="HTTP method.")
    body: str | None = Field(default=None, max_length=100_000, description="Request body for POST.")
    content_type: str = Field(
        default="application/json", description="Content-Type of the POST body (e.g. application/json)."
    )
    raw: bool = Field(default=False, description="Return the body as is instead of readable text.")


def _is_text(content_type: str) -> bool:
    return not content_type or any(t in content_type for t in TEXT_TYPES) or content_type.startswith(
        "application/x-www-form"
    )


def readable(resp: netguard.GuardedResponse, raw: bool, keep_links: bool) -> tuple[str, str]:
    """``(title, text)`` of a response as the model should read it."""
    ctype = resp.content_type
    body = resp.text
    if raw:
        return "", body
    if "html" in ctype or (not ctype and body.lstrip()[:15].lower().startswith(("<!doctype", "<html"))):
        return html_to_text(body, resp.url, keep_links)
    if "json" in ctype:
        try:
            return "", json.dumps(json.loads(body), indent=2, ensure_ascii=False)
        except ValueError:
            return "", body
    return "", body


class FetchTool(ToolType[Config, Input]):
    slug = "fetch"
    name = "Fetch URL"
    description = "Opens a web page or HTTP resource and returns its readable text."
    Config = Config
    Input = Input

    def describe(self, config: Config) -> str:
        text = (
            "Fetch a URL and return its content as readable text (HTML reduced to text, JSON pretty-printed). "
            f"Long pages are cut at {config.max_chars} characters."
        )
        if config.allowed_domains:
            text += " Only these domains may be fetched: " + ", ".join(config.allowed_domains) + "."
        if not config.allow_post:
            text += " Only GET requests are allowed."
        return text

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        if input.method == "POST" and not config.allow_post:
            return ToolResult.fail("POST requests are not allowed for this tool")
        headers = {"Accept": "text/html,application/xhtml+xml,application/json;q=0.9,*/*;q=0.8"}
        if input.method == "POST" and input.body is not None:
            headers["Content-Type"] = input.content_type
        try:
            resp = await net.guarded_request(
                ctx, input.method, input.url, headers=headers,
                content=input.body if input.method == "POST" else None,
                max_bytes=config.max_bytes, timeout_s=config.timeout_seconds,
                max_redirects=config.max_redirects, allowed_domains=config.allowed_domains, truncate=True,
            )
        except netguard.NetError as exc:
            return net.failure(exc)
        if not _is_text(resp.content_type):
            return ToolResult.fail(f"unsupported content type {resp.content_type} (only text is returned)")
        title, text = readable(resp, input.raw, config.keep_links)
        cut = len(text) > config.max_chars
        data = {
            "url": resp.url,
            "status": resp.status_code,
            "contentType": resp.content_type,
            "title": title or None,
            "content": text[: config.max_chars],
            "truncated": cut or resp.truncated,
        }
        if resp.redirects:
            data["redirects"] = resp.redirects
        if not resp.ok:
            return ToolResult(success=False, data=data, error=f"HTTP {resp.status_code} from {resp.url}")
        return ToolResult.ok(data)


TOOL_TYPE = FetchTool()
