"""Checkpoint 05: ``FixtureProviderAdapter``, the trust boundary between transport and protocol.

The adapter is an offline provider: it replays a versioned fixture of transport records
(``response_start``, ``text_delta``, ``tool_call``, ``response_end``, ``transport_error``)
as trusted protocol chunks and one ``ModelResponse`` per call. Every record starts as
untrusted data and is inspected before any protocol value is built; wire names never leave
this module.

Construction checks ``schemaVersion: 1`` and snapshots the whole finite response queue (deep
copies of every record), so later changes to the fixture have no effect. A response's
``records`` is a list, or an async record source (any object with ``__aiter__``) opened once
by the call that consumes it, raced against the abort signal and closed quietly if processing
stops early. Every failure is a ``FixtureProviderError`` with one of twelve stable codes;
errors raised by a source itself, even a ``FixtureProviderError`` it made, become
``PROVIDER_INVALID_FIXTURE``. This module imports nothing that can reach a network.

Loading follows one rule at every entry point: fixture text is UTF-8 JSON without a
byte-order mark, at most ``MAX_FIXTURE_BYTES`` (16 MiB) long. ``from_path`` reads at most that
many bytes plus one, so a file that never ends (``/dev/zero``) fails fast instead of exhausting
memory; ``from_json(bytes)`` decodes strict UTF-8 (no UTF-16 or UTF-32 detection); a ``str``
given to ``from_json`` is measured by its UTF-8 form and must have one, so a lone surrogate
code point is refused (written as the JSON escape ``\\ud800`` it is fine everywhere). A
fixture holds at most ``MAX_FIXTURE_RESPONSES`` (10,000) responses and a ``records`` list at
most ``MAX_FIXTURE_RECORDS_PER_RESPONSE`` (100,000) records. Both are checked before any record
is copied or parsed, so an oversized fixture fails at construction rather than being replayed
in full when a call streams it (a replay runs without awaiting); an async record source is
bounded by its consumer instead (the agent loop's chunk limit). Breaking any of these rules is
``PROVIDER_INVALID_FIXTURE``. A path is a ``str`` or an ``os.PathLike``: anything else, notably
``True`` or ``1`` (which ``open()`` would take as a file descriptor, then close), is a
``TypeError``, like every other argument of the wrong type.
"""

from __future__ import annotations

import codecs
from collections import deque
from collections.abc import AsyncIterator
from os import PathLike
from typing import Any, Final, Literal, TypeAlias

from tether._errors import TetherError
from tether._ownership import claim_iterator_once, release_claim, trusted_errors
from tether._producer import fail_producer, start_producer_eagerly
from tether._race import (
    check_signal,
    close_quietly,
    signal_aborted,
    signal_reason,
)
from tether._race_iterator import RacedIterator
from tether._text import is_non_empty
from tether._types import exactly, instance_of, is_dict, is_list, type_of
from tether.abort import AbortSignal, abort_exception
from tether.jsonvalue import (
    JsonObject,
    JsonValue,
    JsonValueError,
    entries,
    freeze_json,
    loads_strict,
)
from tether.protocol import (
    MAX_SAFE_INTEGER,
    AssistantBlock,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    StopReason,
    ToolCallChunk,
)
from tether.protocol import _trusted as trusted
from tether.stream import EventStream

__all__ = ["FixtureProviderAdapter", "FixtureProviderError", "FixtureProviderErrorCode"]

FixtureProviderErrorCode: TypeAlias = Literal[
    "PROVIDER_INVALID_FIXTURE",
    "PROVIDER_EXHAUSTED",
    "PROVIDER_UNKNOWN_EVENT",
    "PROVIDER_INVALID_EVENT",
    "PROVIDER_MISSING_START",
    "PROVIDER_DUPLICATE_START",
    "PROVIDER_MISSING_TERMINAL",
    "PROVIDER_DUPLICATE_TERMINAL",
    "PROVIDER_RESPONSE_MISMATCH",
    "PROVIDER_INVALID_TERMINAL",
    "PROVIDER_ITERATOR_REUSED",
    "PROVIDER_TRANSPORT_ERROR",
]


MAX_FIXTURE_BYTES: Final = 16 * 1024 * 1024
"""Largest fixture text, in UTF-8 bytes, that ``from_path`` and ``from_json`` accept (16 MiB)."""
MAX_FIXTURE_RESPONSES: Final = 10_000
"""Most responses one fixture may queue."""
MAX_FIXTURE_RECORDS_PER_RESPONSE: Final = 100_000
"""Most records in one response's ``records`` list: room for long recorded streams, while
replaying one response (which happens at once, without awaiting) stays well under a second."""

