"""``QueuedReplies``: what the two offline models (``ScriptedModel`` and the
``FixtureProviderAdapter``) share: a queue of what their next calls answer, a count of the
calls, and the argument checks that come before a call counts.

Both answer one queued reply per ``stream()`` call, oldest first; they differ in what a reply
is (a scripted factory, a fixture's records), which the subclass says with ``T``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Generic, TypeVar

from tether._base.exact_types import instance_of, type_of
from tether.abort import AbortSignal
from tether.protocol import ModelRequest

__all__ = ["QueuedReplies"]

T = TypeVar("T")


class QueuedReplies(Generic[T]):
    """A model's queue of replies (``_queue``) and its ``call_count``."""

    __slots__ = ("_call_count", "_queue")

    def __init__(self, replies: Iterable[T]) -> None:
        self._queue: deque[T] = deque(replies)
        self._call_count = 0

    @property
    def call_count(self) -> int:
        """How many times ``stream()`` was called (after its argument checks passed)."""
        return self._call_count

    @property
    def pending_response_count(self) -> int:
        """How many responses remain queued."""
        return len(self._queue)

    def _count_call(self, request: object, signal: object) -> None:
        """Check ``stream()``'s arguments (``TypeError``) and count the call."""
        if type_of(request) is not ModelRequest:
            raise TypeError("request must be a ModelRequest")
        if not instance_of(signal, AbortSignal):
            raise TypeError("signal must be an AbortSignal")
        self._call_count += 1
