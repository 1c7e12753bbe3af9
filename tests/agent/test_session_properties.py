"""Property tests for session files: the parser fails only with ``SessionStoreError`` on any
bytes, torn files load to their last whole record (and a writer cuts them back to it), the
incomplete-prefix recognizer accepts
every proper prefix of a JSON object, the compiled message decoder agrees with ``from_json``,
the incremental tool linkage agrees with ``validate_transcript``, a message holding a
surrogate is written with ``\\u`` escapes (any other unescaped) and reloads to the same
UTF-16 text, and any sequence of
appends, compactions, moves, flushes and reloads gives the tree an in-memory model predicts,
with the file always holding exactly what the store acknowledged."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import tempfile
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from support import examples, plain_utf16_text
from tether import (
    AssistantMessage,
    JsonObject,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    from_json,
    to_json,
)
from tether.agent import session as session_module
from tether.agent.session import (
    CompactionEntry,
    CompactionSummary,
    MessageEntry,
    SessionStore,
    SessionStoreError,
    SessionStoreOptions,
    SessionTree,
    parse_session,
)
from tether.agent.session.format import _message_bytes  # pyright: ignore[reportPrivateUsage]
from tether.protocol import ProtocolJsonError
from tether.protocol.transcript import validate_transcript

incomplete_prefix = session_module._is_incomplete_object_prefix  # pyright: ignore[reportPrivateUsage]
message_from_json = session_module._message_from_json  # pyright: ignore[reportPrivateUsage]
Links = session_module._Links  # pyright: ignore[reportPrivateUsage]

T = TypeVar("T")

HEADER = '{"type":"session","version":1,"id":"s","createdAt":"2026-08-26T00:00:01.000Z"}'


def line(entry_id: str, parent: str | None, message: dict[str, Any]) -> str:
    record = {
        "type": "entry",
        "version": 1,
        "id": entry_id,
        "parentId": parent,
        "timestamp": "t",
        "message": message,
    }
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


def sample_file() -> bytes:
    messages: list[dict[str, Any]] = [
        {"id": "m1", "role": "user", "content": "héllo ✓ 😀"},
        {
            "id": "m2",
            "role": "assistant",
            "content": [
                {"type": "thinking", "text": "ok", "signature": "sig"},
                {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"p": [1, 2.5]}},
            ],
        },
        {
            "id": "m3",
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "read",
            "content": "x\ny",
            "isError": False,
        },
    ]
    lines = [HEADER]
    parent = None
    for index, message in enumerate(messages):
        lines.append(line(f"e{index}", parent, message))
        parent = f"e{index}"
    return ("\n".join(lines) + "\n").encode()


SAMPLE = sample_file()


# --- the parser ----------------------------------------------------------------------------------


def parse_or_error(data: bytes) -> str | int:
    """The number of records, or the error code; anything but a ``SessionStoreError`` fails."""
    try:
        return len(parse_session(data).entries)
    except SessionStoreError as error:
        return error.code


@given(st.binary(max_size=600))
def test_arbitrary_bytes_raise_only_session_errors(data: bytes) -> None:
    parse_or_error(data)
    parse_or_error(HEADER.encode() + b"\n" + data)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(SAMPLE)
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data)))
        choice = draw(st.sampled_from(["flip", "insert", "delete", "cut"]))
        if choice == "flip" and position < len(data):
            data[position] = draw(st.integers(0, 255))
        elif choice == "insert":
            data[position:position] = draw(
                st.sampled_from([b"{", b"}", b",", b'"', b"\\", b"\n", b"\r", b"\xc3", b"\\ud800"])
            )
        elif choice == "delete":
            del data[position : position + draw(st.integers(1, 8))]
        else:
            del data[position:]
    return bytes(data)


@given(mutated())
def test_mutated_files_raise_only_session_errors(data: bytes) -> None:
    parse_or_error(data)


def whole_lines_in(cut: int) -> tuple[int, int]:
    """How many whole lines ``SAMPLE[:cut]`` holds, and where the last of them ends."""
    ends = [index + 1 for index, byte in enumerate(SAMPLE) if byte == 0x0A]
    whole = [end for end in ends if end <= cut]
    return len(whole), (whole[-1] if whole else 0)


@given(st.integers(0, len(SAMPLE)))
def test_a_torn_file_loads_to_its_last_whole_record(cut: int) -> None:
    data = SAMPLE[:cut]
    outcome = parse_or_error(data)
    ends = [index + 1 for index, byte in enumerate(SAMPLE) if byte == 0x0A]
    whole_lines, _ = whole_lines_in(cut)
    if whole_lines == 0:
        # inside the header: incomplete, or a complete header without its newline
        assert outcome in ("SESSION_INVALID_HEADER", 0) or cut == ends[0] - 1
        return
    expected = whole_lines - 1  # a tear, even one inside a multi-byte character, is ignored
    if whole_lines < len(ends) and cut == ends[whole_lines] - 1:
        expected += 1  # a whole record without its newline
    assert outcome == expected


@settings(max_examples=examples(40))
@given(st.integers(len(HEADER) + 1, len(SAMPLE)))
def test_a_writer_cuts_a_torn_file_back_to_its_last_whole_record(cut: int) -> None:
    ends = [index + 1 for index, byte in enumerate(SAMPLE) if byte == 0x0A]
    whole_lines, end = whole_lines_in(cut)
    complete = cut == end or cut + 1 in ends  # whole lines, or a last one without "\n"

    async def load(path: Path) -> tuple[int, int | None]:
        store = await SessionStore.load(path)
        await store.close()
        recovered = store.recovered
        return len(store.entries), None if recovered is None else recovered.dropped_bytes

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "session.jsonl"
        path.write_bytes(SAMPLE[:cut])
        count, dropped = asyncio.run(load(path))
        assert count == whole_lines - 1 + (cut != end and complete)
        if complete:
            assert dropped is None
            assert path.read_bytes() == SAMPLE[:cut]
        else:
            assert dropped == cut - end
            assert path.read_bytes() == SAMPLE[:end]
        assert sorted(p.name for p in Path(folder).iterdir()) == ["session.jsonl"]


# --- the incomplete-prefix recognizer ----------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=5)


@given(json_objects, st.sampled_from([None, 0, 2]), st.booleans())
def test_every_proper_prefix_of_an_object_is_incomplete(
    value: dict[str, Any], indent: int | None, ascii_only: bool
) -> None:
    separators = (",", ":") if indent is None else None
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=ascii_only)
    stride = max(1, len(text) // 40)  # every cut of a short text, 40 or so of a long one
    for cut in {*range(1, len(text), stride), *range(max(1, len(text) - 4), len(text))}:
        assert incomplete_prefix(text[:cut]), text[:cut]
        assert incomplete_prefix(" \t\r\n" + text[:cut])
    assert not incomplete_prefix(text)
    assert not incomplete_prefix(text + " x")
    assert not incomplete_prefix(text[1:])  # not an object
    # a torn record line in a file is ignored when it is such a prefix
    for cut in range(1, len(text) if "\n" not in text else 1, max(1, len(text) // 7)):
        assert parse_or_error((HEADER + "\n" + text[:cut]).encode()) == 0


@given(st.text(alphabet='{}[]":,-+.0123456789eEtrufalsn \\x\u00e9', max_size=30))
def test_the_recognizer_never_accepts_complete_json(text: str) -> None:
    verdict = incomplete_prefix(text)
    if verdict:
        try:
            json.loads(text)
        except ValueError:
            pass
        else:
            raise AssertionError(f"{text!r} is complete JSON")


# --- the message decoder against from_json -------------------------------------------------

ids = st.sampled_from(["a", "b", "c", " ", ""])
blocks = st.one_of(
    st.builds(TextBlock, text=st.text(max_size=5)),
    st.builds(
        ThinkingBlock,
        text=st.text(max_size=5),
        signature=st.none() | st.text(max_size=5),
        redacted=st.booleans(),
    ),
    st.builds(
        ToolCall,
        id=st.sampled_from(["c1", "c2"]),
        name=st.sampled_from(["read", "grep"]),
        arguments=json_objects.map(JsonObject),
    ),
)
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(UserMessage, id=st.sampled_from(["m1", "m2"]), content=st.text(max_size=8)),
    st.builds(
        AssistantMessage,
        id=st.sampled_from(["m1", "m2"]),
        content=st.lists(blocks, max_size=3).map(tuple),
    ),
    st.builds(
        ToolResultMessage,
        id=st.sampled_from(["m1", "m2"]),
        tool_call_id=st.sampled_from(["c1", "c2"]),
        tool_name=st.sampled_from(["read", "grep"]),
        content=st.text(max_size=8),
        is_error=st.booleans(),
    ),
)


def containers(value: Any) -> list[Any]:
    """Every dict and list inside ``value`` (``value`` included)."""
    found: list[Any] = []
    if isinstance(value, dict):
        found.append(value)
        for item in cast("dict[str, Any]", value).values():
            found.extend(containers(item))
    elif isinstance(value, list):
        found.append(value)
        for item in cast("list[Any]", value):
            found.extend(containers(item))
    return found


@st.composite
def message_json(draw: st.DrawFn) -> dict[str, Any]:
    data: dict[str, Any] = cast("dict[str, Any]", to_json(draw(messages)))
    for _ in range(draw(st.integers(0, 2))):
        target = draw(st.sampled_from(containers(data)))
        replacement = draw(st.none() | st.booleans() | st.integers() | st.text(max_size=3) | ids)
        if isinstance(target, dict) and target:
            key = draw(st.sampled_from(sorted(cast("dict[str, Any]", target))))
            action = draw(st.sampled_from(["delete", "replace", "add", "null"]))
            if action == "delete":
                del target[key]
            elif action == "replace":
                target[key] = replacement
            elif action == "add":
                target[draw(st.sampled_from(["extra", "signature", "redacted", "isError"]))] = (
                    replacement
                )
            else:
                target[key] = None
        elif isinstance(target, list) and target:
            items = cast("list[Any]", target)
            items[draw(st.integers(0, len(items) - 1))] = replacement
    return data


def written_keys_present(encoded: Any, data: Any) -> bool:
    """Every key ``to_json`` writes is in the source, at every level."""
    if isinstance(encoded, dict):
        source = cast("dict[str, Any]", data)
        return all(
            key in source and written_keys_present(item, source[key])
            for key, item in cast("dict[str, Any]", encoded).items()
        )
    if isinstance(encoded, list):
        return all(
            written_keys_present(a, b)
            for a, b in zip(cast("list[Any]", encoded), cast("list[Any]", data), strict=True)
        )
    return True


@given(message_json())
def test_the_compiled_decoder_agrees_with_from_json(data: dict[str, Any]) -> None:
    try:
        reference: Message | None = from_json(data, Message)
    except ProtocolJsonError:
        reference = None
    if reference is not None and not written_keys_present(to_json(reference), data):
        reference = None  # the file format requires every always-written field
    code: str | None = None
    try:
        decoded: Message | None = message_from_json(data)
    except SessionStoreError as error:
        code = error.code
        decoded = None
    assert code in (None, "SESSION_INVALID_MESSAGE")
    assert decoded == reference
    if decoded is not None:
        assert type(decoded) is type(reference)
        assert to_json(decoded) == to_json(reference)


# --- the usual line's shorter route against the plain record parser -------------------------

parse_record = vars(session_module.parse)["_parse_record"]
quick_entry = vars(session_module.parse)["_quick_entry"]
role_decoders = vars(session_module.decoder)["_role_decoders"]
IMAGE_REF: dict[str, object] = {
    "type": "imageRef",
    "sha256": "0" * 64,
    "mediaType": "image/png",
    "width": 1,
    "height": 1,
    "size": 1,
}
envelope_values: st.SearchStrategy[object] = st.sampled_from(
    ["e1", " e", "\u00a0e", "\ufeff", "", " ", "\t", 1, 1.0, 2, True, None, [], {}, "entry"]
)


@st.composite
def entry_records(draw: st.DrawFn) -> object:
    """An entry record around a (mutated) message, one envelope field often mutated."""
    record: dict[str, Any] = {
        "type": "entry",
        "version": 1,
        "id": "e1",
        "parentId": draw(st.sampled_from([None, "p"])),
        "timestamp": "t",
        "message": draw(message_json()),
    }
    if draw(st.booleans()):
        key = draw(st.sampled_from([*sorted(record), "extra"]))
        if draw(st.integers(0, 4)):
            record[key] = draw(envelope_values)
        else:
            record.pop(key, None)
    if not draw(st.integers(0, 4)) and isinstance(record.get("message"), dict):
        record["message"]["images"] = draw(st.sampled_from([[], None, "x", [IMAGE_REF]]))
    return draw(st.sampled_from([record, record, record, [record], None]))


def outcome_of(parse: Callable[[object], object], value: object) -> object:
    try:
        return parse(value)
    except SessionStoreError as error:
        return (error.code, str(error))


@settings(max_examples=examples(300))
@given(entry_records())
def test_the_quick_entry_route_agrees_with_the_plain_parser(value: object) -> None:
    loader = vars(session_module.blobs)["_ImageLoader"](None)
    plain = outcome_of(lambda data: parse_record(data, False, loader), value)
    quick = outcome_of(lambda data: quick_entry(data, role_decoders()), value)
    if quick is not None:  # it took the value: the same record, or the same error
        assert quick == plain
        assert type(quick) is type(plain)


@given(messages, message_json())
def test_the_role_decoders_agree_with_the_message_decoder(
    message: Message, data: dict[str, Any]
) -> None:
    decoders = role_decoders()
    assert decoders[to_json(message)["role"]](to_json(message)) == message
    role = data.get("role")
    if type(role) is str and role in decoders:
        assert outcome_of(decoders[role], data) == outcome_of(message_from_json, data)


# --- text holding surrogates: written escaped, reloaded the same ------------------------------

SURROGATE_TEXT = st.lists(
    st.sampled_from(
        ["a", "\u00e9", '"', "\\", "\ud800", "\udbff", "\udc00", "\udfff", "\U0001f600"]
    ),
    max_size=6,
).map("".join) | st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=6)
surrogate_blocks = st.one_of(
    st.builds(TextBlock, text=SURROGATE_TEXT),
    st.builds(ThinkingBlock, text=SURROGATE_TEXT, signature=st.none() | SURROGATE_TEXT),
    st.builds(
        ToolCall,
        id=st.just("c1"),
        name=st.just("read"),
        arguments=st.dictionaries(SURROGATE_TEXT, SURROGATE_TEXT, max_size=2).map(JsonObject),
    ),
)
surrogate_messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(UserMessage, id=st.just("m1"), content=SURROGATE_TEXT),
    st.builds(
        AssistantMessage,
        id=st.just("m1"),
        content=st.lists(surrogate_blocks, max_size=3).map(tuple),
    ),
    st.builds(
        ToolResultMessage,
        id=st.just("m1"),
        tool_call_id=st.just("c1"),
        tool_name=st.just("read"),
        content=SURROGATE_TEXT,
    ),
)


def has_surrogate(value: Any) -> bool:
    """Whether any string in the JSON value ``value`` (keys too) holds a surrogate code point."""
    if isinstance(value, str):
        return any(0xD800 <= ord(char) <= 0xDFFF for char in value)
    if isinstance(value, dict):
        items = cast(dict[str, Any], value).items()
        return any(has_surrogate(key) or has_surrogate(item) for key, item in items)
    if isinstance(value, list):
        return any(has_surrogate(item) for item in cast(list[Any], value))
    return False


def joined(value: Any) -> Any:
    """``value`` with each surrogate pair written as two code points joined into the
    character it spells (a plain loop), as JSON's ``\\ud83d\\ude00`` escapes read back."""
    if isinstance(value, str):
        return plain_utf16_text(value)
    if isinstance(value, dict):
        return {joined(key): joined(item) for key, item in cast(dict[str, Any], value).items()}
    if isinstance(value, list):
        return [joined(item) for item in cast(list[Any], value)]
    return value


