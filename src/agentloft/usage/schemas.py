"""The usage API's bodies (issue 33's contract): reports, budgets and what is left of them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field, StrictInt

from agentloft.core.schemas import ApiModel, BodyId
from agentloft.usage.models import Period, Scope

MaxTokens = Annotated[StrictInt, Field(ge=1, le=10**15)]
MaxCost = Annotated[float, Field(gt=0, le=10**9, allow_inf_nan=False)]


class UsageTotal(ApiModel):
    input_tokens: int
    output_tokens: int
    cost: float | None = Field(description="USD, of the records whose model has prices; null: none has.")
    turns: int = Field(description="Chat, A2A and API turns (titles and embeddings are not turns).")


class UsageItem(UsageTotal):
    key: str | None = Field(description="The day (YYYY-MM-DD) or the agent's, model's or user's id; null: "
                            "records without one (the plain chat has no agent).")
    label: str | None = Field(description="The day, or the agent's, model's or user's name; null: deleted.")


class UsageReport(ApiModel):
    items: list[UsageItem]
    total: UsageTotal


class BudgetCreate(ApiModel):
    scope: Scope
    scope_id: BodyId | None = Field(default=None, description="The user's (or group's) id; null for everyone.")
    period: Period
    max_tokens: MaxTokens | None = Field(default=None, description="Input plus output tokens per period.")
    max_cost: MaxCost | None = Field(default=None, description="USD per period (runs of priced models).")


class BudgetRead(ApiModel):
    id: int
    scope: Scope
    scope_id: int | None
    period: Period
    max_tokens: int | None
    max_cost: float | None
    created_at: datetime
    updated_at: datetime


class BudgetPage(ApiModel):
    items: list[BudgetRead]


class BudgetStanding(ApiModel):
    """One budget as the user it applies to sees it."""

    id: int
    scope: Scope
    period: Period
    max_tokens: int | None
    max_cost: float | None
    used_tokens: int
    used_cost: float
    left_tokens: int | None = Field(description="null: the budget sets no token limit.")
    left_cost: float | None = Field(description="null: the budget sets no cost limit.")
    resets_at: datetime


class BudgetStandings(ApiModel):
    items: list[BudgetStanding]
