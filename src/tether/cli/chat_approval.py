"""The approval question of ``tether chat``: before a tool the config's ``[tools] approve``
names runs, what would run is shown in full (``tether.cli.ui.approval``) and the person
answers (``tether.cli.chat``'s docstring, "Approval", lists the answers)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias

from tether._base.tether_error import TetherError
from tether.cli.chat_operations import ChatOperations
from tether.coding.approval import Answer, ApprovalRequest, Decline

if TYPE_CHECKING:
    from pathlib import Path

    from tether.cli.ui.keys import TurnKeys
    from tether.tools.coding.workspace import Workspace

__all__ = ["Ask", "ChatApproval", "Escaped"]


class Escaped(Exception):
    """Esc at a question (``Ask`` raises it): at the approval question it interrupts the
    turn, as Esc during a stream does."""


Ask: TypeAlias = Callable[[str], Awaitable[str]]
"""Asks a question and returns the answer; raises ``KeyboardInterrupt`` (Ctrl-C),
``EOFError`` (Ctrl-D) or ``Escaped`` (Esc)."""


class ChatApproval(ChatOperations):
    """The approval question of ``tether.cli.chat_session.Chat`` (``_approve``, the coding session's
    approver) and the workspace its previews read."""

    ask: Ask
    keys: TurnKeys | None
    _asking: bool
    _preview_workspace: tuple[Path, Workspace | None] | None

    def workspace_view(self) -> Workspace | None:
        """The coding tools' view of the current workspace (``None`` if it cannot be
        opened), for previews and ``@path`` completion."""
        return self._workspace()

    def _workspace(self) -> Workspace | None:
        """The coding tools' view of the workspace, for the approval preview's reads."""
        from tether.tools.coding.workspace import Workspace

        cached = self._preview_workspace
        if cached is not None and cached[0] == self.cwd:
            return cached[1]
        try:
            made: Workspace | None = Workspace(self.cwd)
        except TetherError:
            made = None
        self._preview_workspace = (self.cwd, made)
        return made

    async def _approve(self, request: ApprovalRequest) -> Answer | Decline:
        from tether.cli.ui.approval import (
            Deny,
            approval_preview,
            approval_question,
            denial_text,
            parse_approval,
        )

        call = request.tool_call
        name = call.name
        view = self.view
        view.end_stream()
        status, view.status = view.status, ""
        view.write(
            approval_preview(
                name,
                call.arguments,
                workspace=self._workspace(),
                width=view.width,
                color=view.color,
            )
        )
        view.set_status("")
        self._asking = True
        keys = self.keys
        taken = keys is not None and keys.pause()
        try:
            while True:
                try:
                    reply = await self.ask(approval_question(name))
                except (KeyboardInterrupt, EOFError):
                    self.interrupt()
                    return "no"
                except Escaped:
                    if self.interrupt() != "turn":
                        return "no"
                    view.line("Esc: cancelling the turn")
                    # The loop races this hook against the run's abort signal: the wait
                    # ends there, and the call is answered as interrupted, not declined.
                    await asyncio.get_running_loop().create_future()
                    return "no"  # pragma: no cover - the future is never set
                answer = parse_approval(reply)
                if answer is not None:
                    break
                view.line("answer y, n (or n: a reason for the model) or a")
        finally:
            self._asking = False
            if taken and keys is not None:
                keys.resume()
            view.set_status(status)
        match answer.kind:
            case "yes":
                return "yes"
            case "always":
                return "always"
            case "no":
                assert isinstance(answer, Deny)
                view.line(f"  (declined: {name} did not run)")
                if answer.reason is None:
                    return "no"
                return Decline(reason=denial_text(answer))
