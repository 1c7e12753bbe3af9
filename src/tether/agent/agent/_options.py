"""Checking an Agent's options: the model's bound ``stream`` and the starting transcript."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from tether._async.producer import require_running_loop
from tether._base.exact_types import is_list_or_tuple, type_of
from tether.abort import AbortSignal
from tether.agent.agent._errors import AgentMessageLimitError
from tether.loop.checks import InvalidTranscript, snapshot_transcript
from tether.models.limits import RunLimits
from tether.protocol import Message, ModelRequest

__all__ = ["bound_stream", "require_loop", "snapshot_messages"]


def bound_stream(model: object) -> Callable[[ModelRequest, AbortSignal], object]:
    """The model's ``stream`` method, read once: replacing it later changes nothing."""
    if type_of(model) in (type(None), bool, int, float, str, bytes):
        raise TypeError(
            "Agent model must implement the Model contract (a stream(request, signal) method)"
        )
    try:
        stream: object = cast("Any", model).stream
    except Exception:
        stream = None
    if not callable(stream):
        raise TypeError("Agent model.stream must be a function")
    return stream


def snapshot_messages(messages: object, cap: int, limits: RunLimits) -> list[Message]:
    """The starting transcript, checked and frozen (``TypeError``; ``AgentMessageLimitError``
    when it holds more than ``cap`` messages)."""
    if not is_list_or_tuple(messages):
        raise TypeError("Agent messages must be a list or tuple of messages")
    count = len(messages)
    if count > cap:
        raise AgentMessageLimitError(f"Agent transcript must not exceed {cap} messages")
    try:
        return list(snapshot_transcript(messages, limits))
    except InvalidTranscript as error:
        text = str(error)
        if text.startswith("messages["):
            raise TypeError(f"Agent {text}") from None
        raise TypeError(f"Agent transcript is invalid: {text}") from None


def require_loop(method: str) -> None:
    """Raise ``RuntimeError`` unless an event loop runs (``Agent.<method>()`` needs one)."""
    require_running_loop(f"Agent.{method}()")
