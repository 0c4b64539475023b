"""MCP servers: admin CRUD, refreshing a server's tools into ``agent_tools`` rows, and calling a tool.

A server's tools are ordinary tool rows of type ``mcp``, so everything the platform does with tools
(enabling, admin-only, approval, agent links, visibility by role, the wrapper) applies unchanged. What is
MCP-specific lives here:

- **Refresh** lists the server's tools and brings the rows in line: a new tool becomes a row that starts
  disabled, so an admin reads the third-party description before any model sees it; a listed tool gets
  the server's current title, description, schema and hints. If any of what the model and the admin are
  shown of it (``REVIEWED``: its name, title, description, input schema, annotations) changed while it
  was enabled, it is disabled again and marked ``changed``, since what the model is told is what the
  admin approved: the model reads the title when there is no description, and a hint such as
  ``destructiveHint`` is what an admin decides approval by. A tool the server no longer lists is
  disabled and marked ``missing``, its agent links kept, so it comes back where it was if the server
  lists it again and an admin enables it. A server listing more than ``AGENTLOFT_MCP_MAX_TOOLS`` tools
  (500) is refused as a whole, its rows left as they were and the admin told why (``lastError`` and the
  refresh's 502): keeping "the first 500" would keep whichever the server happens to list first, and a
  server of thousands of tools is more often a broken or hostile one than one a model could choose from.
  The rows are compared and written in batches (``REFRESH_BATCH``), one statement each, with the loop
  given back in between.
- **Slugs**: ``<server slug>__<tool name>``, lower case, other characters as ``-``; when that is longer than
  64 characters or taken by another tool, it is cut and ends in ``-`` and six characters of a hash of the
  server and the tool's name.
- **Calls** load the server row each time (it may have been disabled or changed in another worker), then
  go through this process's connection (``rt.mcp``).

Network I/O (listing, calling) never happens inside a database transaction.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVarTuple

import mcp_types as types
from mcp.shared.exceptions import MCPError
from sqlalchemy import ColumnElement, Row, Select, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core.crypto import SecretBox
from agentloft.core.db import one_or_404, utcnow, value_taken
from agentloft.core.errors import AppError, Conflict, Invalid, NotFound, invalid_field, problem
from agentloft.core.runtime import Runtime
from agentloft.core.schemas import PageParams
from agentloft.tools.base import ToolResult
from agentloft.tools.mcp.config import EMPTY_SCHEMA, Config
from agentloft.tools.mcp.connections import HttpSpec, McpUnavailable, Target, describe
from agentloft.tools.mcp.launch import StdioSpec
from agentloft.tools.mcp.models import McpServer
from agentloft.tools.mcp.results import to_tool_result
from agentloft.tools.mcp.schemas import McpServerCreate, McpServerRead, McpServerUpdate, McpToolRead
from agentloft.tools.models import AgentTool
from agentloft.tools.schemas import SECRET_PLACEHOLDER

TOOL_TYPE = "mcp"
SLUG_MAX = 64
HASH_LEN = 6


class McpServerFailed(AppError):
    """The server could not be reached or refused the request (502: the fault is upstream)."""

    status = 502
    code = "mcp_server_failed"


# --- reading ---------------------------------------------------------------------------------------


def _masked(names: Sequence[str]) -> dict[str, str]:
    return {name: SECRET_PLACEHOLDER for name in names}


def to_read(*, row: McpServer, tool_count: int = 0) -> McpServerRead:
    return McpServerRead(
        id=row.id, slug=row.slug, name=row.name, transport=row.transport, url=row.url,
        headers=_masked(row.header_names or []), command=row.command, args=list(row.args or []),
        env=_masked(row.env_names or []), secret_set=bool(row.secret_enc), network=row.network,
        enabled=row.enabled, server_info=row.server_info, last_error=row.last_error,
        refreshed_at=row.refreshed_at, tool_count=tool_count, created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def get_server(*, db: AsyncSession, server_id: str) -> McpServer:
    return await one_or_404(db, select(McpServer).where(McpServer.id == server_id),
                            NotFound("MCP server not found", code="mcp_server_not_found"))


async def list_servers(*, db: AsyncSession, page: PageParams) -> tuple[list[McpServer], int]:
    total = int((await db.execute(select(func.count()).select_from(McpServer))).scalar_one())
    stmt = select(McpServer).order_by(McpServer.name, McpServer.id).offset(page.offset).limit(page.page_size)
    return list((await db.execute(stmt)).scalars()), total


def _of_server(server_id: str) -> ColumnElement[bool]:
    """The ``mcp`` rows of one server (its id is in their JSON config)."""
    return (AgentTool.type == TOOL_TYPE) & (AgentTool.config["serverId"].as_string() == server_id)


async def _tool_rows(db: AsyncSession, server_id: str | None = None) -> list[AgentTool]:
    """The ``mcp`` rows (of one server)."""
    where = AgentTool.type == TOOL_TYPE if server_id is None else _of_server(server_id)
    return list((await db.execute(select(AgentTool).where(where))).scalars())


async def tool_counts(*, db: AsyncSession) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in await _tool_rows(db):
        sid = (row.config or {}).get("serverId", "")
        counts[sid] = counts.get(sid, 0) + 1
    return counts


Ts = TypeVarTuple("Ts")


async def _parts(db: AsyncSession, stmt: Select[*Ts]) -> AsyncIterator[Sequence[Row[*Ts]]]:
    """A query's rows ``REFRESH_BATCH`` at a time, the loop's turn between them: decoding a row's JSON config
    is the slow part, and the SQLite driver may hand over rows it already holds without ever yielding."""
    async for part in (await db.stream(stmt.execution_options(yield_per=REFRESH_BATCH))).partitions():
        yield part
        await asyncio.sleep(0)


# A tool row's columns as ``list_server_tools`` reads them.
_ToolColumns = Row[str, str, str, dict[str, Any], bool, int, bool]


def _tool_read(row: _ToolColumns) -> McpToolRead:
    config = row.config or {}
    return McpToolRead(
        tool_id=row.id, slug=row.slug, name=config.get("toolName", ""), title=config.get("title") or row.name,
        description=config.get("description", ""), input_schema=config.get("inputSchema") or EMPTY_SCHEMA,
        annotations=config.get("annotations") or {}, enabled=row.enabled, admin_only=bool(row.admin_only),
        needs_approval=row.needs_approval, missing=bool(config.get("missing")),
        changed=bool(config.get("changed")) and not row.enabled,
    )


async def list_server_tools(*, db: AsyncSession, server_id: str) -> list[McpToolRead]:
    """The server's tools by slug, the missing ones last. Read in parts, the loop's turn between them, since
    a server may have thousands (``AGENTLOFT_MCP_MAX_TOOLS`` raised)."""
    await get_server(db=db, server_id=server_id)
    stmt = (select(AgentTool.id, AgentTool.slug, AgentTool.name, AgentTool.config, AgentTool.enabled,
                   AgentTool.admin_only, AgentTool.needs_approval)
            .where(_of_server(server_id)).order_by(AgentTool.slug))
    tools: list[McpToolRead] = []
    async for part in _parts(db, stmt):
        tools.extend(_tool_read(row) for row in part)
    return sorted(tools, key=lambda t: t.missing)  # stable: by slug within each


# --- writing ---------------------------------------------------------------------------------------


def _encrypt(box: SecretBox, value: Any) -> str:
    return box.encrypt(json.dumps(value))


def _decrypt(box: SecretBox, token: str | None, default: Any) -> Any:
    if not token:
        return default
    try:
        return json.loads(box.decrypt(token))
    except ValueError:  # the secret key changed: the admin enters the values again
        return default


def _merge_map(incoming: dict[str, str] | None, stored: dict[str, str]) -> dict[str, str]:
    """An edited header or env map: a masked value keeps the stored one; names left out are removed."""
    if incoming is None:
        return stored
    out: dict[str, str] = {}
    for name, value in incoming.items():
        if value == SECRET_PLACEHOLDER:
            if name in stored:
                out[name] = stored[name]
        else:
            out[name] = value
    return out


def _check_url(url: str | None) -> None:
    if url is not None and not re.match(r"^https?://[^/\s]+", url):
        raise invalid_field("url", "not_http_url", "must be an http or https URL")


def _apply(row: McpServer, box: SecretBox, changes: dict[str, Any]) -> None:
    """Copy the given fields onto the row, encrypting what may carry credentials."""
    for field in ("slug", "name", "transport", "url", "command", "network", "enabled"):
        if changes.get(field) is not None:
            setattr(row, field, changes[field])
    if changes.get("args") is not None:
        row.args = list(changes["args"])
    for field, names_attr, enc_attr in (("headers", "header_names", "headers_enc"), ("env", "env_names", "env_enc")):
        if field in changes and changes[field] is not None:
            merged = _merge_map(changes[field], _decrypt(box, getattr(row, enc_attr), {}))
            setattr(row, enc_attr, _encrypt(box, merged) if merged else None)
            setattr(row, names_attr, sorted(merged))
    secret = changes.get("secret")
    if secret is not None and secret != SECRET_PLACEHOLDER:
        row.secret_enc = _encrypt(box, secret) if secret else None


def _check_complete(row: McpServer) -> None:
    if row.transport == "http" and not row.url:
        raise Invalid("url: an http server needs a url",
                      fields={"url": problem("required_for_transport", "required for http", transport="http")})
    if row.transport == "stdio" and not row.command:
        raise Invalid("command: a stdio server needs a command",
                      fields={"command": problem("required_for_transport", "required for stdio", transport="stdio")})
    _check_url(row.url)


def _slug_conflict(slug: str) -> Conflict:
    return Conflict(f"an MCP server with slug '{slug}' exists", code="mcp_server_slug_taken",
                    fields={"slug": problem("slug_taken", "taken")})


async def _flush(db: AsyncSession, slug: str) -> None:
    try:
        await db.flush()
    except IntegrityError as exc:
        raise _slug_conflict(slug) from exc


async def _slug_taken(db: AsyncSession, slug: str, except_id: str | None = None) -> bool:
    return await value_taken(db, McpServer.slug, slug, id_column=McpServer.id, except_id=except_id)


async def create_server(*, db: AsyncSession, rt: Runtime, data: McpServerCreate) -> McpServer:
    row = McpServer(args=[], header_names=[], env_names=[], network=False, enabled=True)
    _apply(row, rt.box, data.model_dump())
    _check_complete(row)
    if await _slug_taken(db, row.slug):
        raise _slug_conflict(row.slug)
    db.add(row)
    await _flush(db, row.slug)
    return row


async def update_server(*, db: AsyncSession, rt: Runtime, server_id: str, data: McpServerUpdate) -> McpServer:
    """Apply a partial update. The slug of existing tools stays as it was (agents and histories use it);
    the process's connection is closed so the next call uses the new settings."""
    row = await get_server(db=db, server_id=server_id)
    changes = data.model_dump(exclude_unset=True)
    if changes.get("slug") and await _slug_taken(db, changes["slug"], except_id=row.id):
        raise _slug_conflict(changes["slug"])
    _apply(row, rt.box, changes)
    _check_complete(row)
    await _flush(db, row.slug)
    rt.mcp.drop(row.id)
    return row


