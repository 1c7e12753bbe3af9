"""An Agent's subscribers: called with every event in registration order, never able to break
the run (a failure is recorded, an awaitable is observed, never awaited)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final, TypeAlias, cast

from tether._async.race import reraise_task_cancellation
from tether._base.dataclass import dataclass
from tether._base.exact_types import is_awaitable
from tether._base.strings import message_of
from tether.abort import AbortSignal
from tether.protocol import AgentEvent, AgentEventType

__all__ = ["AgentSubscriber", "AgentSubscriberError", "Subscribers"]

AgentSubscriber: TypeAlias = Callable[[AgentEvent, AbortSignal], object]
"""Called with each event and the run's signal; may return ``None`` or an awaitable."""

_SUBSCRIBER_FAILED: Final = "Agent subscriber failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSubscriberError:
    """A recorded subscriber failure: which event, which subscriber (IDs start at 1), why."""

    event_type: AgentEventType
    listener_id: int
    message: str


class Subscribers:
    """The listeners (and the snapshot dispatch reads, rebuilt only when they change), their
    recorded failures and the awaitables they returned that have not settled yet."""

    __slots__ = ("failures", "listeners", "next_listener", "pending", "snapshot")

    def __init__(self) -> None:
        self.listeners: dict[int, AgentSubscriber] = {}
        self.snapshot: tuple[tuple[int, AgentSubscriber], ...] = ()
        self.next_listener = 1
        self.failures: list[AgentSubscriberError] = []
        self.pending: set[asyncio.Future[object]] = set()

    def subscribe(self, listener: AgentSubscriber) -> Callable[[], None]:
        """Add ``listener``; returns its idempotent unsubscribe."""
        if not callable(listener):
            raise TypeError("Agent subscriber must be a function")
        listener_id = self.next_listener
        self.next_listener += 1
        self.listeners[listener_id] = listener
        self.snapshot = tuple(self.listeners.items())
        subscribed = True

        def unsubscribe() -> None:
            nonlocal subscribed
            if subscribed:
                subscribed = False
                del self.listeners[listener_id]
                self.snapshot = tuple(self.listeners.items())

        return unsubscribe

    async def wait(self) -> None:
        """Wait until every awaitable a subscriber returned has settled."""
        while self.pending:
            # Each future's recording callback was added before asyncio.wait's, so it has
            # run by the time wait returns.
            await asyncio.wait(tuple(self.pending))

    def dispatch(self, event: AgentEvent, signal: AbortSignal) -> None:
        """Give ``event`` to every listener, in registration order."""
        listeners = self.snapshot
        if not listeners:
            return
        for listener_id, listener in listeners:
            try:
                returned = listener(event, signal)
            except asyncio.CancelledError as error:
                reraise_task_cancellation(error)
                self._record(event.type, listener_id, error)
                continue
            except Exception as error:
                self._record(event.type, listener_id, error)
                continue
            if returned is not None and is_awaitable(returned):
                self._observe(returned, event.type, listener_id)

    def _observe(self, returned: object, event_type: AgentEventType, listener_id: int) -> None:
        try:
            future: asyncio.Future[object] = asyncio.ensure_future(
                cast("Awaitable[object]", returned)
            )
        except Exception as error:
            self._record(event_type, listener_id, error)
            return
        self.pending.add(future)

        def settled(done: asyncio.Future[object]) -> None:
            self.pending.discard(done)
            if done.cancelled():
                return
            error = done.exception()
            if error is not None:
                self._record(event_type, listener_id, error)

        future.add_done_callback(settled)

    def _record(self, event_type: AgentEventType, listener_id: int, error: BaseException) -> None:
        message = message_of(error, _SUBSCRIBER_FAILED)
        self.failures.append(
            AgentSubscriberError(event_type=event_type, listener_id=listener_id, message=message)
        )
