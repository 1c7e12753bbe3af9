"""The typed failures a run's checks raise (each becomes the run's failure code), and the
hint that names the ``RunLimits`` field a limit failure is about."""

from __future__ import annotations

from tether.protocol import (
    Message,
)
from tether.protocol.results import RunFailureCode


class RunFailure(Exception):
    """Internal: a failure with a run failure code and an optional hint (what to change)."""

    code: RunFailureCode = "AGENT_RUNTIME_FAILED"

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


def limit_hint(field: str) -> str:
    """The hint of a broken ``RunLimits`` bound: which field, and how to raise it."""
    return (
        f"raise RunLimits.{field} (pass limits=RunLimits.for_real_models(), or "
        f"dataclasses.replace(limits, {field}=...)) to run_agent_loop or Agent"
    )


class ModelProtocolError(RunFailure):
    code = "MODEL_PROTOCOL_ERROR"


class ModelStreamFailure(RunFailure):
    code = "MODEL_STREAM_FAILED"


class ToolPhaseFailure(RunFailure):
    code = "TOOL_EXECUTION_FAILED"


class SignalAccessError(RunFailure):
    code = "SIGNAL_ACCESS_FAILED"


class InvalidTranscript(RunFailure):
    """The starting transcript is unusable; ``messages`` holds it when it could be read."""

    code = "INVALID_TRANSCRIPT"

    def __init__(self, message: str, messages: tuple[Message, ...] = (), *, hint: str = "") -> None:
        super().__init__(message, hint)
        self.messages = messages


class ModelOutputTruncated(RunFailure):
    code = "MODEL_OUTPUT_TRUNCATED"


class ModelRefused(RunFailure):
    code = "MODEL_REFUSED"
