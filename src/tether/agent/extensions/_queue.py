"""An ``ExtensionHost``'s one queue: operations run one at a time, in call order, a failed one
never blocking the next; each caller gets a future whose exception is marked retrieved."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from tether._async.race import observe
from tether.agent.extensions.errors import ExtensionError

__all__ = ["WorkQueue", "rejected"]

T = TypeVar("T")


def rejected(error: ExtensionError) -> asyncio.Future[Any]:
    """A future already failed with ``error`` (pre-observed)."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.set_exception(error)
    future.exception()  # pre-observed: never "exception was never retrieved"
    return future


class WorkQueue:
    """The last queued operation's task (the next one waits for it) and every task still
    running (the loop keeps only weak references)."""

    __slots__ = ("tail", "tasks")

    def __init__(self) -> None:
        self.tail: asyncio.Future[Any] | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    def enqueue(self, body: Callable[[], Coroutine[Any, Any, T]]) -> asyncio.Future[T]:
        """Run ``body`` after every operation queued before it; returns its future."""
        loop = asyncio.get_running_loop()
        public: asyncio.Future[T] = loop.create_future()
        observe(public)
        task = loop.create_task(self._run(self.tail, body, public))
        self.tail = task
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return public

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if not task.cancelled():
            task.exception()

    @staticmethod
    async def _run(
        previous: asyncio.Future[Any] | None,
        body: Callable[[], Coroutine[Any, Any, T]],
        public: asyncio.Future[T],
    ) -> None:
        try:
            if previous is not None and not previous.done():
                await asyncio.wait((previous,))
            value = await body()
        except BaseException as error:
            if not public.done():
                if isinstance(error, asyncio.CancelledError):
                    public.cancel()
                else:
                    public.set_exception(error)
            if isinstance(error, Exception):
                return
            raise  # never swallowed; the task's own record of it is observed (enqueue)
        if not public.done():
            public.set_result(value)
