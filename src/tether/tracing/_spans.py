"""One traced run: its ``invoke_agent`` span and the ``chat`` and ``execute_tool`` spans under it.

``RunTrace.start`` opens the run's span; the loop then hands it every model request
(``open_stream``: the request's span lasts until its response or failure) and every event
(``observe``: ``tool.started`` opens a tool call's span, ``tool.finished`` ends it,
``run.finished`` ends the run's). Spans are parented explicitly on the run's span, so they
nest correctly whatever task they are created on; ``attached`` makes the run's span current
while the loop starts its producer, so spans the user's own tools create nest under it too.

Nothing here raises into the run: a tracer that fails is the tracer's problem, and a span
left open when the run ends (an aborted request, a tool cut off) is ended then, with
``error.type`` ``cancelled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Final, cast

from tether._base.exact_types import instance_of
from tether._base.tether_error import TetherError
from tether.abort import AbortSignal
from tether.protocol import (
    AgentEvent,
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    RunResult,
    ToolCall,
    ToolResultMessage,
)
from tether.stream import EventStream
from tether.tracing._config import INSTRUMENTATION_NAME, Tracing, TracingUnavailableError

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = ["RunTrace", "provider_name"]

_PROVIDERS: Final = {
    "OpenAIChatModel": "openai",
    "OpenAIResponsesModel": "openai",
    "AnthropicModel": "anthropic",
    "GeminiModel": "gcp.gemini",
}
"""``gen_ai.provider.name`` of tether's HTTP models, by class (the conventions' values)."""

_FINISH_REASONS: Final = {
    "stop": "stop",
    "toolCall": "tool_call",
    "length": "length",
    "refusal": "content_filter",
}
"""tether's stop reasons as the conventions' ``gen_ai.response.finish_reasons`` values."""

_CODE_PREFIX: Final = re.compile(r"([A-Z][A-Z0-9_]{2,63}):")
_CODE_JSON: Final = re.compile(r'\{"error":\{"code":"([A-Z][A-Z0-9_]{2,63})"')


def provider_name(model: object) -> str:
    """``gen_ai.provider.name`` for ``model``: a ``gen_ai_provider_name`` attribute of its
    own, else the conventions' name for tether's HTTP models, else ``tether.<ClassName>``."""
    own = getattr(model, "gen_ai_provider_name", None)
    if type(own) is str and own:
        return own
    name = type(model).__name__
    return _PROVIDERS.get(name, f"tether.{name}")


def _innermost(model: object) -> object:
    """The model a wrapper (the coding session's metered model) holds in its ``model``
    attribute, followed a few levels: the one the spans name."""
    for _ in range(4):
        inner = getattr(model, "model", None)
        if inner is None or isinstance(inner, str) or not callable(getattr(inner, "stream", None)):
            break
        model = inner
    return model


def _model_name(model: object) -> str | None:
    name = getattr(type(model), "model", None)
    if isinstance(name, property):
        value = getattr(model, "model", None)
        return value if type(value) is str and value else None
    return None


def _tool_error_type(message: ToolResultMessage) -> str:
    content = message.content
    found = _CODE_JSON.match(content) or _CODE_PREFIX.match(content)
    return found.group(1) if found is not None else "TOOL_ERROR"


def _usage_attributes(usage: ModelUsage) -> dict[str, int]:
    # The conventions count cached input among the input tokens; tether counts it apart.
    return {
        "gen_ai.usage.input_tokens": usage.input_tokens
        + usage.cache_read_tokens
        + usage.cache_write_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
    }


def _messages_json(request: ModelRequest) -> str:
    from tether.protocol.codec import to_json

    return json.dumps([to_json(message) for message in request.messages], ensure_ascii=False)


def _output_json(message: AssistantMessage) -> str:
    from tether.protocol.codec import to_json

    return json.dumps([to_json(message)], ensure_ascii=False)


class RunTrace:
    """The spans of one run (see the module docstring)."""

    __slots__ = (
        "_context",
        "_ended",
        "_model_attributes",
        "_open_models",
        "_open_tools",
        "_pending",
        "_record",
        "_span",
        "_trace_api",
        "_tracer",
    )

    def __init__(self, tracing: Tracing, model: object, system: str | None) -> None:
        try:
            from opentelemetry import trace
        except ImportError:
            raise TracingUnavailableError() from None
        from tether import __version__

        model = _innermost(model)
        provider = tracing.tracer_provider or trace.get_tracer_provider()
        self._trace_api: Any = trace
        self._tracer: Tracer = provider.get_tracer(INSTRUMENTATION_NAME, __version__)
        self._record = tracing.record_content
        self._model_attributes: dict[str, str] = {"gen_ai.provider.name": provider_name(model)}
        request_model = _model_name(model)
        if request_model is not None:
            self._model_attributes["gen_ai.request.model"] = request_model
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            **self._model_attributes,
        }
        name = "invoke_agent"
        if tracing.agent_name is not None:
            attributes["gen_ai.agent.name"] = tracing.agent_name
            name = f"invoke_agent {tracing.agent_name}"
        if self._record and system is not None:
            attributes["gen_ai.system_instructions"] = json.dumps(
                [{"type": "text", "content": system}], ensure_ascii=False
            )
        self._span: Span = self._tracer.start_span(
            name, kind=trace.SpanKind.INTERNAL, attributes=attributes
        )
        self._context = trace.set_span_in_context(self._span)
        self._ended = False
        self._open_models: dict[str, Span] = {}
        self._open_tools: dict[str, Span] = {}
        self._pending: dict[str, EventStream[Any, Any]] = {}

    @contextlib.contextmanager
    def attached(self) -> Generator[None]:
        """The run's span is the current span inside the block (a task created there, such
        as the loop's producer, keeps it)."""
        from opentelemetry import context

        token = context.attach(self._context)
        try:
            yield
        finally:
            context.detach(token)

    # --- model requests ------------------------------------------------------------------

    def open_stream(
        self, open_stream: Callable[[ModelRequest, AbortSignal], object]
    ) -> Callable[[ModelRequest, AbortSignal], object]:
        """``open_stream`` with a ``chat`` span around each request."""

        def traced(request: ModelRequest, signal: AbortSignal) -> object:
            self._model_span(request)
            try:
                opened = open_stream(request, signal)
            except BaseException as error:
                self.end_model(request.id, error=error)
                raise
            if type(opened) is EventStream:
                events = cast("EventStream[Any, Any]", opened)
                self._observe_result(request.id, events)
                return events
            return _TracedStream(self, request.id, opened)

        return traced

    def _model_span(self, request: ModelRequest) -> None:
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", **self._model_attributes}
        if self._record:
            attributes["gen_ai.input.messages"] = _messages_json(request)
        name = f"chat {self._model_attributes.get('gen_ai.request.model', '')}".rstrip()
        span = self._tracer.start_span(
            name,
            context=self._context,
            kind=self._trace_api.SpanKind.CLIENT,
            attributes=attributes,
        )
        self._open_models[request.id] = span

    def _observe_result(self, request_id: str, stream: EventStream[Any, Any]) -> None:
        """End the request's span once ``stream`` has settled: looked at before each event
        (the loop reads a response before it emits what follows it) and when the run ends.
        No task waits on it, so nothing is left behind."""
        self._pending[request_id] = stream

    def _settled_requests(self) -> None:
        for request_id, stream in list(self._pending.items()):
            if not stream.settled:
                continue
            del self._pending[request_id]
            try:
                response = stream.result_nowait(None)
            except BaseException as error:
                self.end_model(request_id, error=error)
            else:
                self.end_model(request_id, response=response)

    def end_model(
        self,
        request_id: str,
        *,
        response: object = None,
        error: BaseException | None = None,
        cancelled: bool = False,
    ) -> None:
        """End request ``request_id``'s span: with its ``response``, its ``error``, or as
        ``cancelled``."""
        span = self._open_models.pop(request_id, None)
        if span is None:
            return
        if type(response) is ModelResponse:
            span.set_attribute("gen_ai.response.id", response.id)
            span.set_attribute(
                "gen_ai.response.finish_reasons",
                [_FINISH_REASONS.get(response.stop_reason, response.stop_reason)],
            )
            if response.model is not None:
                span.set_attribute("gen_ai.response.model", response.model)
            for key, value in _usage_attributes(response.usage).items():
                span.set_attribute(key, value)
            if self._record:
                span.set_attribute("gen_ai.output.messages", _output_json(response.message))
        elif error is not None:
            self._fail(
                span, error.code if instance_of(error, TetherError) else type(error).__name__
            )
        elif cancelled:
            span.set_attribute("error.type", "cancelled")
        span.end()

    # --- events --------------------------------------------------------------------------

    def emit(self, emit: Callable[[AgentEvent], None]) -> Callable[[AgentEvent], None]:
        """``emit`` that also opens and ends the tool spans and the run's span."""

        def traced(event: AgentEvent) -> None:
            self.observe(event)
            emit(event)

        return traced

    def observe(self, event: AgentEvent) -> None:
        """Open or end the spans ``event`` starts or ends."""
        if self._pending:
            self._settled_requests()
        if event.type == "tool.started":
            self._start_tool(event.payload.tool_call)
        elif event.type == "tool.finished":
            self._end_tool(event.payload.message)
        elif event.type == "run.finished":
            self.finish(event.payload.result)

    def _start_tool(self, call: ToolCall) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if self._record:
            from tether.jsonvalue import thaw_json

            arguments = (
                call.raw_arguments
                if call.raw_arguments is not None
                else json.dumps(thaw_json(call.arguments), ensure_ascii=False)
            )
            attributes["gen_ai.tool.call.arguments"] = arguments
        self._open_tools[call.id] = self._tracer.start_span(
            f"execute_tool {call.name}",
            context=self._context,
            kind=self._trace_api.SpanKind.INTERNAL,
            attributes=attributes,
        )

    def _end_tool(self, message: ToolResultMessage) -> None:
        span = self._open_tools.pop(message.tool_call_id, None)
        if span is None:
            return
        if self._record:
            span.set_attribute("gen_ai.tool.call.result", message.content)
        if message.is_error:
            self._fail(span, _tool_error_type(message))
        span.end()

    def finish(self, result: RunResult) -> None:
        """End the run's span with ``result`` (and any span still open, as cancelled); once
        only (a later call does nothing)."""
        if self._ended:
            return
        self._ended = True
        self._settled_requests()
        self._pending.clear()
        for request_id in list(self._open_models):
            self.end_model(request_id, cancelled=True)
        for span in self._open_tools.values():
            span.set_attribute("error.type", "cancelled")
            span.end()
        self._open_tools.clear()
        span = self._span
        span.set_attribute("tether.run.status", result.status)
        for key, value in _usage_attributes(result.usage).items():
            span.set_attribute(key, value)
        if result.status == "failed":
            self._fail(span, result.error.code)
        elif result.status == "maxSteps":
            span.set_attribute("error.type", "MAX_STEPS")
        elif result.status == "cancelled":
            span.set_attribute("error.type", "cancelled")
        span.end()

    def _fail(self, span: Span, code: str) -> None:
        span.set_attribute("error.type", code)
        span.set_status(self._trace_api.Status(self._trace_api.StatusCode.ERROR, code))


class _TracedStream:
    """A model stream that is not tether's ``EventStream``: its result ends the span."""

    __slots__ = ("_inner", "_request_id", "_trace")

    def __init__(self, trace: RunTrace, request_id: str, inner: Any) -> None:
        self._trace = trace
        self._request_id = request_id
        self._inner = inner

    def __aiter__(self) -> Any:
        return self._inner.__aiter__()

    @property
    def result(self) -> Any:
        return self._result()

    async def _result(self) -> object:
        try:
            response = await self._inner.result
        except BaseException as error:
            if isinstance(error, asyncio.CancelledError):
                self._trace.end_model(self._request_id, cancelled=True)
            else:
                self._trace.end_model(self._request_id, error=error)
            raise
        self._trace.end_model(self._request_id, response=response)
        return response
