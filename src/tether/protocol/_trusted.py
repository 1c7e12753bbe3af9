"""Fast constructors for protocol values that tether assembles from parts it already trusts.

Protocol classes check their fields when constructed, so a protocol value that exists is
well-formed. Inside the runtime, the loop, the tools and the models build many values from
parts that are themselves protocol values or strings tether just made; checking them again
costs more than the rest of a step. The builders here fill the slots directly.

They are generated from ``dataclasses.fields`` (``builder``): a builder names the fields it
takes, every other field gets its declared default, and a required field that a builder does
not take is an error at import time. So adding a field can never leave a slot unset, and
``tests/protocol/test_codec.py`` checks every builder against the public constructor.

Private on purpose: every argument must already satisfy the class's checks.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Callable
from typing import Any, Final

from tether.jsonvalue import JsonObject
from tether.protocol._fields import bind_default, writable_twin
from tether.protocol.content import (
    MAX_RAW_ARGUMENTS_CODE_POINTS,
    TextBlock,
    ThinkingBlock,
    ToolCall,
)
from tether.protocol.events import (
    MessageAcceptedEvent,
    MessageAcceptedPayload,
    ModelChunkEvent,
    ModelChunkPayload,
    ModelRetryEvent,
    ModelRetryPayload,
    RunFinishedEvent,
    RunFinishedPayload,
    ToolFinishedEvent,
    ToolFinishedPayload,
    ToolProgressEvent,
    ToolProgressPayload,
    ToolStartedEvent,
    ToolStartedPayload,
)
from tether.protocol.images import ImageBlock
from tether.protocol.messages import AssistantMessage, ToolResultMessage
from tether.protocol.model import (
    ModelRequest,
    ModelResponse,
    ModelUsage,
    TextDeltaChunk,
    ThinkingDeltaChunk,
    ToolCallChunk,
    ToolCallDeltaChunk,
)
from tether.protocol.results import CompletedRunResult, MaxStepsRunResult
from tether.protocol.tools import RunContext, Valid

__all__ = [
    "BUILDERS",
    "RAW_ARGUMENTS_CUT",
    "bounded_raw_arguments",
    "builder",
    "invalid_tool_call",
    "text_deltas",
]

BUILDERS: dict[str, tuple[type, tuple[str, ...]]] = {}
"""Every builder of this module by name: its class and the fields it takes, for the tests."""


def builder(cls: type, *params: str, optional: tuple[str, ...] = ()) -> Callable[..., Any]:
    """A function ``build(*params, *optional)`` that fills every slot of ``cls`` without checks.

    ``params`` are required positional arguments; ``optional`` ones default to the field's
    default. Fields not named get their default (or default factory); a required field that
    is not named raises ``TypeError`` now, not when a value is built.

    The function is checked and its signature set now, but its code is compiled on its first
    call (``_Plan``): importing the package compiles none of the ~30 builders (issue 30),
    and a builder is compiled once, then runs as if it had been compiled here. The value is
    filled as a ``writable_twin`` of ``cls``, made on that first call too (a class costs
    more to make than a builder to compile) and read from ``twin``, a ``[twin, cls]`` list
    bound now, so the signature shown before and after the first call is the same.
    """
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls, "twin": [None, cls]}
    taken = set(params) | set(optional)
    lines: list[str] = []
    signature = list(params)
    order = list(params)  # the positional parameters, in the order of ``signature``
    defaults: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        name = field.name
        has_default, has_factory = bind_default(namespace, field, name)
        if name in params:
            value = name
        elif name in optional:
            value = name
            order.append(name)
            if has_factory:
                signature.append(f"{name}=None")
                defaults[name] = None
                value = f"factory_{name}() if {name} is None else {name}"
            elif has_default:
                signature.append(f"{name}=default_{name}")
                defaults[name] = field.default
            else:
                raise TypeError(f"{cls.__name__}.{name} is required and cannot be optional")
        elif has_default:
            value = f"default_{name}"
        elif has_factory:
            value = f"factory_{name}()"
        else:
            raise TypeError(f"builder for {cls.__name__} must take its required field {name!r}")
        lines.append(f"    value_.{name} = {value}")
    unknown = taken - {field.name for field in dataclasses.fields(cls)}
    if unknown:
        raise TypeError(f"{cls.__name__} has no fields {sorted(unknown)}")
    # The defaults, factories and the twin are the globals of the builder's code (its own
    # namespace, see ``_Plan``), not keyword-only defaults: a call fills every keyword-only
    # default of a Python function by a dict look-up (~130 instructions each on CPython
    # 3.11, ~900 a builder call), where a global read is a cached load.
    source = "\n".join(
        [
            f"def build({', '.join(signature)}):",
            "    value_ = new(twin[0])",
            *lines,
            "    value_.__class__ = cls",
            "    return value_",
        ]
    )
    name = f"build_{cls.__name__}"
    plan = _Plan(source, namespace)
    build = types.FunctionType(_first_call.__code__, plan.namespace, name)
    build.__kwdefaults__ = {"plan_": plan}
    build.__qualname__ = name
    build.__module__ = __name__
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    build.__signature__ = inspect.Signature(
        [
            *(
                inspect.Parameter(param, positional, default=defaults.get(param, _EMPTY))
                for param in order
            ),
        ]
    )
    plan.function = build
    BUILDERS[name] = (cls, (*params, *optional))
    return build


_EMPTY: Final = inspect.Parameter.empty


class _Plan:
    """A builder's source, compiled by its first call into the builder itself.

    ``builder`` returns a function whose code is ``_first_call``'s. Its first call compiles
    the source (the code ``builder`` used to compile at import) and gives the function that
    code and its keyword-only defaults, so every later call, through any reference to the
    function, runs the compiled builder directly. A builder's function is made with the
    plan's ``namespace`` as its globals, and its source is run in that very namespace: its
    code reads its parameters and that namespace's names (no closure). Any other function
    (``text_deltas``) keeps its module's globals, so its code reads only its parameters and
    its keyword-only defaults, bound from a copy of the namespace. Either way the swap is
    exact: ``compile`` checks the names the code reads.
    """

    __slots__ = ("function", "namespace", "source")

    def __init__(self, source: str, namespace: dict[str, Any]) -> None:
        self.source = source
        self.namespace = namespace
        self.function: types.FunctionType | None = None

    def compile(self) -> types.FunctionType:
        function = self.function
        assert function is not None
        own_globals = function.__globals__ is self.namespace
        namespace = self.namespace if own_globals else dict(self.namespace)
        for key, box in namespace.items():  # the twins, made now (see ``builder``)
            if key.startswith("twin") and box[0] is None:
                box[0] = writable_twin(box[1])
        readable: set[str] = set(namespace) if own_globals else set()
        exec(self.source, namespace)  # generated from the dataclass fields, see the module doc
        compiled: types.FunctionType = namespace.pop("build")
        code = compiled.__code__
        stored = {"__class__"}.union(*(_field_names(value) for value in namespace.values()))
        if not stored.union(readable).issuperset(code.co_names) or code.co_freevars:
            raise AssertionError(f"{function.__name__} reads names: {code.co_names}")
        function.__code__ = code
        function.__defaults__ = compiled.__defaults__
        function.__kwdefaults__ = compiled.__kwdefaults__
        del function.__signature__  # type: ignore[attr-defined]  # the code's own from now on
        return function


def _field_names(value: object) -> set[str]:
    """The field names of a class a builder fills (attribute names its code stores)."""
    if isinstance(value, type) and dataclasses.is_dataclass(value):
        return {field.name for field in dataclasses.fields(value)}
    return set()


def _first_call(*args: Any, plan_: Any = None, **kwargs: Any) -> Any:
    """The code of a builder until its first call (see ``_Plan``)."""
    return plan_.compile()(*args, **kwargs)


def _fill_lines(cls: type, given: dict[str, str], tag: str, namespace: dict[str, Any]) -> list[str]:
    """Source lines that make a new ``cls`` as ``tag`` and fill every slot: a field named in
    ``given`` gets that expression, every other its default (or default factory), as a
    builder fills it; a required field not in ``given`` is a ``TypeError`` now. The names
    the lines read are bound in ``namespace`` under ``tag``."""
    namespace[f"cls_{tag}"] = cls
    namespace[f"twin_{tag}"] = [None, cls]  # see ``builder``
    lines = [f"{tag} = new(twin_{tag}[0])"]
    for field in dataclasses.fields(cls):
        name = field.name
        key = f"{tag}_{name}"
        has_default, has_factory = bind_default(namespace, field, key)
        if name in given:
            value = given[name]
        elif has_default:
            value = f"default_{key}"
        elif has_factory:
            value = f"factory_{key}()"
        else:
            raise TypeError(f"{cls.__name__}.{name} is required and not given")
        lines.append(f"{tag}.{name} = {value}")
    lines.append(f"{tag}.__class__ = cls_{tag}")
    unknown = set(given) - {field.name for field in dataclasses.fields(cls)}
    if unknown:
        raise TypeError(f"{cls.__name__} has no fields {sorted(unknown)}")
    return lines


def _text_deltas_source() -> tuple[str, dict[str, Any]]:
    lists: type[list[Any]] = list
    namespace: dict[str, Any] = {"new": object.__new__, "append": lists.append}
    block = _fill_lines(TextBlock, {"text": "text"}, "block", namespace)
    chunk = _fill_lines(
        TextDeltaChunk, {"request_id": "request_id", "delta": "text"}, "chunk", namespace
    )
    bound = ", ".join(f"{name}={name}" for name in namespace)
    body = [*block, "append(blocks, block)", *chunk, "append(chunks, chunk)"]
    source = "\n".join(
        [
            f"def build(request_id, texts, blocks, chunks, *, {bound}):",
            "    for text in texts:",
            *(f"        {line}" for line in body),
        ]
    )
    return source, namespace


def text_deltas(request_id: str, texts: list[str], blocks: list[Any], chunks: list[Any]) -> None:
    """For each of ``texts`` (exact ``str``), ``text_block(text)`` appended to ``blocks`` and
    ``text_delta_chunk(request_id, text)`` to ``chunks``, in order.

    Why: a provider that makes a text block of every delta (the fixture parser) builds two
    values per delta; here a run of deltas is built in one call, the slots filled inline, so
    a delta costs no builder call (a third of building its two values). The code is
    generated from the two classes' fields as the builders' is (``_fill_lines``), compiled
    on the first call (``_Plan``); ``tests/protocol/test_codec.py`` compares it with the two
    builders.
    """
    _TEXT_DELTAS.compile()(request_id, texts, blocks, chunks)


_TEXT_DELTAS: Final = _Plan(*_text_deltas_source())
_text_deltas: Any = text_deltas
_text_deltas.__signature__ = inspect.signature(text_deltas)  # the code's own once compiled
_TEXT_DELTAS.function = _text_deltas


text_block: Callable[..., TextBlock] = builder(TextBlock, "text", optional=("signature",))
thinking_block: Callable[..., ThinkingBlock] = builder(
    ThinkingBlock, "text", optional=("signature", "redacted")
)
tool_call: Callable[..., ToolCall] = builder(
    ToolCall, "id", "name", "arguments", optional=("raw_arguments", "signature")
)
_NO_ARGUMENTS: Final = JsonObject()

RAW_ARGUMENTS_CUT: Final = "\u2026[cut by tether: "
"""How the marker that ends cut raw arguments begins: ``…[cut by tether: N code points]``."""


def bounded_raw_arguments(text: str) -> str:
    """``text`` if it fits ``MAX_RAW_ARGUMENTS_CODE_POINTS``, else its start followed by the
    marker ``…[cut by tether: N code points]`` (``N``: the length of ``text``), in all exactly
    at the limit."""
    if len(text) <= MAX_RAW_ARGUMENTS_CODE_POINTS:
        return text
    marker = f"{RAW_ARGUMENTS_CUT}{len(text)} code points]"
    return text[: MAX_RAW_ARGUMENTS_CODE_POINTS - len(marker)] + marker


def invalid_tool_call(call_id: str, name: str, raw: str) -> ToolCall:
    """An invalid call (``arguments`` ``{}``) holding the model's argument text ``raw``,
    bounded by ``bounded_raw_arguments``."""
    return tool_call(call_id, name, _NO_ARGUMENTS, bounded_raw_arguments(raw))


assistant_message: Callable[[str, tuple[Any, ...]], AssistantMessage] = builder(
    AssistantMessage, "id", "content"
)
_tool_result: Callable[..., ToolResultMessage] = builder(
    ToolResultMessage,
    "id",
    "tool_call_id",
    "tool_name",
    "content",
    "is_error",
    optional=("error_code", "images"),
)
model_request: Callable[..., ModelRequest] = builder(
    ModelRequest, "id", "messages", optional=("system", "tools")
)
model_response: Callable[..., ModelResponse] = builder(
    ModelResponse, "id", "request_id", "message", "stop_reason", "usage", optional=("model",)
)
text_delta_chunk: Callable[[str, str], TextDeltaChunk] = builder(
    TextDeltaChunk, "request_id", "delta"
)
thinking_delta_chunk: Callable[[str, str], ThinkingDeltaChunk] = builder(
    ThinkingDeltaChunk, "request_id", "delta"
)
tool_call_chunk: Callable[[str, ToolCall], ToolCallChunk] = builder(
    ToolCallChunk, "request_id", "tool_call"
)
tool_call_delta_chunk: Callable[[str, int, str | None, str | None, str], ToolCallDeltaChunk] = (
    builder(ToolCallDeltaChunk, "request_id", "index", "id", "name", "arguments_delta")
)
model_usage: Callable[[int, int, int, int], ModelUsage] = builder(
    ModelUsage, "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"
)
execution_context: Callable[[Any, str, object, Callable[[str], None]], RunContext[Any]] = builder(
    RunContext, "signal", "tool_call_id", "deps", "progress"
)
valid: Callable[[Any], Valid[Any]] = builder(Valid, "value")
completed_result: Callable[..., CompletedRunResult[Any]] = builder(
    CompletedRunResult, "messages", "final_text", "usage", optional=("output",)
)
"""A run's ``completed`` result. Why a builder: the public constructor checks every message
of the transcript, once per run and, for the ``Agent``'s one-step sub-runs, once per step."""
max_steps_result: Callable[[tuple[Any, ...], int, ModelUsage], MaxStepsRunResult] = builder(
    MaxStepsRunResult, "messages", "max_steps", "usage"
)
"""A run's ``maxSteps`` result (see ``completed_result``)."""
"""An accepted validation (``value`` is any value: ``Valid`` checks nothing of it), for
``@tool``'s validator, which runs once per tool call."""