message_bytes: Callable[[Message], bytes] = _message_bytes


@given(surrogate_messages)
def test_a_message_is_written_as_plain_utf8_or_else_as_ascii_escapes(message: Message) -> None:
    """The writer's two paths against the plain rule: a message whose text UTF-8 can encode
    is its compact JSON in UTF-8, unescaped (the fast path); any other is the same JSON with
    ``ensure_ascii``; either reads back as the message, each pair written as two code points
    joined (the same UTF-16 text)."""
    data = to_json(message)
    if has_surrogate(data):
        expected = json.dumps(data, separators=(",", ":")).encode("ascii")
    else:
        expected = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    written = message_bytes(message)
    assert written == expected
    assert message_from_json(json.loads(written.decode("utf-8"))) == from_json(
        joined(data), Message
    )


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(SURROGATE_TEXT, st.lists(surrogate_blocks, max_size=2)), max_size=4))
def test_messages_holding_surrogates_reload_from_the_file_as_they_were(
    turns: list[tuple[str, list[Any]]],
) -> None:
    sent: list[Message] = []
    for number, (text, content) in enumerate(turns):
        sent.append(UserMessage(id=f"u{number}", content=text))
        calls = [block for block in content if not isinstance(block, ToolCall)]
        sent.append(AssistantMessage(id=f"a{number}", content=tuple(calls)))

    async def round_trip(path: Path) -> list[Message]:
        store = await SessionStore.create(path)
        previous: str | None = None
        for message in sent:
            previous = (await store.append(previous, message)).id
        await store.close()
        loaded = await SessionStore.load(path)
        await loaded.close()
        return [entry.message for entry in loaded.entries if isinstance(entry, MessageEntry)]

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "session.jsonl"
        reloaded = asyncio.run(round_trip(path))
        for line in path.read_bytes().splitlines():
            json.loads(line.decode("utf-8"))  # every line is UTF-8 JSON
    assert reloaded == [from_json(joined(to_json(message)), Message) for message in sent]


