"""The prompt of a print run (``tether run --model``): ``-p TEXT``, or standard input.

With ``-p -``, or no ``-p`` while standard input is a pipe or a file, the prompt is standard
input read to its end (at most ``MAX_STDIN_PROMPT_BYTES``), as ``pi -p`` and ``claude -p``
read it. Anything else is a usage error of ``tether run``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Final

__all__ = ["MAX_STDIN_PROMPT_BYTES", "print_prompt", "stdin_prompt"]

MAX_STDIN_PROMPT_BYTES: Final = 16 << 20
"""The longest prompt read from standard input (``-p -``, or a pipe without ``-p``)."""


def print_prompt(given: str | None, parser: argparse.ArgumentParser) -> str:
    """The prompt of a print run: ``-p TEXT`` (bytes that are not UTF-8 replaced); with
    ``-p -``, or no ``-p`` while standard input is not a terminal, standard input read to its
    end (UTF-8, bad bytes replaced, the final newline dropped), as ``pi -p`` and ``claude -p``
    do."""
    if given is not None and given != "-":
        # Argument bytes that are not UTF-8 reach Python as lone surrogates
        # (surrogateescape), which the Agent refuses (no Unicode text): replaced, as on stdin.
        return given.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    stream = sys.stdin
    if stream is None or (given is None and stream.isatty()):
        parser.error("--model needs -p/--prompt TEXT (or the prompt on standard input)")
    data = stream.buffer.read(MAX_STDIN_PROMPT_BYTES + 1)
    if len(data) > MAX_STDIN_PROMPT_BYTES:
        parser.error(f"the prompt on standard input is over {MAX_STDIN_PROMPT_BYTES} bytes")
    text = stdin_prompt(data)
    if text is None:
        parser.error("--model needs -p/--prompt TEXT (standard input was empty)")
    return text


def stdin_prompt(data: bytes) -> str | None:
    """The prompt ``data`` (standard input's bytes) holds: UTF-8 with bad bytes replaced,
    one final newline (``\\n`` or ``\\r\\n``) dropped; ``None`` when only whitespace is left."""
    text = data.decode("utf-8", errors="replace")
    if text.endswith("\n"):  # one final LF or CRLF, not a lone CR
        text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return text if text.strip() else None
