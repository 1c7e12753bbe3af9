"""The ``tether`` command.

``tether trace`` prints the checkpoint-00 trace as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

__all__ = ["main"]


def _print_trace(out: TextIO) -> int:
    from tether.trace import run_prologue

    prologue = run_prologue()
    for record in prologue.events:
        out.write(json.dumps(record.to_json(), separators=(",", ":")) + "\n")
    out.write(json.dumps(prologue.result.to_json(), separators=(",", ":")) + "\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tether", description="The tether agent runtime.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("trace", help="print the checkpoint-00 agent trace as JSON lines")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tether`` console script; returns the process exit status."""
    args = _parser().parse_args(argv)
    if args.command == "trace":
        return _print_trace(sys.stdout)
    raise AssertionError(f"unhandled command {args.command!r}")  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
