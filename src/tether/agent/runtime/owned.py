"""``Runtime``: one built composition (workspace, tools, resources, session, extensions, agent)
and what it keeps true while it lives.

* **The event tail.** The runtime subscribes to its Agent. Each event becomes one operation
  on a strictly sequential tail: an identity check, the coherence verdict (``run.finished``
  only), the event emitted to the ``ExtensionHost`` inside the runtime's operation scope
  (hook failures are ``RUNTIME_EVENT_FAILED`` with an aggregate of
  ``"<extensionId>[<hookIndex>]: <message>"`` errors), another identity check. The tail does
  not write the session: the Agent's ``SessionRecorder`` already wrote every message before
  the run went on (see ``tether.agent.runtime``).
* **Coherence**, exact because it is checked only where the Agent is idle or settling: the
  session's active context (its last compaction summary as the summary message, then the
  messages), followed by what the Agent's recorder holds back (a same-file replacement's
  closing results until they are written, see ``build``), must equal the Agent's
  transcript. At ``run.finished`` the verdict is taken
  synchronously inside the subscriber call (the Agent publishes it after its last recorder
  write and before a new run can start), against the result's messages; ``flush`` and
  ``dispose`` check when the Agent is idle. A mismatch is ``RUNTIME_SESSION_DIVERGED``.
* **Storage failures.** A run that ends ``AGENT_RECORDING_FAILED`` (the session could not be
  written: a full disk, a file changed behind the store) is ``RUNTIME_EVENT_FAILED`` at its
  ``run.finished``, whose ``__cause__`` is the recorder's error (the store's, or the
  operating system's), not a divergence. That run's result reported it, so when it is what
  poisoned the runtime, ``dispose()`` does not report it again: neither the poison nor the
  store's flush failing for the same reason (the file still changed, the store unusable) is
  a disposal failure; ``error`` and ``flush()`` still give it.
* **Poisoning.** The first event-operation failure (or a divergence) is stored: the state
  becomes ``failed`` and every later event operation and ``flush()`` raises that same error
  object. Non-runtime errors are normalized to ``RUNTIME_EVENT_FAILED``.
* **flush()** (queued after pending events): identity, coherence, ``SessionStore.flush``
  (every append is durable when it returns; this checks the file is still the store's),
  coherence, identity. **dispose()** (idempotent, same awaitable) first detaches persistence:
  the runtime's session tree and its Agent's ``SessionRecorder`` are closed (at once when
  the Agent is idle, else once its run settled), so an Agent that outlives its runtime
  cannot write the session any more (its runs fail ``AGENT_RECORDING_FAILED``,
  ``SESSION_CLOSED``). Then: cancel a running Agent with ``"Runtime disposed"`` and wait
  for it to settle and its ``run.finished`` operation, unsubscribe, check coherence, flush
  the store, dispose the extensions (in the operation scope), close the store (which lets
  the file go) unless a same-file replacement shares it, release the claim; state
  ``disposed`` even on failure (``RUNTIME_DISPOSAL_FAILED`` with an aggregate of every
  failure: the poison first, but for a recording failure, see above).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Final, Literal, TypeAlias, TypeVar

from tether._async.race import observe
from tether._async.release import Release
from tether.abort import AbortSignal
from tether.agent.agent import Agent
from tether.agent.auto_compaction import summary_message
from tether.agent.extensions import ExtensionHookFailure, ExtensionHost
from tether.agent.persistence import SessionRecorder, session_summary
from tether.agent.resources import ResourceLoader
from tether.agent.runtime.errors import RuntimeAggregateError, TetherRuntimeError, fail
from tether.agent.runtime.scope import assert_not_reentrant, operation_scope
from tether.agent.runtime.workspace_root import RuntimeWorkspace, SessionClaim, WorkspaceState
from tether.agent.session import SessionStore, SessionTree
from tether.mcp import McpError, McpServer, McpServers
from tether.protocol import AgentEvent, Message
from tether.tools import ToolRegistry

__all__ = [
    "RUNTIME_DISPOSE_REASON",
    "Disposal",
    "Runtime",
    "RuntimeCore",
    "RuntimeState",
    "core_of",
    "file_mark",
    "session_transcript",
]

RuntimeState: TypeAlias = Literal["open", "failed", "disposing", "disposed"]
"""``failed``: poisoned by an event failure or a divergence (``flush`` raises the stored error;
``dispose`` still works)."""

RUNTIME_DISPOSE_REASON: Final = "Runtime disposed"
"""The cancellation reason of a run still going when its runtime is disposed."""

T = TypeVar("T")

FileMark: TypeAlias = "tuple[int, int, int, int] | None"


def file_mark(path: str) -> FileMark:
    """What changes whenever a session file is written or replaced: (device, inode, size,
    mtime)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def session_transcript(tree: SessionTree) -> tuple[Message, ...]:
    """The session's active context as an Agent transcript: the last compaction's summary as
    its summary message (what ``Agent`` puts first), then the messages."""
    context = tree.active_context()
    summary = session_summary(context)
    return context.messages if summary is None else (summary_message(summary), *context.messages)


