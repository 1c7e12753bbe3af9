"""Deterministic models: ``ScriptedModel`` and its plain-data replies.

The names load on first use: ``tether.models.base`` (the ``Model`` protocol every layer
imports) must not pull ``tether.models.scripted`` in with it, or importing the agent loop
would build the scripted model's classes too (``benchmarks/bench_import.py``).
"""

from tether._base.lazy import lazy_exports

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: nothing but ``tether._base.lazy`` loads here

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(__name__, {"scripted": tuple(__all__)}, globals())
