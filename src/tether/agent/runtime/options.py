"""Runtime options and their capture: every value read once, checked, and pinned at call time.

The option types are frozen dataclasses; each is also accepted as an exact ``dict`` with only
its known keys (a ``dict`` subclass, a dataclass subclass or an unknown key is refused, so no
caller code runs while options are read). Capture resolves ``cwd`` against the process working
directory *at that moment* (a later ``os.chdir`` cannot move a queued replacement), checks the
session path against the portable relative grammar, binds the model's ``stream`` once, builds
the base ``ToolRegistry``, and resolves relative resource-root directories. Every violation is
``RUNTIME_INVALID_OPTIONS``.

The *shared layer* (model, ``max_steps``, base tools, resource roots, extension definitions,
factories, agent options) is captured once per manager; the *workspace layer* (``cwd`` and
the session) again for every runtime.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeAlias, cast

from tether._base.dataclass import dataclass
from tether._base.exact_types import instance_of, real_items, type_of
from tether._base.strings import JS_WHITESPACE, is_non_empty, message_of
from tether.abort import AbortSignal
from tether.agent.auto_compaction import AutoCompaction
from tether.agent.extensions import EXTENSION_TIMEOUT, ExtensionDefinition, ExtensionError
from tether.agent.extensions.values import check_timeout
from tether.agent.resources import ResourceRootDefinition
from tether.agent.runtime.errors import TetherRuntimeError
from tether.agent.session import SessionStoreOptions
from tether.loop.hooks import AfterToolCall, BeforeToolCall
from tether.mcp.config import McpHttpServer, McpServerConfig, McpStdioServer
from tether.models.base import ModelStream
from tether.models.limits import DEFAULT_LIMITS, RunLimits
from tether.protocol import MAX_SAFE_INTEGER, ModelRequest
from tether.tools import ToolRegistry
from tether.tracing._config import Tracing

__all__ = [
    "RUNTIME_WORKSPACE_ROOT_ID",
    "BoundModel",
    "CapturedSession",
    "CapturedWorkspaceOptions",
    "RuntimeAgentOptions",
    "RuntimeFactories",
    "RuntimeOptions",
    "RuntimeSessionMode",
    "RuntimeSessionOptions",
    "RuntimeWorkspaceOptions",
    "SharedLayer",
    "capture_shared",
    "capture_workspace_options",
    "check_runtime_session_path",
]

RuntimeSessionMode: TypeAlias = Literal["create", "resume"]
"""``create``: a new session file (its missing parents are made); ``resume``: an existing one."""

RUNTIME_WORKSPACE_ROOT_ID: Final = "workspace"
"""The resource root id the runtime gives the workspace itself (first, highest precedence)."""

_RESERVED_NAMES: Final = frozenset(
    {"CON", "PRN", "AUX", "NUL"}
    | {f"COM{n}" for n in range(1, 10)}
    | {f"LPT{n}" for n in range(1, 10)}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeSessionOptions:
    """The session file of a runtime: ``path`` relative to the workspace (portable: ``/`` or
    ``\\`` separated, no empty, ``.`` or ``..`` segment, no ``:``, no segment ending in ``.`` or
    a space, no reserved device name), ``mode`` and the ``SessionStoreOptions``.

    ``directory`` (tether's): the directory ``path`` is relative to instead of the workspace,
    e.g. a per-user sessions directory; it must exist, and is captured and checked like the
    workspace root (resolved against the working directory at capture time)."""

    path: str
    mode: RuntimeSessionMode
    options: SessionStoreOptions | Mapping[str, Any] | None = None
    directory: str | os.PathLike[str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeWorkspaceOptions:
    """What a manager replacement rebuilds: the workspace directory and its session."""

    cwd: str | os.PathLike[str]
    session: RuntimeSessionOptions | Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeAgentOptions:
    """The ``Agent`` constructor options tether has beyond the workshop, passed through by the
    default agent factory: the system prompt, ``RunLimits``, the tool-call hooks (ask a person
    before a tool runs), automatic compaction and what a cancelled turn leaves
    (``interrupted_turns``, ``Agent``'s: ``"discard"`` or ``"keep"``) and how its runs are
    traced (``tracing``, a ``tether.tracing.Tracing``)."""

    system: str | None = None
    limits: RunLimits = DEFAULT_LIMITS
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    compaction: AutoCompaction | None = None
    interrupted_turns: Literal["discard", "keep"] = "discard"
    tracing: Tracing | None = None


FactoryOverride: TypeAlias = Callable[[Any, Callable[..., Any]], object]


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeFactories:
    """Factory overrides, each ``(input, fallback) -> product | awaitable``.

    ``fallback(input)`` runs the default factory and is memoized: the first call starts it (on
    a task), every call returns that same ``asyncio.Task``. A fallback that was started but not
    awaited is awaited by the builder. See ``tether.agent.runtime.ledger`` for the rules.
    """

    create_tools: FactoryOverride | None = None
    create_resources: FactoryOverride | None = None
    create_session: FactoryOverride | None = None
    create_extensions: FactoryOverride | None = None
    create_agent: FactoryOverride | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeOptions:
    """Everything ``create_runtime`` (and ``RuntimeManager.create``) needs.

    ``tools`` are base tool definitions (after the coding tools); ``resource_roots`` come after
    the workspace root; ``extensions`` are activated in order. ``extension_timeout`` (tether's)
    bounds each activation and each extension cleanup of the default extension host, in
    seconds (``None``: no bound; see ``ExtensionHost``). ``mcp_servers`` (tether's):
    ``McpStdioServer``/``McpHttpServer`` values (``tether.mcp``) the runtime starts when it
    is built, after the tools step, and stops when it is disposed; their tools join the
    registry as ``SERVER__TOOL`` (a server that fails to start is in ``Runtime.mcp_errors``
    and the others still work).
    """

    cwd: str | os.PathLike[str]
    session: RuntimeSessionOptions | Mapping[str, Any]
    model: object
    max_steps: int | None = None
    tools: Any = ()
    resource_roots: Any = ()
    extensions: Any = ()
    factories: RuntimeFactories | Mapping[str, Any] | None = None
    agent_options: RuntimeAgentOptions | Mapping[str, Any] | None = None
    extension_timeout: float | None = EXTENSION_TIMEOUT
    mcp_servers: Any = ()


class BoundModel:
    """A model made of the ``stream`` method read once at capture (replacing the original
    object's ``stream`` later changes nothing)."""

    __slots__ = ("_stream",)

    def __init__(self, stream: Callable[[ModelRequest, AbortSignal], Any]) -> None:
        self._stream = stream

    def stream(self, request: ModelRequest, signal: AbortSignal) -> ModelStream:
        """Open the bound model's stream."""
        return self._stream(request, signal)

    def __repr__(self) -> str:
        return f"<BoundModel {self._stream!r}>"


@dataclass(frozen=True, slots=True, kw_only=True)
class CapturedSession:
    """A checked session option: the path's segments, its mode and store options."""

    path: str
    segments: tuple[str, ...]
    mode: RuntimeSessionMode
    options: SessionStoreOptions
    directory: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CapturedWorkspaceOptions:
    """The workspace layer as captured: an absolute ``cwd`` and the session."""

    cwd: str
    session: CapturedSession


@dataclass(frozen=True, slots=True, kw_only=True)
class SharedLayer:
    """The shared layer as captured (once per manager)."""

    model: BoundModel
    max_steps: int | None
    base_tools: ToolRegistry
    resource_roots: tuple[ResourceRootDefinition, ...]
    extensions: tuple[ExtensionDefinition, ...]
    factories: RuntimeFactories
    agent_options: RuntimeAgentOptions
    extension_timeout: float | None = EXTENSION_TIMEOUT
    mcp_servers: tuple[McpServerConfig, ...] = ()


def _invalid(message: str) -> TetherRuntimeError:
    return TetherRuntimeError("RUNTIME_INVALID_OPTIONS", message)


def _fields(
    value: object,
    kind: type[Any],
    label: str,
    *,
    required: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The fields of an exact ``kind`` instance or an exact ``dict``, each read once."""
    names = tuple(field.name for field in dataclasses.fields(kind))
    if type_of(value) is kind:
        return {name: getattr(value, name) for name in names}
    if type_of(value) is not dict:
        raise _invalid(f"{label} must be a {kind.__name__} or a plain dict")
    source = cast("dict[object, object]", value)
    read: dict[str, Any] = {}
    items: list[tuple[object, object]] = list(source.items())
    for key, item in items:
        if type_of(key) is not str or key not in names:
            raise _invalid(f"{label} has an unknown key {_show(key)}")
        read[cast(str, key)] = item
    for name in required:
        if name not in read:
            raise _invalid(f"{label} needs {name!r}")
    return read


def _show(value: object) -> str:
    if type_of(value) is str:
        text = cast(str, value)
        return repr(text if len(text) <= 40 else text[:40] + "...")
    return f"of type {type_of(value).__name__}"


def _sequence(value: object, label: str) -> tuple[Any, ...]:
    if type_of(value) is not list and type_of(value) is not tuple:
        raise _invalid(f"{label} must be a list or tuple")
    return real_items(cast("list[Any] | tuple[Any, ...]", value))


def _path_text(value: object, label: str) -> str:
    if type_of(value) is not str:
        try:
            value = os.fspath(cast("os.PathLike[str]", value))
        except TypeError:
            raise _invalid(f"{label} must be a string path") from None
        if type_of(value) is not str:
            raise _invalid(f"{label} must be a string path")
    text = cast(str, value)
    if not text or "\0" in text:
        raise _invalid(f"{label} must be a non-empty path without NUL")
    return text


def check_runtime_session_path(path: object) -> tuple[str, ...]:
    """The segments of a portable relative session path (``RUNTIME_INVALID_OPTIONS`` unless it
    is one; see ``RuntimeSessionOptions``)."""
    if type_of(path) is not str or not path:
        raise _invalid("Runtime session path must be a non-empty string")
    text = cast(str, path)
    problem: str | None = None
    if "\0" in text:
        problem = "contains NUL"
    elif text.startswith(("/", "\\")) or os.path.isabs(text):
        problem = "is absolute"
    elif ":" in text:
        problem = "contains ':' (a drive or stream name)"
    if problem is None:
        segments = tuple(text.replace("\\", "/").split("/"))
        for segment in segments:
            problem = _segment_problem(segment)
            if problem is not None:
                break
        else:
            return segments
    raise _invalid(f"Runtime session path {_show(text)} {problem}")


def _segment_problem(segment: str) -> str | None:
    if segment == "":
        return "has an empty segment"
    if segment in (".", ".."):
        return f"has a {segment!r} segment"
    if segment.endswith((".", " ")):
        return "has a segment ending in '.' or a space"
    if segment.split(".", 1)[0].rstrip(" ").upper() in _RESERVED_NAMES:
        return "names a reserved device"
    return None


def _session(value: object) -> CapturedSession:
    read = _fields(value, RuntimeSessionOptions, "Runtime session", required=("path", "mode"))
    segments = check_runtime_session_path(read["path"])
    mode = read["mode"]
    if mode != "create" and mode != "resume":
        raise _invalid("Runtime session mode must be 'create' or 'resume'")
    return CapturedSession(
        path=cast(str, read["path"]),
        segments=segments,
        mode=mode,
        options=_store_options(read.get("options")),
        directory=_directory(read.get("directory")),
    )


def _directory(value: object) -> str | None:
    if value is None:
        return None
    return os.path.abspath(_path_text(value, "Runtime session directory"))


def _store_options(value: object) -> SessionStoreOptions:
    if value is None:
        return SessionStoreOptions()
    if type_of(value) is SessionStoreOptions:
        return cast(SessionStoreOptions, value)
    read = _fields(value, SessionStoreOptions, "Runtime session options")
    try:
        return SessionStoreOptions(**read)
    except (TypeError, ValueError) as error:
        raise _invalid(
            f"Runtime session options are invalid: {message_of(error, 'bad value')}"
        ) from error


def capture_workspace_options(
    value: object, *, label: str = "Runtime workspace"
) -> CapturedWorkspaceOptions:
    """The workspace layer of ``RuntimeWorkspaceOptions`` (or its ``dict``)."""
    read = _fields(value, RuntimeWorkspaceOptions, label, required=("cwd", "session"))
    return _workspace_layer(read)


def _workspace_layer(read: dict[str, Any]) -> CapturedWorkspaceOptions:
    cwd = _path_text(read["cwd"], "Runtime cwd")
    return CapturedWorkspaceOptions(cwd=os.path.abspath(cwd), session=_session(read["session"]))


def capture_shared(value: object) -> tuple[CapturedWorkspaceOptions, SharedLayer]:
    """Both layers of ``RuntimeOptions`` (or its ``dict``)."""
    read = _fields(value, RuntimeOptions, "Runtime options", required=("cwd", "session", "model"))
    workspace = _workspace_layer(read)
    agent_options = _agent_options(read.get("agent_options"))
    max_steps = read.get("max_steps")
    if max_steps is not None:
        if type_of(max_steps) is not int or not 1 <= max_steps <= MAX_SAFE_INTEGER:
            raise _invalid("Runtime max_steps must be a positive safe integer")
        if max_steps > agent_options.limits.max_steps:
            raise _invalid(
                f"Runtime max_steps must not exceed {agent_options.limits.max_steps} "
                "(raise RunLimits.max_steps in agent_options.limits)"
            )
    shared = SharedLayer(
        model=_bind(read["model"]),
        max_steps=cast("int | None", max_steps),
        base_tools=_tools(read.get("tools", ())),
        resource_roots=_roots(read.get("resource_roots", ())),
        extensions=_extensions(read.get("extensions", ())),
        factories=_factories(read.get("factories")),
        agent_options=agent_options,
        extension_timeout=_extension_timeout(read.get("extension_timeout", EXTENSION_TIMEOUT)),
        mcp_servers=_mcp_servers(read.get("mcp_servers", ())),
    )
    return workspace, shared


def _mcp_servers(value: object) -> tuple[McpServerConfig, ...]:
    servers: list[McpServerConfig] = []
    for index, item in enumerate(_sequence(value, "Runtime mcp_servers")):
        if type_of(item) is not McpStdioServer and type_of(item) is not McpHttpServer:
            raise _invalid(
                f"Runtime mcp_servers[{index}] must be an McpStdioServer or an McpHttpServer"
            )
        server = cast(McpServerConfig, item)
        if any(other.name == server.name for other in servers):
            raise _invalid(f'Runtime MCP server name "{server.name}" is repeated')
        servers.append(server)
    return tuple(servers)


def _extension_timeout(value: object) -> float | None:
    try:
        return check_timeout(value)
    except ExtensionError:
        raise _invalid(
            "Runtime extension_timeout must be None or a finite number of seconds above 0"
        ) from None


def _bind(model: object) -> BoundModel:
    if type_of(model) in (type(None), bool, int, float, str, bytes):
        raise _invalid("Runtime model must implement the Model contract (a stream method)")
    try:
        stream: object = cast(Any, model).stream
    except Exception:
        stream = None
    if not callable(stream):
        raise _invalid("Runtime model.stream must be a function")
    return BoundModel(cast("Callable[[ModelRequest, AbortSignal], Any]", stream))


def _tools(value: object) -> ToolRegistry:
    if instance_of(value, ToolRegistry):
        return ToolRegistry.snapshot(value)
    items = _sequence(value, "Runtime tools")
    try:
        return ToolRegistry(list(items))
    except Exception as error:
        raise _invalid(f"Runtime tools are invalid: {message_of(error, 'bad tool')}") from error


def _roots(value: object) -> tuple[ResourceRootDefinition, ...]:
    roots: list[ResourceRootDefinition] = []
    seen: set[str] = set()
    for index, item in enumerate(_sequence(value, "Runtime resource_roots")):
        label = f"Runtime resource_roots[{index}]"
        read = _fields(item, ResourceRootDefinition, label, required=("id", "directory"))
        root_id = read["id"]
        if not is_non_empty(root_id) or root_id.strip(JS_WHITESPACE) != root_id:
            raise _invalid(f"{label}.id must be a non-empty string without surrounding spaces")
        if root_id == RUNTIME_WORKSPACE_ROOT_ID:
            raise _invalid(
                f'{label}.id "{RUNTIME_WORKSPACE_ROOT_ID}" is reserved for the workspace'
            )
        if root_id in seen:
            raise _invalid(f'Runtime resource root id "{root_id}" is repeated')
        seen.add(root_id)
        directory = os.path.abspath(_path_text(read["directory"], f"{label}.directory"))
        roots.append(ResourceRootDefinition(id=root_id, directory=directory))
    return tuple(roots)


def _extensions(value: object) -> tuple[ExtensionDefinition, ...]:
    definitions: list[ExtensionDefinition] = []
    seen: set[str] = set()
    for index, item in enumerate(_sequence(value, "Runtime extensions")):
        label = f"Runtime extensions[{index}]"
        if type_of(item) is ExtensionDefinition:
            definition = cast(ExtensionDefinition, item)
        else:
            read = _fields(item, ExtensionDefinition, label, required=("id", "create"))
            try:
                definition = ExtensionDefinition(id=read["id"], create=read["create"])
            except Exception as error:
                raise _invalid(f"{label} is invalid: {message_of(error, 'bad value')}") from error
        if definition.id in seen:
            raise _invalid(f'Runtime extension id "{definition.id}" is repeated')
        seen.add(definition.id)
        definitions.append(definition)
    return tuple(definitions)


def _factories(value: object) -> RuntimeFactories:
    if value is None:
        return RuntimeFactories()
    read = _fields(value, RuntimeFactories, "Runtime factories")
    for name, factory in read.items():
        if factory is not None and not callable(factory):
            raise _invalid(f"Runtime factories.{name} must be a function or None")
    return RuntimeFactories(**read)


def _agent_options(value: object) -> RuntimeAgentOptions:
    if value is None:
        return RuntimeAgentOptions()
    read = _fields(value, RuntimeAgentOptions, "Runtime agent_options")
    system = read.get("system")
    if system is not None and type_of(system) is not str:
        raise _invalid("Runtime agent_options.system must be a string or None")
    if "limits" in read and type_of(read["limits"]) is not RunLimits:
        raise _invalid("Runtime agent_options.limits must be a RunLimits")
    for name in ("before_tool_call", "after_tool_call"):
        hook = read.get(name)
        if hook is not None and not callable(hook):
            raise _invalid(f"Runtime agent_options.{name} must be a function or None")
    compaction = read.get("compaction")
    if compaction is not None and type_of(compaction) is not AutoCompaction:
        raise _invalid("Runtime agent_options.compaction must be an AutoCompaction or None")
    interrupted = read.get("interrupted_turns", "discard")
    if type_of(interrupted) is not str or interrupted not in ("discard", "keep"):
        raise _invalid('Runtime agent_options.interrupted_turns must be "discard" or "keep"')
    tracing = read.get("tracing")
    if tracing is not None and type_of(tracing) is not Tracing:
        raise _invalid("Runtime agent_options.tracing must be a tether.tracing.Tracing or None")
    return RuntimeAgentOptions(**read)
