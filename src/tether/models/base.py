"""The model contract: what the agent loop needs from anything that answers requests.

A ``Model`` has ``stream(request, signal)`` returning a ``ModelStream``: an async iterable of
``ModelChunk`` values plus an awaitable ``result`` giving the terminal ``ModelResponse``.
``ScriptedModel``, ``FixtureProviderAdapter`` and the HTTP providers are models; so is any
object of your own with that shape. Both protocols are ``runtime_checkable``, so
``isinstance(obj, Model)`` checks the shape (not the types of what it returns: the loop checks
every chunk and response at its boundary anyway).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import Protocol, runtime_checkable

from tether._types import is_awaitable
from tether.abort import AbortSignal
from tether.protocol import ModelChunk, ModelRequest, ModelResponse

__all__ = ["Model", "ModelStream", "close_model"]


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