_message_accepted_payload = builder(MessageAcceptedPayload, "message")
_model_chunk_payload = builder(ModelChunkPayload, "chunk")
_tool_started_payload = builder(ToolStartedPayload, "tool_call")
_tool_finished_payload = builder(ToolFinishedPayload, "message")
_run_finished_payload = builder(RunFinishedPayload, "result")
_message_accepted = builder(MessageAcceptedEvent, "sequence", "payload")
_model_chunk = builder(ModelChunkEvent, "sequence", "payload")
_tool_started = builder(ToolStartedEvent, "sequence", "payload")
_tool_finished = builder(ToolFinishedEvent, "sequence", "payload")
_tool_progress_payload = builder(ToolProgressPayload, "tool_call_id", "tool_name", "text")
_tool_progress = builder(ToolProgressEvent, "sequence", "payload")
_model_retry = builder(ModelRetryEvent, "sequence", "payload")
_run_finished = builder(RunFinishedEvent, "sequence", "payload")


def tool_result(
    call: ToolCall,
    content: str,
    is_error: bool,
    error_code: str = "",
    images: tuple[ImageBlock, ...] = (),
) -> ToolResultMessage:
    """The result message linked to ``call``: ID ``tool-result-<call id>`` (``images``: a
    tuple of checked ``ImageBlock`` values)."""
    return _tool_result(
        f"tool-result-{call.id}", call.id, call.name, content, is_error, error_code, images
    )


