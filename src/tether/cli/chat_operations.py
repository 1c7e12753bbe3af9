"""The base of ``tether chat``'s ``Chat``: what every part of it works on (the coding session,
the view, the current runtime) and the operations it waits for, which Ctrl-C cancels
(``interrupt``): a runtime being built or closed, the extensions' hooks after a turn.

A failure of such an operation is shown as ``problem_text`` writes it and leaves the current
runtime as it was; a cancelled one raises ``OperationCancelled`` once its work has settled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar

from tether._async.race import reraise_task_cancellation
from tether._base.exact_types import instance_of
from tether._base.tether_error import TetherError

if TYPE_CHECKING:
    from pathlib import Path

    from tether.agent.agent import Agent
    from tether.agent.runtime import Runtime
    from tether.agent.session import SessionTree
    from tether.cli.chat_view import ChatView
    from tether.cli.models import ModelChoice
    from tether.coding.approval import Approvals
    from tether.coding.meter import UsageMeter
    from tether.coding.resources import ChatResources
    from tether.coding.session import CodingSession

__all__ = ["ChatOperations", "Interrupt", "OperationCancelled", "problem_text"]
_INTERRUPT: Final = "Interrupted by the user"

Interrupt: TypeAlias = Literal["turn", "operation", "again"]
"""What a Ctrl-C did (``Chat.interrupt``): cancelled the running ``turn``, cancelled the
``operation`` the chat waits for (a runtime being built or closed, extension hooks), or came
``again`` while that cancellation is still settling (``tether chat`` then quits at once)."""

T = TypeVar("T")


class OperationCancelled(Exception):
    """The operation the chat waited for was cancelled by Ctrl-C."""


class ChatOperations:
    """What ``tether.cli.chat_session.Chat`` is made of (its ``coding`` session, its
    ``view``) and the operations it waits for: ``interrupt`` (Ctrl-C) cancels the running
    turn, else the operation waited for. ``Chat`` sets every attribute declared here."""

    view: ChatView
    coding: CodingSession[ModelChoice]
    _running: Agent | None
    _shown_error: BaseException | None
    _busy: asyncio.Future[Any] | None
    _busy_cancelled: bool
    _rebuilt: int
    # -- what it is ----------------------------------------------------------------------------

    @property
    def choice(self) -> ModelChoice:
        """The current model choice."""
        return self.coding.model

    @property
    def cwd(self) -> Path:
        """The current workspace."""
        return self.coding.cwd

    @property
    def approvals(self) -> Approvals:
        """Which tool calls are asked about (the session's)."""
        return self.coding.approvals

    @property
    def tree(self) -> SessionTree | None:
        """The current session (``None`` before the first runtime is built; after ``close``
        the last one)."""
        return self.coding.tree

    @property
    def session_id(self) -> str | None:
        """The session file's ID, once there is one."""
        return self.coding.session_id

    @property
    def runtime(self) -> Runtime | None:
        """The current runtime (``None`` before the first prompt or resume)."""
        return self.coding.runtime

    @property
    def meter(self) -> UsageMeter | None:
        """The model, metered (``None`` until the agent is built)."""
        return self.coding.meter

    async def agent(self) -> Agent:
        """The agent, built on first use (with a new session)."""
        return await self._interruptible(self.coding.start())

    async def resources(self) -> ChatResources:
        """The skills and prompt templates of the current workspace
        (``tether.coding.resources``)."""
        return await self.coding.resources()

    async def _rebuild(self, work: Awaitable[Any]) -> bool:
        """Wait for a runtime rebuild of the session (``work``); whether it worked. A
        failure is shown and leaves the current runtime as it was."""
        from tether.agent.runtime import TetherRuntimeError

        before = self.coding.runtime
        try:
            await self._interruptible(work)
            self._rebuilt += 1
            return True
        except TetherRuntimeError as error:
            self.view.line(problem_text(error))
            return False
        except OperationCancelled:
            if before is None:
                self.view.line("(cancelled: no runtime was built)")
            else:
                self.view.line("(cancelled: the current runtime stays)")
            return False

    async def close(self) -> bool:
        """Dispose of the runtime (the session flushed, extensions disposed), then close the
        model's HTTP client; ``False`` when Ctrl-C stopped the wait for the runtime (its
        disposal goes on in the background, bounded by ``extension_timeout``)."""
        from tether.agent.runtime import TetherRuntimeError

        closing = asyncio.ensure_future(self.coding.close())
        try:
            await self._interruptible(asyncio.shield(closing))
        except TetherRuntimeError as error:
            self.view.line(f"(the session did not close cleanly) {problem_text(error)}")
        except OperationCancelled:
            self.view.line("(not waiting for the runtime to close)")
            return False
        return True

    def interrupt(self) -> Interrupt | None:
        """Ctrl-C: cancel the running turn, else the operation the chat waits for (a runtime
        being built or closed, extension hooks); what it did (``None``: nothing to cancel)."""
        running = self._running
        if running is not None:
            running.cancel(_INTERRUPT)
            return "turn"
        busy = self._busy
        if busy is None or busy.done():
            return None
        if self._busy_cancelled:
            return "again"
        self._busy_cancelled = True
        busy.cancel()
        return "operation"

    async def _interruptible(self, work: Awaitable[T]) -> T:
        """Wait for ``work`` (on a task of its own) as the operation ``interrupt`` cancels;
        raises ``OperationCancelled`` once the cancelled work has settled."""
        task: asyncio.Future[T] = asyncio.ensure_future(work)
        self._busy, self._busy_cancelled = task, False
        try:
            return await task
        except asyncio.CancelledError as error:
            reraise_task_cancellation(error)  # the chat itself is being cancelled
            raise OperationCancelled from None
        finally:
            self._busy, self._busy_cancelled = None, False

    async def _check_runtime(self) -> None:
        """After a turn: wait for the runtime's event tail (extension hooks, the session
        coherence check: the runtime's subscriber returns each operation to the Agent) and
        show, once, an error that poisoned the runtime."""
        runtime = self.runtime
        if runtime is None:
            return
        try:
            await self._interruptible(runtime.agent.wait_for_subscribers())
        except OperationCancelled:
            self.view.line("(not waiting for the extensions' hooks)")
            return
        error = runtime.error
        if error is not None and error is not self._shown_error:
            self._shown_error = error
            self.view.line(
                f"(the session is no longer kept in step) {problem_text(error)}: "
                "/new or /resume starts over"
            )


def problem_text(error: TetherError) -> str:
    """``[CODE] message (causes)``: a runtime error as the chat shows it."""
    return f"[{error.code}] {_explain(error)}"


def _explain(error: BaseException, depth: int = 0) -> str:
    """``error``'s message, then its causes in parentheses (an aggregate's each, ``;``
    separated), three levels deep at most."""
    text = str(error) or type(error).__name__
    cause = error.__cause__
    if cause is None or depth >= 3:
        return text
    if instance_of(cause, BaseExceptionGroup):
        parts: tuple[BaseException, ...] = cause.exceptions
        inner = "; ".join(_explain(part, depth + 1) for part in parts)
    else:
        inner = _explain(cause, depth + 1)
    return text if inner in text else f"{text} ({inner})"  # said once, not twice