async def delete_server(*, db: AsyncSession, rt: Runtime, server_id: str) -> None:
    """Delete the server and its tools (their agent links go with them)."""
    row = await get_server(db=db, server_id=server_id)
    ids = [r.id for r in await _tool_rows(db, server_id)]
    if ids:
        await db.execute(delete(AgentTool).where(AgentTool.id.in_(ids)))
    await db.delete(row)
    await db.flush()
    rt.mcp.drop(server_id)


# --- the connection target ---------------------------------------------------------------------------


def target_of(*, row: McpServer, box: SecretBox) -> Target:
    secret = _decrypt(box, row.secret_enc, None)
    if row.transport == "http":
        headers = _decrypt(box, row.headers_enc, {})
        spec: HttpSpec | StdioSpec = HttpSpec(url=row.url or "", headers=tuple(sorted(headers.items())),
                                              secret=secret)
    else:
        env = _decrypt(box, row.env_enc, {})
        spec = StdioSpec(command=row.command or "", args=tuple(row.args or ()), env=tuple(sorted(env.items())),
                         secret=secret, network=row.network)
    return Target(server_id=row.id, slug=row.slug, spec=spec)


# --- refreshing ------------------------------------------------------------------------------------


def _normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "-", text.lower())


def fit_slug(*, server_slug: str, tool_name: str, taken: set[str]) -> str:
    """``<server slug>__<tool name>`` within the slug rule; cut and hashed when too long or taken."""
    base = f"{server_slug}__{_normalise(tool_name)}"
    if len(base) <= SLUG_MAX and base not in taken:
        return base
    digest = hashlib.sha256(f"{server_slug}\0{tool_name}".encode()).hexdigest()
    for i in range(len(digest) - HASH_LEN):
        suffix = "-" + digest[i : i + HASH_LEN]
        slug = base[: SLUG_MAX - len(suffix)] + suffix
        if slug not in taken:
            return slug
    raise Conflict(f"no free slug for tool '{tool_name}'", code="tool_slug_taken")


