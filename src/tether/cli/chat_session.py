"""``Chat``: one interactive session of ``tether chat``, what a person sees of it and does.

``Chat`` puts together the chat's parts (``chat_commands``: the slash commands;
``chat_approval``: the approval question; ``chat_status``: the status line; over
``chat_operations``: the coding session and the view) and adds what a turn is: a prompt sent
and its run shown until it settles, Enter and Alt-Enter queued during a turn, Shift-Tab's
thinking level, the usage line. What a person sees and can do is ``tether.cli.chat``'s
docstring; ``tether.cli.chat.chat_command`` wires a ``Chat`` to the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.cli.chat_approval import Ask, ChatApproval
from tether.cli.chat_commands import ChatCommands
from tether.cli.chat_operations import OperationCancelled, problem_text
from tether.cli.chat_status import ChatStatus
from tether.cli.chat_view import ChatView
from tether.cli.config import CliConfig
from tether.cli.render import shorten
from tether.cli.session_index import (
    remember_session,
)

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.agent.extensions import ExtensionDefinition
    from tether.cli.models import ModelChoice
    from tether.cli.ui.keys import TurnKeys
    from tether.cli.ui.picker import Picker
    from tether.cli.ui.status import Activity
    from tether.coding.session import CodingEvent
    from tether.loop.hooks import BlockToolCall, ToolCallContext
    from tether.models.base import Model
    from tether.protocol import (
        ModelUsage,
        RunResult,
        UserMessage,
    )
    from tether.tools.coding.workspace import Workspace

__all__ = ["Chat"]


class Chat(ChatCommands, ChatApproval, ChatStatus):
    """One interactive session: a ``CodingSession`` (``tether.coding``: the model, the
    runtime, the session file and its branch, the system prompt, approvals) and what a person
    sees of it.

    ``ask`` answers the approval question (the terminal's prompt in ``tether chat``; a
    script in tests); ``pick`` opens the lists of ``/model`` and ``/resume`` without an
    argument (``tether.cli.ui.picker.pick``); ``view`` writes what happens; ``build_model``
    makes the model of a choice (default: ``ModelChoice.build``, the HTTP model, with the
    session's prompt cache key);
    ``extensions`` are activated in every runtime the chat builds.
    """

    def __init__(
        self,
        *,
        choice: ModelChoice,
        config: CliConfig,
        cwd: Path,
        data_dir: Path,
        view: ChatView,
        ask: Ask,
        introduction: str | None = None,
        auto_approve: bool = False,
        build_model: Callable[[ModelChoice], Model] | None = None,
        extensions: Sequence[ExtensionDefinition] = (),
        pick: Picker | None = None,
    ) -> None:
        from tether.cli.session_config import coding_config
        from tether.coding import CodingSession, SessionPlace
        from tether.coding.context_files import user_config_dir

        self.config = config
        self.data_dir = data_dir
        self.sessions_dir = data_dir / "sessions"
        self.view = view
        self.ask = ask
        self.pick = pick
        """Opens a list to pick from (``tether.cli.ui.picker``; ``None``: no terminal, so
        ``/model`` and ``-r`` list and ask instead)."""
        self.session_tokens = (0, 0)
        made = coding_config(
            choice,
            config,
            cwd=cwd,
            tools="coding",
            introduction=introduction,
            sessions=SessionPlace(directory=self.sessions_dir),
            config_dir=user_config_dir(),
            extensions=tuple(extensions),
            auto_approve=auto_approve,
        )
        self.coding: CodingSession[ModelChoice] = CodingSession(
            dataclasses.replace(made, build_model=build_model),
            approver=self._approve,
        )
        self.coding.subscribe(self._on_event)
        self._running: Agent | None = None
        self._shown_error: BaseException | None = None
        self._busy: asyncio.Future[Any] | None = None  # what Ctrl-C cancels between turns
        self._busy_cancelled = False
        self._asking = False  # the approval question is up
        self.keys: TurnKeys | None = None
        """The terminal's keys during a turn (``tether chat`` sets them)."""
        self.typed = ""
        """What was typed during the turn and not yet sent (shown under the status)."""
        self._model_list: list[str] = []  # what /model listed last
        self.unsent = ""
        """What was typed during the last turn and never sent (the next prompt starts with
        it)."""
        self._queued: set[asyncio.Future[Any]] = set()
        self._activity: tuple[Activity, str | None] = ("waiting", None)
        self._retry: tuple[float, str] | None = None  # a retry's deadline (loop time), why
        self._last_chunk = 0.0
        self._preview_workspace: tuple[Path, Workspace | None] | None = None
        self._rebuilt = 0  # how many rebuilds worked

    def _on_event(self, event: CodingEvent) -> None:
        self._note_activity(event)
        if event.type == "session.notice":
            self.view.line(event.text)
        elif event.type == "session.opened":
            if event.reason == "created":
                remember_session(self.sessions_dir, self.cwd, event.session_id)
        else:
            self.view.show(event)

    def cycle_thinking(self) -> None:
        """Shift-Tab at the prompt: the next thinking level (``CodingSession.cycle_thinking``),
        said on a line of its own (then a level the model clamps is said once, by the
        session)."""
        from tether.providers.thinking import next_level

        level = next_level(self.coding.thinking)
        self.view.line(self.view.dim(f"(thinking: {level})"))
        self.coding.set_thinking(level)

    def queue(self, text: str, *, follow_up: bool) -> None:
        """Enter (a steer: the next turn boundary) or Alt-Enter (a follow-up: when the model
        would finish) while a turn runs: queue ``text`` and say so."""
        from tether.cli.ui.attachments import prompt_images

        async def work() -> UserMessage:
            images = await prompt_images(text, self.cwd, self.view.line)
            queue = self.coding.follow_up if follow_up else self.coding.steer
            return await queue(text, images)

        task = asyncio.ensure_future(work())
        self._queued.add(task)

        def done(finished: asyncio.Future[Any]) -> None:
            self._queued.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                self.view.line(f"(not queued: {finished.exception()})")

        task.add_done_callback(done)
        kind = "follow-up" if follow_up else "steer"
        self.view.line(self.view.dim(f"({kind} queued: {shorten(text, 100)})"))

    async def turn(self, text: str) -> RunResult | None:
        """Send ``text`` and show the run until it settles (``None``: no runtime could be
        built for it, which is shown)."""
        from tether.agent.runtime import TetherRuntimeError
        from tether.cli.models import run_problem
        from tether.cli.ui.attachments import prompt_images

        try:
            agent = await self.agent()
        except TetherRuntimeError as error:
            self.view.line(problem_text(error))
            return None
        except OperationCancelled:
            self.view.line("(cancelled: the turn was not sent)")
            return None
        self._running = agent
        ticker = asyncio.ensure_future(self._tick()) if self.view.live else None
        keys = self.keys
        if keys is not None:
            keys.start()
        try:
            images = await prompt_images(text, self.cwd, self.view.line)
            result = await (await self.coding.prompt(text, images)).result
        finally:
            self._running = None
            if keys is not None:
                keys.stop()
                self.unsent, keys.typed = keys.typed, ""
            self.typed = ""
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
            self.view.set_status("")
        view = self.view
        view.end_stream()
        if result.status == "cancelled":
            view.line("(turn cancelled)")
        elif result.status == "maxSteps":
            view.line(f"(stopped after {result.max_steps} model steps)")
        elif result.status == "failed":
            meter = self.meter
            problem = run_problem(result, None if meter is None else meter.last_error, self.choice)
            if problem is None:
                view.line(f"turn failed [{result.error.code}]: {result.error.message}")
            else:
                view.line(f"[{problem.code}] {problem}")
        usage = result.usage
        turn = (usage.input_tokens, usage.output_tokens)
        total = self.session_tokens
        self.session_tokens = (total[0] + turn[0], total[1] + turn[1])
        view.line(view.usage_line(turn, self.session_tokens, self._costs(usage)))
        await self._check_runtime()
        return result

    def _costs(self, usage: ModelUsage) -> tuple[str, str] | None:
        """What a turn's ``usage`` and the session cost (``None``: the model has no prices,
        so no cost is shown)."""
        from tether.cli.ui.status import format_cost

        choice = self.choice
        if not choice.prices.known:
            return None
        return format_cost(choice.cost(usage)), format_cost(self.coding.cost)

    async def before_tool_call(self, context: ToolCallContext) -> BlockToolCall | None:
        """The approval hook (``tether.cli.chat``'s docstring, "Approval"; the session's
        policy decides what is asked, ``ask`` asks)."""
        return await self.coding.before_tool_call(context)
