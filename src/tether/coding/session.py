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

import asyncio
import contextlib
import dataclasses
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeAlias, TypeVar

from tether._dataclass import dataclass
from tether._errors import TetherError
from tether.coding.approval import (
    DECLINED,
    Answer,
    ApprovalRequest,
    Approvals,
    Approver,
    Decline,
)
from tether.coding.config import DEFAULT_CONTEXT_WINDOW, CodingSessionConfig, ModelSource
from tether.protocol import ZERO_USAGE, ModelUsage
from tether.providers.thinking import ThinkingLevel, ThinkingModel, is_thinking_level, next_level

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.agent.compaction import ContextCompactionRecord
    from tether.agent.runtime import (
        Runtime,
        RuntimeAgentInput,
        RuntimeManager,
        RuntimeSessionOptions,
        RuntimeToolsInput,
    )
    from tether.agent.session import SessionEntry, SessionTree
    from tether.coding.meter import UsageMeter
    from tether.coding.resources import ChatResources
    from tether.loop.hooks import BlockToolCall, ToolCallContext
    from tether.models.base import Model
    from tether.protocol import AgentEvent, RunResult, UserMessage
    from tether.stream import EventStream

__all__ = [
    "CodingEvent",
    "CodingSession",
    "CodingSessionError",
    "SessionNotice",
    "SessionOpened",
]


M = TypeVar("M", bound=ModelSource)
T = TypeVar("T")


