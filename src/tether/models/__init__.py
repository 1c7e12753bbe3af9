"""Deterministic models: ``ScriptedModel`` and its plain-data replies.

The names load on first use: ``tether.models.base`` (the ``Model`` protocol every layer
imports) must not pull ``tether.models.scripted`` in with it, or importing the agent loop
would build the scripted model's classes too (``benchmarks/bench_import.py``).
"""

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: the point is to import nothing here

if TYPE_CHECKING:
    from typing import Any

    from tether.models.scripted import (
        ResponseFactory,
        ScriptedModel,
        ScriptedModelError,
        ScriptedModelErrorCode,
        ScriptedReply,
        ScriptedToolCall,
        text_reply,
        tool_call_reply,
    )

__all__ = [
    "ResponseFactory",
    "ScriptedModel",
    "ScriptedModelError",
    "ScriptedModelErrorCode",
    "ScriptedReply",
    "ScriptedToolCall",
    "text_reply",
    "tool_call_reply",
]


def __getattr__(name: str) -> "Any":
    if name not in __all__:
        raise AttributeError(f"module 'tether.models' has no attribute {name!r}")
    from tether.models import scripted

    value = getattr(scripted, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
