"""The tool layer for real models: per-tool output limits, text output, ``ToolRegistry.specs()``
and the ``@tool`` upgrades (sync functions in a worker thread, defaults in the schema, enums,
``.fn``, recursive types rejected), plus the un-awaited-coroutine guard of ``execute_tool_call``.

Text a tool returns as an exact ``str`` is sent as it is (never JSON-quoted), capped at the
tool's ``output_limit`` with the serializer's truncation rule; everything else goes through the
bounded serializer under the same cap; error results keep their JSON form and the workshop's
cap.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import enum
import gc
import inspect
import json
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypedDict, cast

import pytest

from support import turns
from tether._base.exact_types import is_awaitable
from tether._base.strings import code_points
from tether.abort import AbortController, AbortSignal
from tether.jsonvalue import JsonObject, freeze_json, thaw_json
from tether.protocol import (
    Invalid,
    ToolCall,
    ToolExecutionContext,
    ToolResultMessage,
    ToolSpec,
    Valid,
)
from tether.tools import (
    TOOL_OUTPUT_CAP_CHARACTERS,
    TOOL_TRUNCATION_MARKER,
    FunctionTool,
    NonRecoverableToolError,
    ToolContractError,
    ToolDefinition,
    ToolRegistry,
    contract,
    define_tool,
    execute_tool_call,
    execution,
    function,
    serialize,
    tool,
)
from tether.tools.contract import TOOL_OUTPUT_LIMIT_MIN
from tether.tools.serialize import cap_text, encodable_text, serialize_output

MARKER = TOOL_TRUNCATION_MARKER
UNAWAITED = "Tool returned an un-awaited coroutine; did you forget await?"

# --- helpers ------------------------------------------------------------------------------------


def accept(value: object) -> Valid[object]:
    return Valid(value=value)


async def echo(value: object, context: ToolExecutionContext) -> object:
    return value


def emitting(output: object, **fields: object) -> dict[str, object]:
    """An untrusted definition whose tool returns ``output``."""

    async def execute(value: object, context: ToolExecutionContext) -> object:
        return output

    return {
        "name": "emit",
        "description": "Emits a fixed output",
        "validate": accept,
        "execute": execute,
        **fields,
    }


async def run(
    definition: object,
    arguments: dict[str, Any] | None = None,
    *,
    signal: AbortSignal | None = None,
    call_id: str = "call-1",
) -> ToolResultMessage:
    registry = ToolRegistry([definition])
    (name,) = registry.names
    call = ToolCall(id=call_id, name=name, arguments=JsonObject(arguments or {}))
    used = AbortController().signal if signal is None else signal
    result = await execute_tool_call(registry, call, used)
    assert result.id == f"tool-result-{call_id}"
    assert result.tool_call_id == call_id
    assert result.tool_name == name
    return result


def error_of(result: ToolResultMessage) -> tuple[str, str]:
    assert result.is_error is True
    parsed: Any = json.loads(result.content)
    assert list(parsed) == ["error"]
    return parsed["error"]["code"], parsed["error"]["message"]


def schema_of(definition: ToolDefinition[Any, Any]) -> dict[str, Any]:
    assert definition.parameters is not None
    return cast(dict[str, Any], thaw_json(definition.parameters))


def valid_value(definition: ToolDefinition[Any, Any], arguments: dict[str, Any]) -> Any:
    decision = definition.validate(freeze_json(arguments))
    assert isinstance(decision, Valid), decision
    return decision.value


def invalid_error(definition: ToolDefinition[Any, Any], arguments: dict[str, Any]) -> str:
    decision = definition.validate(freeze_json(arguments))
    assert isinstance(decision, Invalid), decision
    return decision.error


async def settle(task: asyncio.Task[Any], limit: int = 50) -> None:
    for _ in range(limit):
        if task.done():
            return
        await asyncio.sleep(0)
    assert task.done(), "the task did not finish: the abort did not win"


# --- output_limit: the definition field ----------------------------------------------------------


async def _add(value: int, context: ToolExecutionContext) -> int:
    return value + 1


def _validate_int(value: object) -> Valid[int]:
    return Valid(value=1)


def test_output_limit_defaults_to_the_workshop_cap() -> None:
    definition = define_tool(name="a", description="d", validate=_validate_int, execute=_add)
    assert definition.output_limit == TOOL_OUTPUT_CAP_CHARACTERS == 4096
    assert ToolRegistry().register(emitting(1)).output_limit == 4096


def test_output_limit_is_kept_by_define_tool() -> None:
    definition = define_tool(
        name="a", description="d", validate=_validate_int, execute=_add, output_limit=100
    )
    assert definition.output_limit == 100


def test_the_smallest_output_limit_is_the_marker_length() -> None:
    assert TOOL_OUTPUT_LIMIT_MIN == len(MARKER) == 24
    definition = define_tool(
        name="a", description="d", validate=_validate_int, execute=_add, output_limit=24
    )
    assert definition.output_limit == 24


@pytest.mark.parametrize(
    "limit",
    [0, -1, 1, 23, 1.5, 100.0, "100", True, False, None, [100]],
    ids=[
        "zero",
        "negative",
        "one",
        "below-marker",
        "float",
        "integral-float",
        "str",
        "True",
        "False",
        "None",
        "list",
    ],
)
def test_invalid_output_limit_is_an_invalid_definition(limit: object) -> None:
    with pytest.raises(ToolContractError) as caught:
        define_tool(
            name="a",
            description="d",
            validate=_validate_int,
            execute=_add,
            output_limit=cast(Any, limit),
        )
    assert caught.value.code == "INVALID_TOOL_DEFINITION"
    assert str(caught.value) == 'Tool "a" output_limit must be an int of at least 24'


def test_int_subclass_output_limit_is_rejected() -> None:
    class Limit(int):
        pass

    with pytest.raises(ToolContractError) as caught:
        ToolRegistry().register(emitting(1, output_limit=Limit(100)))
    assert caught.value.code == "INVALID_TOOL_DEFINITION"


def test_untrusted_definitions_may_carry_an_output_limit() -> None:
    assert ToolRegistry().register(emitting(1, output_limit=64)).output_limit == 64

    class Definition:
        name = "object"
        description = "An object definition"
        validate = staticmethod(accept)
        execute = staticmethod(echo)
        output_limit = 99

    assert ToolRegistry().register(Definition()).output_limit == 99


def test_output_limit_is_checked_after_the_other_fields() -> None:
    with pytest.raises(ToolContractError) as caught:
        ToolRegistry().register(emitting(1, output_limit=0, description=""))
    assert str(caught.value) == 'Tool "emit" description must be a non-empty string'


def test_an_output_limit_that_cannot_be_read_is_an_invalid_definition() -> None:
    class Hostile:
        name = "hostile"
        description = "Its output_limit raises"
        validate = staticmethod(accept)
        execute = staticmethod(echo)

        @property
        def output_limit(self) -> int:
            raise RuntimeError("no limit for you")

    with pytest.raises(ToolContractError) as caught:
        ToolRegistry().register(Hostile())
    assert str(caught.value) == "Tool definition output_limit could not be read"


def test_output_limit_is_read_once() -> None:
    reads: list[int] = []

    class Counting:
        name = "counting"
        description = "Counts reads"
        validate = staticmethod(accept)
        execute = staticmethod(echo)

        @property
        def output_limit(self) -> int:
            reads.append(1)
            return 50 if len(reads) == 1 else 0

    assert ToolRegistry().register(Counting()).output_limit == 50
    assert reads == [1]


def test_tool_decorator_takes_an_output_limit() -> None:
    @tool(output_limit=128)
    async def short() -> str:
        """Short output."""
        return "x"

    assert short.output_limit == 128

    with pytest.raises(ToolContractError) as caught:

        @tool(output_limit=0)
        async def broken() -> str:
            """Never defined."""
            return "x"

    assert caught.value.code == "INVALID_TOOL_DEFINITION"


# --- output_limit: execution ---------------------------------------------------------------------


async def test_text_output_is_capped_at_the_output_limit() -> None:
    result = await run(emitting("y" * 1000, output_limit=100))
    assert result.is_error is False
    assert result.content == "y" * 76 + MARKER
    assert len(result.content) == 100


async def test_text_that_exactly_fits_the_output_limit_is_kept() -> None:
    result = await run(emitting("y" * 100, output_limit=100))
    assert result.content == "y" * 100


async def test_json_output_is_capped_at_the_output_limit() -> None:
    value = {"items": list(range(100))}
    result = await run(emitting(value, output_limit=50))
    assert result.is_error is False
    assert result.content == serialize_output(value)[:26] + MARKER
    assert len(result.content) == 50


async def test_the_smallest_output_limit_leaves_just_the_marker() -> None:
    assert (await run(emitting("z" * 25, output_limit=24))).content == MARKER
    assert (await run(emitting("z" * 24, output_limit=24))).content == "z" * 24
    assert (await run(emitting(["z" * 30], output_limit=24))).content == MARKER


async def test_a_larger_output_limit_lets_more_through() -> None:
    text = "t" * 10_000
    assert (await run(emitting(text, output_limit=10_000))).content == text
    record = {"body": text}
    content = (await run(emitting(record, output_limit=10_100))).content
    assert content == json.dumps(record, separators=(",", ":"))


async def test_error_results_keep_the_workshop_cap_and_json_form() -> None:
    async def fail(value: object, context: ToolExecutionContext) -> object:
        raise RuntimeError("e" * 10_000)

    definition = {**emitting(None, output_limit=30), "execute": fail}
    result = await run(definition)
    assert result.is_error is True
    assert len(result.content) == TOOL_OUTPUT_CAP_CHARACTERS
    assert result.content.startswith('{"error":{"code":"TOOL_EXECUTION_FAILED","message":"eee')
    short = await run({**emitting(None, output_limit=30), "execute": _raising("no")})
    assert error_of(short) == ("TOOL_EXECUTION_FAILED", "no")


def _raising(message: str) -> Callable[[object, ToolExecutionContext], object]:
    def execute(value: object, context: ToolExecutionContext) -> object:
        raise RuntimeError(message)

    return execute


# --- text output ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a\nb",
        "",
        "plain",
        '{"looks":"like json"}',
        '"quoted"',
        "tab\tand\\backslash",
        "\x00\x1f",
        "😀",
        "\u2028",
        MARKER,
    ],
    ids=[
        "newline",
        "empty",
        "plain",
        "json-like",
        "quoted",
        "escapes",
        "controls",
        "astral",
        "line-separator",
        "marker",
    ],
)
async def test_str_output_is_sent_verbatim(text: str) -> None:
    result = await run(emitting(text))
    assert result.is_error is False
    assert result.content == text


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        ("\ud83d\ude00", "😀"),
        ("\ud800 lone", "\ufffd lone"),
        ("caf\udce9.txt", "caf\ufffd.txt"),
        ("\udc80\ud83d\ude00\udfff", "\ufffd😀\ufffd"),
    ],
    ids=["pair-as-two", "lone-surrogate", "surrogate-escaped-name", "mixed"],
)
async def test_str_output_with_surrogates_is_made_encodable(text: str, sent: str) -> None:
    result = await run(emitting(text))
    assert result.is_error is False
    assert result.content == sent
    result.content.encode("utf-8")  # what the next request needs


async def test_a_newline_comes_back_as_a_newline_not_an_escape() -> None:
    result = await run(emitting("a\nb"))
    assert result.content == "a\nb"
    assert result.content != '"a\\u000ab"'


async def test_text_over_the_workshop_cap_is_cut_with_the_marker() -> None:
    result = await run(emitting("q" * 10_000))
    assert result.content == "q" * (4096 - 24) + MARKER
    assert code_points(result.content)[0] == 4096


async def test_text_is_counted_the_way_the_serializer_counts() -> None:
    pair = "\ud83d\ude00"  # two Python code points, one by the workshop's count
    fits = pair * 4096
    assert (await run(emitting(fits))).content == "😀" * 4096  # sent joined
    over = pair * 4097
    content = (await run(emitting(over))).content
    assert content == "😀" * (4096 - 24) + MARKER
    assert code_points(content)[0] == 4096


async def test_strings_inside_records_are_still_json() -> None:
    result = await run(emitting({"text": "a\nb"}))
    assert result.content == '{"text":"a\\u000ab"}'
    assert (await run(emitting(["a"]))).content == '["a"]'


async def test_a_str_subclass_is_not_text_and_not_plain_data() -> None:
    class Text(str):
        pass

    result = await run(emitting(Text("sneaky")))
    assert error_of(result) == (
        "TOOL_OUTPUT_SERIALIZATION_FAILED",
        "Tool output objects must be plain or have a null prototype",
    )


async def test_text_from_a_sync_execute_and_from_a_future_is_verbatim() -> None:
    def sync(value: object, context: ToolExecutionContext) -> object:
        return "x\ny"

    assert (await run({**emitting(None), "execute": sync})).content == "x\ny"
    loop = asyncio.get_running_loop()

    def future(value: object, context: ToolExecutionContext) -> object:
        pending: asyncio.Future[str] = loop.create_future()
        pending.set_result("from\nfuture")
        return pending

    assert (await run({**emitting(None), "execute": future})).content == "from\nfuture"


async def test_text_output_matches_cap_text() -> None:
    for text in ("short", "é" * 5000, "\ud83d" * 5000):
        assert (await run(emitting(text))).content == cap_text(encodable_text(text))


async def test_abort_while_returning_text_raises_the_reason() -> None:
    controller = AbortController()
    reason = RuntimeError("stop")

    async def execute(value: object, context: ToolExecutionContext) -> object:
        controller.abort(reason)
        return "too late"

    with pytest.raises(RuntimeError) as caught:
        await run({**emitting(None), "execute": execute}, signal=controller.signal)
    assert caught.value is reason


# --- ToolRegistry.specs() ------------------------------------------------------------------------


SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def _described(name: str, parameters: object = None) -> dict[str, object]:
    definition: dict[str, object] = {
        "name": name,
        "description": f"The {name} tool",
        "validate": accept,
        "execute": echo,
    }
    if parameters is not None:
        definition["parameters"] = parameters
    return definition


def test_specs_of_an_empty_registry() -> None:
    assert ToolRegistry().specs() == ()


def test_specs_follow_registration_order() -> None:
    registry = ToolRegistry([_described("b", SCHEMA), _described("a")])
    registry.register(_described("c"))
    specs = registry.specs()
    assert isinstance(specs, tuple)
    assert [spec.name for spec in specs] == ["b", "a", "c"]
    assert all(type(spec) is ToolSpec for spec in specs)
    assert specs[0] == ToolSpec(name="b", description="The b tool", parameters=JsonObject(SCHEMA))


def test_a_definition_without_parameters_takes_no_arguments() -> None:
    (spec,) = ToolRegistry([_described("bare")]).specs()
    assert spec.parameters == {"type": "object", "properties": {}}
    assert type(spec.parameters) is JsonObject


def test_specs_carry_the_schema_of_a_decorated_tool() -> None:
    @tool
    async def add(left: int, right: int = 1) -> int:
        """Add two integers.

        Args:
            left: The first addend.
        """
        return left + right

    (spec,) = ToolRegistry([add]).specs()
    assert spec.name == "add"
    assert spec.description == "Add two integers."
    assert spec.parameters is add.parameters


def test_specs_are_cached_until_a_registration_changes_them() -> None:
    registry = ToolRegistry([_described("a")])
    first = registry.specs()
    assert registry.specs() is first
    with pytest.raises(ToolContractError):
        registry.register_many([_described("b"), _described("a")])
    assert registry.specs() is first  # a failed batch changes nothing
    registry.register_many([])
    assert registry.specs() is first
    registry.register(_described("b"))
    second = registry.specs()
    assert second is not first
    assert [spec.name for spec in second] == ["a", "b"]
    assert [spec.name for spec in first] == ["a"]


def test_a_snapshot_shares_the_specs_until_either_side_registers() -> None:
    registry = ToolRegistry([_described("a")])
    specs = registry.specs()
    copy = registry.snapshot()
    assert copy.specs() is specs
    copy.register(_described("only-copy"))
    assert [spec.name for spec in copy.specs()] == ["a", "only-copy"]
    assert registry.specs() is specs
    registry.register(_described("only-original"))
    assert [spec.name for spec in registry.specs()] == ["a", "only-original"]


def test_a_snapshot_taken_before_specs_builds_its_own() -> None:
    registry = ToolRegistry([_described("a")])
    copy = registry.snapshot()
    assert copy.specs() == registry.specs()


# --- @tool: sync functions in a worker thread ----------------------------------------------------


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@tool
def thread_of() -> int:
    """Report the thread the tool ran on."""
    return threading.get_ident()


@tool
async def loop_thread_of() -> int:
    """Report the thread an async tool ran on."""
    return threading.get_ident()


async def test_a_sync_function_becomes_a_tool() -> None:
    assert isinstance(shout, ToolDefinition)
    assert shout.description == "Upper-case the text."
    assert schema_of(shout)["properties"] == {"text": {"type": "string"}}
    result = await run(shout, {"text": "hi\nthere"})
    assert result.content == "HI\nTHERE"


async def test_a_sync_tool_runs_in_a_worker_thread_and_an_async_one_on_the_loop() -> None:
    here = threading.get_ident()
    assert (await run(thread_of)).content != str(here)
    assert (await run(loop_thread_of)).content == str(here)


async def test_a_sync_tool_sees_the_callers_context_variables() -> None:
    variable: contextvars.ContextVar[str] = contextvars.ContextVar("variable")

    @tool
    def read() -> str:
        """Read the context variable."""
        return variable.get("unset")

    variable.set("from the caller")
    assert (await run(read)).content == "from the caller"


async def test_a_sync_tool_receives_the_execution_context() -> None:
    @tool
    def whoami(context: ToolExecutionContext) -> str:
        """Report the call ID."""
        return context.tool_call_id

    assert (await run(whoami, call_id="call-9")).content == "call-9"


async def test_a_sync_tool_failure_is_an_execution_failure() -> None:
    @tool
    def explode(reason: str) -> None:
        """Always fails."""
        raise ValueError(reason)

    assert error_of(await run(explode, {"reason": "boom"})) == ("TOOL_EXECUTION_FAILED", "boom")


async def test_a_non_recoverable_error_from_a_thread_propagates() -> None:
    error = NonRecoverableToolError("invariant broken in a thread")

    @tool
    def corrupt() -> None:
        """Hits an invariant failure."""
        raise error

    with pytest.raises(NonRecoverableToolError) as caught:
        await run(corrupt)
    assert caught.value is error


async def test_abort_stops_waiting_for_a_blocked_thread_and_discards_its_result() -> None:
    started = threading.Event()
    release = threading.Event()
    finished = threading.Event()

    @tool
    def block() -> str:
        """Blocks its worker thread until released."""
        started.set()
        release.wait(10)
        finished.set()
        return "discarded"

    controller = AbortController()
    reason = RuntimeError("stop")
    task = asyncio.create_task(run(block, signal=controller.signal))
    try:
        assert await asyncio.to_thread(started.wait, 10)
        controller.abort(reason)
        await settle(task)
        with pytest.raises(RuntimeError) as caught:
            task.result()
        assert caught.value is reason
        assert not finished.is_set()  # the abort did not wait for the thread
    finally:
        release.set()
    assert await asyncio.to_thread(finished.wait, 10)
    await turns()


async def test_cancelling_the_task_stops_waiting_for_a_blocked_thread() -> None:
    started = threading.Event()
    release = threading.Event()

    @tool
    def block() -> None:
        """Blocks its worker thread until released."""
        started.set()
        release.wait(10)

    task = asyncio.create_task(run(block))
    try:
        assert await asyncio.to_thread(started.wait, 10)
        task.cancel()
        await settle(task)
        assert task.cancelled()
    finally:
        release.set()
    await turns()


def test_sync_tool_docstring_says_a_thread_cannot_be_interrupted() -> None:
    text = " ".join((inspect.getdoc(function) or "").split())
    assert "Cancellation cannot interrupt a running thread" in text
    assert "result (or exception) is discarded" in text
    assert "discarded" in " ".join((inspect.getdoc(tool) or "").split())


def test_generator_functions_are_rejected() -> None:
    def numbers() -> Any:
        """Yields."""
        yield 1

    async def stream() -> Any:
        """Yields asynchronously."""
        yield 1

    for target in (numbers, stream):
        with pytest.raises(TypeError, match="generator"):
            tool(target)


def test_a_function_without_a_description_is_rejected() -> None:
    def quiet(value: int) -> int:
        return value

    with pytest.raises(TypeError, match="description"):
        tool(quiet)
    assert tool(description="Returns its value.")(quiet).description == "Returns its value."


# --- @tool: defaults -----------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Shade(enum.StrEnum):
    LIGHT = "light"
    DARK = "dark"


@dataclasses.dataclass(frozen=True)
class Box:
    width: int
    label: str = "box"
    color: Color = Color.RED
    tags: list[str] = dataclasses.field(default_factory=list[str])


_SENTINEL = object()


@tool
async def defaults(
    count: int = 3,
    name: str = "n",
    flag: bool = False,
    maybe: int | None = None,
    ratio: float = 0.5,
    words: tuple[str, ...] = ("a", "b"),
    table: dict[str, int] = {"k": 1},  # noqa: B006
    color: Color = Color.GREEN,
    level: Level = Level.HIGH,
    box: Box = Box(width=1),
    anything: Any = _SENTINEL,
    huge: float = float("inf"),
) -> None:
    """Every kind of default."""


def test_json_representable_defaults_appear_in_the_schema() -> None:
    properties = schema_of(defaults)["properties"]
    assert properties["count"] == {"type": "integer", "default": 3}
    assert properties["name"] == {"type": "string", "default": "n"}
    assert properties["flag"] == {"type": "boolean", "default": False}
    assert properties["maybe"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}],
        "default": None,
    }
    assert properties["ratio"] == {"type": "number", "default": 0.5}
    assert properties["words"] == {
        "type": "array",
        "items": {"type": "string"},
        "default": ["a", "b"],
    }
    assert properties["table"]["default"] == {"k": 1}
    assert properties["color"] == {"enum": ["red", "green"], "default": "green"}
    assert properties["level"] == {"enum": [1, 2], "default": 2}
    assert schema_of(defaults)["required"] == []


def test_defaults_without_a_json_form_are_left_out_of_the_schema() -> None:
    properties = schema_of(defaults)["properties"]
    assert "default" not in properties["box"]
    assert "default" not in properties["anything"]
    assert "default" not in properties["huge"]


def test_absent_arguments_get_their_defaults() -> None:
    value = valid_value(defaults, {})
    assert value["count"] == 3
    assert value["color"] is Color.GREEN
    assert value["level"] is Level.HIGH
    assert value["box"] == Box(width=1)
    assert value["anything"] is _SENTINEL
    assert value["words"] == ("a", "b")


def test_given_arguments_override_defaults() -> None:
    value = valid_value(defaults, {"count": 7, "color": "red", "box": {"width": 2}})
    assert value["count"] == 7
    assert value["color"] is Color.RED
    assert value["box"] == Box(width=2)


def test_dataclass_field_defaults_appear_in_the_nested_schema() -> None:
    box = schema_of(defaults)["properties"]["box"]
    assert box["properties"]["label"] == {"type": "string", "default": "box"}
    assert box["properties"]["color"] == {"enum": ["red", "green"], "default": "red"}
    assert "default" not in box["properties"]["tags"]  # a factory is never called to describe it
    assert box["required"] == ["width"]


def test_the_default_follows_the_description() -> None:
    @tool
    async def documented(depth: int = 2) -> int:
        """Go deep.

        Args:
            depth: How deep to go.
        """
        return depth

    assert schema_of(documented)["properties"]["depth"] == {
        "type": "integer",
        "description": "How deep to go.",
        "default": 2,
    }


# --- @tool: enums and literals -------------------------------------------------------------------


@tool
async def paint(
    color: Color,
    level: Level,
    shade: Shade,
    mode: Literal["fast", "slow"],
    pick: Literal[Color.RED, 7],
    colors: list[Color],
    maybe: Color | None = None,
) -> str:
    """Paint something."""
    return f"{color.name} {level.name} {shade.name} {mode} {pick} {colors} {maybe}"


def test_enums_and_literals_are_an_enum_in_the_schema() -> None:
    properties = schema_of(paint)["properties"]
    assert properties["color"] == {"enum": ["red", "green"]}
    assert properties["level"] == {"enum": [1, 2]}
    assert properties["shade"] == {"enum": ["light", "dark"]}
    assert properties["mode"] == {"enum": ["fast", "slow"]}
    assert properties["pick"] == {"enum": ["red", 7]}
    assert properties["colors"] == {"type": "array", "items": {"enum": ["red", "green"]}}
    assert properties["maybe"] == {
        "anyOf": [{"enum": ["red", "green"]}, {"type": "null"}],
        "default": None,
    }


_PAINT: dict[str, Any] = {
    "color": "green",
    "level": 2,
    "shade": "dark",
    "mode": "slow",
    "pick": 7,
    "colors": [],
}


def test_enum_values_validate_to_their_members() -> None:
    value = valid_value(paint, {**_PAINT, "colors": ["red", "green"], "maybe": "red"})
    assert value["color"] is Color.GREEN
    assert value["level"] is Level.HIGH
    assert value["shade"] is Shade.DARK
    assert value["mode"] == "slow"
    assert value["pick"] == 7
    assert value["colors"] == [Color.RED, Color.GREEN]
    assert value["maybe"] is Color.RED
    assert valid_value(paint, {**_PAINT, "pick": "red"})["pick"] is Color.RED


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"color": "blue"}, "color: expected one of ['red', 'green']"),
        ({"color": "RED"}, "color: expected one of ['red', 'green']"),
        ({"level": 3}, "level: expected one of [1, 2]"),
        ({"level": True}, "level: expected one of [1, 2]"),
        ({"level": 1.0}, "level: expected one of [1, 2]"),
        ({"level": "1"}, "level: expected one of [1, 2]"),
        ({"pick": "7"}, "pick: expected one of ['red', 7]"),
        ({"colors": ["red", "pink"]}, "colors[1]: expected one of ['red', 'green']"),
    ],
)
def test_values_outside_an_enum_are_rejected(overrides: dict[str, Any], error: str) -> None:
    assert invalid_error(paint, {**_PAINT, **overrides}) == error


async def test_an_enum_tool_receives_members_end_to_end() -> None:
    result = await run(paint, {**_PAINT, "colors": ["red"]})
    assert result.content == "GREEN HIGH DARK slow 7 [<Color.RED: 'red'>] None"


class _Empty(enum.Enum):
    pass


class _Floating(enum.Enum):
    HALF = 0.5


class _Flagged(enum.Enum):
    YES = True


@pytest.mark.parametrize("annotation", [_Empty, _Floating, _Flagged, Literal[_Floating.HALF]])
def test_unsupported_enums_fail_at_decoration_time(annotation: Any) -> None:
    async def pick(value: Any) -> None:
        """Pick one."""

    pick.__annotations__["value"] = annotation
    with pytest.raises(TypeError) as caught:
        tool(pick)
    assert str(caught.value).startswith("@tool cannot describe parameter 'value'")


# --- @tool: .fn ----------------------------------------------------------------------------------


@tool
async def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


async def test_the_original_async_function_stays_callable_as_fn() -> None:
    assert isinstance(add, FunctionTool)
    assert inspect.iscoroutinefunction(add.fn)
    total: int = await add.fn(left=20, right=22)
    assert total == 42
    assert (await run(add, {"left": 1, "right": 2})).content == "3"


def test_the_original_sync_function_stays_callable_as_fn() -> None:
    loud: str = shout.fn("quiet")
    assert loud == "QUIET"
    assert shout.fn(text="x") == "X"


def test_fn_is_the_decorated_function_itself() -> None:
    def plain(value: int) -> int:
        """Return the value."""
        return value

    definition = tool(plain)
    assert definition.fn is plain
    configured = tool(name="other", output_limit=64)(plain)
    assert configured.fn is plain
    assert configured.name == "other"


def test_a_function_tool_is_a_frozen_tool_definition() -> None:
    assert isinstance(add, ToolDefinition)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(add, "fn", None)  # noqa: B010
    assert dataclasses.is_dataclass(add)
    assert FunctionTool is contract.FunctionTool


def test_registering_a_function_tool_keeps_the_same_object() -> None:
    registry = ToolRegistry([add, shout])
    assert registry.get("add") is add
    assert registry.get("shout") is shout


# --- @tool: recursive types ----------------------------------------------------------------------


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node]


@dataclasses.dataclass
class Chain:
    next: Chain | None = None


class Tree(TypedDict):
    label: str
    branches: dict[str, Tree]


@dataclasses.dataclass
class Ping:
    pong: Pong


@dataclasses.dataclass
class Pong:
    ping: Ping | None


class Left(TypedDict):
    right: list[Right]


class Right(TypedDict):
    left: Left


@dataclasses.dataclass
class Pair:
    first: Box
    second: Box


RECURSIVE: list[tuple[Any, str]] = [
    (Node, "Node"),
    (Chain, "Chain"),
    (Tree, "Tree"),
    (Ping, "Ping"),
    (list[Pong], "Pong"),
    (Left | None, "Left"),
    (dict[str, Right], "Right"),
]


@pytest.mark.parametrize(
    ("annotation", "type_name"), RECURSIVE, ids=[name for _, name in RECURSIVE]
)
def test_recursive_types_fail_clearly_at_decoration_time(annotation: Any, type_name: str) -> None:
    async def take(x: Any) -> None:
        """Take a recursive value."""

    take.__annotations__["x"] = annotation
    with pytest.raises(TypeError) as caught:
        tool(take)
    assert str(caught.value) == f"@tool parameter 'x': recursive type {type_name} is not supported"
    assert not isinstance(caught.value, RecursionError)


def test_a_type_used_twice_side_by_side_is_not_recursive() -> None:
    @tool
    async def take(pair: Pair, boxes: list[Box]) -> int:
        """Take boxes."""
        return pair.first.width + len(boxes)

    box = schema_of(take)["properties"]["pair"]["properties"]["first"]
    assert box == schema_of(take)["properties"]["pair"]["properties"]["second"]
    assert valid_value(take, {"pair": {"first": {"width": 1}, "second": {"width": 2}}, "boxes": []})


def test_an_unresolvable_annotation_is_a_type_error() -> None:
    async def take(x: int) -> None:
        """Its annotation names nothing."""

    take.__annotations__["x"] = "Missing"
    with pytest.raises(TypeError, match="@tool cannot resolve the annotations"):
        tool(take)


# --- un-awaited coroutines -----------------------------------------------------------------------


async def _later() -> str:
    return "never runs"


async def test_an_awaited_result_that_is_a_coroutine_fails_and_is_closed() -> None:
    created: list[Coroutine[Any, Any, str]] = []

    async def execute(value: object, context: ToolExecutionContext) -> object:
        coroutine = _later()
        created.append(coroutine)
        return coroutine  # forgot the await

    result = await run({**emitting(None), "execute": execute})
    assert error_of(result) == ("TOOL_EXECUTION_FAILED", UNAWAITED)
    assert inspect.getcoroutinestate(created[0]) == inspect.CORO_CLOSED
    created.clear()
    gc.collect()  # a "never awaited" RuntimeWarning here would fail the test


async def test_a_sync_execute_returning_a_coroutine_is_awaited() -> None:
    def execute(value: object, context: ToolExecutionContext) -> object:
        return _later()

    result = await run({**emitting(None), "execute": execute})
    assert result.is_error is False
    assert result.content == "never runs"


async def test_a_future_resolving_to_a_coroutine_fails_and_closes_it() -> None:
    loop = asyncio.get_running_loop()
    coroutine = _later()

    def execute(value: object, context: ToolExecutionContext) -> object:
        future: asyncio.Future[object] = loop.create_future()
        future.set_result(coroutine)
        return future

    result = await run({**emitting(None), "execute": execute})
    assert error_of(result) == ("TOOL_EXECUTION_FAILED", UNAWAITED)
    assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED


async def test_a_decorated_async_function_returning_a_coroutine_fails() -> None:
    @tool
    async def forgetful() -> object:
        """Forgets to await."""
        return _later()

    assert error_of(await run(forgetful)) == ("TOOL_EXECUTION_FAILED", UNAWAITED)
    gc.collect()


async def test_a_decorated_sync_function_returning_a_coroutine_fails() -> None:
    created: list[Coroutine[Any, Any, str]] = []

    @tool
    def threaded() -> object:
        """Makes a coroutine in a worker thread."""
        coroutine = _later()
        created.append(coroutine)
        return coroutine

    assert error_of(await run(threaded)) == ("TOOL_EXECUTION_FAILED", UNAWAITED)
    assert inspect.getcoroutinestate(created[0]) == inspect.CORO_CLOSED
    created.clear()
    gc.collect()


async def test_a_suspended_coroutine_result_is_closed_and_its_cleanup_runs() -> None:
    cleaned: list[str] = []

    async def suspended() -> None:
        try:
            await asyncio.sleep(0)
        finally:
            cleaned.append("finally")

    coroutine = suspended()
    coroutine.send(None)  # now suspended at its first await

    async def execute(value: object, context: ToolExecutionContext) -> object:
        return coroutine

    assert error_of(await run({**emitting(None), "execute": execute})) == (
        "TOOL_EXECUTION_FAILED",
        UNAWAITED,
    )
    assert cleaned == ["finally"]
    assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED


async def test_abort_wins_over_a_coroutine_result_which_is_still_closed() -> None:
    controller = AbortController()
    reason = RuntimeError("stop")
    coroutine = _later()

    async def execute(value: object, context: ToolExecutionContext) -> object:
        controller.abort(reason)
        return coroutine

    with pytest.raises(RuntimeError) as caught:
        await run({**emitting(None), "execute": execute}, signal=controller.signal)
    assert caught.value is reason
    assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED


# --- messages and clean-up -----------------------------------------------------------------------


async def test_contract_errors_name_python_parameters_in_snake_case() -> None:
    with pytest.raises(ToolContractError) as caught:
        await execute_tool_call(cast(Any, None), cast(Any, None), AbortController().signal)
    assert str(caught.value) == "execute_tool_call requires a ToolRegistry"
    call = {"type": "toolCall", "id": "c", "name": "echo", "arguments": [1]}
    with pytest.raises(ToolContractError) as caught:
        await execute_tool_call(ToolRegistry(), cast(Any, call), AbortController().signal)
    assert str(caught.value.__cause__).startswith("tool_call.arguments must be")


def test_the_contract_docstring_points_at_the_real_decorator_module() -> None:
    doc = contract.__doc__ or ""
    assert "tether.tooldef" not in doc
    assert "tether.tools.function" in doc


def test_is_awaitable_is_the_one_rule_of_tether_types() -> None:
    from tether._base import exact_types as _types

    assert is_awaitable is _types.is_awaitable
    coroutine = _ready()
    try:
        assert is_awaitable(coroutine)
    finally:
        coroutine.close()  # pyright: ignore[reportUnknownMemberType, reportAttributeAccessIssue]
    assert not is_awaitable(42)
    for module in (contract, execution, function, serialize):
        assert not hasattr(module, "_is_awaitable")
    assert function.__dict__.get("is_awaitable", is_awaitable) is is_awaitable


async def _ready() -> None:
    return None
