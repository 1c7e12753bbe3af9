"""The errors an Agent raises, each with its stable code."""

from __future__ import annotations

from tether._base.strings import message_of
from tether._base.tether_error import TetherError

__all__ = [
    "AgentBusyError",
    "AgentInvalidMessageError",
    "AgentMessageLimitError",
    "AgentRecordingError",
    "AgentStateError",
]


class AgentBusyError(TetherError, RuntimeError):
    """``prompt()``/``continue_()`` while a run owns the transcript (``AGENT_BUSY``).

    Raised synchronously; nothing was queued. Use ``steer()`` or ``follow_up()`` to add work
    to a running Agent, or wait for ``result``.
    """

    def __init__(self) -> None:
        super().__init__("AGENT_BUSY", "Agent is already running")


class AgentMessageLimitError(TetherError):
    """The transcript or the queues would exceed their caps (``AGENT_MESSAGE_LIMIT``)."""

    def __init__(self, message: str) -> None:
        super().__init__("AGENT_MESSAGE_LIMIT", message)


class AgentInvalidMessageError(TetherError, ValueError):
    """User text holding a surrogate code point (``AGENT_INVALID_MESSAGE``): U+D800..U+DFFF,
    a lone ``"\\ud800"`` (often bytes decoded with ``surrogateescape``) or a pair written as
    two code points. It is no Unicode text: UTF-8 has no form for it, so a provider would be
    sent U+FFFD for a lone one, and the model would not read what the caller wrote. A caller's
    mistake, refused rather than silently changed (a model's reply or a tool's result that
    holds one is kept: a session records it escaped). Raised synchronously by ``prompt``,
    ``run``, ``steer`` and ``follow_up``; nothing was accepted or queued. ``tether rpc``
    refuses the same text with ``RPC_INVALID_REQUEST``."""

    def __init__(self, index: int) -> None:
        super().__init__(
            "AGENT_INVALID_MESSAGE",
            f"Agent user content holds a surrogate code point at index {index}, which is no "
            "Unicode text (UTF-8 has no form for it: a provider would be sent U+FFFD for a "
            "lone one): join a pair written as two code points into its character and make a "
            "lone one U+FFFD with "
            "text.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')",
        )


class AgentStateError(TetherError, RuntimeError):
    """``continue_()`` has nothing to continue from (``AGENT_NOTHING_TO_CONTINUE``)."""

    def __init__(self, message: str) -> None:
        super().__init__("AGENT_NOTHING_TO_CONTINUE", message)


class AgentRecordingError(TetherError):
    """The recorder could not write the transcript (``AGENT_RECORDING_FAILED``); a run ends
    ``failed`` with this code, ``Agent.compact()`` raises it."""

    def __init__(self, error: BaseException) -> None:
        detail = message_of(error, type(error).__name__)
        super().__init__(
            "AGENT_RECORDING_FAILED", f"The transcript could not be recorded: {detail}"
        )
