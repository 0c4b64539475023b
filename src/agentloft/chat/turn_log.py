"""What a finished turn leaves behind for whoever runs the instance: one log line and its metrics.

One line per turn saved (whatever its outcome): the agent's id (none for the plain LLM chat), the model
(the provider's model name an admin configured), the outcome, this run's tokens and model calls, its
duration from the request that started it, and the session's and user's ids; the request id is stamped
by ``core.logs`` (the turn's task inherits it from the request that started or resumed the turn). Ids
are fine in a log line, a user's words never are. The same figures go to ``core.metrics``, without ids.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentloft.chat.engine import PreparedTurn, TurnResult
    from agentloft.core.runtime import Runtime
    from agentloft.usage.service import Tokens

log = logging.getLogger("agentloft.turns")


def ended(rt: Runtime, turn: PreparedTurn, result: TurnResult, tokens: Tokens, model_calls: int) -> None:
    """Log and count the turn ``result`` ended; ``tokens`` and ``model_calls`` are this run's alone (a turn
    resumed after its approvals is a run of its own: each counts what it asked of the model once)."""
    seconds = time.perf_counter() - turn.started
    model = turn.model_row.model
    rt.metrics.turn_finished(source=turn.usage_source, outcome=result.status, seconds=seconds, model=model,
                             model_calls=model_calls, input_tokens=tokens.input, output_tokens=tokens.output)
    agent_id, user_id = turn.scope.agent_id, turn.scope.user_id
    log.info("turn %s agent=%s model=%s tokens=%d+%d %.1f ms session=%s user=%s", result.status,
             agent_id if agent_id is not None else "-", model, tokens.input, tokens.output, seconds * 1000,
             turn.session_id, user_id if user_id is not None else "-",
             extra={"outcome": result.status, "source": turn.usage_source, "agentId": agent_id, "model": model,
                    "modelCalls": model_calls, "inputTokens": tokens.input, "outputTokens": tokens.output,
                    "durationMs": round(seconds * 1000, 2), "sessionId": turn.session_id, "userId": user_id})