def _diverged(detail: str) -> TetherRuntimeError:
    return TetherRuntimeError(
        "RUNTIME_SESSION_DIVERGED", f"Runtime session diverged from the agent transcript: {detail}"
    )


def check_coherence(
    tree: SessionTree, messages: tuple[Message, ...], held: tuple[Message, ...] = ()
) -> TetherRuntimeError | None:
    """``RUNTIME_SESSION_DIVERGED`` unless ``messages`` is the session's active context
    followed by ``held`` (what the Agent's recorder holds, not written yet)."""
    persisted = (*session_transcript(tree), *held)
    if persisted == messages:
        return None
    if len(persisted) < len(messages) and persisted == messages[: len(persisted)]:
        return _diverged(f"{len(messages) - len(persisted)} message(s) were not recorded")
    return _diverged("the session was changed outside the runtime")


class RuntimeCore:
    """A runtime's mutable state (the runtime object itself is frozen)."""

    __slots__ = (
        "claim",
        "disposal",
        "holder",
        "loaded",
        "loaded_entries",
        "mcp",
        "mcp_changed",
        "mcp_names",
        "poison",
        "recording_failure",
        "state",
        "tail",
        "tools",
        "unsubscribe",
        "workspace",
    )

    def __init__(
        self,
        *,
        workspace: WorkspaceState,
        claim: SessionClaim,
        loaded: FileMark,
        loaded_entries: tuple[str, ...],
        holder: SessionRecorder | None,
        mcp: McpServers | None = None,
        mcp_names: frozenset[str] = frozenset(),
    ) -> None:
        self.workspace = workspace
        self.mcp = mcp  # the runtime's MCP servers (stopped at disposal)
        self.mcp_names = mcp_names  # the registry's tools that are theirs
        self.mcp_changed: asyncio.Event | None = None if mcp is None else asyncio.Event()
        self.tools: ToolRegistry = ToolRegistry()  # the current tools (set when it opens)
        self.claim = claim
        self.loaded = loaded  # the session file as this runtime's store loaded or made it
        self.loaded_entries = loaded_entries  # the store's entry IDs then
        self.holder = holder  # the Agent's recorder, when it holds messages back
        self.state: RuntimeState = "open"
        self.poison: TetherRuntimeError | None = None
        # The first run's recording failure (a run that ended AGENT_RECORDING_FAILED), as the
        # event failure it became: that run's result already reported it.
        self.recording_failure: TetherRuntimeError | None = None
        self.tail: asyncio.Future[Any] | None = None
        self.disposal: Disposal | None = None
        self.unsubscribe: Callable[[], None] = _nothing

    def held(self) -> tuple[Message, ...]:
        """What the Agent's recorder holds back (written at publication or the next write)."""
        return () if self.holder is None else self.holder.pending

    async def record_held(self) -> None:
        """Write what the Agent's recorder holds (a same-file replacement, just published)."""
        if self.holder is not None:
            await self.holder.record_pending()

    def enqueue(self, operation: Callable[[], Coroutine[Any, Any, T]]) -> asyncio.Task[T]:
        """Run ``operation`` after every operation queued before it."""
        previous = self.tail

        async def run() -> T:
            if previous is not None and not previous.done():
                await asyncio.wait((previous,))
            return await operation()

        task = asyncio.ensure_future(run())
        observe(task)
        self.tail = task
        return task

    async def drain(self) -> None:
        """Wait until the tail is empty (operations queued meanwhile included)."""
        while True:
            tail = self.tail
            if tail is None or tail.done():
                return
            await asyncio.wait((tail,))


