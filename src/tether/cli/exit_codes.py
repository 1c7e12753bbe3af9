"""Every exit status of the ``tether`` command, in one place.

Each mode (``tether run``, ``tether chat``, ``tether rpc``, ``tether models``, ``tether
trace``) returns one of these; ``tether eval`` has its own (see ``tether.cli.eval``).
``EXIT_CODES_HELP`` is the table every ``--help`` ends with. This module imports nothing,
so any CLI module may import it without an import cycle.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "EXIT_CODES_HELP",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_MAX_STEPS",
    "EXIT_OK",
    "EXIT_OUTPUT_FAILED",
    "EXIT_STATUS",
    "EXIT_USAGE",
]

EXIT_OK: Final = 0
"""The run completed (or the command did what it was asked)."""
EXIT_FAILED: Final = 1
"""The run failed."""
EXIT_USAGE: Final = 2
"""A usage error, or a setup a person must fix (see the module docstring)."""
EXIT_MAX_STEPS: Final = 3
"""The run stopped after its step budget."""
EXIT_OUTPUT_FAILED: Final = 4
"""Standard output could not be written."""
EXIT_INTERRUPTED: Final = 130
"""Ctrl-C (128 + SIGINT, as a shell reports it)."""
EXIT_STATUS: Final = {
    "completed": EXIT_OK,
    "failed": EXIT_FAILED,
    "maxSteps": EXIT_MAX_STEPS,
    "cancelled": EXIT_INTERRUPTED,
}
"""The exit status of each run result."""

EXIT_CODES_HELP: Final = """\
exit status:
  0    completed: the run completed (models, trace: output written; rpc: stdin ended)
  1    the run failed
  2    usage or setup error: a bad option or config file, an unknown provider, a missing
       API key, a fixture that could not be loaded; or the model's server was unreachable,
       refused the key, rate limited the run or found the context too long
  3    the run stopped after max steps (--max-steps)
  4    output failed: stdout closed, full or otherwise unwritable
  130  interrupted (Ctrl-C): the run was cancelled; a second Ctrl-C quits at once
"""
