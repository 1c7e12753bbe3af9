"""The four ways a run ends (``RunResult``) and why one failed (``RunError``).

Every result carries ``messages`` (only complete messages) and ``usage``, the total of every
model response the run accepted (zero by default; omitted from JSON while zero).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeAlias

from tether._base.dataclass import dataclass
from tether.protocol._fields import POSITIVE, NonEmpty, ProtocolValue, python_only, v2
from tether.protocol.messages import Message
from tether.protocol.model import ZERO_USAGE, ModelUsage

__all__ = [
    "AgentFailureCode",
    "CancelledRunResult",
    "CompletedRunResult",
    "FailedRunResult",
    "MaxStepsRunResult",
    "RunError",
    "RunErrorCode",
    "RunFailureCode",
    "RunResult",
    "RunStatus",
]

if TYPE_CHECKING:  # a default, so a bare CompletedRunResult / RunResult means [Any]
    from typing_extensions import TypeVar

    OutputT_co = TypeVar("OutputT_co", covariant=True, default=Any)
else:
    from typing import TypeVar

    OutputT_co = TypeVar("OutputT_co", covariant=True)

RunStatus: TypeAlias = Literal["completed", "cancelled", "maxSteps", "failed"]
"""The four run outcomes; there is no ``running`` result."""


RunFailureCode: TypeAlias = Literal[
    "INVALID_TRANSCRIPT",
    "SIGNAL_ACCESS_FAILED",
    "MODEL_PROTOCOL_ERROR",
    "MODEL_ASYNC_VALUE_UNOBSERVABLE",
    "MODEL_STREAM_FAILED",
    "MODEL_OUTPUT_TRUNCATED",
    "MODEL_REFUSED",
    "SCRIPT_EXHAUSTED",
    "TOOL_EXECUTION_FAILED",
    "TOOL_RETRIES_EXHAUSTED",
    "OUTPUT_RETRIES_EXHAUSTED",
    "AGENT_RUNTIME_FAILED",
]
"""Every code a failed ``run_agent_loop`` run can carry."""

AgentFailureCode: TypeAlias = Literal[
    "AGENT_MESSAGE_LIMIT", "AGENT_RECORDING_FAILED", "AGENT_STATE_FAILED"
]
"""The codes of ``failed`` results the Agent itself produces (the loop's codes pass through)."""

RunErrorCode: TypeAlias = Literal[RunFailureCode, AgentFailureCode]
"""Every code a ``RunError`` carries: the loop's and the Agent's."""

if TYPE_CHECKING:
    _Code: TypeAlias = RunErrorCode
else:  # read as any non-empty code: a file written by a newer tether may carry a newer one
    _Code = NonEmpty


@dataclass(frozen=True, slots=True, kw_only=True)
class RunError(ProtocolValue):
    """Why a run failed: a stable ``code``, a message for people and, when there is a fix to
    name, a ``hint`` saying what to change (``""`` otherwise; omitted from JSON while empty)."""

    code: _Code
    message: str
    hint: str = v2("")


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletedRunResult(ProtocolValue, Generic[OutputT_co]):
    """The model answered: ``final_text`` is that answer's text.

    Without an output type the answer is a ``stop`` response and ``output`` is ``None``. With
    one (``run_agent_loop(..., output_type=City)``) the answer is the model's valid call of
    the final-result tool and ``output`` is the validated ``City``, typed for the type checker
    (``CompletedRunResult[City]``). ``output`` is a Python value: ``to_json`` leaves it out
    (the call's arguments in ``messages`` hold its JSON).
    """

    status: Literal["completed"] = "completed"
    messages: tuple[Message, ...]
    final_text: str
    usage: ModelUsage = v2(ZERO_USAGE)
    output: OutputT_co = python_only(None)


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelledRunResult(ProtocolValue):
    """The run's signal was aborted (or its consumer went away); ``reason`` says why."""

    status: Literal["cancelled"] = "cancelled"
    messages: tuple[Message, ...]
    reason: str
    usage: ModelUsage = v2(ZERO_USAGE)


@dataclass(frozen=True, slots=True, kw_only=True)
class MaxStepsRunResult(ProtocolValue):
    """The step budget ran out after a tool turn; ``max_steps`` is that budget."""

    status: Literal["maxSteps"] = "maxSteps"
    messages: tuple[Message, ...]
    max_steps: Annotated[int, POSITIVE]
    usage: ModelUsage = v2(ZERO_USAGE)


@dataclass(frozen=True, slots=True, kw_only=True)
class FailedRunResult(ProtocolValue):
    """The run stopped on an error with a stable code; ``messages`` holds complete messages."""

    status: Literal["failed"] = "failed"
    messages: tuple[Message, ...]
    error: RunError
    usage: ModelUsage = v2(ZERO_USAGE)


if TYPE_CHECKING:
    RunResult: TypeAlias = (
        CompletedRunResult[OutputT_co] | CancelledRunResult | MaxStepsRunResult | FailedRunResult
    )
else:  # the runtime union is the classes themselves (the codec and the checks read them)
    RunResult: TypeAlias = (
        CompletedRunResult | CancelledRunResult | MaxStepsRunResult | FailedRunResult
    )
"""Exactly one of these ends every run; match on ``status`` with ``assert_never`` last.
``RunResult[City]`` is the result of a run with ``output_type=City`` (in annotations)."""