# --- incremental linkage against validate_transcript -----------------------------------------

call_ids = st.sampled_from(["c1", "c2", "c3"])
names = st.sampled_from(["read", "grep"])
linkage_messages: st.SearchStrategy[Message] = st.one_of(
    st.just(UserMessage(id="u", content="x")),
    st.lists(st.tuples(call_ids, names), max_size=3).map(
        lambda calls: AssistantMessage(
            id="a",
            content=tuple(ToolCall(id=i, name=n, arguments=JsonObject()) for i, n in calls),
        )
    ),
    st.tuples(call_ids, names).map(
        lambda pair: ToolResultMessage(id="r", tool_call_id=pair[0], tool_name=pair[1], content="")
    ),
)


def linkage_problems(transcript: list[Message]) -> list[str]:
    return [d.code for d in validate_transcript(transcript) if d.code != "MISSING_TOOL_RESULT"]


@given(st.lists(linkage_messages, max_size=12))
def test_incremental_linkage_agrees_with_validate_transcript(sequence: list[Message]) -> None:
    links = Links()
    accepted: list[Message] = []
    for message in sequence:
        expected = linkage_problems([*accepted, message])
        problem = links.problem(message)
        assert (problem is not None) == bool(expected), (accepted, message, expected)
        if problem is None:
            links.add(message)
            accepted.append(message)
        else:
            assert problem in expected


