"""One model turn of a run: open the model's stream, check each chunk, check the response.

``model_turn`` sends one ``ModelRequest`` to the run's model and reads what comes back at the
boundary: every streamed chunk is snapshotted, correlated with the request and counted
against the run's ``RunLimits`` (``tether.loop.checks``), then emitted as ``model.chunk``;
the terminal response is snapshotted and must agree with the chunks. A stream of tether's
own that already finished is taken at once (no iterator); any other is read through a
``RacedIterator``, so every wait races the run's abort signal. A turn that ends early waits
briefly for the stream it abandoned to settle (``ABANDONED_STREAM_GRACE``).

Its own module because it is the turn's job alone: the run (``tether.loop._run_steps``) only
asks for a response and decides what the response means.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import TYPE_CHECKING, Any, Final, TypeGuard, cast

from tether._async.producer import shed_frames
from tether._async.race import (
    NotAwaitableError,
    check_signal,
    neutralize,
    race,
    reraise_task_cancellation,
)
from tether._async.race_iterator import RacedIterator
from tether._base.exact_types import instance_of, is_awaitable, type_of
from tether._base.strings import code_points, message_of
from tether._base.tether_error import TetherError
from tether.abort import AbortSignal
from tether.loop.checks import (
    ModelProtocolError,
    ModelStreamFailure,
    RunFailure,
    check_agreement,
    limit_hint,
    snapshot_chunk,
    snapshot_response,
)
from tether.models.base import ModelStream
from tether.protocol import (
    ModelChunk,
    ModelRequest,
    ModelResponse,
    assert_never,
)
from tether.protocol import _trusted as trusted
from tether.providers.errors import ProviderError
from tether.stream import EventStream, is_event_stream

if TYPE_CHECKING:
    from tether.loop._run_steps import Run


async def model_turn(run: Run, request: ModelRequest) -> ModelResponse:
    """One model invocation: open, stream and check chunks, then check the response.

    The model's retry notices for this request (``tether.models.base.retry_listener``)
    become ``model.retry`` events until its first chunk arrives."""
    signal = run.signal
    limits = run.limits
    notices = run.notices  # open for this request (inline: a step's hot path)
    notices.request_id = request.id
    notices.count = 0
    notices.open = True
    try:
        opened = run.open_stream(request, signal)
    except Exception as error:
        notices.open = False
        check_signal(signal)
        raise ModelStreamFailure(message_of(error, "Model stream could not be opened")) from error
    stream = _model_stream(opened)
    finished = _finished_events(stream)  # taken at once: no iterator, nothing to race
    source: RacedIterator[object] | None = None
    if finished is None:
        try:
            iterator: Any = type_of(stream).__aiter__(stream)
            if not callable(getattr(type_of(iterator), "__anext__", None)):
                raise TypeError("not an async iterator")
        except Exception as error:
            raise ModelProtocolError("Model stream iterator must expose __anext__()") from error
        source = RacedIterator(iterator, signal)
    active = request.id
    chunks: list[ModelChunk] = []  # text, thinking and tool calls: matched at the end
    streamed_calls: set[int] = set()  # the tool calls checked as chunks, by identity
    count = 0
    max_chunks = limits.max_chunks_per_step
    max_text = limits.max_text_code_points
    text = 0
    pending_high = False
    try:
        while True:
            if source is None:  # the events of a finished stream, taken at once
                if not finished:
                    break
                item = finished.popleft()
            else:
                try:
                    item = source.poll(_PENDING)  # tether's own streams: no await when ready
                    if item is _PENDING:
                        check_signal(signal)
                        item = await source.next()
                except StopAsyncIteration:
                    break
                except NotAwaitableError as error:
                    raise ModelProtocolError("Model iterator step must be awaitable") from error
                except asyncio.CancelledError as error:
                    shed_frames(error, _TURN)
                    reraise_task_cancellation(error)
                    check_signal(signal)
                    raise ModelStreamFailure(_UNCANCELLED_MODEL) from error
                except Exception as error:
                    shed_frames(error, _TURN)
                    check_signal(signal)
                    raise _stream_failure(error) from error
            check_signal(signal)
            if count >= max_chunks:
                raise ModelProtocolError(
                    f"Model turn exceeded {max_chunks} chunks",
                    limit_hint("max_chunks_per_step"),
                )
            count += 1
            notices.open = False  # retries come before anything streamed
            chunk = snapshot_chunk(item, active, limits)
            if chunk.type == "textDelta":
                added, pending_high = code_points(chunk.delta, pending_high)
                text += added
                chunks.append(chunk)
            elif chunk.type == "thinkingDelta":
                added, _ = code_points(chunk.delta)
                text += added
                pending_high = False
                chunks.append(chunk)
            elif chunk.type == "toolCall":
                pending_high = False
                chunks.append(chunk)
                streamed_calls.add(id(chunk.tool_call))
            elif chunk.type != "toolCallDelta":
                assert_never(chunk)
            if text > max_text:
                raise ModelProtocolError(
                    f"Model turn exceeded {max_text} streamed text code points",
                    limit_hint("max_text_code_points"),
                )
            if chunk is not item:  # a mapping was read: caller code ran since the last check
                check_signal(signal)
            run.emit(trusted.model_chunk_event(run.sequence, chunk))
    except BaseException:
        notices.open = False
        if source is not None:
            source.close()
        await _abandoned_stream_settled(stream)
        raise
    notices.open = False
    if source is not None:
        source.close()
    raw = _settled_response(stream, signal)
    if raw is _PENDING:
        raw = await _awaited_response(stream, signal)
    check_signal(signal)
    response = snapshot_response(raw, active, streamed_calls, limits)
    if response is not raw:  # a mapping was read: caller code ran since the last check
        check_signal(signal)
    check_agreement(chunks, response.message)
    return response


MAX_RETRY_NOTICES_PER_TURN: Final = 100
"""At most this many ``model.retry`` events per model turn (a provider's policy allows far
fewer; a model of one's own that reports more is not believed)."""


class RetryNotices:
    """The retry-notice state of one run's open model turn (see ``Run.report_retry``).

    It holds no reference back to its run: a finished run must be freed by reference
    counting alone, never left to the cycle collector (thousands of concurrent runs made
    its full passes over their heap the cost that grew faster than the number of runs).
    """

    __slots__ = ("count", "open", "request_id")

    def __init__(self) -> None:
        self.request_id = ""
        self.count = 0
        self.open = False


_TURN: Final = (model_turn,)
"""The loop's own frame on a model failure's traceback (``shed_frames``)."""
_PENDING: Final = object()
_UNCANCELLED_MODEL: Final = "Model stream raised CancelledError although nothing cancelled the run"


class ScriptExhausted(RunFailure):
    code = "SCRIPT_EXHAUSTED"


def _stream_failure(error: Exception) -> RunFailure:
    """The run failure of a failed model stream: ``SCRIPT_EXHAUSTED`` when a scripted model
    ran out of replies (a test's script is too short), else ``MODEL_STREAM_FAILED``."""
    # By its code (codes are the contract), so the loop need not import the scripted model.
    if instance_of(error, TetherError) and error.code == "SCRIPT_EXHAUSTED":
        return ScriptExhausted(
            error.message,
            "the ScriptedModel has fewer replies than the run makes model turns: add a "
            "ScriptedReply for each turn (each tool turn is followed by another request)",
        )
    return ModelStreamFailure(_stream_failure_text(error))


def _stream_failure_text(error: Exception) -> str:
    """What a failed model stream reports: a provider error's stable code first
    (``"PROVIDER_RATE_LIMITED: HTTP 429: ..."``), so the run's message says which failure."""
    text = message_of(error, "Model stream failed")
    if isinstance(error, ProviderError):
        return f"{error.code}: {text}"
    return text


ABANDONED_STREAM_GRACE: Final = 1.0
"""Seconds a turn that ends early waits for the model stream it abandoned to settle."""


async def _abandoned_stream_settled(stream: ModelStream) -> None:
    """A turn ended before its model stream did (a broken limit, a failure, an abort): when the
    stream is tether's ``EventStream`` and its producer was told (``abandon_notified``), wait
    for it to settle, at most ``ABANDONED_STREAM_GRACE`` seconds. The HTTP providers settle
    only after closing their response, so the run's outcome comes after that and leaves
    nothing running. Whatever the stream settles with is not this turn's outcome."""
    if not is_event_stream(stream):
        return
    abandoned = stream
    if abandoned.settled or not abandoned.abandon_notified:
        return
    with contextlib.suppress(Exception):
        async with asyncio.timeout(ABANDONED_STREAM_GRACE):
            await abandoned.result


def _finished_events(stream: ModelStream) -> deque[object] | None:
    """The events of a model stream that is tether's ``EventStream`` and already finished,
    taken at once (``EventStream.take_finished``), else ``None``: the turn then iterates the
    stream. ``tests/loop/test_fast_paths.py`` checks a run over such streams against the run
    over the same items iterated."""
    if type_of(stream) is not EventStream:
        return None
    return cast("EventStream[object, object]", stream).take_finished()


def _settled_response(stream: ModelStream, signal: AbortSignal) -> object:
    """The response of a settled ``EventStream`` without awaiting, else ``_PENDING``."""
    if not is_event_stream(stream):
        return _PENDING
    settled = stream
    try:
        return settled.result_nowait(_PENDING)
    except Exception as error:
        check_signal(signal)
        raise _stream_failure(error) from error


async def _awaited_response(stream: ModelStream, signal: AbortSignal) -> object:
    """The model's terminal response, read from ``stream.result`` at this moment."""
    try:
        pending = stream.result
    except Exception as error:
        raise ModelProtocolError("Model stream result is not accessible") from error
    if not is_awaitable(pending):
        raise ModelProtocolError("Model stream result must be awaitable")
    try:
        return await race(signal, pending)
    except asyncio.CancelledError as error:
        reraise_task_cancellation(error)
        check_signal(signal)
        raise ModelStreamFailure(_UNCANCELLED_MODEL) from error
    except Exception as error:
        check_signal(signal)
        raise _stream_failure(error) from error


def _iterable(opened: object) -> TypeGuard[ModelStream]:
    """Whether ``opened``'s class has a callable ``__aiter__``: all that is checked of a model
    stream before it is read (each item and the result are checked as they come)."""
    try:
        return callable(getattr(type_of(opened), "__aiter__", None))
    except Exception:
        return False


def _model_stream(opened: object) -> ModelStream:
    if is_event_stream(opened):
        return opened
    if _iterable(opened):
        return opened
    neutralize(opened)
    raise ModelProtocolError("model.stream must return an EventStream")