_OWNED = trusted_errors()


class FixtureProviderError(TetherError[FixtureProviderErrorCode]):
    """A fixture or transport record failed the boundary; ``code`` says how.

    ``record_index`` is the position of the offending record (or the record count, for a
    missing terminal); ``provider_code`` is the provider's own code of a ``transport_error``.
    """

    def __init__(
        self,
        code: FixtureProviderErrorCode,
        message: str,
        *,
        record_index: int | None = None,
        provider_code: str | None = None,
    ) -> None:
        super().__init__(code, message)
        self._record_index = record_index
        self._provider_code = provider_code

    @property
    def record_index(self) -> int | None:
        """Where in the response's records the problem is, if it is about one record."""
        return self._record_index

    @property
    def provider_code(self) -> str | None:
        """The provider's code, for ``PROVIDER_TRANSPORT_ERROR``."""
        return self._provider_code


def _error(
    code: FixtureProviderErrorCode,
    message: str,
    *,
    record_index: int | None = None,
    provider_code: str | None = None,
) -> FixtureProviderError:
    """An error the adapter itself raises; only these are trusted when they come back."""
    error = FixtureProviderError(
        code, message, record_index=record_index, provider_code=provider_code
    )
    _OWNED.add(error)
    return error


def _is_owned(error: BaseException) -> bool:
    return type_of(error) is FixtureProviderError and error in _OWNED


_INVALID_FIXTURE: Final = "Fixture could not be inspected safely"
_SOURCE_FAILED: Final = "Async fixture record source failed"


class FixtureProviderAdapter:
    """An offline model that replays a transport fixture through the trust boundary.

    ``FixtureProviderAdapter(fixture)`` takes the parsed fixture (``{"schemaVersion": 1,
    "responses": [{"records": [...]}, ...]}``); ``from_path`` reads a JSON file. Each
    ``stream()`` call consumes the next response. ``call_count`` counts attempted calls;
    ``pending_response_count`` the responses still queued. A call made with an aborted
    signal counts, but leaves its response queued.
    """

    __slots__ = ("_call_count", "_queue")

    def __init__(self, fixture: object) -> None:
        try:
            queue = _snapshot_fixture(fixture)
        except Exception as error:
            raise _error("PROVIDER_INVALID_FIXTURE", _INVALID_FIXTURE) from error
        self._queue: deque[object] = deque(queue)
        self._call_count = 0

    @classmethod
    def from_path(cls, path: str | PathLike[str]) -> FixtureProviderAdapter:
        """Load a fixture from a UTF-8 JSON file of at most ``MAX_FIXTURE_BYTES`` bytes.

        ``PROVIDER_INVALID_FIXTURE`` if the file cannot be read or breaks the loading rules
        (see the module docstring). At most ``MAX_FIXTURE_BYTES + 1`` bytes are read, so an
        endless file fails fast. ``TypeError`` unless ``path`` is a ``str`` or an
        ``os.PathLike``: an ``int`` or ``bool`` would otherwise open (and close) a file
        descriptor such as stdout.
        """
        kind = type_of(path)
        if not issubclass(kind, str) and not callable(getattr(kind, "__fspath__", None)):
            raise TypeError(f"path must be a str or os.PathLike, not {kind.__name__}")
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_FIXTURE_BYTES + 1)
        except (OSError, ValueError) as error:
            raise _error("PROVIDER_INVALID_FIXTURE", _INVALID_FIXTURE) from error
        return cls.from_json(data)

    @classmethod
    def from_json(cls, text: str | bytes | bytearray) -> FixtureProviderAdapter:
        """Load a fixture from JSON text: a ``str``, or UTF-8 ``bytes`` (or ``bytearray``).

        ``PROVIDER_INVALID_FIXTURE`` if it is not a valid fixture or breaks the loading rules
        (strict UTF-8, no byte-order mark, at most ``MAX_FIXTURE_BYTES``; see the module
        docstring); ``NaN`` and ``Infinity`` literals are rejected. The parsed records belong
        to the adapter alone, so they need no further copy; each record is inspected when a
        call streams it, exactly as a snapshot record is.
        """
        try:
            fixture = loads_strict(_fixture_text(text))
            queue = _snapshot_fixture(fixture, owned=True)
        except (ValueError, TypeError, RecursionError) as error:
            raise _error("PROVIDER_INVALID_FIXTURE", _INVALID_FIXTURE) from error
        adapter = cls.__new__(cls)
        adapter._queue = deque(queue)
        adapter._call_count = 0
        return adapter

    @property
    def call_count(self) -> int:
        """How many times ``stream()`` was called."""
        return self._call_count

    @property
    def pending_response_count(self) -> int:
        """How many fixture responses remain queued."""
        return len(self._queue)

    def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> EventStream[ModelChunk, ModelResponse]:
        """Replay the next fixture response for ``request`` as chunks and a response."""
        if type_of(request) is not ModelRequest:
            raise TypeError("request must be a ModelRequest")
        if not instance_of(signal, AbortSignal):
            raise TypeError("signal must be an AbortSignal")
        self._call_count += 1
        stream: EventStream[ModelChunk, ModelResponse] = EventStream()
        queue = self._queue
        if queue and type_of(queue[0]) in _RECORD_LISTS and not signal_aborted(signal):
            _replay(queue.popleft(), request.id, stream, signal)  # data only: nothing to await
            return stream
        start_producer_eagerly(self._produce(stream, request.id, signal))
        return stream

    async def _produce(
        self, stream: EventStream[ModelChunk, ModelResponse], request_id: str, signal: AbortSignal
    ) -> None:
        source: RacedIterator[object] | None = None
        try:
            check_signal(signal)
            if not self._queue:
                raise _error(
                    "PROVIDER_EXHAUSTED", f'No fixture response remains for request "{request_id}"'
                )
            records = self._queue.popleft()
            if type_of(records) in _RECORD_LISTS:
                _replay(records, request_id, stream, signal)
                return
            source = _open_source(records, signal)
            parser = _ResponseParser(request_id)
            response = await _parse_source(source, parser, stream, signal)
        except BaseException as error:
            fail_producer(stream, error, source)  # settles the stream, then closes the source
            return
        stream.finish(response)