def _nothing() -> None:  # pragma: no cover - replaced when the runtime opens
    pass


class Disposal:
    """The one awaitable ``dispose()`` returns: the disposal task, shielded from the
    cancellation of whoever awaits it."""

    __slots__ = ("task",)

    def __init__(self, task: asyncio.Task[None]) -> None:
        self.task = task

    def __await__(self) -> Generator[Any, None, None]:
        return asyncio.shield(self.task).__await__()

    def done(self) -> bool:
        """Whether the disposal finished."""
        return self.task.done()


class Runtime:
    """A built composition; see the module docstring. Build one with ``create_runtime`` (or a
    ``RuntimeManager``); the constructor is private. Attributes cannot be set."""

    __slots__ = ("_agent", "_core", "_extensions", "_resources", "_session", "_tools")

    _agent: Agent
    _core: RuntimeCore
    _extensions: ExtensionHost
    _resources: ResourceLoader
    _session: SessionTree
    _tools: ToolRegistry

    def __init__(self) -> None:
        raise TypeError("use 'await create_runtime(options)' to build a runtime")

    @classmethod
    def _open(
        cls,
        *,
        core: RuntimeCore,
        agent: Agent,
        session: SessionTree,
        extensions: ExtensionHost,
        resources: ResourceLoader,
    ) -> Runtime:
        runtime = object.__new__(cls)
        for name, value in (
            ("_core", core),
            ("_agent", agent),
            ("_session", session),
            ("_extensions", extensions),
            ("_resources", resources),
            ("_tools", extensions.tools),
        ):
            object.__setattr__(runtime, name, value)
        core.tools = extensions.tools
        core.unsubscribe = agent.subscribe(runtime._on_event)
        return runtime

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Runtime is frozen (cannot set {name!r})")

    # -- what it is ------------------------------------------------------------------------

    @property
    def workspace(self) -> RuntimeWorkspace:
        """The canonical root, the absolute session path and the session mode."""
        return self._core.workspace.public

    @property
    def agent(self) -> Agent:
        """The Agent (recording into ``session``)."""
        return self._agent

    @property
    def session(self) -> SessionTree:
        """The session tree over the runtime's store."""
        return self._session

    @property
    def store(self) -> SessionStore:
        """The session store (``session.store``)."""
        return self._session.store

    @property
    def tools(self) -> ToolRegistry:
        """The tools after extension activation (the host's snapshot), with the MCP servers'
        tools as they were last listed."""
        return self._core.tools

    @property
    def mcp_servers(self) -> tuple[McpServer, ...]:
        """The runtime's MCP servers (``RuntimeOptions.mcp_servers``), with their state."""
        mcp = self._core.mcp
        return () if mcp is None else mcp.servers

    @property
    def mcp_errors(self) -> tuple[McpError, ...]:
        """Why MCP servers failed to start (each names its server); the others work."""
        mcp = self._core.mcp
        return () if mcp is None else mcp.errors

    @property
    def mcp_changed(self) -> asyncio.Event | None:
        """Set each time an MCP server's tool list changed and the Agent got the new tools
        (clear it to wait for the next change); ``None`` without MCP servers."""
        return self._core.mcp_changed

    def _mcp_tools_changed(self, _server: McpServer) -> None:
        """A server's tools changed: the Agent's registry gets the servers' current tools
        (from its next turn), after the runtime's other tools."""
        core = self._core
        mcp = core.mcp
        if mcp is None or core.state != "open":
            return
        current = core.tools
        registry = ToolRegistry(
            [current.get(name) for name in current.names if name not in core.mcp_names]
        )
        added: list[str] = []
        for definition in mcp.definitions():
            if definition.name not in registry:
                registry.register(definition)
                added.append(definition.name)
        core.mcp_names = frozenset(added)
        core.tools = registry
        self._agent.set_tools(registry)
        if core.mcp_changed is not None:
            core.mcp_changed.set()

    @property
    def extensions(self) -> ExtensionHost:
        """The extension host."""
        return self._extensions

    @property
    def resources(self) -> ResourceLoader:
        """The resource loader (the workspace root first)."""
        return self._resources

    @property
    def state(self) -> RuntimeState:
        """``open``, ``failed`` (poisoned), ``disposing`` or ``disposed``."""
        return self._core.state

    @property
    def error(self) -> TetherRuntimeError | None:
        """The error that poisoned the runtime, if any."""
        return self._core.poison

    # -- the event tail ----------------------------------------------------------------------

    def _on_event(self, event: AgentEvent, signal: AbortSignal) -> asyncio.Task[None] | None:
        verdict: TetherRuntimeError | None = None
        if event.type == "run.finished":
            result = event.payload.result
            if result.status == "failed" and result.error.code == "AGENT_RECORDING_FAILED":
                verdict = _storage_failed(self._agent, result.error.message)
                if self._core.recording_failure is None:
                    self._core.recording_failure = verdict
            else:
                # Exact here: the Agent publishes run.finished after its last recorder write
                # of the run, and no other run can start before this call returns.
                verdict = check_coherence(self._session, result.messages, self._core.held())
        return self._core.enqueue(lambda: self._event_operation(event, verdict))

    async def _event_operation(self, event: AgentEvent, verdict: TetherRuntimeError | None) -> None:
        core = self._core
        if core.poison is not None:
            return
        try:
            core.workspace.check()
            if verdict is not None:
                raise verdict
            with operation_scope(self):
                failures = await self._extensions.emit(event)
            if failures:
                raise _event_failed(failures)
            core.workspace.check()
        except Exception as error:
            self._poison(error)

    def _poison(self, error: Exception) -> TetherRuntimeError:
        core = self._core
        if core.poison is not None:
            return core.poison
        if not isinstance(error, TetherRuntimeError):
            error = fail("RUNTIME_EVENT_FAILED", "Agent event processing failed", error)
        core.poison = error
        if core.state == "open":
            core.state = "failed"
        return error

    def _coherence_now(self) -> TetherRuntimeError | None:
        """The coherence verdict when the Agent is idle (``None`` while it runs: a running
        Agent's transcript is ahead of its recorder by design)."""
        if self._agent.is_running:
            return None
        return check_coherence(self._session, self._agent.messages, self._core.held())

    # -- flush ------------------------------------------------------------------------------

    async def flush(self) -> None:
        """Make sure, after every pending event operation, that the session holds the
        transcript and is durable (``SessionStore.flush``).

        ``RUNTIME_REENTRANT_OPERATION`` from inside the runtime's own operations (an extension
        hook or disposer); ``RUNTIME_DISPOSED`` once disposing; the stored error once poisoned;
        ``RUNTIME_ROOT_CHANGED``; ``RUNTIME_SESSION_DIVERGED`` (which poisons).
        """
        assert_not_reentrant(self, "Runtime.flush")
        core = self._core
        if core.state == "disposing" or core.state == "disposed":
            raise TetherRuntimeError("RUNTIME_DISPOSED", "Runtime is disposed")
        if core.poison is not None:
            raise core.poison
        await asyncio.shield(core.enqueue(self._flush_operation))

    async def _flush_operation(self) -> None:
        core = self._core
        if core.poison is not None:
            raise core.poison
        core.workspace.check()
        self._assert_coherent()
        await self._session.store.flush()
        self._assert_coherent()
        core.workspace.check()

    def _assert_coherent(self) -> None:
        verdict = self._coherence_now()
        if verdict is not None:
            raise self._poison(verdict)

    # -- dispose ----------------------------------------------------------------------------

    def dispose(self) -> Disposal:
        """Dispose the runtime (see the module docstring); idempotent: every call returns the
        same awaitable. ``RUNTIME_REENTRANT_OPERATION`` (raised at once, state unchanged)
        from inside the runtime's own operations."""
        assert_not_reentrant(self, "Runtime.dispose")
        core = self._core
        if core.disposal is None:
            core.state = "disposing"
            if not self._agent.is_running:
                self._detach()  # now: no run may record anything once disposal began
            core.disposal = Disposal(asyncio.ensure_future(self._dispose()))
            observe(core.disposal.task)
        return core.disposal

    def _detach(self) -> None:
        """Close the session tree and the Agent's session recorder (idempotent)."""
        self._session.close()
        recorder = self._agent.recorder
        if isinstance(recorder, SessionRecorder):
            recorder.close()

    async def _dispose(self) -> None:
        core = self._core
        agent = self._agent
        release = Release()
        failures = release.failures
        try:
            while agent.is_running or not _settled(core.tail):
                if agent.is_running:
                    agent.cancel(RUNTIME_DISPOSE_REASON)
                    await agent.wait_until_idle()
                await core.drain()
            self._detach()
            # A recording failure was its run's outcome (AGENT_RECORDING_FAILED): not again
            # here, neither as the poison nor as what the store's flush raises because of it.
            reported = core.poison is not None and core.poison is core.recording_failure
            if core.poison is not None and not reported:
                failures.append(core.poison)
            core.unsubscribe()
            verdict = None if core.poison is not None else self._coherence_now()
            if verdict is not None:
                failures.append(verdict)
            flushed = Release()
            await flushed.attempt(lambda: self._session.store.flush())
            if not reported:
                failures.extend(flushed.failures)
            with operation_scope(self):
                await release.attempt(lambda: self._extensions.dispose())
        finally:
            self._detach()
            if core.mcp is not None:
                await core.mcp.stop()  # never raises: each server's process group is killed
            if not core.claim.shared:  # a same-file replacement keeps using the store
                await release.attempt(lambda: self._session.store.close())
            core.claim.release()
            core.state = "disposed"
        if failures:
            error = TetherRuntimeError("RUNTIME_DISPOSAL_FAILED", "Runtime disposal failed")
            error.__cause__ = RuntimeAggregateError(
                "RUNTIME_DISPOSAL_FAILED", "Runtime disposal failed", failures
            )
            raise error

    def __repr__(self) -> str:
        return f"<Runtime {self._core.state} {self.workspace.session_path!r}>"


