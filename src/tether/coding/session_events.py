"""What a ``tether.coding.session.CodingSession`` tells its listeners besides the Agent's
events (``SessionOpened``, ``SessionNotice``: together ``CodingEvent``) and the error of its
own operations (``CodingSessionError``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeAlias

from tether._base.dataclass import dataclass
from tether._base.tether_error import TetherError

if TYPE_CHECKING:
    from tether.protocol import AgentEvent

__all__ = [
    "CodingEvent",
    "CodingSessionError",
    "Listener",
    "SessionNotice",
    "SessionOpened",
]


class CodingSessionError(TetherError):
    """A session operation that cannot be done: ``CODING_SESSION_NOT_FOUND``,
    ``CODING_SESSION_AMBIGUOUS``, ``CODING_ENTRY_NOT_FOUND``, ``CODING_ENTRY_AMBIGUOUS``,
    ``CODING_NOT_STARTED`` (nothing to act on before the first runtime),
    ``CODING_SESSION_FIXED`` (a session on one fixed file has no other session to go to) or
    ``CODING_THINKING_INVALID`` (not a thinking level)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionOpened:
    """A runtime was published: ``reason`` (``created``: a new session file; ``resumed``:
    another saved session; ``moved``: the same session on another entry; ``rebuilt``: the
    same session, for a new model or workspace), the session's ``session_id``, its file
    (``path``), the workspace (``cwd``), the model and the transcript's ``message_count``."""

    type: Literal["session.opened"] = "session.opened"
    reason: Literal["created", "resumed", "moved", "rebuilt"]
    session_id: str
    path: str
    cwd: str
    model: str
    message_count: int

    def to_json(self) -> dict[str, object]:
        """The camelCase JSON form (the RPC protocol's ``session`` line)."""
        return {
            "type": self.type,
            "reason": self.reason,
            "sessionId": self.session_id,
            "cwd": self.cwd,
            "model": self.model,
            "messageCount": self.message_count,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionNotice:
    """Something worth telling the person: a skill or template that was skipped, a session
    file whose torn last line was repaired, a previous runtime that did not close cleanly."""

    type: Literal["session.notice"] = "session.notice"
    text: str

    def to_json(self) -> dict[str, object]:
        """The JSON form."""
        return {"type": self.type, "text": self.text}


CodingEvent: TypeAlias = "AgentEvent | SessionOpened | SessionNotice"
"""What ``CodingSession.subscribe`` listeners receive."""
Listener: TypeAlias = Callable[["AgentEvent | SessionOpened | SessionNotice"], None]