class _Missing:
    __slots__ = ()


_MISSING: Final = _Missing()


# --- construction ---------------------------------------------------------------------------


def _fields(value: object, path: str, names: tuple[str, ...]) -> dict[str, Any]:
    """The named fields of an exact ``dict`` with only ``str`` keys, each read once.

    Keys are checked before any lookup, so a caller's key object is never compared.
    """
    if not is_dict(value):
        raise TypeError(f"{path} must be a JSON object")
    document: dict[Any, Any] = value
    found: dict[str, Any] = {}
    for key, item in document.items():
        if type_of(key) is not str:
            raise TypeError(f"{path} must have only string keys")
        if key in names:
            found[key] = item
    return found


def _replay(
    records: Any,
    request_id: str,
    stream: EventStream[ModelChunk, ModelResponse],
    signal: AbortSignal,
) -> None:
    """Parse a list of records (a snapshot or the adapter's own) straight into ``stream``."""
    listed: Any = records.records if type_of(records) is _OwnedRecords else records
    try:
        response = _parse_records(listed, _ResponseParser(request_id), stream, signal)
    except Exception as error:
        stream.fail(error)
        return
    stream.finish(response)


_TOO_LARGE: Final = f"fixture is larger than MAX_FIXTURE_BYTES ({MAX_FIXTURE_BYTES} bytes)"


def _fixture_text(text: object) -> str:
    """The JSON text of a fixture given as ``str`` or UTF-8 bytes, held to the loading rules.

    A ``str`` subclass is read as an exact ``str`` and bytes through a ``memoryview``, so no
    method a subclass overrides runs. Raises ``ValueError`` (``UnicodeError`` included) or
    ``TypeError``.
    """
    kind = type_of(text)
    value: Any = text  # narrowed by ``kind`` below, not by isinstance (no caller code runs)
    if issubclass(kind, str):
        string: str = str.__str__(value)  # an exact str: its own methods cannot be overridden
        if len(string) > MAX_FIXTURE_BYTES:  # every code point takes at least one byte
            raise ValueError(_TOO_LARGE)
        # A lone surrogate has no UTF-8 form: UnicodeEncodeError.
        if len(codecs.utf_8_encode(string, "strict")[0]) > MAX_FIXTURE_BYTES:
            raise ValueError(_TOO_LARGE)
    elif issubclass(kind, bytes | bytearray):
        with memoryview(value) as data:
            if data.nbytes > MAX_FIXTURE_BYTES:
                raise ValueError(_TOO_LARGE)
            string = codecs.utf_8_decode(data, "strict", True)[0]
    else:
        raise TypeError(f"fixture JSON must be str or bytes, not {kind.__name__}")
    if string.startswith("\ufeff"):
        raise ValueError("fixture JSON must not start with a byte-order mark")
    return string


