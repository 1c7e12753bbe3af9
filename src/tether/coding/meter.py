"""The metered model of a coding session: token usage (and, with a price, cost) added up, the
last provider error kept, and each turn optionally paced by the display (``tether run`` holds
the run back until every event so far is written)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any

from tether.abort import AbortSignal
from tether.models.base import Model, ModelStream
from tether.protocol import ZERO_USAGE, ModelChunk, ModelRequest, ModelResponse, ModelUsage
from tether.providers.errors import ProviderError

__all__ = ["UsageMeter"]


class UsageMeter:
    """Wraps the model: paces each turn (when given ``pace``), adds up the token usage of
    every response (``usage``; ``input_tokens`` and ``output_tokens``), keeps the last
    ``ProviderError`` the model raised (``last_error``) and calls ``on_response`` with each
    response's usage."""

    def __init__(
        self,
        model: Model,
        pace: Callable[[], Awaitable[None]] | None,
        on_response: Callable[[ModelUsage], None] | None = None,
    ) -> None:
        self.model = model
        self.pace = pace
        self.on_response = on_response
        self.usage: ModelUsage = ZERO_USAGE
        self.input_tokens = 0
        self.output_tokens = 0
        self.turns = 0
        self.context_tokens: int | None = None
        """The last response's tokens (input, cached or not, and output): how much of the
        context window the conversation fills (``None`` before the first response)."""
        self.last_error: ProviderError | None = None

    def stream(self, request: ModelRequest, signal: AbortSignal) -> ModelStream:
        """The wrapped model's stream for ``request``, paced and metered."""
        return _MeteredStream(self, self.model.stream(request, signal))


class _MeteredStream:
    def __init__(self, meter: UsageMeter, inner: ModelStream) -> None:
        self._meter = meter
        self._inner = inner

    def __aiter__(self) -> AsyncIterator[ModelChunk]:
        return _PacedIterator(self._inner.__aiter__(), self._meter)

    @property
    def result(self) -> _MeteredResult:
        return _MeteredResult(self._meter, self._inner)


class _PacedIterator:
    """The model's chunks, the first one only once the display has caught up.

    The loop races every step against its signal, so an abort while this waits cancels the
    turn at once.
    """

    __slots__ = ("_inner", "_meter", "_pace")

    def __init__(self, inner: AsyncIterator[ModelChunk], meter: UsageMeter):
        self._inner = inner
        self._meter = meter
        self._pace = meter.pace

    def __aiter__(self) -> _PacedIterator:
        return self

    async def __anext__(self) -> ModelChunk:
        pace = self._pace
        if pace is not None:
            self._pace = None
            await pace()
        try:
            return await self._inner.__anext__()
        except ProviderError as error:
            self._meter.last_error = error
            raise


class _MeteredResult:
    def __init__(self, meter: UsageMeter, inner: ModelStream) -> None:
        self._meter = meter
        self._inner = inner

    def __await__(self) -> Generator[Any, Any, ModelResponse]:
        try:
            response = yield from self._inner.result.__await__()
        except ProviderError as error:
            self._meter.last_error = error
            raise
        meter = self._meter
        usage = response.usage
        meter.turns += 1
        meter.usage = meter.usage + usage
        meter.input_tokens += usage.input_tokens
        meter.output_tokens += usage.output_tokens
        meter.context_tokens = usage.total_tokens
        if meter.on_response is not None:
            meter.on_response(usage)
        return response