TITLE_MAX = 500


def _annotations(value: types.ToolAnnotations | None) -> dict[str, Any]:
    """A tool's hints as stored: the protocol's fields only (whatever else a server adds is not kept),
    the title cut like the tool's own."""
    if value is None:
        return {}
    known = set(types.ToolAnnotations.model_fields)
    hints = value.model_dump(mode="json", by_alias=True, exclude_none=True, include=known)
    if isinstance(hints.get("title"), str):
        hints["title"] = hints["title"][:TITLE_MAX]
    return hints


@dataclass
class _Listed:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]

    @classmethod
    def of(cls, tool: types.Tool) -> _Listed:
        annotations = tool.annotations
        title = tool.title or (annotations.title if annotations and annotations.title else None) or tool.name
        return cls(name=tool.name, title=title, description=(tool.description or "").strip(),
                   input_schema=tool.input_schema or dict(EMPTY_SCHEMA), annotations=_annotations(annotations))


ADMIN_CHOICES = {"timeoutSeconds": "timeout_seconds", "maxOutputChars": "max_output_chars"}


def _config(listed: _Listed, server_id: str, old: dict[str, Any] | None = None) -> dict[str, Any]:
    """The tool's config as the server now describes it, with the limits an admin set kept."""
    kept = {field: (old or {})[key] for key, field in ADMIN_CHOICES.items() if (old or {}).get(key)}
    cfg = Config(server_id=server_id, tool_name=listed.name, title=listed.title[:TITLE_MAX],
                 description=listed.description[:20_000], input_schema=listed.input_schema,
                 annotations=listed.annotations, **kept)
    return cfg.model_dump(mode="json", by_alias=True)


