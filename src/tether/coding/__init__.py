"""The coding-agent session service: one session that every mode of ``tether`` drives.

``CodingSession`` (``tether.coding.session``) is built from one ``CodingSessionConfig``
(``tether.coding.config``) and owns the conversation, the session file and its branch, the
system prompt, approvals, usage totals and the event stream; ``tether chat`` (interactive),
``tether run -p`` (print, ``--json``) and ``tether rpc`` are adapters over it.
``tether.coding.rpc_client`` is a typed client of the ``tether rpc`` protocol.
"""

from typing import TYPE_CHECKING

from tether._base.lazy import lazy_exports

if TYPE_CHECKING:
    from tether.coding.approval import (
        DECLINED,
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
        CodingEvent,
        CodingSession,
        CodingSessionError,
        SessionNotice,
        SessionOpened,
    )

# Each name loads its module on first use: ``tether chat`` imports ``tether.coding.approval``
# before its first prompt, and the session (the loop, the protocol) is needed only after it.
_MODULES = {
    "approval": (
        "DECLINED",
        "Answer",
        "ApprovalRequest",
        "Approvals",
        "Approver",
        "Decline",
        "parse_answer",
    ),
    "config": (
        "APPROVED_BY_DEFAULT",
        "DEFAULT_CONTEXT_WINDOW",
        "DEFAULT_MAX_STEPS",
        "ApprovalPolicy",
        "CodingSessionConfig",
        "InterruptedTurns",
        "ModelSource",
        "SessionPlace",
        "ToolSet",
    ),
    "session": (
        "CodingEvent",
        "CodingSession",
        "CodingSessionError",
        "SessionNotice",
        "SessionOpened",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())

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
