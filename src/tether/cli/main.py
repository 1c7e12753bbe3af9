"""The ``tether`` command.

``tether run`` runs the agent loop on a provider fixture with a built-in ``add`` tool and
shows the run as it happens: streamed text, each tool call and its result, the final status
and token usage. With no options it replays the bundled round-trip fixture ("What is 20 +
22?"). ``--json`` prints one camelCase JSON event per line instead, always as valid UTF-8.
Ctrl-C cancels the run; a second Ctrl-C quits at once (see ``tether.cli.run``). How output
is written, and why it never fails on text it cannot encode, is in ``tether.cli.render``.

``tether trace`` prints the checkpoint-00 trace as JSON lines.

Exit status (also listed by ``tether run --help``):

* 0 completed: the run completed (for ``tether trace``: the trace was written);
* 1 failed: the run failed;
* 2 usage error, or the fixture could not be loaded (a ``PROVIDER_...`` code on stderr);
* 3 max steps: the run stopped after ``--max-steps`` model steps;
* 4 output failed: stdout was closed, full or otherwise unwritable (one line on stderr says
  why; nothing when the reader of a pipe went away, as with ``tether run --json | head -1``);
* 130 interrupted: Ctrl-C (the run was cancelled).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from tether import MAX_AGENT_STEPS
from tether.cli.render import Output, OutputError, json_line, warn
from tether.cli.run import EXIT_INTERRUPTED, EXIT_STATUS, EXIT_USAGE, run_command

__all__ = ["EXIT_INTERRUPTED", "EXIT_OUTPUT_FAILED", "EXIT_STATUS", "EXIT_USAGE", "main"]

DEFAULT_PROMPT = "What is 20 + 22?"
EXIT_OUTPUT_FAILED: Final = 4
"""Standard output could not be written."""

EXIT_CODES_HELP: Final = """\
exit status:
  0    the run completed
  1    the run failed
  2    usage error, or the fixture could not be loaded
  3    the run stopped after max steps (--max-steps)
  4    output failed: stdout closed, full or otherwise unwritable
  130  interrupted (Ctrl-C): the run was cancelled; a second Ctrl-C quits at once
"""


def _print_trace(out: Output) -> int:
    from tether.trace import run_prologue

    prologue = run_prologue()
    for record in prologue.events:
        out.write(json_line(record.to_json()))
    out.write(json_line(prologue.result.to_json()))
    return 0


def _steps(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= value <= MAX_AGENT_STEPS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_AGENT_STEPS}")
    return value


def _fixture_path(text: str) -> Path:
    if not text:  # Path("") is ".", which would be read as the current directory
        raise argparse.ArgumentTypeError("must not be empty (omit it to use the bundled fixture)")
    return Path(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether",
        description="The tether agent runtime.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="run the agent loop on a provider fixture with a built-in add tool",
        description="Run the agent loop on a provider fixture with a built-in add tool.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--fixture", type=_fixture_path, metavar="PATH", help="provider fixture (default: bundled)"
    )
    run.add_argument("--prompt", default=DEFAULT_PROMPT, help="the user message")
    run.add_argument(
        "--max-steps", type=_steps, default=8, metavar="N", help="model steps allowed (1-64)"
    )
    run.add_argument("--json", action="store_true", help="one camelCase JSON event per line")
    commands.add_parser("trace", help="print the checkpoint-00 agent trace as JSON lines")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tether`` console script; returns the process exit status."""
    try:
        args = _parser().parse_args(argv)
        if args.command == "trace":
            return _writing("trace", lambda: _print_trace(Output.for_json(sys.stdout)))
        if args.command == "run":
            make = Output.for_json if args.json else Output.for_people
            return _writing("run", lambda: asyncio.run(run_command(args, make(sys.stdout))))
    except KeyboardInterrupt:  # Ctrl-C before `tether run` installed its own handler
        return EXIT_INTERRUPTED
    raise AssertionError(f"unhandled command {args.command!r}")  # pragma: no cover


def _writing(command: str, work: Callable[[], int]) -> int:
    """Run ``work``; an output failure becomes one line on stderr and exit status 4."""
    try:
        return work()
    except OutputError as error:
        if not error.reader_gone:
            warn(f"tether {command}: cannot write output: {error}")
        _silence_stdout()
        return EXIT_OUTPUT_FAILED


def _silence_stdout() -> None:
    """Point stdout's descriptor at /dev/null, so the flush at exit cannot fail once more."""
    stream = sys.stdout
    if stream is None:
        return
    try:
        descriptor = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError):
        return
    try:
        os.dup2(null, descriptor)
    except OSError:
        pass
    finally:
        os.close(null)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
