"""What the wire tests of the stream parsers share (``test_anthropic_wire``,
``test_responses_wire``): the project SSE decoder fed a body in pieces, a parse's outcome,
the agent loop's own checks at the model boundary, and the property tests' sequence check."""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Any, Final, Protocol

import pytest

from tether.loop import RunLimits
from tether.loop.checks import check_agreement, snapshot_chunk, snapshot_response
from tether.protocol import (
    ModelChunk,
    ModelResponse,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolCallDeltaChunk,
)
from tether.providers._sse import SSEDecoder
from tether.providers.errors import ProviderError

REQUEST_ID: Final = "request-001"
LIMITS: Final = RunLimits.for_real_models()

Event = tuple[str, str]
"""``(event type, data)`` of one dispatched SSE event."""


def decode(body: str | bytes, chunk_size: int | None = None) -> list[Event]:
    """The ``(event type, data)`` of a body, fed to the project decoder in pieces."""
    raw = body.encode() if isinstance(body, str) else body
    decoder = SSEDecoder()
    size = chunk_size or max(len(raw), 1)
    events: list[Event] = []
    for start in range(0, len(raw), size):
        events.extend((item.event, item.data) for item in decoder.feed(raw[start : start + size]))
    events.extend((item.event, item.data) for item in decoder.close())
    return events


@dataclass
class Outcome:
    """The chunks a parse streamed and its response, with views on the final content."""

    chunks: list[ModelChunk]
    response: ModelResponse

    @property
    def content(self) -> tuple[Any, ...]:
        return self.response.message.content

    @property
    def calls(self) -> list[ToolCall]:
        return [block for block in self.content if isinstance(block, ToolCall)]

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))

    @property
    def thinking(self) -> list[ThinkingBlock]:
        return [block for block in self.content if isinstance(block, ThinkingBlock)]

    @property
    def deltas(self) -> list[ToolCallDeltaChunk]:
        return [chunk for chunk in self.chunks if isinstance(chunk, ToolCallDeltaChunk)]


def loop_accepts(chunks: Sequence[ModelChunk], response: ModelResponse) -> None:
    """What the agent loop checks at the model boundary (see test_openai_wire)."""
    for chunk in chunks:
        assert snapshot_chunk(chunk, REQUEST_ID, LIMITS) is chunk
    streamed = {id(chunk.tool_call) for chunk in chunks if chunk.type == "toolCall"}
    assert snapshot_response(response, REQUEST_ID, streamed, LIMITS) is response
    check_agreement([chunk for chunk in chunks if chunk.type != "toolCallDelta"], response.message)


class Parser(Protocol):
    """A stream parser as these tests drive it (every tether parser has this shape)."""

    @property
    def stopped(self) -> bool: ...

    def feed(self, payload: object, event: str = "message") -> list[ModelChunk]: ...

    def finish(self, *, done: bool) -> tuple[list[ModelChunk], ModelResponse]: ...


def parse_outcome(
    parser: Parser, items: list[tuple[object, str]]
) -> tuple[list[ModelChunk], object]:
    """Every chunk fed out, then the response or the failure (code, message, vendor code)."""
    chunks: list[ModelChunk] = []
    try:
        for payload, kind in items:
            chunks.extend(parser.feed(payload, event=kind))
        tail, response = parser.finish(done=parser.stopped)
    except ProviderError as error:
        return chunks, (error.code, error.message, error.provider_code)
    return [*chunks, *tail], response


def check_sequence(
    parser: Parser, items: list[tuple[object, str]], reserved: frozenset[str], codes: Set[str]
) -> None:
    """Feed ``items`` to a fresh ``parser``: it fails with one of ``codes`` and stays failed,
    or its chunks and response pass the loop's checks with unique call IDs, none of them
    ``reserved``."""
    streamed: list[ModelChunk] = []
    try:
        for payload, kind in items:
            streamed.extend(parser.feed(payload, event=kind))
        tail, response = parser.finish(done=parser.stopped)
    except ProviderError as error:
        assert_sticky(error, parser, codes)
        return
    streamed.extend(tail)
    loop_accepts(streamed, response)
    ids = [block.id for block in response.message.content if isinstance(block, ToolCall)]
    assert len(set(ids)) == len(ids)
    assert not set(ids) & reserved


def assert_sticky(error: ProviderError, parser: Parser, codes: Set[str]) -> None:
    """A failure has one of the stream ``codes``, and the parser stays failed."""
    assert error.code in codes
    with pytest.raises(ProviderError) as again:
        parser.finish(done=True)
    assert again.value.code == error.code
