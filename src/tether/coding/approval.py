"""Tool-call approval in a coding session: the answers a person (or an RPC client) gives and
what the session remembers of them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from tether._base.dataclass import dataclass

if TYPE_CHECKING:
    from tether.mcp.config import McpServerConfig
    from tether.protocol import ToolCall

__all__ = [
    "DECLINED",
    "Answer",
    "ApprovalRequest",
    "Approvals",
    "Approver",
    "Decline",
    "parse_answer",
]

DECLINED: Final = "the user declined"
"""The reason a declined call gives the model (``BlockToolCall``)."""

Answer: TypeAlias = Literal["yes", "no", "always"]
"""An answer to the approval question."""


def parse_answer(text: str) -> Answer | None:
    """``y``/``yes``, ``n``/``no``, ``a``/``always`` (any case, spaces ignored); ``None`` for
    anything else (the question is asked again)."""
    word = text.strip().lower()
    if word in ("y", "yes"):
        return "yes"
    if word in ("n", "no"):
        return "no"
    if word in ("a", "always"):
        return "always"
    return None


class Approvals:
    """Which tool calls need a person's yes: those of ``tools`` and the MCP tools of
    ``mcp_servers`` whose approval is ``"ask"`` (``tether.mcp.mcp_approval``), unless
    ``auto``, minus the tools answered ``always`` in this session."""

    def __init__(
        self,
        tools: Iterable[str],
        *,
        auto: bool,
        mcp_servers: tuple[McpServerConfig, ...] = (),
    ) -> None:
        self.tools = frozenset(tools)
        self.auto = auto
        self.mcp_servers = mcp_servers
        self.always: set[str] = set()

    def needs_asking(self, name: str) -> bool:
        """Whether a call of ``name`` must be asked about before it runs."""
        if self.auto or name in self.always:
            return False
        if name in self.tools:
            return True
        if not self.mcp_servers:
            return False
        from tether.mcp.config import mcp_approval

        return mcp_approval(self.mcp_servers, name) == "ask"

    def decide(self, name: str, answer: Answer) -> bool:
        """Record ``answer`` for a call of ``name``; whether the call runs."""
        if answer == "always":
            self.always.add(name)
        return answer != "no"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """A tool call waiting for a yes: ``id`` (the tool call's ID, unique in the session) and
    the ``tool_call`` itself (its name and arguments)."""

    id: str
    tool_call: ToolCall


@dataclass(frozen=True, slots=True, kw_only=True)
class Decline:
    """An approver's "no" with its own words for the model: the blocked call's result says
    ``reason`` (e.g. the person's reason for declining) instead of ``DECLINED``."""

    reason: str

    def __post_init__(self) -> None:
        if not self.reason.strip():
            raise ValueError("Decline.reason must not be blank")


Approver: TypeAlias = Callable[[ApprovalRequest], Awaitable["Answer | Decline"]]
"""Answers an ``ApprovalRequest`` (the mode: the terminal's question, an RPC client): an
``Answer``, or a ``Decline`` that tells the model why."""
