"""The slash commands and keys of ``tether chat``, as ``/help`` and ``tether chat --help``
print them. Imports nothing, so ``tether --help`` stays fast."""

from __future__ import annotations

from typing import Final

__all__ = ["CHAT_EXIT_HELP", "COMMANDS", "COMMANDS_HELP", "HELP", "KEYS_HELP"]

COMMANDS: Final = {
    "help": "show this help",
    "model": "/model PROVIDER/MODEL (or N of the /model list): switch, keeping the conversation",
    "new": "start a new session",
    "cd": "/cd DIR: continue this session in another directory (tools and files there)",
    "sessions": "list saved sessions, newest first",
    "resume": "/resume ID: continue a saved session (an ID or a unique prefix)",
    "tree": "list the active branch; /tree all every branch; /tree ID moves to that entry",
    "export": "/export [FILE]: write the conversation as an HTML page (default tether-ID.html)",
    "compact": "compact the conversation now (a summary replaces the oldest part)",
    "usage": "token usage of the session",
    "quit": "exit (Ctrl-D does too)",
}
"""Each slash command and what it does."""
HELP: Final = (
    "commands:\n"
    + "".join(f"  /{name:<9} {text}\n" for name, text in COMMANDS.items())
    + "keys: Enter sends · Alt-Enter (Esc Enter) new line · Tab completes /commands, "
    "/model names and @paths · Ctrl-O shows the last tool result whole · Shift-Tab cycles "
    "the thinking level · Esc or Ctrl-C "
    "cancels the turn (Ctrl-C: or a runtime being built, or clears the line) · during a "
    "turn Enter steers and Alt-Enter follows up · Ctrl-D exits\n"
)
"""What ``/help`` prints."""
COMMANDS_HELP: Final = (
    "slash commands:\n"
    + "".join(f"  /{name:<13} {text}\n" for name, text in COMMANDS.items())
    + "  /NAME ARGS     send the prompt template NAME (.tether/prompts/NAME.md, or\n"
    "                 prompts/NAME.md in the user's config directory), ARGS filled in\n"
    "  //text         send /text as a message\n"
)
"""The slash commands, as ``tether chat --help`` lists them."""
KEYS_HELP: Final = """\
keys:
  Enter          send the line
  Alt-Enter      a new line (Esc then Enter too)
  Tab            complete a /command, a /model name or an @path in the workspace
  Ctrl-O         show the last tool result whole (its hidden middle lines too)
  Shift-Tab      the next thinking level: off, minimal, low, medium, high (at the prompt
                 or during a turn: the next request uses it; shown in the status line;
                 --thinking or the config's thinking sets the first)
  Esc            cancel the running turn (what streamed is kept)
  during a turn  typing does not echo into the answer: Enter queues the text as a steer
                 (seen at the next turn boundary), Alt-Enter as a follow-up
  Ctrl-C         cancel the running turn, or the runtime being built (the current one
                 stays), or stop waiting for extension hooks; at the prompt: clear the line;
                 at an approval question: decline and cancel the turn; a second Ctrl-C
                 while a cancellation settles quits at once (status 130)
  Ctrl-D         exit (on an empty line)
  y / n / a      answer an approval question: yes, no, always for this tool; n: REASON
                 declines and tells the model why
"""
"""The keys, as ``tether chat --help`` lists them."""
CHAT_EXIT_HELP: Final = """\
exit status:
  0    the chat ended (/quit, Ctrl-D)
  2    usage or setup error: a bad option or config file, an unknown provider, a missing
       API key, an extension that cannot be loaded, not a terminal
  4    output failed: stdout closed, full or otherwise unwritable
  130  interrupted: Ctrl-C while the session closed, or twice while a cancellation settled
"""
"""``tether chat``'s exit statuses."""