# --- the index's one-pass route against check and add --------------------------------------

Index = vars(session_module.linkage)["_Index"]


@st.composite
def record_trees(draw: st.DrawFn) -> list[MessageEntry | CompactionEntry]:
    """Records in file order, each under no parent, the previous one or an earlier one
    (forks, so tips fall out of the cache), some of them compactions."""
    records: list[MessageEntry | CompactionEntry] = []
    for number in range(draw(st.integers(0, 40))):
        earlier = [record.id for record in records]
        parent = draw(st.sampled_from([None, *earlier[-1:], *earlier])) if earlier else None
        if earlier and not draw(st.integers(0, 7)):
            records.append(
                CompactionEntry(
                    id=f"e{number}",
                    parent_id=parent,
                    timestamp="t",
                    summary=CompactionSummary(id="s", content="x"),
                    first_kept_entry_id=draw(st.sampled_from([None, *earlier])),
                    units_before=1,
                    units_after=1,
                )
            )
        else:
            message = draw(linkage_messages)
            records.append(
                MessageEntry(id=f"e{number}", parent_id=parent, timestamp="t", message=message)
            )
    return records


def index_state(index: Any) -> object:
    """What an index holds: the records, the IDs, and each cached tip's links in order."""
    tips = [(tip, dict(links.calls), set(links.answered)) for tip, links in index.tips.items()]
    return [record.id for record in index.entries], sorted(index.by_id), tips


