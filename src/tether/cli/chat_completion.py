"""Tab completion at ``tether chat``'s prompt: ``/model`` names, slash commands and ``@path``
mentions inside the workspace (``tether.cli.ui.complete``), and the prompt_toolkit
``Completer`` that offers them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from tether.cli.slash_commands import COMMANDS

if TYPE_CHECKING:
    from tether.cli.ui.complete import Completion
    from tether.tools.coding.workspace import Workspace

__all__ = ["CompletionSource", "chat_completions", "prompt_completer"]


def chat_completions(
    before_cursor: str,
    *,
    workspace: Workspace | None,
    models: Sequence[str],
) -> list[Completion]:
    """What Tab offers for the line before the cursor: ``/model`` names (``models``: specs
    and ``PROVIDER/`` prefixes), slash commands (``COMMANDS``), ``@path`` mentions inside the
    workspace (``tether.cli.ui.complete``)."""
    from tether.cli.ui.complete import Completion, complete_command, complete_path

    head, space, rest = before_cursor.partition(" ")
    if head.lower() == "/model" and space:
        if any(char.isspace() for char in rest):
            return []
        folded = rest.casefold()
        return [
            Completion(text=spec, start_position=-len(rest), display=spec)
            for spec in dict.fromkeys(models)
            if spec.casefold().startswith(folded)
        ]
    if before_cursor.startswith("/"):
        return complete_command(before_cursor, COMMANDS)
    if workspace is None:
        return []
    return complete_path(before_cursor, workspace)


class CompletionSource(Protocol):
    """What completion reads from the chat (``tether.cli.chat_session.Chat``)."""

    def workspace_view(self) -> Workspace | None:
        """The workspace ``@path`` mentions complete in (``None``: none)."""
        ...

    def model_names(self) -> list[str]:
        """The ``/model`` names offered."""
        ...


def prompt_completer(chat: Callable[[], CompletionSource]) -> Any:
    """A prompt_toolkit ``Completer`` over ``chat_completions`` for the chat ``chat()``."""
    from prompt_toolkit.completion import CompleteEvent, Completer
    from prompt_toolkit.completion import Completion as ToolkitCompletion
    from prompt_toolkit.document import Document

    class ChatCompleter(Completer):
        def get_completions(
            self, document: Document, complete_event: CompleteEvent
        ) -> Iterator[ToolkitCompletion]:
            current = chat()
            found = chat_completions(
                document.text_before_cursor,
                workspace=current.workspace_view(),
                models=current.model_names(),
            )
            for item in found:
                yield ToolkitCompletion(
                    item.text,
                    start_position=item.start_position,
                    display=item.display,
                    display_meta=item.meta,
                )

    return ChatCompleter()
