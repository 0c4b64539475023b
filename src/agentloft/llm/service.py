"""Model configurations: CRUD, the default model, the bootstrap model from the environment, the test.

A model is a chat model or an embedding model (``kind``). Decided where the issue is silent:
- the kind is chosen when a model is created and cannot change afterwards (a model that agents run on
  does not become one that knowledge embeds with, or the reverse; an update naming another kind is a 422):
  what points at a model (agents, the knowledge setting) then never finds the wrong kind there;
- an embedding model speaks OpenAI's ``/v1/embeddings`` (Anthropic has no embeddings API), is never the
  default model, and never becomes it by being the first one added;
- its Test embeds one short text and reports the vector's length.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelAPIError, ModelRequestTimeout, ModelTimeoutError
from pydantic_ai.settings import ModelSettings
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core.crypto import SecretBox
from agentloft.core.db import one_or_404, value_taken
from agentloft.core.errors import Conflict, NotFound, invalid_field
from agentloft.core.schemas import PageParams
from agentloft.core.settings import Settings
from agentloft.groups import access
from agentloft.llm import prices
from agentloft.llm.clients import ModelClients
from agentloft.llm.failures import describe_failure
from agentloft.llm.models import ModelConfig, ModelKind
from agentloft.llm.presets import default_vision
from agentloft.llm.providers import ModelSpec
from agentloft.llm.schemas import ModelConfigCreate, ModelConfigRead, ModelConfigUpdate, ModelTestResult

BOOTSTRAP_NAME = "Default (from environment)"
log = logging.getLogger(__name__)
TEST_LIMIT_S = 15.0
"""The longest the model test (the admin pages' Test and "Save and test", and ``agentloft doctor``) waits
for its answer, retries included: short, so that a silent or unreachable model is reported while the
admin is still looking. The pages and the README say this number."""


def to_read(row: ModelConfig) -> ModelConfigRead:
    return ModelConfigRead(
        id=row.id,
        name=row.name,
        kind=row.kind,
        provider=row.provider,
        base_url=row.base_url,
        model=row.model,
        has_api_key=bool(row.api_key_enc),
        enabled=row.enabled,
        is_default=row.is_default,
        vision=row.vision,
        input_price_per_m_tok=row.input_price_per_mtok,
        output_price_per_m_tok=row.output_price_per_mtok,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def read_models(*, db: AsyncSession, rows: Sequence[ModelConfig]) -> list[ModelConfigRead]:
    """``to_read`` of each row with the groups it is limited to."""
    groups = await access.groups_of(db=db, kind="model", ids=[r.id for r in rows])
    return [to_read(r).model_copy(update={"group_ids": groups[r.id]}) for r in rows]


async def _clear_default(db: AsyncSession, keep_id: int) -> None:
    await db.execute(update(ModelConfig).where(ModelConfig.id != keep_id).values(is_default=False))


async def _first_becomes_default(db: AsyncSession, row: ModelConfig) -> None:
    """The first enabled chat model is the default, so a fresh install works without an extra click."""
    stmt = select(func.count(ModelConfig.id)).where(ModelConfig.is_default.is_(True), ModelConfig.id != row.id)
    if row.kind != "embedding" and row.enabled and (await db.execute(stmt)).scalar_one() == 0:
        row.is_default = True


async def _name_taken(db: AsyncSession, name: str, except_id: int | None = None) -> bool:
    return await value_taken(db, ModelConfig.name, name, id_column=ModelConfig.id, except_id=except_id)


def _name_conflict(name: str) -> Conflict:
    return Conflict(f"a model named '{name}' exists", code="model_name_taken")


async def _flush_name(db: AsyncSession, name: str) -> None:
    """Write pending changes; a name another request took meanwhile is the same 409 (the unique index)."""
    try:
        await db.flush()
    except IntegrityError as exc:
        raise _name_conflict(name) from exc


def _check_kind(row: ModelConfig) -> None:
    """What an embedding model cannot be (the module's doc)."""
    if row.kind != "embedding":
        return
    if row.provider != "openai":
        raise invalid_field("provider", "openai_compatible_only",
                            "an embedding model must use an OpenAI-compatible endpoint")
    if row.is_default:
        raise invalid_field("isDefault", "chat_model_only", "only a chat model can be the default")


async def _prices(data: ModelConfigCreate) -> tuple[float | None, float | None]:
    """The new model's prices: those given, else the price list's for a known model (``llm.prices``), looked
    up in a thread: the first lookup of a process loads the list (about a second of CPU, 5 MB)."""
    if {"input_price_per_m_tok", "output_price_per_m_tok"} & data.model_fields_set:
        return data.input_price_per_m_tok, data.output_price_per_m_tok
    known = await asyncio.to_thread(prices.known_prices, provider=data.provider, base_url=data.base_url,
                                    model=data.model)
    return known or (None, None)


async def create_model(*, db: AsyncSession, box: SecretBox, data: ModelConfigCreate) -> ModelConfig:
    if await _name_taken(db, data.name):
        raise _name_conflict(data.name)
    input_price, output_price = await _prices(data)
    row = ModelConfig(
        name=data.name,
        kind=data.kind,
        provider=data.provider,
        base_url=data.base_url,
        model=data.model,
        api_key_enc=box.encrypt(data.api_key) if data.api_key else None,
        enabled=data.enabled,
        is_default=data.is_default,
        vision=default_vision(data.kind, data.provider, data.base_url) if data.vision is None else data.vision,
        input_price_per_mtok=input_price,
        output_price_per_mtok=output_price,
    )
    _check_kind(row)
    group_ids = await access.check_group_ids(db=db, group_ids=data.group_ids)
    db.add(row)
    await _flush_name(db, row.name)
    await access.set_groups(db=db, kind="model", resource_id=row.id, group_ids=group_ids)
    if row.is_default:
        await _clear_default(db, row.id)
    await _first_becomes_default(db, row)
    await db.flush()
    return row


async def get_model(*, db: AsyncSession, model_id: int) -> ModelConfig:
    return await one_or_404(db, select(ModelConfig).where(ModelConfig.id == model_id),
                            NotFound("model not found", code="model_not_found"))


async def check_kind(*, db: AsyncSession, model_id: int | None, kind: ModelKind, field: str, message: str) -> None:
    """A model chosen for a use (an agent's, knowledge's) exists and is of ``kind``; else a 422 on ``field``
    (``no_such_model``, or ``chat_model_only`` / ``embedding_model_only`` with ``message``)."""
    if model_id is None:
        return
    try:
        row = await get_model(db=db, model_id=model_id)
    except NotFound as exc:
        raise invalid_field(field, "no_such_model", "no such model") from exc
    if row.kind != kind:
        raise invalid_field(field, "chat_model_only" if kind == "chat" else "embedding_model_only", message)


async def list_models(
    *, db: AsyncSession, page: PageParams, kind: ModelKind | None = None
) -> tuple[list[ModelConfig], int]:
    """A page of the models, of one kind when ``kind`` is given (the pickers ask for theirs)."""
    where = [ModelConfig.kind == kind] if kind else []
    total = int((await db.execute(select(func.count(ModelConfig.id)).where(*where))).scalar_one())
    stmt = select(ModelConfig).where(*where).order_by(ModelConfig.id).offset(page.offset).limit(page.page_size)
    return list((await db.execute(stmt)).scalars()), total


# Fields an update may set to null (the default endpoint, an unknown price); others keep their value then.
_CLEARABLE = frozenset({"base_url", "input_price_per_m_tok", "output_price_per_m_tok"})
# API fields whose column is named otherwise (``MTok`` reads as one word in the column's name).
_COLUMNS = {"input_price_per_m_tok": "input_price_per_mtok", "output_price_per_m_tok": "output_price_per_mtok"}


async def update_model(
    *, db: AsyncSession, box: SecretBox, model_id: int, data: ModelConfigUpdate
) -> ModelConfig:
    row = await get_model(db=db, model_id=model_id)
    changes = data.model_dump(exclude_unset=True)
    group_ids = changes.pop("group_ids", None)
    if group_ids is not None:
        await access.set_groups(db=db, kind="model", resource_id=row.id, group_ids=group_ids)
    if changes.pop("kind", None) not in (None, row.kind):
        raise invalid_field("kind", "not_editable", "a model's kind is chosen when it is created")
    if changes.get("name") and await _name_taken(db, changes["name"], except_id=row.id):
        raise _name_conflict(changes["name"])
    if "api_key" in changes:
        key = changes.pop("api_key")
        row.api_key_enc = box.encrypt(key) if key else None
    for field, value in changes.items():
        if value is not None or field in _CLEARABLE:
            setattr(row, _COLUMNS.get(field, field), value)
    _check_kind(row)
    await _flush_name(db, row.name)
    if row.is_default:
        await _clear_default(db, row.id)
    return row


async def make_default(*, db: AsyncSession, row: ModelConfig) -> None:
    """Switch ``row`` on and make it the default (the one chats without a model of their own use); an
    embedding model is only switched on."""
    row.enabled = True
    if row.kind == "embedding":
        await db.flush()
        return
    row.is_default = True
    await db.flush()
    await _clear_default(db, row.id)


async def delete_model(*, db: AsyncSession, model_id: int) -> None:
    row = await get_model(db=db, model_id=model_id)
    await db.delete(row)
    await db.flush()


async def default_model(*, db: AsyncSession, viewer: access.Viewer | None = None,
                        limits: access.Limits | None = None) -> ModelConfig | None:
    """The enabled default chat model, else the oldest enabled one, else None; with ``viewer``, the first
    of those that the viewer may use (a model limited to groups is no default for anyone else)."""
    stmt = (
        select(ModelConfig)
        .where(ModelConfig.enabled.is_(True), ModelConfig.kind == "chat")
        .order_by(ModelConfig.is_default.desc(), ModelConfig.id)
    )
    if viewer is None or viewer.sees_all:
        return (await db.execute(stmt.limit(1))).scalar_one_or_none()
    limits = limits if limits is not None else await access.load_limits(db=db, viewer=viewer)
    return next((r for r in (await db.execute(stmt)).scalars() if limits.allows(viewer, "model", r.id)), None)


async def has_enabled_model(*, db: AsyncSession) -> bool:
    return await default_model(db=db) is not None


def spec_of(*, row: ModelConfig, box: SecretBox) -> ModelSpec:
    return ModelSpec(
        provider=row.provider,
        model=row.model,
        base_url=row.base_url,
        api_key=box.decrypt(row.api_key_enc) if row.api_key_enc else None,
    )


async def ensure_bootstrap_model(*, db: AsyncSession, box: SecretBox, settings: Settings) -> None:
    """Create or refresh the model named by ``AGENTLOFT_OPENAI_BASE_URL`` and make it the default."""
    if not settings.openai_base_url:
        return
    stmt = select(ModelConfig).where(ModelConfig.name == BOOTSTRAP_NAME)
    row = (await db.execute(stmt)).scalar_one_or_none()
    if row is None:
        base_url = settings.openai_base_url.rstrip("/")
        row = ModelConfig(name=BOOTSTRAP_NAME, kind="chat", provider="openai", model="", enabled=True,
                          vision=default_vision("chat", "openai", base_url))
        db.add(row)
    row.base_url = settings.openai_base_url.rstrip("/")
    row.model = settings.default_model or "gpt-4o-mini"
    row.api_key_enc = box.encrypt(settings.openai_api_key) if settings.openai_api_key else None
    await make_default(db=db, row=row)


async def test_model(*, row: ModelConfig, box: SecretBox, models: ModelClients) -> ModelTestResult:
    """Make one small request through the same clients chats use; report the reply, or why it failed in
    words an administrator can act on (never an error status: a failing model is the answer here). The
    whole request, retries included, takes at most ``TEST_LIMIT_S``."""
    if row.kind == "embedding":
        return await _test_embedding(row=row, box=box, models=models)
    limit = TEST_LIMIT_S
    started = time.perf_counter()
    try:
        model = models.model(spec_of(row=row, box=box))
    except Exception as exc:
        return ModelTestResult(ok=False, latency_ms=_ms(started), error=f"The model cannot be set up: {_describe(exc)}")
    try:
        result = await Agent(model).run(
            "Reply with the single word OK.",
            model_settings=ModelSettings(max_tokens=16, timeout=limit, request_timeout=limit),
        )
        reply = str(result.output)
        return ModelTestResult(ok=True, latency_ms=_ms(started), reply=reply[:200])
    except (ModelRequestTimeout, ModelTimeoutError) as exc:
        log.info("model test failed: %r", exc)
        return ModelTestResult(ok=False, latency_ms=_ms(started), error=_timed_out(limit, models.timeout_seconds))
    except Exception as exc:
        log.info("model test failed: %r", exc)
        return ModelTestResult(ok=False, latency_ms=_ms(started), error=describe_failure(exc))


async def _test_embedding(*, row: ModelConfig, box: SecretBox, models: ModelClients) -> ModelTestResult:
    """An embedding model's test: one short text through ``/v1/embeddings``, the vector's length back."""
    started = time.perf_counter()
    try:
        vectors = await models.embed(spec_of(row=row, box=box), ["OK"], timeout_s=TEST_LIMIT_S)
    except ModelAPIError as exc:
        log.info("embedding model test failed: %r", exc)
        if isinstance(exc.__cause__, TimeoutError):
            return ModelTestResult(ok=False, latency_ms=_ms(started),
                                   error=_timed_out(TEST_LIMIT_S, models.timeout_seconds))
        return ModelTestResult(ok=False, latency_ms=_ms(started), error=describe_failure(exc))
    except Exception as exc:
        log.info("embedding model test failed: %r", exc)
        return ModelTestResult(ok=False, latency_ms=_ms(started), error=describe_failure(exc))
    return ModelTestResult(ok=True, latency_ms=_ms(started), dimensions=len(vectors[0]))


def _timed_out(limit_s: float, chat_timeout_s: float) -> str:
    """Why a model test failed when the model said nothing in time."""
    return (f"The model did not answer within {limit_s:g} s, the longest the test waits (a chat waits up to "
            f"{chat_timeout_s:g} s for a model that says nothing); a model that is still loading may "
            "answer if you try again in a minute.")


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text[:500]
