"""A model call's span, from a wrapper of the model (``TracedModel``), in place of pydantic-ai's
instrumentation.

``ModelClients.model`` wraps every model it builds in one while traces are on (never while they are off:
then nothing is wrapped and a call pays nothing). Each request, streamed or not, is a CLIENT span named
``chat <model>`` (as pydantic-ai names it), a child of the span current when the request starts (the
``chat turn``, a title's request, a model test), covering the whole request: a stream's span ends when
the caller closes the stream. It carries the OpenTelemetry GenAI attributes that are known without work:
``gen_ai.operation.name``, ``gen_ai.provider.name`` (and the older ``gen_ai.system``),
``gen_ai.request.model``, ``server.address`` / ``server.port`` (worked out once per model), and at the
end ``gen_ai.response.model``, ``gen_ai.response.id``, ``gen_ai.response.finish_reasons`` and the token
counts (``gen_ai.usage.*``). A failure sets an error status and ``error.type`` with the exception's type
only: a provider's error message may quote the request. The messages go in
(``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``, in pydantic-ai's
GenAI format) only when ``AGENTLOFT_TRACE_CONTENT=true``, and then the error's message too.

Why not pydantic-ai's own (``InstrumentationSettings`` on the agent): with every trace sampled it made a
short turn cost 9-38 % more CPU, against a goal of 10 % (``docs/benchmarks.md``, issue 37). Per model call
it priced the response from the price tables (also for unsampled traces), prepared the request a second
time for the span's attributes, serialised every tool's definition (~7 kB for the Assistant) into
``gen_ai.tool.definitions``, and added an agent-run span that repeats ``chat turn``. None of that is done
here; the span is the model call's, with what an operator reads from it. The span is not made current:
nothing of ours runs under it (the model's HTTP requests are sent from an empty context,
``llm.clients.ModelHttpClient``), and a stream's consumer, whose own work would otherwise nest under the
model call, may close the stream in another step than the one that opened it.

Only public pydantic-ai API is used: ``WrapperModel``, ``StreamedResponse.get``, ``RequestUsage
.opentelemetry_attributes`` and, with content on, ``InstrumentationSettings.messages_to_otel_messages``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue
from pydantic_ai import RunContext
from pydantic_ai.messages import InstructionPart, ModelMessage, ModelRequest, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_core import to_json

from agentloft.core.tracing import SpanOptions, failed

if TYPE_CHECKING:
    from pydantic_ai.models.instrumented import InstrumentationSettings

OPERATION = "chat"
log = logging.getLogger(__name__)


def _server(base_url: str | None) -> dict[str, AttributeValue]:
    """``server.address`` / ``server.port`` of a model's base URL (none for what does not parse)."""
    if not base_url:
        return {}
    try:
        parts = urlsplit(base_url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return {}
    found: dict[str, AttributeValue] = {}
    if host:
        found["server.address"] = host
    if port:
        found["server.port"] = port
    return found


class TracedModel(WrapperModel):
    """``wrapped`` with a ``chat <model>`` span around each request (the module's doc)."""

    def __init__(self, wrapped: Model, options: SpanOptions) -> None:
        super().__init__(wrapped)
        self.options = options
        self.span_name = f"{OPERATION} {wrapped.model_name}"
        system = wrapped.system
        # The same for every request of this model: built once, copied by the SDK into each span.
        self.attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": OPERATION, "gen_ai.provider.name": system, "gen_ai.system": system,
            "gen_ai.request.model": wrapped.model_name, **_server(wrapped.base_url)}
        self._messages: InstrumentationSettings | None = None  # the content's converter, when content is on

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        with self._span() as span:
            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
            if span.is_recording():
                self._ended_quietly(span, messages, model_request_parameters, lambda: response)
            return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        with self._span() as span:
            stream: StreamedResponse | None = None
            try:
                async with self.wrapped.request_stream(messages, model_settings, model_request_parameters,
                                                       run_context) as stream:
                    yield stream
            finally:
                if stream is not None and span.is_recording():
                    # what the stream got, also when it was cut short (a stop, a failure)
                    self._ended_quietly(span, messages, model_request_parameters, stream.get)

    @contextmanager
    def _span(self) -> Iterator[trace.Span]:
        """The request's span, a child of the current one, ended when the request is; a failure marks it."""
        span = self.options.tracer.start_span(self.span_name, kind=trace.SpanKind.CLIENT,
                                              attributes=self.attributes)
        try:
            yield span
        except Exception as exc:
            if span.is_recording():
                failed(span, exc, content=self.options.content)
            raise
        finally:
            span.end()

    def _ended_quietly(self, span: trace.Span, messages: list[ModelMessage], parameters: ModelRequestParameters,
                       response: Callable[[], ModelResponse]) -> None:
        """``_ended`` with ``response()`` (a stream's may be read in any state it ended in), never failing:
        a span's attributes must not replace the request's own outcome (its answer, or its exception)
        with an error of theirs."""
        try:
            self._ended(span, messages, parameters, response())
        except Exception:
            log.debug("a model call's span got no response attributes", exc_info=True)

    def _ended(self, span: trace.Span, messages: list[ModelMessage], parameters: ModelRequestParameters,
               response: ModelResponse) -> None:
        """The response's attributes on ``span`` (a recording one)."""
        found: dict[str, AttributeValue] = dict(response.usage.opentelemetry_attributes())
        found["gen_ai.response.model"] = response.model_name or self.wrapped.model_name
        if response.provider_response_id is not None:
            found["gen_ai.response.id"] = response.provider_response_id
        if response.finish_reason is not None:
            found["gen_ai.response.finish_reasons"] = [response.finish_reason]
        if self.options.content:
            found.update(self._content(messages, parameters, response))
        span.set_attributes(found)

    def _content(self, messages: list[ModelMessage], parameters: ModelRequestParameters,
                 response: ModelResponse) -> dict[str, AttributeValue]:
        """What was sent and answered, as the GenAI conventions (and pydantic-ai) write it."""
        if self._messages is None:
            from pydantic_ai.models.instrumented import InstrumentationSettings

            self._messages = InstrumentationSettings(tracer_provider=trace.NoOpTracerProvider(),
                                                     include_content=True, include_binary_content=True)
        convert = self._messages.messages_to_otel_messages
        found: dict[str, AttributeValue] = {
            "gen_ai.input.messages": to_json(convert(messages), fallback=repr).decode(),
            "gen_ai.output.messages": to_json(convert([response]), fallback=repr).decode(),
        }
        instructions = _instructions(messages, parameters)
        if instructions:
            found["gen_ai.system_instructions"] = to_json([{"type": "text", "content": instructions}]).decode()
        return found


def _instructions(messages: list[ModelMessage], parameters: ModelRequestParameters) -> str | None:
    """The request's instructions: the run's parts when the agent set them, else the last request's."""
    if parameters.instruction_parts:
        return InstructionPart.join(parameters.instruction_parts)
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            return message.instructions
    return None

