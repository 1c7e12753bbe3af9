"""The runtimes of a ``tether.coding.session.CodingSession``: what the session holds (the
model choice, the workspace, the metered model, the usage totals, the thinking level, its
listeners) and how it builds a runtime on ``RuntimeManager`` (the coding tools, the system
prompt, the Agent on the entry the session stands on) and replaces it (``_rebuild``: the
current one stays until the new one is built; a failure leaves it as it was).

``SessionRuntimes`` is ``CodingSession``'s base; the module docstring of
``tether.coding.session`` says what the session promises.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import tempfile
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeVar

from tether.coding.approval import Approvals, Approver
from tether.coding.config import DEFAULT_CONTEXT_WINDOW, CodingSessionConfig, ModelSource
from tether.coding.session_events import (
    Listener,
    SessionNotice,
    SessionOpened,
)
from tether.protocol import ZERO_USAGE, ModelUsage
from tether.providers.thinking import ThinkingLevel, ThinkingModel

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.agent.runtime import (
        Runtime,
        RuntimeAgentInput,
        RuntimeManager,
        RuntimeSessionOptions,
        RuntimeToolsInput,
    )
    from tether.agent.session import SessionTree
    from tether.coding.meter import UsageMeter
    from tether.coding.resources import ChatResources
    from tether.loop.hooks import BlockToolCall, ToolCallContext
    from tether.models.base import Model
    from tether.protocol import AgentEvent

__all__ = ["M", "SessionRuntimes"]

M = TypeVar("M", bound=ModelSource)
"""The session's model choice."""


class SessionRuntimes(Generic[M]):
    """What a coding session holds and how it builds and replaces its runtime (the base of
    ``tether.coding.session.CodingSession``)."""

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
        self._system_tools: tuple[str, ...] = ()  # the tool names the system prompt names
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
        from tether.models.limits import RunLimits

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
        self._system_tools = spec.tools.names
        agent.subscribe(self._on_agent_event)
        return agent

    async def _follow_tools(self, agent: Agent) -> None:
        """Before a prompt: when the Agent's tools are no longer those its system prompt
        names (an MCP server's tool list changed), give it the system prompt a runtime
        built now would have, naming them. The tools change from the next turn on
        (``Agent.set_tools``); the prompt that names them, from the next prompt on."""
        names = agent.tool_names
        if names == self._system_tools or agent.is_running:
            return
        runtime = self.runtime
        if runtime is None or runtime.agent is not agent:
            return
        system = await self._build_system_prompt(Path(runtime.workspace.root), names)
        if agent.is_running or runtime is not self.runtime:
            return  # another prompt started meanwhile, or the runtime was replaced
        agent.set_system(system)
        self._system_prompt = system
        self._system_tools = names

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
        missing = store.unavailable_images
        if (store.recovered is not None or missing) and store is not self._noted:
            self._noted = store  # a same-file replacement shares the store: once is enough
            if store.recovered is not None:
                self._notice(f"recovered: {store.recovered}")
            if missing:
                from tether.agent.session.blobs import unavailable_notice

                self._notice(unavailable_notice(missing))
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
        steering = [(message.content, message.images) for message in old.queued_steering]
        follow_ups = [(message.content, message.images) for message in old.queued_follow_ups]
        self._move_to = tree.active_leaf_id
        await self._rebuild(self._same_session_options(), "rebuilt", cwd)
        new = self.agent
        if new is not None and new is not old:  # what was queued goes on with the new Agent
            for text, images in steering:
                new.steer(text, images=images)
            for text, images in follow_ups:
                new.follow_up(text, images=images)

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

    if TYPE_CHECKING:

        async def before_tool_call(self, context: ToolCallContext) -> BlockToolCall | None:
            """The Agent's tool-call hook (``CodingSession.before_tool_call``)."""
            ...
