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
    """User text that no session can record (``AGENT_INVALID_MESSAGE``): it holds a
    surrogate code point (U+D800..U+DFFF: a lone ``"\\ud800"``, or a pair written as two
    code points), which UTF-8 cannot encode. Raised synchronously by ``prompt``, ``run``,
    ``steer`` and ``follow_up``; nothing was accepted or queued. ``tether rpc`` refuses the
    same text with ``RPC_INVALID_REQUEST``."""

    def __init__(self, index: int) -> None:
        super().__init__(
            "AGENT_INVALID_MESSAGE",
            f"Agent user content holds a surrogate code point at index {index}, which no "
            "session can record: join a surrogate pair into its character "
            "(text.encode('utf-16', 'surrogatepass').decode('utf-16')) or replace a lone one "
            "(text.encode('utf-8', 'replace').decode('utf-8'))",
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