class CodingSessionError(TetherError):
    """A session operation that cannot be done: ``CODING_SESSION_NOT_FOUND``,
    ``CODING_SESSION_AMBIGUOUS``, ``CODING_ENTRY_NOT_FOUND``, ``CODING_ENTRY_AMBIGUOUS``,
    ``CODING_NOT_STARTED`` (nothing to act on before the first runtime),
    ``CODING_SESSION_FIXED`` (a session on one fixed file has no other session to go to) or
    ``CODING_THINKING_INVALID`` (not a thinking level)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionOpened:
    """A runtime was published: ``reason`` (``created``: a new session file; ``resumed``:
    another saved session; ``moved``: the same session on another entry; ``rebuilt``: the
    same session, for a new model or workspace), the session's ``session_id``, its file
    (``path``), the workspace (``cwd``), the model and the transcript's ``message_count``."""

    type: Literal["session.opened"] = "session.opened"
    reason: Literal["created", "resumed", "moved", "rebuilt"]
    session_id: str
    path: str
    cwd: str
    model: str
    message_count: int

    def to_json(self) -> dict[str, object]:
        """The camelCase JSON form (the RPC protocol's ``session`` line)."""
        return {
            "type": self.type,
            "reason": self.reason,
            "sessionId": self.session_id,
            "cwd": self.cwd,
            "model": self.model,
            "messageCount": self.message_count,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionNotice:
    """Something worth telling the person: a skill or template that was skipped, a session
    file whose torn last line was repaired, a previous runtime that did not close cleanly."""

    type: Literal["session.notice"] = "session.notice"
    text: str

    def to_json(self) -> dict[str, object]:
        """The JSON form."""
        return {"type": self.type, "text": self.text}


CodingEvent: TypeAlias = "AgentEvent | SessionOpened | SessionNotice"
"""What ``CodingSession.subscribe`` listeners receive."""
Listener: TypeAlias = Callable[["AgentEvent | SessionOpened | SessionNotice"], None]


class CodingSession(Generic[M]):
    """One coding session (see the module docstring). ``approver`` answers the tool calls
    the policy asks about (without one they are declined)."""

    def __init__(self, config: CodingSessionConfig[M], *, approver: Approver | None = None):
        self.config: Final = config
        self._choice: M = config.model
        self._cwd = Path(os.path.abspath(config.cwd))
        self._approver = approver
        self.approvals: Final = Approvals(
            config.approval.tools, auto=config.approval.auto, mcp_servers=config.mcp_servers
        )
        self._listeners: list[Listener] = []
        self._manager: RuntimeManager | None = None
        self._meter: UsageMeter | None = None
        self._resources: ChatResources | None = None
        self._move_to: str | None = None
        self._opening: Literal["created", "resumed", "moved", "rebuilt"] = "created"
        self._closed_tree: SessionTree | None = None
        self._system_prompt: str | None = None
        self._usage: ModelUsage = ZERO_USAGE
        self._cost: float | None = None
        self._cost_unknown = False
        self.prompt_cache_key: Final = f"tether-{uuid.uuid4().hex}"
        """A stable key of this session for the provider's prompt cache: random, so it says
        nothing about the user, the machine or a secret."""
        self._pace: Callable[[], Coroutine[Any, Any, None]] | None = None
        self._scratch: str | None = None  # the temporary directory of an ephemeral session
        self._noted: object = None  # the store whose repair was said
        self._mcp_noted: set[tuple[str | None, str]] = set()  # MCP start failures said
        self._thinking: ThinkingLevel | None = None  # set_thinking's, for every model
        self._said: set[str] = set()  # the thinking notices already given

    # -- what it is -------------------------------------------------------------------------

    @property
    def model(self) -> M:
        """The current model choice."""
        return self._choice

    @property
    def cwd(self) -> Path:
        """The current workspace."""
        return self._cwd

    @property
    def runtime(self) -> Runtime | None:
        """The current runtime (``None`` before the first one is built, and after ``close``)."""
        return None if self._manager is None else self._manager.current

    @property
    def agent(self) -> Agent | None:
        """The current Agent (``None`` before the first runtime)."""
        runtime = self.runtime
        return None if runtime is None else runtime.agent

    @property
    def tree(self) -> SessionTree | None:
        """The session tree (``None`` before the first runtime; after ``close``, the last)."""
        return self._closed_tree if self._manager is None else self._manager.current.session

    @property
    def session_id(self) -> str | None:
        """The session file's ID, once there is one."""
        tree = self.tree
        return None if tree is None else tree.store.header.id

    @property
    def session_path(self) -> Path | None:
        """The session file, once there is one."""
        tree = self.tree
        return None if tree is None else Path(tree.store.path)

    @property
    def system_prompt(self) -> str | None:
        """The current Agent's system prompt (``None`` before the first runtime)."""
        return self._system_prompt

    @property
    def usage(self) -> ModelUsage:
        """The token usage of every model response in the current session file since it was
        opened here (runs and compactions), every model's (``new_session`` and ``resume``
        start again at zero)."""
        return self._usage

    @property
    def cost(self) -> float | None:
        """What the responses counted in ``usage`` cost, in US dollars, each at its model's
        prices (``ModelSource.cost``); ``None`` before the first response and once the cost
        of one is unknown (never a total that leaves some out)."""
        return None if self._cost_unknown else self._cost

    @property
    def meter(self) -> UsageMeter | None:
        """The current model, metered (its ``last_error``, its turns), once built."""
        return self._meter

    @property
    def is_running(self) -> bool:
        """Whether a prompt is running."""
        agent = self.agent
        return agent is not None and agent.is_running

    @property
    def sessions_dir(self) -> Path | None:
        """Where new sessions are created and others found (``None`` for one fixed file)."""
        place = self.config.sessions
        if place.directory is not None:
            return place.directory
        if place.file is not None:
            return None
        if self._scratch is None:
            self._scratch = tempfile.mkdtemp(prefix="tether-session-")
        return Path(self._scratch)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every event from now on; returns the unsubscriber."""
        self._listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return remove

    def set_pace(self, pace: Callable[[], Coroutine[Any, Any, None]] | None) -> None:
        """Hold each model turn until ``pace()`` returns (``tether run``: until the display
        caught up); ``None``: never wait."""
        self._pace = pace
        if self._meter is not None:
            self._meter.pace = pace

    def _emit(self, event: AgentEvent | SessionOpened | SessionNotice) -> None:
        for listener in tuple(self._listeners):
            listener(event)

    def _notice(self, text: str) -> None:
        self._emit(SessionNotice(text=text))

    # -- building -----------------------------------------------------------------------------

    def _session_options(
        self, mode: Literal["create", "resume"], path: Path, session_id: str | None
    ) -> RuntimeSessionOptions:
        from tether.agent.runtime import RuntimeSessionOptions
        from tether.agent.session import SessionLimits, SessionStoreOptions

        return RuntimeSessionOptions(
            path=path.name,
            mode=mode,
            directory=path.parent,
            options=SessionStoreOptions(session_id=session_id, limits=SessionLimits.for_coding()),
        )

    def _new_session_options(self) -> RuntimeSessionOptions:
        place = self.config.sessions
        if place.file is not None:
            mode = "resume" if os.path.lexists(place.file) else "create"
            return self._session_options(mode, place.file, None)
        directory = self.sessions_dir
        assert directory is not None
        os.makedirs(directory, mode=0o700, exist_ok=True)
        session_id = str(uuid.uuid4())
        return self._session_options("create", directory / f"{session_id}.jsonl", session_id)

    def _same_session_options(self) -> RuntimeSessionOptions:
        tree = self.tree
        assert tree is not None
        return self._session_options("resume", Path(tree.store.path), None)

    def _model(self) -> UsageMeter:
        from tether.coding.meter import UsageMeter

        if self._meter is None:
            build = self.config.build_model
            choice = self._choice
            if build is not None:
                model = build(choice)
            else:
                model = choice.build(cache_key=self.prompt_cache_key)
            self._meter = UsageMeter(self._at_level(model), self._pace, self._count(choice))
        return self._meter

    def _count(self, choice: M) -> Callable[[ModelUsage], None]:
        """What adds one response of ``choice``'s model to the totals."""

        def count(usage: ModelUsage) -> None:
            self._usage = self._usage + usage
            cost = choice.cost(usage)
            if cost is None:
                self._cost_unknown = True
            else:
                self._cost = (self._cost or 0.0) + cost

        return count

    def _reset_totals(self) -> None:
        self._usage, self._cost, self._cost_unknown = ZERO_USAGE, None, False

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

    def _at_level(self, model: Model) -> Model:
        """``model`` at the session's level (when one is set), what it clamped said once."""
        level = self._thinking
        if level is not None:
            if isinstance(model, ThinkingModel):
                model = model.with_thinking(level)
            else:
                self._say_once(f"thinking: {self._choice.spec} takes no thinking level")
        if isinstance(model, ThinkingModel):
            choice = model.thinking_choice
            if choice is not None and choice.notice is not None:
                self._say_once(choice.notice)
        return model

    def _say_once(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            self._notice(text)

    def _compaction(self) -> Any:
        from tether.agent.auto_compaction import AutoCompaction

        window = self._choice.context_window or DEFAULT_CONTEXT_WINDOW
        return AutoCompaction(context_window=max(window, 2))

    async def _open(self, session: RuntimeSessionOptions) -> None:
        from tether.agent.runtime import (
            RuntimeAgentOptions,
            RuntimeFactories,
            RuntimeManager,
            RuntimeOptions,
        )
        from tether.loop.limits import RunLimits

        config = self.config
        manager = await RuntimeManager.create(
            RuntimeOptions(
                cwd=self._cwd,
                session=session,
                model=self._model(),
                max_steps=config.max_steps,
                extensions=config.extensions,
                extension_timeout=config.extension_timeout,
                agent_options=RuntimeAgentOptions(
                    limits=config.limits or RunLimits.for_real_models(),
                    before_tool_call=self.before_tool_call,
                ),
                factories=RuntimeFactories(
                    create_tools=self._create_tools, create_agent=self._create_agent
                ),
                mcp_servers=config.mcp_servers,
            )
        )
        self._manager = manager
        self._adopt(session)

    async def _create_tools(self, spec: RuntimeToolsInput, fallback: Callable[..., Any]) -> Any:
        """``coding``: the coding tools of the workspace (their processes never see the
        choice's ``hidden_env`` unless passed through), the base tools, then ``load_skill``
        when the workspace has skills; ``none``: the base tools only."""
        from tether.tools import ToolRegistry
        from tether.tools.coding import coding_tools

        base = spec.base_tools
        if self.config.tools == "none":
            return ToolRegistry([base.get(name) for name in base.names])
        choice = self._choice
        registry = coding_tools(
            spec.workspace.root,
            hide_env=choice.hidden_env,
            pass_env=choice.pass_env,
            sandbox=self.config.sandbox,
        )
        registry.register_many([base.get(name) for name in base.names])
        if self.config.skills:
            resources = await self._load_resources(Path(spec.workspace.root))
            registry.register_many(resources.tools())
        return registry

    async def _create_agent(self, spec: RuntimeAgentInput, fallback: Callable[..., Any]) -> Any:
        """The default agent with this session's model, system prompt and compaction, on the
        entry the session stands on (``move_to``, or where the previous runtime stood)."""
        root = Path(spec.workspace.root)
        system = await self._build_system_prompt(root, spec.tools.names)
        move_to, self._move_to = self._move_to, None
        if move_to is not None and move_to != spec.session.active_leaf_id:
            await spec.session.move_to(move_to)
        options = dataclasses.replace(spec.options, system=system, compaction=self._compaction())
        # What a cancelled turn leaves: with "keep" (the config's default) the model learns
        # what was cut off and which calls may have run (Agent(interrupted_turns=...)).
        options = dataclasses.replace(
            options, interrupted_turns=self.config.interrupted_turns, tracing=self.config.tracing
        )
        agent: Agent = await fallback(
            dataclasses.replace(spec, model=self._model(), options=options)
        )
        self._system_prompt = system
        agent.subscribe(self._on_agent_event)
        return agent

    async def _build_system_prompt(self, root: Path, tool_names: tuple[str, ...]) -> str:
        from tether.coding.context_files import system_prompt

        config = self.config
        system = system_prompt(
            root,
            tool_names=tool_names,
            introduction=config.introduction,
            config_dir=config.config_dir,
            today=config.today,
            context_files=config.context_files,
        )
        if config.skills and config.tools == "coding":
            section = (await self._load_resources(root)).system_section()
            if section:
                system += "\n" + section
        return system

    def _on_agent_event(self, event: AgentEvent, _signal: object) -> None:
        self._emit(event)

    def _adopt(self, session: RuntimeSessionOptions) -> None:
        """After a runtime was published: say so, and say once if loading the file repaired
        a torn last line (a crash in the middle of a write)."""
        runtime = self.runtime
        assert runtime is not None
        store = runtime.store
        reason = "created" if session.mode == "create" else self._opening
        self._emit(
            SessionOpened(
                reason=reason,
                session_id=store.header.id,
                path=str(store.path),
                cwd=str(self._cwd),
                model=self._choice.spec,
                message_count=len(runtime.agent.messages),
            )
        )
        if store.recovered is not None and store is not self._noted:
            self._noted = store  # a same-file replacement shares the store: once is enough
            self._notice(f"recovered: {store.recovered}")
        for error in runtime.mcp_errors:  # each server's failure once (runtimes are rebuilt)
            if (error.server, error.code) not in self._mcp_noted:
                self._mcp_noted.add((error.server, error.code))
                self._notice(f"[{error.code}] {error.message}; {error.hint}")

    async def _rebuild(
        self,
        session: RuntimeSessionOptions,
        reason: Literal["created", "resumed", "moved", "rebuilt"],
        cwd: Path | None = None,
    ) -> None:
        """Build the runtime for ``session`` (and ``cwd``) and make it current. A failure,
        or a cancellation before the swap, leaves the current runtime as it was."""
        from tether.agent.runtime import RuntimeWorkspaceOptions, TetherRuntimeError

        target = self._cwd if cwd is None else cwd
        self._opening = reason
        manager = self._manager
        try:
            if manager is None:
                previous, self._cwd = self._cwd, target
                try:
                    await self._open(session)
                except BaseException:
                    self._cwd = previous
                    raise
                return
            before = manager.current
            try:
                await manager.replace(RuntimeWorkspaceOptions(cwd=target, session=session))
            except (TetherRuntimeError, asyncio.CancelledError) as error:
                if manager.state != "open" or manager.current is before:
                    raise
                # The new runtime is current; only disposing the old one failed (or was
                # cancelled: it goes on closing, bounded by extension_timeout).
                if isinstance(error, TetherRuntimeError):
                    self._notice(
                        f"(the previous runtime did not close cleanly) [{error.code}] {error}"
                    )
                else:
                    task = asyncio.current_task()
                    if task is not None:
                        task.uncancel()
            self._cwd = target
            self._adopt(session)
        finally:
            self._move_to = None  # consumed by the agent factory, or void

    async def _rebuild_here(self, cwd: Path | None = None) -> None:
        """A runtime on the same session (the same entry), e.g. for a new model."""
        tree = self.tree
        old = self.agent
        assert tree is not None
        assert old is not None
        steering = [message.content for message in old.queued_steering]
        follow_ups = [message.content for message in old.queued_follow_ups]
        self._move_to = tree.active_leaf_id
        await self._rebuild(self._same_session_options(), "rebuilt", cwd)
        new = self.agent
        if new is not None and new is not old:  # what was queued goes on with the new Agent
            for text in steering:
                new.steer(text)
            for text in follow_ups:
                new.follow_up(text)

    async def start(self) -> Agent:
        """The Agent, the first runtime built on first use (on a new session: in
        ``SessionPlace.directory``, the fixed file, or an ephemeral one)."""
        if self._manager is None:
            await self._rebuild(self._new_session_options(), "created")
        agent = self.agent
        assert agent is not None
        return agent

    async def _load_resources(self, root: Path) -> ChatResources:
        """The skills and templates of ``root`` (read once per workspace); problems are
        said when they are read."""
        from tether.coding.resources import load_chat_resources

        cached = self._resources
        if cached is None or cached.root != root:
            cached = await load_chat_resources(root, self.config.config_dir)
            self._resources = cached
            for problem in cached.problems:
                self._notice(f"(ignored) {problem}")
        return cached

    async def resources(self) -> ChatResources:
        """The skills and prompt templates of the current workspace."""
        runtime = self.runtime
        return await self._load_resources(
            self._cwd if runtime is None else Path(runtime.workspace.root)
        )

    # -- the conversation ---------------------------------------------------------------------

    async def prompt(self, text: str) -> EventStream[AgentEvent, RunResult]:
        """Start a run with the user message ``text`` (the first runtime built first);
        its events go to the stream returned and to every listener."""
        agent = await self.start()
        if self._meter is not None:
            self._meter.last_error = None
        return agent.prompt(text)

    async def steer(self, text: str) -> UserMessage:
        """Queue ``text`` for the next turn boundary of the running prompt (or the next)."""
        return (await self.start()).steer(text)

    async def follow_up(self, text: str) -> UserMessage:
        """Queue ``text`` for when the model would finish."""
        return (await self.start()).follow_up(text)

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
