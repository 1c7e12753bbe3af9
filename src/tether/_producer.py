"""Background producers: the tasks that fill a model's or a run's ``EventStream``.

A producer settles its stream itself; its task only needs to stay alive (the event loop keeps
weak references to tasks) and must never end with an exception nobody retrieves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from tether.stream import EventStream

__all__ = ["fail_producer", "start_producer"]

_RUNNING: set[asyncio.Task[None]] = set()


def start_producer(work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` on the running loop, holding a strong reference until it ends."""
    task = asyncio.get_running_loop().create_task(work)
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)


def fail_producer(stream: EventStream[Any, Any], error: BaseException) -> None:
    """Settle ``stream`` with ``error`` (the very object), then re-raise what must not stop
    at the stream: task cancellation, ``KeyboardInterrupt`` and ``SystemExit``."""
    stream.fail(error)
    if isinstance(error, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
        raise error
