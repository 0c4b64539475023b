"""What a fresh install starts with, so that a newcomer can chat within a minute of ``agentloft serve``.

On the first start (and only then: an ``app_settings`` flag records it, so a default an admin deleted
never comes back) it creates one tool for every registered type an admin makes by hand (not ``mcp``: a
server's refresh makes those), named and described for people, and an agent "Assistant" with calculator,
datetime, document and fetch on the default model. Tools that need configuration before they can work
(web-search, http-api, webhook, sql-query, knowledge) or that are dangerous (python) start disabled.
``AGENTLOFT_CREATE_DEFAULTS=false`` skips all of this.
"""

from __future__ import annotations

import logging

from agentloft.agents import service as agents_service
from agentloft.agents.schemas import AgentCreate
from agentloft.core.errors import AppError
from agentloft.core.runtime import Runtime
from agentloft.system.models import AppSetting
from agentloft.tools import service as tools_service
from agentloft.tools.schemas import AgentToolCreate, AgentToolLinkIn

log = logging.getLogger(__name__)

FLAG = "defaults_created"
DISABLED_UNTIL_CONFIGURED = {"web-search", "http-api", "webhook", "sql-query", "python", "knowledge"}
ASSISTANT_TOOLS = ("calculator", "datetime", "document", "fetch")

# slug → (name, description) as people read them in the admin table.
TOOL_TEXTS: dict[str, tuple[str, str]] = {
    "calculator": ("Calculator", "Exact arithmetic and math functions."),
    "datetime": ("Date and time", "The current time in any time zone; parse, format and compute with dates."),
    "document": ("Documents and memory", "Lets agents keep notes across conversations and write documents."),
    "fetch": ("Fetch a web page", "Reads a public web page or API and returns its text."),
    "web-search": ("Web search", "Searches the web through your SearXNG instance (set its URL first)."),
    "http-api": ("HTTP API", "Calls one REST endpoint you configure, with the parameters you allow."),
    "webhook": ("Webhook", "Posts a message to a configured URL, e.g. a chat room's incoming webhook."),
    "python": ("Python", "Runs a Python snippet in a sandboxed process. Admin only; each run needs approval."),
    "sql-query": ("SQL query", "Read-only SQL against a database you configure."),
    "json-query": ("JSON query", "Queries JSON with JMESPath."),
    "text": ("Text utilities", "Regex find and replace, counts, case changes, slugs."),
    "unit-convert": ("Unit converter", "Converts between units of measure."),
    "random": ("Random", "Random numbers, choices, shuffles, UUIDs and strong passwords."),
    "rss": ("RSS and Atom feeds", "Reads the latest items of a feed."),
    "agent-invoke": ("Ask another agent", "Hands a sub-task to another agent over A2A."),
    "knowledge": ("Knowledge", "Searches knowledge collections you choose (set their ids first)."),
}

ASSISTANT = AgentCreate(
    slug="assistant",
    name="Assistant",
    description="A helpful general assistant with a calculator, the clock, the web and a memory.",
    # Names no tool: a tool an admin hides from users (e.g. fetch made admin-only) must not be announced to
    # their model by the prompt; the model learns its tools from the tool list it is given. Migration 0006
    # carries this text to installs that still have the earlier one.
    system_prompt=(
        "You are Assistant, a helpful, precise assistant. Use the tools you have when they give a better "
        "answer than you could give alone, and say so when you could not check something. "
        "Answer in the user's language."
    ),
)


async def startup(rt: Runtime) -> None:
    if not rt.settings.create_defaults:
        return
    async with rt.db.session() as db:
        if await db.get(AppSetting, FLAG) is not None:
            return
        by_slug: dict[str, str] = {}
        for tool_type in rt.registry.all():
            if not tool_type.made_by_hand:
                continue
            name, description = TOOL_TEXTS.get(tool_type.slug, (tool_type.name, tool_type.description))
            data = AgentToolCreate(
                slug=tool_type.slug,
                name=name,
                description=description,
                type=tool_type.slug,
                enabled=tool_type.slug not in DISABLED_UNTIL_CONFIGURED,
            )
            try:
                row = await tools_service.create_tool(db=db, rt=rt, data=data)
            except AppError as exc:  # e.g. an add-on's Config that has no usable defaults
                log.warning("default tool %s not created: %s", tool_type.slug, exc.message)
                continue
            by_slug[row.slug] = row.id
        agent = await agents_service.create_agent(db=db, data=ASSISTANT)
        links = [AgentToolLinkIn(tool_id=by_slug[s]) for s in ASSISTANT_TOOLS if s in by_slug]
        await tools_service.set_agent_tools(db=db, agent_id=agent.id, links=links)
        db.add(AppSetting(key=FLAG, value=True))
