"""The budget check between a turn's model calls: a wrapper of the turn's model that, before each call,
checks what the run used so far against what the user had left when the turn started
(``usage.budgets.Allowance``) and refuses the call with ``BudgetExceeded`` when a budget is used up.

Why a model wrapper: it is the one point pydantic-ai passes before every request of a run, with the run's
usage so far (``RunContext.usage``), and it costs nothing for users without budgets (the turn then runs on
the model itself). The call under way when the budget runs out is never cut: its tokens were paid for, so
its reply is kept, and the run ends with the refusal as its error (``chat.stream``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from agentloft.usage.budgets import Allowance
from agentloft.usage.service import tokens_of


class BudgetedModel(WrapperModel):
    def __init__(self, wrapped: Any, allowance: Allowance) -> None:
        super().__init__(wrapped)
        self.allowance = allowance

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        if run_context is not None:
            self.allowance.check(tokens_of(run_context.usage))
        async with self.wrapped.request_stream(messages, model_settings, model_request_parameters,
                                               run_context) as response:
            yield response
