"""The coding-agent session service: one session that every mode of ``tether`` drives.

``CodingSession`` (``tether.coding.session``) is built from one ``CodingSessionConfig``
(``tether.coding.config``) and owns the conversation, the session file and its branch, the
system prompt, approvals, usage totals and the event stream; ``tether chat`` (interactive),
``tether run -p`` (print, ``--json``) and ``tether rpc`` are adapters over it.
``tether.coding.rpc_client`` is a typed client of the ``tether rpc`` protocol.
"""

from tether.coding.approval import (
    Answer,
    ApprovalRequest,
    Approvals,
    Approver,
    Decline,
    parse_answer,
)
from tether.coding.config import (
    APPROVED_BY_DEFAULT,
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_STEPS,
    ApprovalPolicy,
    CodingSessionConfig,
    InterruptedTurns,
    ModelSource,
    SessionPlace,
    ToolSet,
)
from tether.coding.session import (
    DECLINED,
    CodingEvent,
    CodingSession,
    CodingSessionError,
    SessionNotice,
    SessionOpened,
)

__all__ = [
    "APPROVED_BY_DEFAULT",
    "DECLINED",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_STEPS",
    "Answer",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Approvals",
    "Approver",
    "CodingEvent",
    "CodingSession",
    "CodingSessionConfig",
    "CodingSessionError",
    "Decline",
    "InterruptedTurns",
    "ModelSource",
    "SessionNotice",
    "SessionOpened",
    "SessionPlace",
    "ToolSet",
    "parse_answer",
]