# The config keys holding what the model and the admin are shown of a tool: a change to any of them is
# reviewed (see the module docstring).
REVIEWED = ("toolName", "title", "description", "inputSchema", "annotations")


def _changed(old: Mapping[str, Any], fresh: Mapping[str, Any]) -> bool:
    """Whether what the model is shown differs. A row stored before the hints were kept has no
    ``annotations``: they reached no model then, so this refresh records them without a review."""
    keys = REVIEWED if "annotations" in old else tuple(k for k in REVIEWED if k != "annotations")
    return any(old.get(key) != fresh.get(key) for key in keys)


# Tools compared and written per statement during a refresh; the loop is given back between batches, so a
# server listing thousands of tools (AGENTLOFT_MCP_MAX_TOOLS raised) does not hold up other requests.
REFRESH_BATCH = 250


@dataclass
class _Stored:
    """The columns of a tool row a refresh compares and writes."""

    id: str
    enabled: bool
    name: str
    config: dict[str, Any]


def _refreshed(stored: _Stored, listed: _Listed, server_id: str) -> dict[str, Any] | None:
    """The row's new columns (an UPDATE by id) as the server now describes the tool, or None when nothing
    changed. What the model is shown changing while the tool is enabled disables it (``changed``)."""
    old = stored.config
    fresh = _config(listed, server_id, old)
    enabled = stored.enabled
    if _changed(old, fresh) and enabled:
        enabled, fresh["changed"] = False, True
    elif not enabled and old.get("changed"):
        fresh["changed"] = True  # still waiting for an admin to look at it
    name = listed.title[:100]
    if (fresh, enabled, name) == (old, stored.enabled, stored.name):
        return None
    return {"id": stored.id, "config": fresh, "enabled": enabled, "name": name, "updated_at": utcnow()}


def _gone(stored: _Stored) -> dict[str, Any] | None:
    """A tool the server no longer lists: disabled and marked missing (once)."""
    if stored.config.get("missing"):
        return None
    return {"id": stored.id, "config": {**stored.config, "missing": True}, "enabled": False, "name": stored.name,
            "updated_at": utcnow()}


async def _stored_rows(db: AsyncSession, server_id: str) -> dict[str, _Stored]:
    stmt = select(AgentTool.id, AgentTool.enabled, AgentTool.name, AgentTool.config).where(_of_server(server_id))
    stored: dict[str, _Stored] = {}
    async for part in _parts(db, stmt):
        for id, enabled, name, config in part:
            stored[str((config or {}).get("toolName"))] = _Stored(id, enabled, name, dict(config or {}))
    return stored


async def _write(db: AsyncSession, new: list[dict[str, Any]], updates: list[dict[str, Any]]) -> None:
    """One INSERT and one UPDATE (by id) for a batch, each one statement for all its rows; then the loop's
    turn for everyone else."""
    if new:
        await db.execute(insert(AgentTool), new)
    if updates:
        await db.execute(update(AgentTool), updates)
    await asyncio.sleep(0)


