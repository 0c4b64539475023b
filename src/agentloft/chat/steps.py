"""A turn's model loop, kept by the engine itself over pydantic-ai's model layer.

Why not pydantic-ai's agent run: its graph cost about 7 ms of CPU per turn, more than the rest of a turn of
ours, for behaviour the engine keeps anyway (approvals, stops, checkpoints, history). What stays
pydantic-ai's is what it is good at: the providers (``Model.request_stream``), messages and their
(de)serialisation, usage, tool definitions and the tool manager (argument validation, retry counts, the
model-visible shape of a retry or a failure), and the Vercel AI encoder (``chat.stream``).

``TurnSteps(model=, toolset=, prompt=, history=, deferred=, instructions=, settings=, max_steps=)``; iterate
``events()`` for the turn's events, the same objects an agent run yields (the model's ``PartStartEvent`` /
``PartDeltaEvent`` / ``PartEndEvent`` / ``FinalResultEvent``, ``FunctionToolCallEvent``,
``FunctionToolResultEvent``, the tools' ``CustomEvent``\\ s, ``DeferredToolRequestsEvent``) and last an
``AgentRunResultEvent`` (``StepsResult``) the encoder finishes the message from. Afterwards ``messages`` is
the whole history, ``usage`` this run's ``RunUsage`` and ``output`` the text of the last response, or the
``DeferredToolRequests`` the turn waits for (approvals, calls whose result comes from outside the run).

What it matches of the agent run (pydantic-ai 2.68), and how:
- The instructions go on every request it sends (``ModelRequest.instructions`` and the parameters'
  ``instruction_parts``), the new prompt in a ``UserPromptPart``; the history is repaired as the agent
  repairs it (``repair_messages``) and prepared by the model (``Model.prepare_messages``) before each request.
- A resume answers the last response's calls that have no result yet: an approved call runs with
  ``tool_call_approved``, a denied one gets the ``outcome='denied'`` return, an outside call's result
  becomes its return. Calls answered before the pause (their returns closing the history) are not run again.
- ``ApprovalRequired`` / ``CallDeferred`` collect into ``DeferredToolRequests`` (with the deferral's metadata)
  and end the turn; the returns of the other calls of that step close the history, as the agent saves them.
- Arguments that fail validation, an unknown tool name and ``ModelRetry`` become the ``outcome='retried'``
  return with the tool manager's attempt count (``UnexpectedModelBehavior`` once a tool's retries are spent);
  ``ToolFailed`` the ``outcome='failed'`` return.
- Calls of one response run side by side; their events stream as they happen, their returns go into the
  next request in the model's order.
- ``max_steps`` requests at most (``UsageLimits``' check): instead of the next one the turn ends with
  ``StepLimitReached`` (where the agent run raised ``UsageLimitExceeded``), its history as the agent kept it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic_ai import DeferredToolRequests, DeferredToolResults, RunContext, ToolApproved, ToolDenied
from pydantic_ai.exceptions import (
    ApprovalRequired,
    CallDeferred,
    ModelRetry,
    ToolFailed,
    ToolFailedError,
    ToolRetryError,
    UsageLimitExceeded,
)
from pydantic_ai.messages import (
    AgentStreamEvent,
    CustomEvent,
    DeferredToolRequestsEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryInfo,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
    repair_messages,
)
from pydantic_ai.models import Model, ModelRequestParameters

# private: how pydantic-ai holds a request to its deadlines (no public call takes a run context). Pinned with
# pydantic-ai's exact version (tests/chat/test_stream_contract.py); tests/llm/test_timeouts.py checks the behaviour.
from pydantic_ai.models._request_timeout import start_request_deadline, stream_under_deadline
from pydantic_ai.run import AgentRunResult, AgentRunResultEvent
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tool_manager import ToolManager, ValidatedToolCall
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import RunUsage, UsageLimits

# an agent's default: how often a call to a tool name that does not exist is answered before the run fails
DEFAULT_RETRIES = 1


@dataclasses.dataclass(repr=False)
class StepsResult(AgentRunResult[Any]):
    """The turn's result as the Vercel encoder reads it at the end (``output`` and the last ``response``),
    made without an agent run behind it."""

    last_response: ModelResponse | None = None

    @property
    def response(self) -> ModelResponse:
        if self.last_response is None:
            raise ValueError("the turn made no response")
        return self.last_response


@dataclasses.dataclass(kw_only=True)
class StepLimitReached(CustomEvent):
    """The turn's last event when it made ``max_steps`` requests and the model still called tools: the
    reply ends there, complete, with a notice (``chat.stream``) rather than a failure."""

    steps: int = 0


@dataclasses.dataclass(repr=False)
class _StepContext(RunContext[None]):
    """The ``RunContext`` tools get: ``emit`` puts their events into the turn's stream as they happen."""

    sink: Callable[[Any], None] | None = None

    async def emit(self, event: Any, /) -> Any:
        if self.sink is None:
            raise RuntimeError("emit is only available while the turn runs its tools")
        if isinstance(event, CustomEvent) and event.tool_call_id is None and self.tool_call_id is not None:
            event.tool_call_id = self.tool_call_id
            event.tool_name = self.tool_name
        self.sink(event)
        return event