class _OwnedRecords:
    """Records parsed from JSON text by the adapter itself: plain, private, never shared."""

    __slots__ = ("records",)

    def __init__(self, records: list[Any]) -> None:
        self.records = records


_RECORD_LISTS: Final = (tuple, _OwnedRecords)
"""Queue entries that are data: a snapshot tuple of records, or records the adapter owns."""


def _snapshot_fixture(fixture: object, *, owned: bool = False) -> list[object]:
    document = _fields(fixture, "fixture", ("schemaVersion", "responses"))
    version = document.get("schemaVersion")
    if type_of(version) is not int or version != 1:
        raise ValueError("fixture.schemaVersion must be 1")
    responses = document.get("responses")
    if not is_list(responses):
        raise TypeError("fixture.responses must be an array")
    queue: list[object] = []
    entries: list[Any] = responses
    if len(entries) > MAX_FIXTURE_RESPONSES:
        raise ValueError(
            f"fixture.responses must have at most {MAX_FIXTURE_RESPONSES} entries "
            "(MAX_FIXTURE_RESPONSES)"
        )
    for index, response in enumerate(tuple(entries)):
        path = f"fixture.responses[{index}]"
        records = _fields(response, path, ("records",)).get("records", _MISSING)
        if records is _MISSING:
            raise TypeError(f"{path}.records is missing")
        if type_of(records) is list and len(records) > MAX_FIXTURE_RECORDS_PER_RESPONSE:
            raise ValueError(
                f"{path}.records must have at most {MAX_FIXTURE_RECORDS_PER_RESPONSE} records "
                "(MAX_FIXTURE_RECORDS_PER_RESPONSE)"
            )
        if type_of(records) is list and owned:
            queue.append(_OwnedRecords(records))
        elif type_of(records) is list:
            frozen = freeze_json(records, path=f"fixture.responses[{index}].records")
            queue.append(frozen)
        elif _is_async_source(records):
            queue.append(records)
        else:
            raise TypeError(f"fixture.responses[{index}].records must be an array or async source")
    return queue


def _is_async_source(value: object) -> bool:
    kind = type_of(value)
    if kind in (dict, list, tuple, str, bytes):
        return False
    return callable(getattr(kind, "__aiter__", None))


# --- streaming ------------------------------------------------------------------------------


def _open_source(records: object, signal: AbortSignal) -> RacedIterator[object]:
    try:
        iterator: Any = type_of(records).__aiter__(records)
    except Exception as error:
        raise _error(
            "PROVIDER_INVALID_FIXTURE", "Async fixture record source could not be opened"
        ) from error
    if iterator is None or type_of(iterator) in (bool, int, float, str, bytes):
        raise _error("PROVIDER_INVALID_FIXTURE", "Async fixture record source returned no iterator")
    if not claim_iterator_once(iterator):
        raise _error("PROVIDER_ITERATOR_REUSED", "An async fixture iterator may be consumed once")
    try:
        step = getattr(type_of(iterator), "__anext__", None)
    except Exception as error:
        close_quietly(iterator)
        release_claim(iterator)
        raise _error(
            "PROVIDER_INVALID_FIXTURE", "Async fixture iterator next() could not be inspected"
        ) from error
    if not callable(step):
        close_quietly(iterator)
        release_claim(iterator)
        raise _error("PROVIDER_INVALID_FIXTURE", "Async fixture iterator must expose next()")
    typed: AsyncIterator[object] = iterator
    return RacedIterator(typed, signal, claimed=True)


def _parse_records(
    records: tuple[JsonValue, ...] | list[Any],
    parser: _ResponseParser,
    stream: EventStream[ModelChunk, ModelResponse],
    signal: AbortSignal,
) -> ModelResponse:
    # The records are the adapter's own data and parsing them runs no caller code, so the
    # signal cannot change while this loop runs: checking before and after covers it.
    check_signal(signal)
    push = stream.push
    feed = parser.feed
    for index, record in enumerate(records):
        chunk = feed(record, index)
        if chunk is not None:
            push(chunk)
    return parser.finish(len(records), signal)


