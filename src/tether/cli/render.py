"""How the ``tether`` command writes: the human view, JSON lines, and standard output itself.

Nothing a run carries can make its output fail with an encoding error:

* JSON lines are always valid UTF-8, whatever the locale. Non-ASCII text is written as it is;
  a lone surrogate, which UTF-8 cannot encode (a fixture can spell one as the JSON escape
  ``\\ud800``, and a command-line argument that is not valid UTF-8 arrives as one), is written
  as its ``\\uXXXX`` escape, so the line still parses back to the very same string.
* JSON lines are one line for every line splitter: U+2028, U+2029 and U+0085, which JSON
  allows raw inside strings but ``str.splitlines`` (and JavaScript's old parsers) treat as
  line breaks, are written as their ``\\uXXXX`` escapes too. Only ``\\n`` ends a line.
* Human output uses stdout's own encoding with ``errors="backslashreplace"``: what that
  encoding cannot hold appears as a Python escape such as ``\\ud800``. A tool's arguments and
  result are shortened for people (``--json`` carries them whole).

Every line, and every streamed text delta, is written in full and flushed at once. A write
that fails (stdout closed, full, or a pipe whose reader went away) raises ``OutputError``.
"""

from __future__ import annotations

import errno
import json
import re
import sys
from typing import TYPE_CHECKING, Any, BinaryIO, Final, TextIO

if TYPE_CHECKING:  # the CLI imports this module before it knows the command: keep it light
    from collections.abc import Callable

    from tether.protocol import AgentEvent, ModelUsage, RunResult

__all__ = [
    "HumanView",
    "Output",
    "OutputError",
    "compact",
    "event_json",
    "json_line",
    "shorten",
    "warn",
]


class OutputError(Exception):
    """Standard output could not be written; the message says why (one line)."""

    @property
    def reader_gone(self) -> bool:
        """Whether the reader of a pipe went away (EPIPE), which needs no message."""
        return isinstance(self.__cause__, BrokenPipeError)


class Output:
    """Standard output as bytes: every write is encoded, written in full and flushed.

    ``Output.for_json`` writes strict UTF-8 (``json_line`` has already escaped what UTF-8
    cannot encode); ``Output.for_people`` writes stdout's encoding with backslash escapes.
    Both raise ``OutputError`` when stdout is closed (``sys.stdout`` is ``None``).
    """

    __slots__ = ("_binary", "_encoding", "_errors", "_text")

    def __init__(self, stream: TextIO | None, encoding: str, errors: str) -> None:
        if stream is None:
            raise OutputError("standard output is closed")
        self._text = stream
        # Bytes go straight to the binary layer: the text layer's own error handler (strict,
        # or surrogateescape in a C or POSIX locale) never sees them.
        binary: BinaryIO | None = getattr(stream, "buffer", None)
        self._binary = binary
        self._encoding = encoding
        self._errors = errors

    @classmethod
    def for_json(cls, stream: TextIO | None) -> Output:
        return cls(stream, "utf-8", "strict")

    @classmethod
    def for_people(cls, stream: TextIO | None) -> Output:
        encoding = getattr(stream, "encoding", None)
        return cls(stream, encoding if isinstance(encoding, str) else "utf-8", "backslashreplace")

    def write(self, text: str) -> None:
        """Write ``text`` now, in full; ``OutputError`` if stdout refuses it."""
        data = text.encode(self._encoding, self._errors)
        try:
            binary = self._binary
            if binary is None:  # a text-only stream (no binary layer): hand it safe text
                self._text.write(data.decode(self._encoding))
                self._text.flush()
            else:
                _write_all(binary, data)
        except (OSError, ValueError) as error:  # ValueError: the stream was closed
            raise OutputError(str(error)) from error


def _write_all(binary: BinaryIO, data: bytes) -> None:
    """Write every byte: an unbuffered stdout (``python -u``) may accept only part of it."""
    view = memoryview(data)
    raw: Any = binary  # typed as returning int, but a raw FileIO returns None if it would block
    while view:
        written: int | None = raw.write(view)
        if written is None:  # a non-blocking stdout that is full
            raise BlockingIOError(errno.EAGAIN, "standard output is non-blocking and full")
        view = view[written:]
    binary.flush()