async def _sync(db: AsyncSession, server: McpServer, listed: list[_Listed]) -> None:
    stored = await _stored_rows(db, server.id)
    taken = set((await db.execute(select(AgentTool.slug))).scalars())
    seen: set[str] = set()
    for start in range(0, len(listed), REFRESH_BATCH):
        new: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        for tool in listed[start : start + REFRESH_BATCH]:
            if tool.name in seen:  # listed twice: the first one counts
                continue
            seen.add(tool.name)
            row = stored.pop(tool.name, None)
            if row is None:
                slug = fit_slug(server_slug=server.slug, tool_name=tool.name, taken=taken)
                taken.add(slug)
                new.append({"slug": slug, "name": tool.title[:100], "description": "", "type": TOOL_TYPE,
                            "config": _config(tool, server.id), "secrets_enc": {}, "enabled": False,
                            "needs_approval": False, "admin_only": 0})
            elif (changes := _refreshed(row, tool, server.id)) is not None:
                updates.append(changes)
        await _write(db, new, updates)
    gone = [changes for row in stored.values() if (changes := _gone(row)) is not None]
    for start in range(0, len(gone), REFRESH_BATCH):
        await _write(db, [], gone[start : start + REFRESH_BATCH])


async def _record_failure(rt: Runtime, server_id: str, message: str) -> None:
    async with rt.db.session() as db:
        row = await db.get(McpServer, server_id)
        if row is not None:
            row.last_error = message


async def refresh_server(*, rt: Runtime, server_id: str) -> list[McpToolRead]:
    """List the server's tools and bring its tool rows in line (see the module docstring)."""
    async with rt.db.read_session() as db:
        target = target_of(row=await get_server(db=db, server_id=server_id), box=rt.box)
    try:
        listing = await rt.mcp.list_tools(target)
    except (McpUnavailable, MCPError) as exc:
        message = describe(exc)
        await _record_failure(rt, server_id, message)
        raise McpServerFailed(f"MCP server '{target.slug}': {message}") from exc
    if listing.too_many:
        message = (f"it lists more than {rt.mcp.max_tools:,} tools, the most one server may have here "
                   "(AGENTLOFT_MCP_MAX_TOOLS); its tools were left as they were")
        await _record_failure(rt, server_id, message)
        raise McpServerFailed(f"MCP server '{target.slug}': {message}", code="mcp_server_too_many_tools")
    listed = [_Listed.of(t) for t in listing.tools]
    async with rt.db.session() as db:
        server = await get_server(db=db, server_id=server_id)
        await _sync(db, server, listed)
        server.server_info = listing.info
        server.last_error = None
        server.refreshed_at = utcnow()
        await db.flush()
        return await list_server_tools(db=db, server_id=server_id)


# --- availability ----------------------------------------------------------------------------------


async def unavailable_tools(*, db: AsyncSession, configs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Tools (by id) whose server is disabled or gone, with the reason: they stay in the admin's lists
    but reach no model (``ToolType.unavailable``). ``configs`` are the tools' stored configs."""
    server_ids = {str(c.get("serverId")) for c in configs.values() if c.get("serverId")}
    if not server_ids:
        return {}
    stmt = select(McpServer.id, McpServer.slug, McpServer.enabled).where(McpServer.id.in_(server_ids))
    servers = {sid: (slug, enabled) for sid, slug, enabled in (await db.execute(stmt)).all()}
    reasons: dict[str, str] = {}
    for tool_id, config in configs.items():
        slug, enabled = servers.get(str(config.get("serverId")), (None, False))
        if slug is None:
            reasons[tool_id] = "its MCP server no longer exists"
        elif not enabled:
            reasons[tool_id] = f"its MCP server '{slug}' is disabled"
    return reasons


# --- calling ---------------------------------------------------------------------------------------


async def call_tool(*, rt: Runtime, config: Config, arguments: dict[str, Any]) -> ToolResult:
    """Call one tool of a server; every failure is a failed result saying why."""
    if config.missing:
        return ToolResult.fail(f"the MCP server no longer offers the tool '{config.tool_name}'")
    async with rt.db.read_session() as db:
        server = await db.get(McpServer, config.server_id)
    if server is None:
        return ToolResult.fail("the MCP server of this tool no longer exists")
    if not server.enabled:
        return ToolResult.fail(f"the MCP server '{server.slug}' is disabled")
    target = target_of(row=server, box=rt.box)
    try:
        result = await rt.mcp.call_tool(target, config.tool_name, arguments, timeout_s=config.timeout_seconds)
    except (McpUnavailable, MCPError) as exc:
        return ToolResult.fail(f"MCP server '{server.slug}': {describe(exc)}",
                               mcp={"server": server.slug, "tool": config.tool_name})
    return to_tool_result(result, server=server.slug, tool=config.tool_name, max_chars=config.max_output_chars)
