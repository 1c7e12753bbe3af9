"""tether-hello: an example tether extension (entry point ``hello`` in ``tether.extensions``).

``extension`` is the ``ExtensionDefinition`` the entry point names. Activating it registers
the ``hello_word_count`` tool and an agent-event hook that counts events and, when
``TETHER_HELLO_LOG`` names a file, appends ``run.finished <sequence> <status>`` to it for
every finished run.
"""

from __future__ import annotations

import os
from typing import Final

from tether.agent.extensions import ExtensionContext, ExtensionDefinition
from tether.protocol import AgentEvent, RunFinishedEvent
from tether.tools import tool

__all__ = ["LOG_ENV", "HelloExtension", "extension", "hello_word_count"]

LOG_ENV: Final = "TETHER_HELLO_LOG"
"""The environment variable naming the run log file (read at activation)."""


@tool
async def hello_word_count(text: str) -> int:
    """Count the words of a text (runs of non-whitespace characters).

    Args:
        text: The text whose words are counted.
    """
    return len(text.split())


class HelloExtension:
    """The extension instance: ``events_seen`` counts the events its hook received."""

    def __init__(self) -> None:
        self.events_seen = 0
        self.log_path: str | None = None

    def activate(self, context: ExtensionContext) -> None:
        """Register the tool, the hook and the disposer that stops logging."""
        self.log_path = os.environ.get(LOG_ENV) or None
        context.register_tool(hello_word_count)
        context.on_agent_event(self.on_event)
        context.on_dispose(self.stop)

    def on_event(self, event: AgentEvent) -> None:
        """Count ``event``; log it when it finishes a run and a log file is set."""
        self.events_seen += 1
        if isinstance(event, RunFinishedEvent) and self.log_path is not None:
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(f"run.finished {event.sequence} {event.payload.result.status}\n")

    def stop(self) -> None:
        """Stop logging (the disposer)."""
        self.log_path = None


extension: Final = ExtensionDefinition(id="hello", create=HelloExtension)
"""What the ``hello`` entry point names."""
