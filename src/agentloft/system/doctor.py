"""``agentloft doctor``: can this configuration reach what it needs? The database (and whether its schema
is current), Redis when one is set, the server processes serving the database now, the sandbox uploaded
documents are read in (started once, its libraries imported: without it documents are refused), and
every enabled model (one tiny request each, as the admin page's "Save and test" does).

A command, not an endpoint: what it prints (hosts, versions, processes) is for whoever runs the
instance. Each check that goes over the network is announced as it starts (``Waiting``) and waits at most
``CHECK_LIMIT_S`` (a model: the model test's own limit, the same number), so the command never sits
silent and a host that accepts connections but never answers costs that long, not minutes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import select
from sqlalchemy.engine import Connection, make_url

from agentloft.core import migrate
from agentloft.core.crypto import SecretBox
from agentloft.core.db import Database
from agentloft.core.settings import Settings
from agentloft.files import extract
from agentloft.llm import service as llm_service
from agentloft.llm.clients import ModelClients
from agentloft.llm.models import ModelConfig
from agentloft.system import workers
from agentloft.tools.sandbox import SandboxUnavailable

CHECK_LIMIT_S = llm_service.TEST_LIMIT_S


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Waiting:
    """A check has started; its result comes within ``limit_s``."""

    name: str
    doing: str
    limit_s: float = CHECK_LIMIT_S


def _no_answer(where: str) -> str:
    return f"{where}: no answer within {CHECK_LIMIT_S:g} s"


def _current_revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def _head(url: str) -> str | None:
    return ScriptDirectory.from_config(migrate.alembic_config(url)).get_current_head()


async def _database(db: Database, settings: Settings) -> list[Check]:
    url = settings.resolved_database_url
    where = make_url(url).render_as_string(hide_password=True)
    try:
        async with asyncio.timeout(CHECK_LIMIT_S):
            return await _schema_and_processes(db, settings, url, where)
    except TimeoutError:
        return [Check("database", False, _no_answer(where))]


async def _schema_and_processes(db: Database, settings: Settings, url: str, where: str) -> list[Check]:
    try:
        async with db.engine.connect() as conn:
            revision = await conn.run_sync(_current_revision)
    except Exception as exc:
        return [Check("database", False, f"{where}: {exc}")]
    head = _head(url)
    if revision != head:
        return [Check("database", False, f"{where}: schema at {revision}, the code expects {head}; "
                                         "run `agentloft db upgrade`")]
    checks = [Check("database", True, f"{where} ({db.dialect}, schema {revision})")]
    async with db.session() as session:
        live = await workers.live(session, settings=settings)
    names = ", ".join(f"pid {w.pid} on {w.host}{' (Redis)' if w.shared else ''}" for w in live) or "none"
    checks.append(Check("server processes", True, f"{len(live)} running: {names}"))
    return checks


async def _redis(settings: Settings) -> Check:
    if not settings.redis_url:
        return Check("redis", True, "not configured: one server process, buffers in memory")
    from agentloft.core.redis import connect  # only when one is set, as the app does (``app._shared_parts``)

    shared = connect(settings.redis_url, settings.redis_prefix)
    parts = urlsplit(settings.redis_url)
    where = f"{parts.scheme}://{parts.hostname or ''}:{parts.port or 6379}{parts.path}"
    try:
        async with asyncio.timeout(CHECK_LIMIT_S):
            info = await shared.client.info("server")
        return Check("redis", True, f"{where}: Redis {info.get('redis_version', '?')}, prefix "
                                    f"'{settings.redis_prefix}'")
    except TimeoutError:
        return Check("redis", False, _no_answer(where))
    except Exception as exc:
        return Check("redis", False, f"{where}: {exc}")
    finally:
        await shared.aclose()


async def _documents(settings: Settings) -> Check:
    try:
        user = await extract.available(settings)
    except SandboxUnavailable as exc:
        return Check("document sandbox", False, f"documents (PDF, DOCX, PPTX, XLSX, HTML) are refused: {exc}")
    return Check("document sandbox", True, f"documents are read in bubblewrap as {user.name!r}")


async def _models(db: Database, settings: Settings) -> AsyncIterator[Check | Waiting]:
    box = SecretBox(settings.ensure_secret_key())
    try:
        async with db.session() as session:
            rows = list((await session.execute(select(ModelConfig).where(ModelConfig.enabled.is_(True))
                                               .order_by(ModelConfig.id))).scalars())
    except Exception as exc:
        yield Check("models", False, f"cannot list them: {exc}")
        return
    if not rows:
        yield Check("models", False, "no enabled model: an administrator has to add one")
        return
    models = ModelClients(timeout_seconds=settings.model_timeout_seconds)
    try:
        for row in rows:
            name = f"model '{row.name}'"
            yield Waiting(name, "asking for a short reply")
            result = await llm_service.test_model(row=row, box=box, models=models)
            detail = f"{row.provider} {row.model} at {row.base_url or 'the provider default'}: "
            detail += f"answered in {result.latency_ms} ms" if result.ok else (result.error or "failed")
            yield Check(name, result.ok, detail)
    finally:
        await models.aclose()


async def run(settings: Settings) -> AsyncIterator[Check | Waiting]:
    """Each check's result as it comes, each announced first when it may take a while."""
    db = Database(settings.resolved_database_url)
    try:
        yield Waiting("database", "connecting")
        checks = await _database(db, settings)
        for check in checks:
            yield check
        if settings.redis_url:
            yield Waiting("redis", "connecting")
        yield await _redis(settings)
        yield Waiting("document sandbox", "starting one")
        yield await _documents(settings)
        if checks[0].ok:
            async for item in _models(db, settings):
                yield item
    finally:
        await db.dispose()
