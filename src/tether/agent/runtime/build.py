"""Building a runtime: the default factories and the construction order, with rollback.

1. Session parents (checked in ``resume``, made in ``create``; see ``workspace``).
2. Tools: ``coding_tools(root)`` (tether's seven) followed by the base tools.
3. Resources: ``ResourceLoader.create([workspace root, *resource_roots])``.
4. Session: ``SessionStore.load`` (``resume``) or ``SessionStore.create`` (``create``; a file
   this call made is recorded with its identity and bytes, so rollback can prove it is still
   the file it made before removing it); rollback closes the store (its lock). A file another
   process writes is ``RUNTIME_SESSION_IN_USE`` (the store's ``SESSION_IN_USE`` kept as the cause).
   A same-file replacement takes the current runtime's store instead: the file has one
   writer, and the two runtimes share it until the swap. The product must be a store on the
   runtime's session file; a ``SessionTree`` of the runtime's own is built on it (active
   leaf = last record).
5. Extensions: an ``ExtensionHost`` over the resources and the tools step's product (bounded
   by ``extension_timeout``); every definition discovered, then activated in order (on
   failure the host is disposed; when cancelled it is recorded in the ledger, so the rollback
   disposes it).
6. Agent: ``resume_agent(session, model, tools=host.tools, max_steps, **agent_options)``.
   A runtime built to replace one on the same file (the claim is shared) must not write the
   file before it is published: its default factory passes a ``SessionRecorder`` of its own,
   which *holds* the closing results of unanswered tool calls instead of writing them (the
   manager writes them at publication; see ``manager``).
7. A final identity check; the Agent's transcript must equal the session's active context
   followed by exactly what the selected Agent's recorder holds (``RUNTIME_SESSION_DIVERGED``).
8. The runtime is opened (it subscribes to the Agent) and the ledger committed.

On any failure every still-owned ledger record is rolled back in reverse; a
``TetherRuntimeError`` with a clean rollback is raised unchanged, anything else becomes
``RUNTIME_CONSTRUCTION_FAILED`` (its cause the error, or an aggregate of the error and every
cleanup failure). The session claim is taken before step 1 and released on failure.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Final, cast

from tether._base.exact_types import instance_of
from tether._base.strings import message_of
from tether.agent.agent import Agent
from tether.agent.extensions import ExtensionHost
from tether.agent.persistence import SessionRecorder, resume_agent
from tether.agent.resources import ResourceLoader, ResourceRootDefinition
from tether.agent.runtime.errors import (
    RuntimeAggregateError,
    TetherRuntimeError,
    fail,
)
from tether.agent.runtime.inputs import (
    RuntimeAgentInput,
    RuntimeExtensionsInput,
    RuntimeResourcesInput,
    RuntimeSessionInput,
    RuntimeToolsInput,
)
from tether.agent.runtime.ledger import Ledger, LedgerRecord, invoke_factory, remove_created_file
from tether.agent.runtime.options import (
    RUNTIME_WORKSPACE_ROOT_ID,
    CapturedWorkspaceOptions,
    RuntimeAgentOptions,
    SharedLayer,
)
from tether.agent.runtime.owned import (
    Runtime,
    RuntimeCore,
    check_coherence,
    core_of,
    file_mark,
    session_transcript,
)
from tether.agent.runtime.workspace_root import (
    CreatedParent,
    Identity,
    SessionClaim,
    WorkspaceState,
    capture_workspace,
    claim_session,
    identity_of,
    remove_parents,
)
from tether.agent.session import SessionStore, SessionStoreError, SessionStoreOptions, SessionTree
from tether.mcp import McpServer, McpServers
from tether.tools import ToolRegistry
from tether.tools.coding import coding_tools

__all__ = ["build_runtime"]

_AGENT_OPTIONS: Final = tuple(field.name for field in dataclasses.fields(RuntimeAgentOptions))
"""The ``RuntimeAgentOptions`` fields, each the ``Agent`` keyword argument of its name: the
default agent factory passes them all through (a new option is one field)."""


def _definitions(registry: ToolRegistry) -> list[object]:
    return [registry.get(name) for name in registry.names]


class _Construction:
    """One construction's workspace, shared layer and ledger, with the default factories."""

    __slots__ = (
        "hold",
        "holders",
        "ledger",
        "shared",
        "shared_store",
        "store_options",
        "workspace",
    )

    def __init__(
        self,
        workspace: WorkspaceState,
        shared: SharedLayer,
        store_options: SessionStoreOptions,
        *,
        shared_store: SessionStore | None,
    ) -> None:
        self.workspace = workspace
        self.shared = shared
        self.store_options = store_options
        self.ledger = Ledger()
        # A same-file replacement: the current runtime's store, and nothing written before
        # publication.
        self.shared_store = shared_store
        self.hold = shared_store is not None
        self.holders: list[tuple[Agent, SessionRecorder]] = []

    def holder_of(self, agent: Agent) -> SessionRecorder | None:
        """The holding recorder the default factory gave ``agent`` (if it made it)."""
        for made, recorder in self.holders:
            if made is agent:
                return recorder
        return None

    async def tools(self, spec: RuntimeToolsInput) -> ToolRegistry:
        coding = coding_tools(spec.workspace.root)
        return ToolRegistry([*_definitions(coding), *_definitions(spec.base_tools)])

    async def resources(self, spec: RuntimeResourcesInput) -> ResourceLoader:
        workspace = ResourceRootDefinition(
            id=RUNTIME_WORKSPACE_ROOT_ID, directory=spec.workspace.root
        )
        return await ResourceLoader.create([workspace, *spec.roots])

    async def session(self, spec: RuntimeSessionInput) -> SessionStore:
        path = spec.workspace.session_path
        if spec.workspace.session_mode == "resume":
            if self.shared_store is not None:
                return self.shared_store
            try:
                store = await SessionStore.load(path, spec.options)
            except SessionStoreError as error:
                if error.code != "SESSION_IN_USE":
                    raise
                raise fail("RUNTIME_SESSION_IN_USE", error.message, error) from error
            self.register_store(store)
            return store
        store = await SessionStore.create(path, spec.options)  # exclusive: the file is new
        identity, content = _created(path)
        remove = remove_created_file(path, identity, content)

        async def cleanup() -> None:
            await store.close()
            await remove()

        self.ledger.add(
            "Session file",
            store,
            resource_key=SessionStore.canonical_path_of(store),
            cleanup=cleanup,
        )
        return store

    def register_store(self, store: SessionStore) -> LedgerRecord:
        """Record ``store``: the rollback closes it (unless it is the shared one)."""

        async def close() -> None:
            await store.close()

        shared = store is self.shared_store
        return self.ledger.add(
            "Session",
            store,
            resource_key=SessionStore.canonical_path_of(store),
            cleanup=None if shared else close,
        )

    async def extensions(self, spec: RuntimeExtensionsInput) -> ExtensionHost:
        host = ExtensionHost(
            resources=spec.resources, tools=spec.tools, timeout=self.shared.extension_timeout
        )
        try:
            host.discover(list(spec.definitions))
            for definition in spec.definitions:
                await host.activate(definition.id)
        except BaseException as error:
            if not isinstance(error, Exception):  # cancelled: the rollback disposes it
                self.register_host(host)
                raise
            try:
                await host.dispose()
            except Exception as cleanup:
                raise RuntimeAggregateError(
                    "RUNTIME_CONSTRUCTION_FAILED",
                    "Extension activation and host disposal failed",
                    (error, cleanup),
                ) from None
            raise
        self.register_host(host)
        return host

    def register_host(self, host: ExtensionHost) -> LedgerRecord:
        async def dispose() -> None:
            await host.dispose()

        return self.ledger.add("ExtensionHost", host, cleanup=dispose)

    async def agent(self, spec: RuntimeAgentInput) -> Agent:
        options: dict[str, Any] = {name: getattr(spec.options, name) for name in _AGENT_OPTIONS}
        if spec.max_steps is not None:
            options["max_steps"] = spec.max_steps
        recorder = SessionRecorder(spec.session) if self.hold else None
        agent = await resume_agent(
            spec.session, recorder=recorder, model=spec.model, tools=spec.tools, **options
        )
        if recorder is not None:
            self.holders.append((agent, recorder))
        return agent