@dataclasses.dataclass
class _Failed:
    """A tool call that raised (not a deferral): the loop raises it, ending the turn as the agent run did."""

    error: Exception


class TurnSteps:
    """One turn's steps: request, stream, run the tools, repeat (see the module's doc)."""

    def __init__(
        self,
        *,
        model: Model,
        toolset: AbstractToolset[None] | None,
        prompt: str | Sequence[UserContent] | None,
        history: list[ModelMessage],
        deferred: DeferredToolResults | None,
        instructions: str | None,
        settings: ModelSettings | None,
        max_steps: int,
    ) -> None:
        self.model = model
        self.toolset = toolset
        self.prompt = prompt
        self.deferred = deferred
        self.instructions = instructions or None
        self.settings = settings
        self.limits = UsageLimits(request_limit=max_steps)
        self.messages: list[ModelMessage] = list(history)
        self.usage = RunUsage()
        self.output: str | DeferredToolRequests | None = None
        self.started = False  # set once the first step began: ``messages`` / ``usage`` are the run's
        self._queue: asyncio.Queue[Any] | None = None
        self._manager: ToolManager[None] | None = None
        self._step = 0

    # --- the loop ------------------------------------------------------------------------------------

    async def events(self) -> AsyncIterator[Any]:
        self.started = True
        ctx = self._context()
        manager = ToolManager[None](toolset=self.toolset, default_max_retries=DEFAULT_RETRIES) if self.toolset else None
        self._manager = await manager.for_run_step(ctx) if manager else None
        params = ModelRequestParameters(
            function_tools=self._manager.tool_defs if self._manager else [],
            instruction_parts=[InstructionPart(content=self.instructions)] if self.instructions else None,
        )
        if self.deferred is not None:
            request = None
            async for event in self._resume(self.deferred):
                if isinstance(event, ModelRequest):
                    request = event
                else:
                    yield event
            if isinstance(self.output, DeferredToolRequests) or request is None:  # waits again
                if request is not None and request.parts:
                    request.timestamp = datetime.now(UTC)
                    self.messages.append(request)
                async for event in self._end():
                    yield event
                return
        else:
            if self.prompt is not None:
                self.messages = repair_messages(self.messages)
            request = ModelRequest(parts=[UserPromptPart(self.prompt)] if self.prompt is not None else [])
        while True:
            request.instructions = self.instructions
            request.timestamp = datetime.now(UTC)
            self.messages.append(request)
            try:
                self.limits.check_before_request(self.usage)
            except UsageLimitExceeded:
                yield StepLimitReached(steps=self.usage.requests)
                return
            self._step += 1
            response: ModelResponse | None = None
            async for event in self._request(params):
                if isinstance(event, ModelResponse):
                    response = event
                else:
                    yield event
            assert response is not None
            calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
            if not calls:
                self.output = response.text or ""
                break
            parts: list[ModelRequestPart] = []
            async for event in self._run_calls(calls, {}, parts):
                yield event
            if isinstance(self.output, DeferredToolRequests):
                if parts:  # the returns of the calls that ran close the history, as an agent run saves it
                    self.messages.append(ModelRequest(parts=parts, timestamp=datetime.now(UTC)))
                break
            request = ModelRequest(parts=parts)
        async for event in self._end():
            yield event

    async def _end(self) -> AsyncIterator[Any]:
        if isinstance(self.output, DeferredToolRequests):
            yield DeferredToolRequestsEvent(self.output)
        last = next((m for m in reversed(self.messages) if isinstance(m, ModelResponse)), None)
        yield AgentRunResultEvent(result=StepsResult(output=self.output, last_response=last))

    def _context(self) -> _StepContext:
        return _StepContext(deps=None, model=self.model, usage=self.usage, prompt=self.prompt,
                            messages=self.messages, run_step=self._step, usage_limits=self.limits,
                            model_settings=self.settings, sink=self._put)

    def _put(self, event: Any) -> None:
        if self._queue is None:
            raise RuntimeError("emit is only available while the turn runs its tools")
        self._queue.put_nowait(("event", event))

    async def _request(self, params: ModelRequestParameters) -> AsyncIterator[Any]:
        """One model request, streamed; last the ``ModelResponse``, added to the history and the usage."""
        messages = self.model.prepare_messages(repair_messages(self.messages), params)
        # under the request's deadlines (``timeout`` / ``first_event_timeout`` of the settings or the model), as
        # the agent run and ``pydantic_ai.direct`` send it: the first words within the model's wait, every SDK
        # retry included (``llm.clients``)
        deadline = start_request_deadline(self.model, self.settings, stream=True)
        opened = self.model.request_stream(messages, self.settings, params, self._context())
        async with stream_under_deadline(deadline, opened) as stream:
            try:
                async for event in stream:
                    yield event
            except Exception:  # no response to keep, but what the provider reported it used counts
                self.usage.incr(stream.usage)
                raise
        response = stream.get()
        response.model_id = response.model_id or self.model.model_id
        self.usage.requests += 1
        self.usage.incr(response.usage)
        self.messages.append(response)
        yield response

    # --- tools ---------------------------------------------------------------------------------------

    async def _resume(self, deferred: DeferredToolResults) -> AsyncIterator[Any]:
        """Answer the calls the paused turn waits for; last the ``ModelRequest`` with their returns."""
        answered: set[str] = set()
        response: ModelResponse | None = None
        for message in reversed(self.messages):
            if isinstance(message, ModelRequest):
                answered.update(getattr(p, "tool_call_id", "") for p in message.parts
                                if p.part_kind in ("tool-return", "retry-prompt"))
            elif isinstance(message, ModelResponse):
                response = message
                break
        if response is None or not response.tool_calls:
            raise ValueError("tool call results were given, but the history has no call waiting for one")
        results = deferred.to_tool_call_results()
        calls = [c for c in response.tool_calls if c.tool_call_id not in answered]
        parts: list[ModelRequestPart] = []
        async for event in self._run_calls(calls, results, parts):
            yield event
        yield ModelRequest(parts=parts)

    async def _run_calls(self, calls: list[ToolCallPart], results: dict[str, Any],
                         parts: list[ModelRequestPart]) -> AsyncIterator[AgentStreamEvent]:
        """Validate the calls (their call events first, as the agent sends them), run them side by side
        and stream what they emit and their results as they come; ``parts`` gets the returns in the
        model's order, ``output`` the deferrals if any call needs one."""
        manager = self._manager
        if manager is not None:
            manager = self._manager = await manager.for_run_step(self._context())
        jobs: list[tuple[ToolCallPart, Any]] = []
        for call in calls:
            answer = results.get(call.tool_call_id)
            if answer is not None and not isinstance(answer, ToolApproved):
                yield FunctionToolCallEvent(call)
                jobs.append((call, answer))
                continue
            if manager is None:
                raise ValueError(f"the model called {call.tool_name!r}, but this turn has no tools")
            try:
                validated = await manager.validate_tool_call(call, approved=answer is not None)
            except Exception:
                yield FunctionToolCallEvent(call, args_valid=False)
                raise
            yield FunctionToolCallEvent(call, args_valid=validated.args_valid)
            jobs.append((call, validated))
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._queue = queue
        tasks = [asyncio.create_task(self._call(i, call, job, queue), name=call.tool_name)
                 for i, (call, job) in enumerate(jobs)]
        done: dict[int, Any] = {}
        approvals: list[ToolCallPart] = []
        deferred_calls: list[ToolCallPart] = []
        metadata: dict[str, dict[str, Any]] = {}
        try:
            while len(done) < len(tasks):
                # as the agent run does: what the tools emitted first, then the calls that ended meanwhile
                batch = [await queue.get()]
                while not queue.empty():
                    batch.append(queue.get_nowait())
                ended: list[tuple[int, Any]] = []
                for kind, item in batch:
                    if kind == "event":
                        yield item
                    else:
                        ended.append(item)
                for index, outcome in sorted(ended, key=lambda e: e[0]):
                    if isinstance(outcome, _Failed):
                        raise outcome.error
                    done[index] = outcome
                    if isinstance(outcome, ToolReturnPart):
                        yield FunctionToolResultEvent(outcome)
        finally:
            self._queue = None
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
        for index in range(len(jobs)):
            outcome, call = done[index], jobs[index][0]
            if isinstance(outcome, ApprovalRequired):
                approvals.append(call)
            elif isinstance(outcome, CallDeferred):
                deferred_calls.append(call)
            else:
                parts.append(outcome)
                continue
            if outcome.metadata is not None:
                metadata[call.tool_call_id] = outcome.metadata
        if approvals or deferred_calls:
            self.output = DeferredToolRequests(calls=deferred_calls, approvals=approvals, metadata=metadata)

    async def _call(self, index: int, call: ToolCallPart, job: Any, queue: asyncio.Queue[Any]) -> None:
        try:
            outcome: Any = await self._outcome(call, job)
        except (ApprovalRequired, CallDeferred) as exc:
            outcome = exc
        except Exception as exc:  # handed to the loop, which raises it there
            outcome = _Failed(exc)
        queue.put_nowait(("done", (index, outcome)))

    async def _outcome(self, call: ToolCallPart, job: Any) -> ToolReturnPart:
        """The call's return part: run (a ``ValidatedToolCall``), denied, or answered from outside."""
        if isinstance(job, ToolDenied | ToolFailed):  # a denial, or an outside call that failed (``a2a.waiting``)
            return ToolReturnPart(tool_name=call.tool_name, content=job.message, tool_call_id=call.tool_call_id,
                                  tool_kind=call.tool_kind,
                                  outcome="denied" if isinstance(job, ToolDenied) else "failed")
        if isinstance(job, ModelRetry):  # an outside call's result that asks the model to try again
            return ToolReturnPart(tool_name=call.tool_name, content=job.message, tool_call_id=call.tool_call_id,
                                  tool_kind=call.tool_kind, outcome="retried", retry=RetryInfo(cause="model_retry"))
        if isinstance(job, ValidatedToolCall):
            assert self._manager is not None
            try:
                result = await self._manager.execute_tool_call(job)
            except ToolRetryError as exc:
                assert isinstance(exc.tool_retry, ToolReturnPart)
                return exc.tool_retry
            except ToolFailedError as exc:
                return exc.tool_failed
        else:
            result = job.return_value if isinstance(job, ToolReturn) else job
        tool_def = self._manager.get_tool_def(call.tool_name) if self._manager else None
        part = ToolReturnPart(tool_name=call.tool_name, tool_call_id=call.tool_call_id, content=result,
                              tool_kind=tool_def.tool_kind if tool_def else None)
        return ToolReturnPart.narrow_type(part)


__all__ = ["StepLimitReached", "StepsResult", "TurnSteps"]