@given(record_trees())
def test_the_index_extend_route_agrees_with_check_then_add(
    records: list[MessageEntry | CompactionEntry],
) -> None:
    plain, quick = Index(), Index()

    def by_check_and_add(entry: object) -> object:
        return plain.add(entry, plain.check(entry, "SESSION_INVALID_RECORD"))

    def by_extend(entry: object) -> object:
        return quick.extend(entry, "SESSION_INVALID_RECORD")

    for record in records:
        if record.parent_id is not None and record.parent_id not in plain.by_id:
            continue  # under a refused record: the parser refuses it before the index
        assert outcome_of(by_extend, record) == outcome_of(by_check_and_add, record)
        assert index_state(quick) == index_state(plain)


# --- the stateful model ------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """The model's record: its ID, parent, and a message or a compaction."""

    id: str
    parent: str | None
    message: Message | None
    summary: str | None = None
    first_kept: str | None = None


def deterministic() -> SessionStoreOptions:
    counter = itertools.count(1)
    return SessionStoreOptions(
        session_id="session-001",
        id_factory=lambda: f"entry-{next(counter):04d}",
        clock=lambda: "2026-08-26T00:00:00.000Z",
    )


class SessionMachine(RuleBasedStateMachine):
    """Drives a real store and tree in a temp directory next to a list of ``Node`` values."""

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.folder = Path(tempfile.mkdtemp(prefix="tether-session-"))
        self.path = self.folder / "session.jsonl"
        self.options = deterministic()
        self.store = self.runner.run(SessionStore.create(self.path, self.options))
        self.tree = SessionTree(self.store)
        self.nodes: list[Node] = []
        self.leaf: str | None = None
        self.serial = itertools.count(1)

    def teardown(self) -> None:
        self.runner.run(self.store.close())
        self.runner.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- the model --

    def path_of(self, leaf: str | None) -> list[Node]:
        by_id = {node.id: node for node in self.nodes}
        path: list[Node] = []
        while leaf is not None:
            node = by_id[leaf]
            path.append(node)
            leaf = node.parent
        return path[::-1]

    def context_of(self, leaf: str | None) -> tuple[str | None, list[Message]]:
        path = self.path_of(leaf)
        positions = [index for index, node in enumerate(path) if node.message is None]
        if not positions:
            return None, [node.message for node in path if node.message is not None]
        last = positions[-1]
        compaction = path[last]
        start = last
        for index, node in enumerate(path[:last]):
            if node.id == compaction.first_kept:
                start = index
        kept = [node.message for node in path[start:] if node.message is not None]
        return compaction.summary, kept

    # -- operations --

    def settle(self, work: Coroutine[Any, Any, T]) -> tuple[T | None, str | None]:
        """Run ``work``: its value, or ``None`` and the ``SessionStoreError`` code."""
        try:
            return self.runner.run(work), None
        except SessionStoreError as error:
            return None, error.code

    def attempt(self, parent: str | None, message: Message, via_tree: bool) -> None:
        _, context = self.context_of(parent)
        valid = not linkage_problems([*context, message])
        work = self.tree.append(message) if via_tree else self.store.append(parent, message)
        entry, code = self.settle(work)
        if entry is None:
            assert not valid
            assert code == "SESSION_INVALID_TOOL_LINKAGE"
            return
        assert valid, message
        assert entry.parent_id == parent
        self.nodes.append(Node(entry.id, parent, message))
        if via_tree:
            self.leaf = entry.id

    def message_id(self) -> str:
        return f"message-{next(self.serial)}"

    @rule(text=st.text(max_size=6))
    def append_user(self, text: str) -> None:
        self.attempt(self.leaf, UserMessage(id=self.message_id(), content=text), True)

    @rule(calls=st.lists(st.tuples(call_ids, names), max_size=2), text=st.text(max_size=4))
    def append_assistant(self, calls: list[tuple[str, str]], text: str) -> None:
        content = (
            ThinkingBlock(text=text, signature="sig"),
            *(ToolCall(id=i, name=n, arguments=JsonObject({"n": 1})) for i, n in calls),
        )
        self.attempt(self.leaf, AssistantMessage(id=self.message_id(), content=content), True)

    @rule(call=call_ids, name=names)
    def append_result(self, call: str, name: str) -> None:
        message = ToolResultMessage(
            id=self.message_id(), tool_call_id=call, tool_name=name, content="ok"
        )
        self.attempt(self.leaf, message, True)

    @precondition(lambda self: bool(self.nodes))
    @rule(data=st.data(), call=call_ids)
    def append_elsewhere(self, data: st.DataObject, call: str) -> None:
        """A fork under any record, through the store (the tree's leaf stays)."""
        parent = data.draw(st.sampled_from([node.id for node in self.nodes]))
        message = ToolResultMessage(
            id=self.message_id(), tool_call_id=call, tool_name="read", content="x"
        )
        self.attempt(parent, message, False)

    @rule(data=st.data())
    def append_compaction(self, data: st.DataObject) -> None:
        path_ids = [node.id for node in self.path_of(self.leaf)]
        everyone = [node.id for node in self.nodes]
        first_kept = data.draw(
            st.none() | st.sampled_from(path_ids or [None]) | st.sampled_from(everyone or [None])
        )
        summary = f"summary-{next(self.serial)}"
        expected: str | None = None
        if first_kept is not None and first_kept not in path_ids:
            expected = "SESSION_ENTRY_NOT_FOUND"
        else:
            start = path_ids.index(first_kept) if first_kept is not None else len(path_ids)
            kept = [node.message for node in self.path_of(self.leaf)[start:] if node.message]
            if linkage_problems(kept):
                expected = "SESSION_INVALID_TOOL_LINKAGE"
        entry, code = self.settle(
            self.tree.append_compaction(
                summary_id=summary,
                summary=f"text of {summary}",
                first_kept_entry_id=first_kept,
                units_before=10,
                units_after=2,
            )
        )
        assert code == expected
        if entry is None:
            return
        self.nodes.append(Node(entry.id, self.leaf, None, summary, first_kept))
        self.leaf = entry.id

    @rule(data=st.data())
    def move(self, data: st.DataObject) -> None:
        target = data.draw(st.none() | st.sampled_from([node.id for node in self.nodes] or [None]))
        self.runner.run(self.tree.move_to(target))
        self.leaf = target

    @rule()
    def flush(self) -> None:
        before = self.path.read_bytes()
        self.runner.run(self.store.flush())
        assert self.path.read_bytes() == before  # appends are durable: nothing left to write

    @rule()
    def reload(self) -> None:
        self.runner.run(self.store.close())
        store = self.runner.run(SessionStore.load(self.path, self.options))
        assert store.recovered is None
        assert store.entries == self.store.entries
        assert store.header == self.store.header
        self.store = store
        self.tree = SessionTree(store)
        self.leaf = self.nodes[-1].id if self.nodes else None

    # -- the invariants --

    @invariant()
    def matches_the_model(self) -> None:
        entries = self.store.entries
        assert [(e.id, e.parent_id) for e in entries] == [(n.id, n.parent) for n in self.nodes]
        for entry, node in zip(entries, self.nodes, strict=True):
            if node.message is None:
                assert type(entry) is CompactionEntry
                assert entry.summary == CompactionSummary(
                    id=cast(str, node.summary), content=f"text of {node.summary}"
                )
                assert entry.first_kept_entry_id == node.first_kept
            else:
                assert type(entry) is MessageEntry
                assert entry.message == node.message
        assert self.tree.active_leaf_id == self.leaf
        assert [e.id for e in self.tree.active_entries] == [n.id for n in self.path_of(self.leaf)]
        summary, context = self.context_of(self.leaf)
        active = self.tree.active_context()
        assert (active.summary.id if active.summary else None) == summary
        assert list(active.messages) == context
        # The file holds exactly what was acknowledged, nothing else.
        assert parse_session(self.path.read_bytes()).entries == entries


TestSessionMachine = SessionMachine.TestCase
TestSessionMachine.settings = settings(
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