def message_accepted_event(sequence: int, message: Any) -> MessageAcceptedEvent:
    """``message.accepted`` for a message of the run's transcript."""
    return _message_accepted(sequence, _message_accepted_payload(message))


def model_chunk_event(sequence: int, chunk: Any) -> ModelChunkEvent:
    """``model.chunk`` for a chunk that passed the model boundary."""
    return _model_chunk(sequence, _model_chunk_payload(chunk))


def tool_started_event(sequence: int, call: ToolCall) -> ToolStartedEvent:
    """``tool.started`` for a call of an accepted assistant message."""
    return _tool_started(sequence, _tool_started_payload(call))


def tool_finished_event(sequence: int, message: ToolResultMessage) -> ToolFinishedEvent:
    """``tool.finished`` for a result built by ``execute_tool_call``."""
    return _tool_finished(sequence, _tool_finished_payload(message))


def tool_progress_event(sequence: int, call: ToolCall, text: str) -> ToolProgressEvent:
    """``tool.progress`` for a non-empty, encodable piece of a running call's output."""
    return _tool_progress(sequence, _tool_progress_payload(call.id, call.name, text))


def model_retry_event(sequence: int, payload: ModelRetryPayload) -> ModelRetryEvent:
    """``model.retry`` for a checked ``ModelRetryPayload``."""
    return _model_retry(sequence, payload)


def run_finished_event(sequence: int, result: Any) -> RunFinishedEvent:
    """``run.finished`` for the run's result."""
    return _run_finished(sequence, _run_finished_payload(result))
