"""``CodingSession``: the one coding-agent session every mode of the CLI drives.

A session owns, on top of ``tether.agent.runtime.RuntimeManager`` (one runtime at a time:
workspace, tools, resources, session file, extensions, Agent) and the Agent:

* the **conversation**: ``prompt``, ``steer``, ``follow_up``, ``abort``, ``compact``;
* the **session file**: ``new_session``, ``resume``, ``move_to`` (a branch of the session
  tree), ``change_directory`` (the same session in another workspace) and ``switch_model``
  (the conversation kept). Each of them builds a new runtime with ``RuntimeManager.replace``:
  the current one stays in use until the new one is fully built, and a failure (an error, or
  the awaiting task cancelled) leaves it as it was;
* the **branch position**: the entry the session stands on belongs to the session, not to
  the file. A runtime built on the same file again (``switch_model``, ``change_directory``)
  starts where the current one stands, so ``move_to`` followed by a rebuild keeps the move
  (a runtime reading the file alone would start at its last record);
* the **system prompt** (``system_prompt``): the introduction, the tool names, today's date,
  the project directory, the context files and the skills (see ``CodingSessionConfig``),
  built again for every runtime (a new workspace has its own context files and skills);
* **approvals** (``ApprovalPolicy``; the ``Approver`` the mode gives answers the asked ones);
* the **thinking level** (``thinking``, ``set_thinking``, ``cycle_thinking``): one
  ``tether.providers.thinking.ThinkingLevel`` for every model of the session once set; it
  changes the next request at once (the model is swapped for ``model.with_thinking(level)``,
  on the same connection, no new runtime), and a level a model has to clamp, or a model
  without levels, is said once (a ``SessionNotice``);
* **usage and cost totals** (``usage``, ``cost``: every finished run's, over every model of
  the session, each at its model's prices);
* **usage and cost totals** (``usage``, ``cost``: every model response's, as it arrives, over
  every model of the session, each at its model's prices; ``cost`` is unknown, ``None``,
  once a response's is);
* the **prompt cache key** (``prompt_cache_key``): a random key of the session, given to the
  model it builds (``ModelSource.build(cache_key=...)``: OpenAI's ``prompt_cache_key``);
* the **event stream** (``subscribe``): every ``AgentEvent`` of every Agent the session
  builds, in order, and ``SessionOpened``/``SessionNotice`` when a runtime is published or
  something is worth saying (a skipped skill, a repaired session file).

The first runtime is built lazily: by ``start`` (``prompt``, ``steer``... call it), or by
``resume``; a session that never sends anything creates no file.

Errors: the runtime's (``TetherRuntimeError``, ``RUNTIME_...``), the Agent's (``AGENT_BUSY``...)
and the session's own (``CodingSessionError``, ``CODING_...``: an unknown or ambiguous session
or entry ID, a session that cannot be replaced by another because it is one fixed file).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from tether.coding.approval import DECLINED, Answer, ApprovalRequest, Decline
from tether.coding.session_events import (
    CodingEvent,
    CodingSessionError,
    SessionNotice,
    SessionOpened,
)
from tether.coding.session_runtimes import M, SessionRuntimes
from tether.providers.thinking import ThinkingLevel, is_thinking_level, next_level

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tether.agent.compaction import ContextCompactionRecord
    from tether.agent.session import SessionEntry
    from tether.coding.meter import UsageMeter
    from tether.loop.hooks import BlockToolCall, ToolCallContext
    from tether.protocol import AgentEvent, ImageBlock, RunResult, UserMessage
    from tether.stream import EventStream

__all__ = [
    "CodingEvent",
    "CodingSession",
    "CodingSessionError",
    "SessionNotice",
    "SessionOpened",
]


class CodingSession(SessionRuntimes[M]):
    """One coding session (see the module docstring). ``approver`` answers the tool calls
    the policy asks about (without one they are declined)."""

    # -- thinking ---------------------------------------------------------------------------

    @property
    def thinking(self) -> ThinkingLevel | None:
        """The thinking level of the next request: the one set with ``set_thinking``, else
        the current model's own (its choice's ``thinking`` before it is built); ``None``:
        none (the model's default)."""
        if self._thinking is not None:
            return self._thinking
        source: object = self._choice if self._meter is None else self._meter.model
        level: object = getattr(source, "thinking", None)
        return level if is_thinking_level(level) else None

    def set_thinking(self, level: ThinkingLevel) -> ThinkingLevel:
        """Think at ``level`` from the next request on, with this model and every later one
        (``switch_model``); returns it. ``CodingSessionError`` ``CODING_THINKING_INVALID``
        for anything but a ``ThinkingLevel``."""
        if not is_thinking_level(level):
            raise CodingSessionError(
                "CODING_THINKING_INVALID",
                "thinking must be one of: off, minimal, low, medium, high",
            )
        self._thinking = level
        if self._meter is not None:
            self._meter.model = self._at_level(self._meter.model)
        return level

    def cycle_thinking(self) -> ThinkingLevel:
        """Go to the level after the current one (``off`` → ``minimal`` → … → ``high`` →
        ``off``; Shift-Tab in ``tether chat``); returns it."""
        return self.set_thinking(next_level(self.thinking))

    # -- the conversation ---------------------------------------------------------------------

    async def prompt(
        self, text: str, images: Sequence[ImageBlock] = ()
    ) -> EventStream[AgentEvent, RunResult]:
        """Start a run with the user message ``text`` and its ``images`` (the first runtime
        built first); its events go to the stream returned and to every listener."""
        agent = await self.start()
        await self._follow_tools(agent)
        if self._meter is not None:
            self._meter.last_error = None
        return agent.prompt(text, images=images)

    async def steer(self, text: str, images: Sequence[ImageBlock] = ()) -> UserMessage:
        """Queue ``text`` (and ``images``) for the next turn boundary of the running prompt
        (or the next)."""
        return (await self.start()).steer(text, images=images)

    async def follow_up(self, text: str, images: Sequence[ImageBlock] = ()) -> UserMessage:
        """Queue ``text`` (and ``images``) for when the model would finish."""
        return (await self.start()).follow_up(text, images=images)

    def abort(self, reason: str) -> bool:
        """Cancel the running prompt; whether one was running."""
        agent = self.agent
        return agent is not None and agent.cancel(reason)

    async def compact(self) -> ContextCompactionRecord | None:
        """Compact the context now (``Agent.compact``; recorded in the session)."""
        return await (await self.start()).compact()

    # -- the session file ---------------------------------------------------------------------

    async def new_session(self) -> None:
        """A runtime on a new session file (when a runtime is current; else the next
        ``start`` creates one). ``CODING_SESSION_FIXED`` on one fixed file."""
        if self.config.sessions.file is not None:
            raise CodingSessionError(
                "CODING_SESSION_FIXED", "this session is one file: there is no new session"
            )
        if self._manager is not None:
            await self._rebuild(self._new_session_options(), "created")
        self._reset_totals()

    def matching_sessions(self, ident: str) -> list[str]:
        """The saved session IDs ``ident`` names: itself, else those it is a prefix of."""
        directory = self.sessions_dir
        try:
            names = sorted(os.listdir(directory)) if directory is not None else []
        except OSError:
            names = []
        stems = [name[: -len(".jsonl")] for name in names if name.endswith(".jsonl")]
        if ident in stems:
            return [ident]
        return [stem for stem in stems if stem.startswith(ident)]

    async def resume(self, ident: str) -> None:
        """A runtime on the saved session ``ident`` names (an ID or a unique prefix); nothing
        happens when it is the current one. ``CODING_SESSION_NOT_FOUND`` or
        ``CODING_SESSION_AMBIGUOUS`` otherwise."""
        matches = self.matching_sessions(ident)
        if not matches:
            raise CodingSessionError("CODING_SESSION_NOT_FOUND", f"no session {ident!r}")
        if len(matches) > 1:
            raise CodingSessionError(
                "CODING_SESSION_AMBIGUOUS",
                f"{ident!r} names {len(matches)} sessions: give more of the ID",
            )
        session_id = matches[0]
        if session_id == self.session_id:
            return
        directory = self.sessions_dir
        assert directory is not None
        options = self._session_options("resume", directory / f"{session_id}.jsonl", None)
        await self._rebuild(options, "resumed")
        self._reset_totals()

    def entries(self) -> tuple[SessionEntry, ...]:
        """Every entry of the session file (``()`` before the first runtime)."""
        tree = self.tree
        return () if tree is None else tree.entries

    def active_entries(self) -> tuple[SessionEntry, ...]:
        """The entries of the branch the session stands on, root first."""
        tree = self.tree
        return () if tree is None else tree.active_entries

    def matching_entries(self, ident: str) -> list[str]:
        """The entry IDs of the session that start with ``ident``."""
        return [entry.id for entry in self.entries() if entry.id.startswith(ident)]

    async def move_to(self, ident: str) -> str:
        """Stand on the entry ``ident`` names (an ID or a unique prefix): the next prompt
        continues from there, a branch beside the old one. Returns the entry's ID.
        ``CODING_NOT_STARTED``, ``CODING_ENTRY_NOT_FOUND``, ``CODING_ENTRY_AMBIGUOUS``."""
        if self.tree is None:
            raise CodingSessionError("CODING_NOT_STARTED", "nothing in this session yet")
        matches = self.matching_entries(ident)
        if len(matches) != 1:
            if not matches:
                raise CodingSessionError("CODING_ENTRY_NOT_FOUND", f"no entry {ident!r}")
            raise CodingSessionError(
                "CODING_ENTRY_AMBIGUOUS",
                f"{ident!r} names {len(matches)} entries: give more of the ID",
            )
        self._move_to = matches[0]
        await self._rebuild(self._same_session_options(), "moved")
        return matches[0]

    async def change_directory(self, cwd: Path) -> None:
        """The same session (on the same entry) in the workspace ``cwd``: tools, context
        files, skills and extensions built there. Before the first runtime, only the
        workspace changes (the first prompt builds it there)."""
        target = _absolute(cwd)
        if self._manager is None:
            self._cwd = target
            return
        await self._rebuild_here(target)

    async def switch_model(self, choice: M) -> None:
        """Go on with ``choice``'s model, the conversation (and the entry) kept. On failure
        the current model and runtime stay."""
        previous_choice, previous_meter = self._choice, self._meter
        self._choice, self._meter = choice, None
        before = self.runtime
        switched = False
        try:
            if self._manager is not None:
                await self._rebuild_here()
            switched = True
        finally:
            if not switched and self.runtime is before:
                # The old runtime is still current, with its model: drop the new one.
                unused, self._meter = self._meter, previous_meter
                self._choice = previous_choice
                await _close_meter(unused)
        await _close_meter(previous_meter)

    # -- approval -----------------------------------------------------------------------------

    async def before_tool_call(self, context: ToolCallContext) -> BlockToolCall | None:
        """The Agent's tool-call hook: ``None`` (run it) unless the policy asks about the
        call and the approver (or, without one, the session) declines it."""
        from tether.loop.hooks import BlockToolCall

        call = context.tool_call
        name = call.name
        if not self.approvals.needs_asking(name):
            return None
        approver = self._approver
        answer: Answer | Decline = "no"
        if approver is not None:
            answer = await approver(ApprovalRequest(id=call.id, tool_call=call))
        if isinstance(answer, Decline):
            self.approvals.decide(name, "no")
            return BlockToolCall(reason=answer.reason)
        if self.approvals.decide(name, answer):
            return None
        return BlockToolCall(reason=DECLINED)

    # -- the end ------------------------------------------------------------------------------

    async def close(self) -> None:
        """Dispose of the runtime (the session flushed, extensions disposed), close the
        model, remove an ephemeral session's directory. Errors of the disposal are raised
        after the rest is done."""
        manager = self._manager
        try:
            if manager is not None:
                self._closed_tree = manager.current.session
                self._manager = None
                await manager.dispose()
        finally:
            meter, self._meter = self._meter, None
            await _close_meter(meter)
            self.remove_scratch()

    def remove_scratch(self) -> None:
        """Remove an ephemeral session's temporary directory (``close`` does)."""
        scratch, self._scratch = self._scratch, None
        if scratch is not None and self._manager is None:
            shutil.rmtree(scratch, ignore_errors=True)


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path))


async def _close_meter(meter: UsageMeter | None) -> None:
    """Close a metered model's resources (``tether.models.base.close_model``)."""
    if meter is not None:
        from tether.models.base import close_model

        await close_model(meter.model)