def _settled(tail: asyncio.Future[Any] | None) -> bool:
    return tail is None or tail.done()


def _storage_failed(agent: Agent, message: str) -> TetherRuntimeError:
    """``RUNTIME_EVENT_FAILED`` for a run whose transcript could not be recorded, caused by
    the recorder's error when it kept one (a ``SessionRecorder`` does)."""
    error = TetherRuntimeError(
        "RUNTIME_EVENT_FAILED", f"The session could not record the agent's run: {message}"
    )
    recorder = agent.recorder
    cause = recorder.last_error if isinstance(recorder, SessionRecorder) else None
    error.__cause__ = cause
    return error


def _event_failed(failures: tuple[ExtensionHookFailure, ...]) -> TetherRuntimeError:
    errors = [
        RuntimeError(f"{failure.extension_id}[{failure.hook_index}]: {failure.message}")
        for failure in failures
    ]
    error = TetherRuntimeError("RUNTIME_EVENT_FAILED", "Extension hooks failed for an agent event")
    error.__cause__ = RuntimeAggregateError(
        "RUNTIME_EVENT_FAILED", "Extension hooks failed", errors
    )
    return error


def core_of(runtime: Runtime) -> RuntimeCore:
    """The mutable state of ``runtime`` (for the builder and the manager)."""
    return runtime._core  # pyright: ignore[reportPrivateUsage] - the package's own seam