async def _parse_source(
    source: RacedIterator[object],
    parser: _ResponseParser,
    stream: EventStream[ModelChunk, ModelResponse],
    signal: AbortSignal,
) -> ModelResponse:
    index = 0
    while True:
        check_signal(signal)
        try:
            item = await source.next()
        except StopAsyncIteration:
            break
        except Exception as error:
            if signal_aborted(signal):
                raise abort_exception(signal_reason(signal)) from None
            if _is_owned(error):
                raise
            raise _error("PROVIDER_INVALID_FIXTURE", _SOURCE_FAILED) from error
        check_signal(signal)
        try:
            record = freeze_json(item)
        except JsonValueError as error:
            raise _error(
                "PROVIDER_INVALID_EVENT",
                f"Transport record[{index}] could not be inspected safely",
                record_index=index,
            ) from error
        chunk = parser.feed(record, index)
        if chunk is not None:
            check_signal(signal)
            stream.push(chunk)
        index += 1
    return parser.finish(index, signal)


_STOP_REASONS: Final[dict[object, StopReason]] = {"stop": "stop", "tool_call": "toolCall"}
_USAGE_ALIASES: Final = (("inputTokens", "input_tokens"), ("outputTokens", "output_tokens"))


class _ResponseParser:
    """The state of one response being parsed: start ID, content so far, terminal."""

    __slots__ = ("content", "request_id", "response_id", "terminal", "tool_call_ids")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.response_id: str | None = None
        self.content: list[AssistantBlock] = []
        self.tool_call_ids: set[str] = set()
        self.terminal: ModelResponse | None = None

    def feed(self, record: Any, index: int) -> ModelChunk | None:
        """Advance the state by one record; returns the chunk to emit, if any.

        A record is a snapshot ``JsonObject``, or a plain ``dict`` the adapter parsed itself.
        """
        record_type = type_of(record)
        if record_type is dict:
            fields: dict[str, Any] = record
        elif record_type is JsonObject:
            fields = entries(record)
        else:
            raise _error(
                "PROVIDER_INVALID_EVENT",
                f"Transport record[{index}] must be an object",
                record_index=index,
            )
        kind = fields.get("type")
        if kind == "text_delta" and self.response_id is not None and self.terminal is None:
            text: Any = fields.get("text")  # the common record, checked without detours
            if type_of(text) is str:
                self.content.append(trusted.text_block(text))
                return trusted.text_delta_chunk(self.request_id, text)
        if not is_non_empty(kind):
            raise _error(
                "PROVIDER_INVALID_EVENT",
                "Transport record type must be a string",
                record_index=index,
            )
        if self.terminal is not None:
            if kind == "response_end":
                raise _error(
                    "PROVIDER_DUPLICATE_TERMINAL",
                    "Fixture response contains more than one response_end record",
                    record_index=index,
                )
            raise _error(
                "PROVIDER_INVALID_TERMINAL",
                f'Transport record "{kind}" appears after response_end',
                record_index=index,
            )
        if kind == "text_delta":
            self._require_start(kind, index)
            text = fields.get("text")
            if type_of(text) is not str:
                raise _invalid("text_delta.text must be a string", index)
            self.content.append(trusted.text_block(text))
            return trusted.text_delta_chunk(self.request_id, text)
        if kind == "tool_call":
            self._require_start(kind, index)
            return self._tool_call(fields, index)
        if kind == "response_start":
            self._start(fields, index)
            return None
        if kind == "response_end":
            self._require_start(kind, index)
            self._end(fields, index)
            return None
        if kind == "transport_error":
            code = fields.get("code")
            message = fields.get("message")
            if not is_non_empty(code) or not is_non_empty(message):
                raise _invalid("transport_error code and message must be non-empty strings", index)
            raise _error(
                "PROVIDER_TRANSPORT_ERROR", message, record_index=index, provider_code=code
            )
        raise _error(
            "PROVIDER_UNKNOWN_EVENT",
            f'Unknown provider transport record type "{kind}"',
            record_index=index,
        )

    def _require_start(self, kind: str, index: int) -> None:
        if self.response_id is None:
            raise _error(
                "PROVIDER_MISSING_START",
                f'Transport record "{kind}" appeared before response_start',
                record_index=index,
            )

    def _start(self, fields: dict[str, Any], index: int) -> None:
        if self.response_id is not None:
            raise _error(
                "PROVIDER_DUPLICATE_START",
                "Fixture response contains more than one response_start record",
                record_index=index,
            )
        response_id = fields.get("responseId")
        if not is_non_empty(response_id):
            raise _invalid("response_start.responseId must be a non-empty string", index)
        if fields.get("role") != "assistant":
            raise _invalid('response_start.role must be "assistant"', index)
        self.response_id = response_id

    def _tool_call(self, fields: dict[str, Any], index: int) -> ToolCallChunk:
        call_id = fields.get("id")
        if not is_non_empty(call_id):
            raise _invalid("tool_call.id must be a non-empty string", index)
        name = fields.get("name")
        if not is_non_empty(name):
            raise _invalid("tool_call.name must be a non-empty string", index)
        arguments = fields.get("arguments")
        if type_of(arguments) is dict:  # parsed by the adapter: freeze (and check) it now
            try:
                arguments = freeze_json(arguments)
            except JsonValueError as error:
                raise _invalid(
                    "tool_call.arguments must be a non-null JSON object", index
                ) from error
        if type_of(arguments) is not JsonObject:
            raise _invalid("tool_call.arguments must be a non-null JSON object", index)
        if call_id in self.tool_call_ids:
            raise _invalid(f'Tool-call ID "{call_id}" must be unique within a response', index)
        self.tool_call_ids.add(call_id)
        call = trusted.tool_call(call_id, name, arguments)
        self.content.append(call)
        return trusted.tool_call_chunk(self.request_id, call)

    def _end(self, fields: dict[str, Any], index: int) -> None:
        response_id = fields.get("responseId")
        if not is_non_empty(response_id):
            raise _invalid("response_end.responseId must be a non-empty string", index)
        if response_id != self.response_id:
            raise _error(
                "PROVIDER_RESPONSE_MISMATCH",
                f'response_end ID "{response_id}" does not match response_start ID '
                f'"{self.response_id}"',
                record_index=index,
            )
        stop_reason = _STOP_REASONS.get(fields.get("stopReason", _MISSING))
        if stop_reason is None:
            raise _invalid('response_end.stopReason must be "stop" or "tool_call"', index)
        usage = _usage(fields.get("usage", _MISSING), index)
        has_calls = bool(self.tool_call_ids)
        if stop_reason == "toolCall" and not has_calls:
            raise _error(
                "PROVIDER_INVALID_TERMINAL",
                "A tool_call terminal must contain at least one Tool call",
                record_index=index,
            )
        if stop_reason == "stop" and has_calls:
            raise _error(
                "PROVIDER_INVALID_TERMINAL",
                "A stop terminal must not contain Tool calls",
                record_index=index,
            )
        message = trusted.assistant_message(f"message-{response_id}", tuple(self.content))
        self.terminal = trusted.model_response(
            response_id, self.request_id, message, stop_reason, usage
        )

    def finish(self, record_count: int, signal: AbortSignal) -> ModelResponse:
        """The terminal response once the records ran out."""
        terminal = self.terminal
        if terminal is None:
            raise _error(
                "PROVIDER_MISSING_TERMINAL",
                "Fixture response ended without a response_end record",
                record_index=record_count,
            )
        check_signal(signal)
        return terminal


def _usage(value: Any, index: int) -> ModelUsage:
    value_type = type_of(value)
    if value_type is JsonObject:
        usage: dict[str, Any] = entries(value)
    elif value_type is dict:
        usage = value
    else:
        raise _invalid("response_end.usage must be an object", index)
    counts: list[object] = []
    for camel, snake in _USAGE_ALIASES:
        if camel in usage and snake in usage:
            raise _invalid("response_end.usage must not mix duplicate token fields", index)
        counts.append(usage[camel] if camel in usage else usage.get(snake, _MISSING))
    tokens: list[int] = []
    for count in counts:
        if not exactly(count, int) or not 0 <= count <= MAX_SAFE_INTEGER:
            raise _invalid(
                "response_end.usage token counts must be non-negative safe integers", index
            )
        tokens.append(count)
    return ModelUsage(input_tokens=tokens[0], output_tokens=tokens[1])


def _invalid(message: str, index: int) -> FixtureProviderError:
    return _error("PROVIDER_INVALID_EVENT", message, record_index=index)
