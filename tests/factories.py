"""The factories the tests share: draining a run, the chunks and results a scripted run
is built from and read back by, tool acceptors, live and aborted signals, a provider failure."""

from __future__ import annotations

from collections.abc import (
    Sequence,
)

from tether import (
    AbortController,
    AbortSignal,
    AgentEvent,
    CancelledRunResult,
    CompletedRunResult,
    EventStream,
    FailedRunResult,
    ModelChunk,
    RunResult,
    TextBlock,
    Valid,
)
from tether.protocol import (
    TextDeltaChunk,
    ToolValidation,
)


def accept_anything(value: object) -> ToolValidation[object]:
    return Valid(value=value)


def delta(text: str, request_id: str = "request-001") -> TextDeltaChunk:
    return TextDeltaChunk(request_id=request_id, delta=text)


def text(value: str) -> TextBlock:
    return TextBlock(text=value)


async def drain(stream: EventStream[AgentEvent, RunResult]) -> tuple[list[AgentEvent], RunResult]:
    events = [event async for event in stream]
    return events, await stream.result


def types_of(events: Sequence[AgentEvent]) -> list[str]:
    return [event.type for event in events]


def as_failed(result: RunResult) -> FailedRunResult:
    assert isinstance(result, FailedRunResult), result
    return result


def as_completed(result: RunResult) -> CompletedRunResult:
    assert isinstance(result, CompletedRunResult), result
    return result


def chunks_of(events: Sequence[AgentEvent]) -> list[ModelChunk]:
    return [event.payload.chunk for event in events if event.type == "model.chunk"]


def as_cancelled(result: RunResult) -> CancelledRunResult:
    assert isinstance(result, CancelledRunResult), result
    return result


def accept(value: object) -> ToolValidation[object]:
    return Valid(value=value)


def live_signal() -> AbortSignal:
    return AbortController().signal


def aborted_signal(reason: object = None) -> AbortSignal:
    controller = AbortController()
    controller.abort(reason)
    return controller.signal


def failure(result: RunResult) -> str:
    assert isinstance(result, FailedRunResult), result
    assert result.error.code == "MODEL_STREAM_FAILED"
    return result.error.message
