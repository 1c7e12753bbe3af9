"""Calling the caller's summarizer: once, racing the abort signal, adopting the awaitables it
returns (to a bounded depth) and turning each of its failures into a context error, with
cancellation handled by the runtime's rules (see the package docstring)."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Final, NoReturn, TypeAlias, TypeGuard

from tether._async.adoption import adopt_nested
from tether._async.race import (
    is_raw_abort_reason,
    neutralize,
    observe,
    race,
    reraise_task_cancellation,
    signal_aborted,
    signal_reason,
)
from tether._base.dataclass import dataclass
from tether._base.exact_types import await_steps, exactly, type_of
from tether._base.strings import message_of
from tether.abort import AbortSignal
from tether.agent.compaction._errors import ContextCompactionError, fail
from tether.agent.compaction._records import ContextRequirement, ContextSummary
from tether.protocol import Message


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextSummaryRequest:
    """What a summarizer is asked to summarize.

    ``messages`` is the compacted prefix (``boundary`` messages); ``previous_summary`` is the
    summary being replaced, to be folded in. The summary must cost at most
    ``max_summary_units`` (``5 + cp(summary_id) + cp(text)``), which leaves the text
    ``max_content_code_points`` code points (possibly 0: no summary can fit; an addition to
    the workshop's request, so a summarizer need not know the summary's ID).
    """

    requirements: tuple[ContextRequirement, ...]
    previous_summary: ContextSummary | None
    messages: tuple[Message, ...]
    boundary: int
    max_summary_units: int
    max_content_code_points: int


ContextSummarizer: TypeAlias = Callable[[ContextSummaryRequest, AbortSignal], str | Awaitable[str]]
"""Turns a request into summary text, synchronously or as an awaitable (a coroutine, a
``Future``, any object with ``__await__``). It should stop promptly when the signal aborts."""


_CANCELLED: Final = "Context compaction cancelled"


def _cancelled(signal: AbortSignal) -> ContextCompactionError:
    """``CONTEXT_CANCELLED``: the reason's text when it is a non-empty string (the workshop's
    rule), else the default message; an exception reason is kept as ``__cause__``."""
    reason = signal_reason(signal)
    message = reason if exactly(reason, str) and reason else _CANCELLED
    error = ContextCompactionError("CONTEXT_CANCELLED", message)
    if isinstance(reason, BaseException):
        error.__cause__ = reason
    return error


def check_cancelled(signal: AbortSignal) -> None:
    if signal_aborted(signal):
        raise _cancelled(signal)


def _summarizer_failed(
    signal: AbortSignal, what: str, error: BaseException
) -> ContextCompactionError:
    """The error for a summarizer failure (its cause set); an abort observed first wins."""
    if signal_aborted(signal):
        return _cancelled(signal)
    failure = ContextCompactionError(
        "CONTEXT_SUMMARIZER_FAILED", f"{what}: {message_of(error, type(error).__name__)}"
    )
    failure.__cause__ = error
    return failure


def _raise(error: ContextCompactionError) -> NoReturn:
    """Raise an error whose ``__cause__`` is already set (``raise ... from`` would reset it)."""
    raise error


async def summarize(
    summarizer: ContextSummarizer,
    request: ContextSummaryRequest,
    signal: AbortSignal,
    max_depth: int,
) -> object:
    """Call the summarizer once and adopt what it returns (steps 6 and 7)."""
    try:
        value: object = summarizer(request, signal)
    except Exception as error:
        _raise(_summarizer_failed(signal, "Context summarizer raised", error))
    except asyncio.CancelledError as error:
        reraise_task_cancellation(error)
        _raise(_summarizer_failed(signal, "Context summarizer raised", error))
    except BaseException as error:
        if is_raw_abort_reason(signal, error):
            _raise(_cancelled(signal))
        raise

    def too_deep(awaitable: object) -> ContextCompactionError:
        _discard(awaitable)
        return ContextCompactionError(
            "CONTEXT_SUMMARIZER_FAILED",
            f"Context summarizer nested more than {max_depth} awaitables",
        )

    return await adopt_nested(
        value,
        max_depth=max_depth,
        too_deep=too_deep,
        cycle=_cycle,
        await_level=lambda awaitable, _level: _adopt(awaitable, signal),
    )


def _cycle() -> ContextCompactionError:
    return ContextCompactionError(
        "CONTEXT_SUMMARIZER_FAILED", "Context summarizer returned an awaitable cycle"
    )


def _discard(value: object) -> None:
    """Dispose of an awaitable that will not be awaited: a coroutine is closed (its
    ``finally`` blocks run), a ``Future`` cancelled and its outcome observed."""
    if _is_future(value):
        observe(value)
        value.cancel()
    else:
        neutralize(value)


async def _adopt(value: object, signal: AbortSignal) -> object:
    """Await one awaitable while racing ``signal``; failures become context errors.

    Work abandoned on abort is cancelled: before it started (here) or while it runs
    (``race``)."""
    if signal_aborted(signal):
        _discard(value)
        raise _cancelled(signal)
    awaitable: Awaitable[object]
    if _is_coroutine(value):
        awaitable = value
    elif _is_future(value):
        observe(value)  # abandoned or not, its failure is never logged as unretrieved
        awaitable = value
    else:
        try:
            steps: object = await_steps(value)
        except Exception as error:
            _raise(_summarizer_failed(signal, "Context summarizer awaitable failed", error))
        if not _is_iterator(steps):
            neutralize(steps)
            fail(
                "CONTEXT_ASYNC_VALUE_UNOBSERVABLE",
                "Context summarizer awaitable's __await__ did not return an iterator",
            )
        awaitable = _Steps(steps)
    try:
        return await race(signal, awaitable)
    except Exception as error:
        _raise(_summarizer_failed(signal, "Context summarizer failed", error))
    except asyncio.CancelledError as error:
        reraise_task_cancellation(error)
        _raise(_summarizer_failed(signal, "Context summarizer failed", error))


def _is_coroutine(value: object) -> TypeGuard[types.CoroutineType[object, object, object]]:
    """Whether ``value`` is exactly a native coroutine (what ``async def`` returns)."""
    return type_of(value) is types.CoroutineType


def _is_future(value: object) -> TypeGuard[asyncio.Future[object]]:
    """Whether ``value``'s real class is ``asyncio.Future`` or a subclass of it."""
    return issubclass(type_of(value), asyncio.Future)


def _is_iterator(value: object) -> TypeGuard[Generator[Any, Any, Any]]:
    """Whether ``value``'s class has a callable ``__next__``: ``yield from`` drives it as a
    generator (``send``/``throw``/``close`` are used when it has them, see ``_delegate``)."""
    try:
        return callable(getattr(type_of(value), "__next__", None))
    except Exception:
        return False


class _Steps:
    """An awaitable over the iterator an ``__await__`` already returned (called only once)."""

    __slots__ = ("_steps",)

    def __init__(self, steps: Generator[Any, Any, Any]) -> None:
        self._steps = steps

    def __await__(self) -> Generator[Any, Any, Any]:
        return _delegate(self._steps)


def _delegate(steps: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
    """Drive the iterator as ``await`` does: ``yield from`` passes ``send``, ``throw`` and
    ``close`` on when it has them, and stands in for them when it has not."""
    return (yield from steps)