def _created(path: str) -> tuple[Identity, bytes]:
    """The identity and bytes of a session file this construction just made."""
    with open(path, "rb") as handle:
        return identity_of(os.fstat(handle.fileno())), handle.read()


def _is_agent(value: object) -> bool:
    return instance_of(value, Agent) and not value.is_running


async def build_runtime(
    options: CapturedWorkspaceOptions,
    shared: SharedLayer,
    *,
    share_with: Runtime | None = None,
) -> Runtime:
    """Build a runtime (see the module docstring). ``share_with``: the manager's current
    runtime, which may keep holding the same session file while this one is built."""
    workspace = capture_workspace(options)
    share_claim: SessionClaim | None = None
    if share_with is not None:
        current = core_of(share_with)
        if current.claim.key == workspace.session_key and not current.claim.released:
            if share_with.agent.is_running:
                raise TetherRuntimeError(
                    "RUNTIME_SESSION_IN_USE",
                    "The current runtime's agent is running on this session file",
                )
            share_claim = current.claim
    claim = claim_session(workspace.session_key, share_claim)
    build = _Construction(
        workspace,
        shared,
        options.session.options,
        shared_store=None if share_with is None or not claim.shared else share_with.store,
    )
    try:
        return await _build(build, claim)
    except BaseException as error:
        failures = await build.ledger.rollback()
        claim.release()
        if not isinstance(error, Exception):
            raise
        if isinstance(error, TetherRuntimeError) and not failures:
            raise
        if failures:
            failure = fail(
                "RUNTIME_CONSTRUCTION_FAILED",
                "Runtime construction and rollback failed",
                error,
                *failures,
            )
        else:
            failure = fail(
                "RUNTIME_CONSTRUCTION_FAILED",
                f"Runtime construction failed: {message_of(error, type(error).__name__)}",
                error,
            )
        raise failure from failure.__cause__