def warn(text: str) -> None:
    """Write ``text`` as one line on stderr, if there is a stderr that takes it."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(text + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


_ESCAPED: Final = re.compile("[\ud800-\udfff\u0085\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_line(value: object) -> str:
    """``value`` as one compact JSON line, newline included, that is valid UTF-8 text.

    Inside JSON output a surrogate, U+0085, U+2028 or U+2029 can only be part of a string,
    where its ``\\uXXXX`` escape means the same thing; every other character is kept as it is.
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if not text.isascii():
        text = _ESCAPED.sub(_escape, text)
    return text + "\n"


def event_json(
    event: AgentEvent, cost: Callable[[ModelUsage], float | None] | None = None
) -> dict[str, Any]:
    """The camelCase JSON of ``event`` (``tether run --json``, ``tether rpc``); with ``cost``
    (the model's prices), ``run.finished`` also carries ``costUsd``: what the run's usage
    cost in US dollars, ``null`` when it is not known (never 0 for unknown)."""
    from tether.protocol import to_json

    value: dict[str, Any] = to_json(event)
    if cost is not None and event.type == "run.finished":
        value["costUsd"] = cost(event.payload.result.usage)
    return value


def compact(value: object) -> str:
    """``value`` as compact JSON for a person: non-ASCII text kept as it is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


SHORT_TEXT: Final = 300
"""Most characters of a tool's arguments or result shown to people."""


def shorten(text: str, limit: int = SHORT_TEXT) -> str:
    """``text`` on one line of at most about ``limit`` characters, saying what was left out."""
    lines = text.splitlines() or [""]
    first = lines[0]
    if len(lines) == 1 and len(first) <= limit:
        return first
    first = first[:limit]
    return f"{first} … ({len(lines)} lines, {len(text)} characters)"


class HumanView:
    """Writes a run for a person to read, as it happens."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self.in_text = False
        self.in_progress = False

    def show(self, event: AgentEvent) -> None:
        from tether.protocol import assert_never, to_json

        match event.type:
            case "message.accepted":
                message = event.payload.message
                if message.role == "user":
                    self.line(f"user: {message.content}")
            case "model.chunk":
                chunk = event.payload.chunk
                if chunk.type == "textDelta":
                    if self.in_text:
                        self.out.write(chunk.delta)
                    else:
                        self.in_text = True
                        self.out.write("assistant: " + chunk.delta)
            case "tool.started":
                call = event.payload.tool_call
                if call.raw_arguments is not None:  # not a JSON object: what the model sent
                    arguments = "not JSON: " + shorten(compact(call.raw_arguments))
                else:
                    arguments = shorten(compact(to_json(call.arguments)))
                self.line(f"→ {call.name}({arguments})  [{call.id}]")
            case "model.retry":
                retry = event.payload
                self.line(f"retrying in {retry.delay_ms / 1000:g} s ({retry.reason})")
            case "tool.progress":
                self.end_text()
                text = event.payload.text
                self.out.write(text)
                self.in_progress = not text.endswith("\n")
            case "tool.finished":
                if self.in_progress:
                    self.in_progress = False
                    self.out.write("\n")
                result = event.payload.message
                marker = "error" if result.is_error else "ok"
                self.line(f"← {result.tool_name} {marker}: {shorten(result.content)}")
            case "run.finished":
                self.end_text()
            case _:
                assert_never(event)

    def line(self, text: str) -> None:
        if self.in_text:
            self.in_text = False
            text = "\n" + text
        self.out.write(text + "\n")

    def end_text(self) -> None:
        if self.in_text:
            self.in_text = False
            self.out.write("\n")

    def summary(
        self,
        result: RunResult,
        turns: int,
        tokens_in: int,
        tokens_out: int,
        cost: str | None = None,
    ) -> None:
        """The last line: the status, the model turns, the token usage and, when given, the
        cost (``$0.0123``, ``unknown``)."""
        from tether.protocol import assert_never

        match result.status:
            case "completed":
                detail = "completed"
            case "cancelled":
                detail = f"cancelled: {result.reason}"
            case "maxSteps":
                detail = f"stopped after max steps ({result.max_steps})"
            case "failed":
                detail = f"failed [{result.error.code}]: {result.error.message}"
            case _:
                assert_never(result)
        priced = "" if cost is None else f" · cost: {cost}"
        self.line(
            f"status: {detail} · model turns: {turns} · tokens: {tokens_in} in, {tokens_out} out"
            f"{priced}"
        )
