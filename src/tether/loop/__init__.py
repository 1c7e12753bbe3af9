"""Layer 07: the agent loop.

* ``agent_loop``: ``run_agent_loop`` (``_steps``: the step state machine; ``_model_turn``: one
  model turn);
* ``hooks``: ``ToolHooks``, a host's say before a tool call runs and after it returns;
* ``RunLimits`` and the limit constants, re-exported from ``tether.models.limits``;
* ``checks``: the chunk, response and transcript boundary checks and their agreement rules;
* ``collector``: ``relaxed_cycle_collector``, an opt-in knob for thousands of runs in flight.

Each name loads its module on first use (``tether._base.lazy``): ``run_agent_loop`` does not
load the hooks, the limits or the checks until a run needs them (issue 30).
"""

from typing import TYPE_CHECKING

from tether._base.lazy import lazy_exports

if TYPE_CHECKING:
    from tether.loop.agent_loop import (
        NoRunningLoopError,
        RunFailureCode,
        run_agent_loop,
    )
    from tether.loop.collector import relaxed_cycle_collector
    from tether.loop.hooks import (
        AfterToolCall,
        BeforeToolCall,
        BlockToolCall,
        ReplaceToolResult,
        ToolCallContext,
        ToolHookErrorCode,
        ToolHooks,
    )
    from tether.models.limits import (
        MAX_AGENT_STEPS,
        MAX_INITIAL_MESSAGES,
        MAX_MODEL_BLOCKS_PER_STEP,
        MAX_MODEL_CHUNKS_PER_STEP,
        MAX_MODEL_TEXT_CODE_POINTS,
        MAX_TOOL_ARGUMENT_DEPTH,
        MAX_TOOL_ARGUMENT_ENTRIES,
        MAX_TOOL_ARGUMENT_NODES,
        MAX_TOOL_ARGUMENT_STRING_CODE_POINTS,
        RunLimits,
        limits_for,
    )

_MODULES = {
    "agent_loop": ("NoRunningLoopError", "RunFailureCode", "run_agent_loop"),
    "collector": ("relaxed_cycle_collector",),
    "hooks": (
        "AfterToolCall",
        "BeforeToolCall",
        "BlockToolCall",
        "ReplaceToolResult",
        "ToolCallContext",
        "ToolHookErrorCode",
        "ToolHooks",
    ),
}
_LIMITS = (
    "MAX_AGENT_STEPS",
    "MAX_INITIAL_MESSAGES",
    "MAX_MODEL_BLOCKS_PER_STEP",
    "MAX_MODEL_CHUNKS_PER_STEP",
    "MAX_MODEL_TEXT_CODE_POINTS",
    "MAX_TOOL_ARGUMENT_DEPTH",
    "MAX_TOOL_ARGUMENT_ENTRIES",
    "MAX_TOOL_ARGUMENT_NODES",
    "MAX_TOOL_ARGUMENT_STRING_CODE_POINTS",
    "RunLimits",
    "limits_for",
)

_loop_getattr, _ = lazy_exports(__name__, _MODULES, globals())
_limits_getattr, _ = lazy_exports("tether.models", {"limits": _LIMITS}, globals())


def __getattr__(name: str) -> object:
    if name in _LIMITS:  # re-exported from tether.models.limits
        return _limits_getattr(name)
    return _loop_getattr(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "MAX_AGENT_STEPS",
    "MAX_INITIAL_MESSAGES",
    "MAX_MODEL_BLOCKS_PER_STEP",
    "MAX_MODEL_CHUNKS_PER_STEP",
    "MAX_MODEL_TEXT_CODE_POINTS",
    "MAX_TOOL_ARGUMENT_DEPTH",
    "MAX_TOOL_ARGUMENT_ENTRIES",
    "MAX_TOOL_ARGUMENT_NODES",
    "MAX_TOOL_ARGUMENT_STRING_CODE_POINTS",
    "AfterToolCall",
    "BeforeToolCall",
    "BlockToolCall",
    "NoRunningLoopError",
    "ReplaceToolResult",
    "RunFailureCode",
    "RunLimits",
    "ToolCallContext",
    "ToolHookErrorCode",
    "ToolHooks",
    "limits_for",
    "relaxed_cycle_collector",
    "run_agent_loop",
]