async def _build(build: _Construction, claim: SessionClaim) -> Runtime:
    workspace = build.workspace
    public = workspace.public
    shared = build.shared
    factories = shared.factories
    ledger = build.ledger
    created = workspace.prepare_parents()
    if created:
        ledger.add("SessionParents", created, cleanup=_remover(created))
    tools = await invoke_factory(
        label="Tools",
        ledger=ledger,
        workspace=workspace,
        input_value=RuntimeToolsInput(
            workspace=public, base_tools=ToolRegistry.snapshot(shared.base_tools)
        ),
        override=factories.create_tools,
        default=build.tools,
        guard=lambda value: instance_of(value, ToolRegistry),
    )
    link = _McpLink()
    mcp: McpServers | None = None
    mcp_names: frozenset[str] = frozenset()
    if shared.mcp_servers:
        mcp = McpServers(shared.mcp_servers, cwd=public.root, on_tools_changed=link.changed)
        ledger.add("McpServers", mcp, cleanup=mcp.stop)
        await mcp.start()
        definitions = mcp.definitions()
        tools = ToolRegistry.snapshot(tools)
        tools.register_many(definitions)
        mcp_names = frozenset(definition.name for definition in definitions)
    resources = await invoke_factory(
        label="Resources",
        ledger=ledger,
        workspace=workspace,
        input_value=RuntimeResourcesInput(workspace=public, roots=shared.resource_roots),
        override=factories.create_resources,
        default=build.resources,
        guard=lambda value: instance_of(value, ResourceLoader),
    )
    store = await invoke_factory(
        label="Session",
        ledger=ledger,
        workspace=workspace,
        input_value=RuntimeSessionInput(workspace=public, options=build.store_options),
        override=factories.create_session,
        default=build.session,
        guard=lambda value: instance_of(value, SessionStore),
        register=lambda value: build.register_store(cast(SessionStore, value)),
        key_of=SessionStore.canonical_path_of,
        before=workspace.check_parent,
    )
    if SessionStore.canonical_path_of(store) != workspace.session_key:
        raise TypeError("Session factory returned a store for another session file")
    loaded = file_mark(store.path)
    loaded_entries = tuple(entry.id for entry in store.entries)
    if store is not build.shared_store and store.closed:
        raise TypeError("Session factory returned a closed store")
    tree = SessionTree(store)
    host = await invoke_factory(
        label="Extensions",
        ledger=ledger,
        workspace=workspace,
        input_value=RuntimeExtensionsInput(
            workspace=public,
            resources=resources,
            tools=ToolRegistry.snapshot(tools),
            definitions=shared.extensions,
        ),
        override=factories.create_extensions,
        default=build.extensions,
        guard=lambda value: instance_of(value, ExtensionHost),
        register=lambda value: build.register_host(cast(ExtensionHost, value)),
    )
    agent = await invoke_factory(
        label="Agent",
        ledger=ledger,
        workspace=workspace,
        input_value=RuntimeAgentInput(
            workspace=public,
            model=shared.model,
            tools=host.tools,
            session=tree,
            messages=session_transcript(tree),
            max_steps=shared.max_steps,
            options=shared.agent_options,
        ),
        override=factories.create_agent,
        default=build.agent,
        guard=_is_agent,
    )
    workspace.check()
    holder = build.holder_of(agent)
    verdict = check_coherence(tree, agent.messages, () if holder is None else holder.pending)
    if verdict is not None:
        raise verdict
    core = RuntimeCore(
        workspace=workspace,
        claim=claim,
        loaded=loaded,
        loaded_entries=loaded_entries,
        holder=holder,
        mcp=mcp,
        mcp_names=mcp_names,
    )
    runtime = Runtime._open(  # pyright: ignore[reportPrivateUsage] - the builder's door
        core=core,
        agent=agent,
        session=tree,
        extensions=host,
        resources=resources,
    )
    link.runtime = runtime
    ledger.commit()
    return runtime


class _McpLink:
    """Carries a server's ``tools/list_changed`` to the runtime once it exists (a change
    during construction is picked up from the servers' tools when it opens)."""

    __slots__ = ("runtime",)

    def __init__(self) -> None:
        self.runtime: Runtime | None = None

    def changed(self, server: McpServer) -> None:
        if self.runtime is not None:
            self.runtime._mcp_tools_changed(server)  # pyright: ignore[reportPrivateUsage] - the builder is the runtime's own module-private friend


def _remover(created: tuple[CreatedParent, ...]) -> Any:
    async def cleanup() -> None:
        remove_parents(created)

    return cleanup
