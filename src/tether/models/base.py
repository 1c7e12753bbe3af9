"""The model contract: what the agent loop needs from anything that answers requests.

A ``Model`` has ``stream(request, signal)`` returning a ``ModelStream``: an async iterable of
``ModelChunk`` values plus an awaitable ``result`` giving the terminal ``ModelResponse``.
``ScriptedModel``, ``FixtureProviderAdapter`` and the HTTP providers are models; so is any
object of your own with that shape. Both protocols are ``runtime_checkable``, so
``isinstance(obj, Model)`` checks the shape (not the types of what it returns: the loop checks
every chunk and response at its boundary anyway).

Retry notices: a model that waits before trying a request again (the HTTP providers, on
429/5xx/overloaded before anything streamed) tells the run with ``report_retry``: the loop
listens for the turns of its run (``listen_for_retries``) and emits ``model.retry``.
The listener is read from the caller's context when ``stream()`` is called (a
``contextvars.ContextVar``), so the ``Model`` contract keeps its two parameters.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from tether._base.exact_types import is_awaitable
from tether.abort import AbortSignal

if TYPE_CHECKING:
    from tether.protocol import ModelChunk, ModelRequest, ModelResponse, ModelRetryPayload

__all__ = [
    "Model",
    "ModelStream",
    "RetryListener",
    "close_model",
    "listen_for_retries",
    "retry_listener",
    "stop_listening",
]

RetryListener: TypeAlias = Callable[["ModelRetryPayload"], None]
"""Receives a model's retry notices; it must not block (the loop's emits ``model.retry``)."""

_LISTENER: ContextVar[RetryListener | None] = ContextVar("tether_retry_listener", default=None)


def listen_for_retries(listener: RetryListener) -> Token[RetryListener | None]:
    """From now until ``stop_listening(token)``, ``retry_listener()`` returns ``listener``:
    the model streams opened meanwhile (``model.stream(request, signal)``) report their
    retries to it. Pair it with ``stop_listening`` in a ``finally``.

    A token rather than a context manager: a run listens for as long as it lives, and the
    manager's generator, its wrapper and its bound ``__exit__`` were three more objects per
    run in flight for the cycle collector to walk (``bench_scale``)."""
    return _LISTENER.set(listener)


def stop_listening(token: Token[RetryListener | None]) -> None:
    """End what ``listen_for_retries`` started (``token`` is what it returned)."""
    _LISTENER.reset(token)


def retry_listener() -> RetryListener | None:
    """For ``Model`` implementations: the listener of the request being opened, or ``None``.

    Read it in ``stream()`` itself (synchronously: that is where the caller's context is),
    keep it for that request, and call it with a ``ModelRetryPayload`` before each wait
    before a retry. A listener never raises into the model.
    """
    listener = _LISTENER.get()
    if listener is None:
        return None
    return _shielded(listener)


def _shielded(listener: RetryListener) -> RetryListener:
    def notify(payload: ModelRetryPayload) -> None:
        with contextlib.suppress(Exception):
            listener(payload)

    return notify


@runtime_checkable
class ModelStream(Protocol):
    """What a model returns for one request: async-iterable chunks and the final response."""

    def __aiter__(self) -> AsyncIterator[ModelChunk]: ...

    @property
    def result(self) -> Awaitable[ModelResponse]: ...


@runtime_checkable
class Model(Protocol):
    """Anything that can answer a request with a ``ModelStream``.

    ``signal`` aborts the turn: a model stops producing and settles its stream promptly.
    """

    def stream(self, request: ModelRequest, signal: AbortSignal) -> ModelStream: ...


async def close_model(model: object) -> None:
    """Close ``model``'s resources when it has any: an HTTP model's ``aclose()`` (sync or
    async); a model without ``aclose`` (``ScriptedModel``) needs nothing."""
    aclose = getattr(model, "aclose", None)
    if callable(aclose):
        closing = aclose()
        if is_awaitable(closing):
            await closing
