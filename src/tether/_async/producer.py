"""Producers: the coroutines that fill a model's or a run's ``EventStream``.

A producer settles its stream itself; its task only needs to stay alive (the event loop keeps
weak references to tasks) and must never end with an exception nobody retrieves.

``start_producer`` starts a task. ``start_producer_eagerly`` first runs the producer inline
up to its first suspension, as an eager task would: a deterministic model whose reply is plain
data fills and settles its stream before ``stream()`` returns, with no task and no event-loop
round trip; only a producer that really waits continues on a task.

``fail_producer`` settles the stream before it closes the producer's source: closing runs the
caller's ``aclose()``, and whatever that raises must neither leave the stream unsettled nor
replace the stream's outcome.

``shed_frames`` keeps a failure a stream holds from referring back to it (see there).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Iterable
from types import CodeType
from typing import Any, Final

from tether._async.race import Started, drive_steps, race, race_eagerly, resume
from tether._async.race_iterator import RacedIterator
from tether._base.tether_error import TetherError
from tether.stream import EventStream, EventStreamIterator

__all__ = [
    "NoRunningLoopError",
    "fail_producer",
    "require_running_loop",
    "shed_frames",
    "start_producer",
    "start_producer_eagerly",
]


class NoRunningLoopError(TetherError, RuntimeError):
    """``NO_RUNNING_LOOP``: an entry point that starts work on the event loop (e.g.
    ``run_agent_loop``) was called where no loop runs, such as a script's top level."""

    def __init__(self, api: str) -> None:
        super().__init__(
            "NO_RUNNING_LOOP",
            f"{api} needs a running event loop: call it from async code (e.g. inside "
            "`async def main()` started with asyncio.run(main())), or use Agent.run_sync() "
            "from a plain script",
        )


def require_running_loop(api: str) -> None:
    """Raise ``NoRunningLoopError`` naming ``api`` unless an event loop runs in this thread,
    before anything is created that would then never be awaited."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise NoRunningLoopError(api) from None


_RUNNING: set[asyncio.Task[None]] = set()
_FORGET: Final = _RUNNING.discard
"""The producers' done callback, bound once: ``_RUNNING.discard`` written at each call made
a bound method per producer in flight (one more object per run for the cycle collector)."""
_FORGET_CONTEXT: Final = contextvars.Context()
"""The context ``_FORGET`` runs in (it reads no context variable): without one,
``add_done_callback`` copies the caller's context for each producer, another object per
run in flight."""


def start_producer(work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` on the running loop, holding a strong reference until it ends."""
    task = asyncio.get_running_loop().create_task(work)
    _RUNNING.add(task)
    task.add_done_callback(_FORGET, context=_FORGET_CONTEXT)


def start_producer_eagerly(work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` now until it first suspends; continue it on a task only if it does."""
    try:
        yielded = work.send(None)
    except StopIteration:
        return
    except asyncio.CancelledError:
        return  # the producer already failed its stream with it; it is not the caller's
    start_producer(resume(work, yielded))


def fail_producer(
    stream: EventStream[Any, Any], error: BaseException, source: RacedIterator[Any] | None = None
) -> None:
    """Settle ``stream`` with ``error`` (the very object), then close ``source`` if given, then
    re-raise what must not stop at the stream: task cancellation, ``KeyboardInterrupt`` and
    ``SystemExit``.

    The stream is settled first, so a failing close cannot leave it unsettled; the close
    swallows every failure but ``KeyboardInterrupt`` and ``SystemExit`` (which then propagate
    with the stream already settled), so it cannot replace ``error`` either.
    """
    stream.fail(error)
    if source is not None:
        source.close()
    if isinstance(error, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
        raise error


def _codes(functions: Iterable[Any]) -> frozenset[CodeType]:
    return frozenset(function.__code__ for function in functions)


STREAM_MACHINERY: Final = _codes(
    (
        *(vars(RacedIterator)[name] for name in ("poll", "ready", "next")),
        *(vars(EventStreamIterator)[name] for name in ("poll", "__anext__")),
        race,
        race_eagerly,
        Started.race,
        drive_steps,
    )
)
"""The code of the frames a stream's failure passes through on its way from the iterator
that raised it to the producer or the run that reads it."""


def shed_frames(error: BaseException, own: Iterable[Any]) -> None:
    """Drop the leading entries of ``error``'s traceback that are frames of the functions
    ``own`` or of the stream machinery (``STREAM_MACHINERY``), up to the first other frame.

    Why: an ``EventStream`` keeps its failure as its outcome, and these frames refer to the
    stream (a producer's ``stream``, an iterator's ``self``) or to the run that reads it; left
    on the failure's traceback they tie the stream, the failure and everything those frames
    hold into a reference cycle that only the cycle collector frees (a failed run was never
    freed by reference counting: ``tests/loop/test_cycles.py``). Only tether's own frames at
    the head go; the frames of the code that raised (a model's, a test double's) are kept,
    so the traceback still shows where the failure started.
    """
    codes = STREAM_MACHINERY | _codes(own)
    head = error.__traceback__
    while head is not None and head.tb_frame.f_code in codes:
        head = head.tb_next
    error.__traceback__ = head
