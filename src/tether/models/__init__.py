"""Deterministic models: ``ScriptedModel`` and its plain-data replies."""

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
