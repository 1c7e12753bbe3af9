"""``@tool`` (``tether.tools.function``): a typed tool from an annotated function.

Decoration derives the name, the description (docstring summary), a JSON Schema with
per-argument descriptions (Google-style ``Args:``) and defaults, and a validator that accepts
exactly what the schema describes. Unsupported functions fail at decoration time with
``TypeError``; the result is a ``ToolDefinition`` (a ``FunctionTool``) that runs through
``ToolRegistry`` and ``execute_tool_call``. Sync functions, enums, ``.fn``, recursive types
and output limits are covered in ``test_tools_v2.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Coroutine, Sequence
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict, Union, cast

import pytest

from tether.abort import AbortController
from tether.jsonvalue import JsonObject, freeze_json, thaw_json
from tether.protocol import Invalid, ToolCall, ToolExecutionContext, Valid
from tether.tools import (
    NonRecoverableToolError,
    ToolContractError,
    ToolDefinition,
    ToolRegistry,
    execute_tool_call,
)
from tether.tools.function import tool

# --- module-level types (annotations are resolved against module globals) ----------------------


class Point(TypedDict):
    x: int
    y: float


class _LabelBase(TypedDict):
    text: str


class Label(_LabelBase, total=False):
    color: str


class Sparse(TypedDict):
    required: int
    optional: NotRequired[str]


@dataclasses.dataclass(frozen=True)
class Box:
    width: int
    label: str = "box"
    tags: list[str] = dataclasses.field(default_factory=list[str])


@dataclasses.dataclass
class Nested:
    box: Box
    points: list[Point]


# --- helpers ------------------------------------------------------------------------------------


def schema_of(definition: ToolDefinition[Any, Any]) -> dict[str, Any]:
    assert definition.parameters is not None
    return cast(dict[str, Any], thaw_json(definition.parameters))


def validate(definition: ToolDefinition[Any, Any], arguments: dict[str, Any]) -> object:
    """Run the derived validator on frozen arguments, as ``execute_tool_call`` does."""
    return definition.validate(freeze_json(arguments))


def valid_value(definition: ToolDefinition[Any, Any], arguments: dict[str, Any]) -> Any:
    decision = validate(definition, arguments)
    assert isinstance(decision, Valid), decision
    return cast(Valid[Any], decision).value


def invalid_error(definition: ToolDefinition[Any, Any], arguments: dict[str, Any]) -> str:
    decision = validate(definition, arguments)
    assert isinstance(decision, Invalid), decision
    return decision.error


async def call_tool(
    definition: ToolDefinition[Any, Any], arguments: dict[str, Any], call_id: str = "call-1"
) -> tuple[bool, str]:
    registry = ToolRegistry([definition])
    call = ToolCall(id=call_id, name=definition.name, arguments=JsonObject(arguments))
    result = await execute_tool_call(registry, call, AbortController().signal)
    assert result.tool_call_id == call_id
    assert result.tool_name == definition.name
    assert result.id == f"tool-result-{call_id}"
    return result.is_error, result.content


# --- the example tools --------------------------------------------------------------------------


@tool
async def add(left: int, right: int) -> int:
    """Add two integers.

    Args:
        left: The first addend.
        right: The second addend.
    """
    return left + right


@tool
async def describe(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    nothing: None,
    mode: Literal["fast", "slow"],
    maybe: int | None,
    either: Union[str, int],  # noqa: UP007
    optional: Optional[str],  # noqa: UP045
    numbers: list[int],
    words: tuple[str, ...],
    scores: dict[str, float],
    anything: Any,
    whatever: object,
    size: Annotated[int, "The size in bytes"],
    point: Point,
    label: Label,
    box: Box,
    nested: Nested,
    sequence: Sequence[int],
    limit: int = 10,
    suffix: str | None = None,
) -> dict[str, Any]:
    """Exercise every supported annotation."""
    return {}


POINT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "number"}},
    "required": ["x", "y"],
    "additionalProperties": False,
}
BOX_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "width": {"type": "integer"},
        "label": {"type": "string", "default": "box"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["width"],
    "additionalProperties": False,
}

SCHEMAS: list[tuple[str, dict[str, Any]]] = [
    ("text", {"type": "string"}),
    ("count", {"type": "integer"}),
    ("ratio", {"type": "number"}),
    ("flag", {"type": "boolean"}),
    ("nothing", {"type": "null"}),
    ("mode", {"enum": ["fast", "slow"]}),
    ("maybe", {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    ("either", {"anyOf": [{"type": "string"}, {"type": "integer"}]}),
    ("optional", {"anyOf": [{"type": "string"}, {"type": "null"}]}),
    ("numbers", {"type": "array", "items": {"type": "integer"}}),
    ("words", {"type": "array", "items": {"type": "string"}}),
    ("scores", {"type": "object", "additionalProperties": {"type": "number"}}),
    ("anything", {}),
    ("whatever", {}),
    ("size", {"type": "integer", "description": "The size in bytes"}),
    ("point", POINT_SCHEMA),
    (
        "label",
        {
            "type": "object",
            "properties": {"text": {"type": "string"}, "color": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": False,
        },
    ),
    ("box", BOX_SCHEMA),
    (
        "nested",
        {
            "type": "object",
            "properties": {
                "box": BOX_SCHEMA,
                "points": {"type": "array", "items": POINT_SCHEMA},
            },
            "required": ["box", "points"],
            "additionalProperties": False,
        },
    ),
    ("sequence", {"type": "array", "items": {"type": "integer"}}),
    ("limit", {"type": "integer", "default": 10}),
    ("suffix", {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}),
]


# --- name, description and schema ---------------------------------------------------------------


def test_decorator_returns_a_tool_definition_named_after_the_function() -> None:
    assert isinstance(add, ToolDefinition)
    assert add.name == "add"
    assert add.description == "Add two integers."


def test_schema_of_a_simple_tool_is_exact() -> None:
    assert schema_of(add) == {
        "type": "object",
        "properties": {
            "left": {"type": "integer", "description": "The first addend."},
            "right": {"type": "integer", "description": "The second addend."},
        },
        "required": ["left", "right"],
        "additionalProperties": False,
    }


def test_parameters_are_frozen_json() -> None:
    assert isinstance(add.parameters, JsonObject)
    with pytest.raises(TypeError):
        cast(Any, add.parameters)["type"] = "array"


def test_parameters_serialize_to_json() -> None:
    text = json.dumps(schema_of(add), sort_keys=True)
    assert json.loads(text) == schema_of(add)


@pytest.mark.parametrize(("parameter", "expected"), SCHEMAS, ids=[name for name, _ in SCHEMAS])
def test_schema_for_each_annotation(parameter: str, expected: dict[str, Any]) -> None:
    assert schema_of(describe)["properties"][parameter] == expected


def test_schema_lists_parameters_in_signature_order() -> None:
    assert list(schema_of(describe)["properties"]) == [name for name, _ in SCHEMAS]


def test_required_lists_only_parameters_without_defaults() -> None:
    required = schema_of(describe)["required"]
    assert "limit" not in required
    assert "suffix" not in required
    assert required == [name for name, _ in SCHEMAS if name not in ("limit", "suffix")]


def test_additional_properties_are_forbidden() -> None:
    assert schema_of(describe)["additionalProperties"] is False
    assert schema_of(describe)["type"] == "object"


@tool
async def documented(path: str, recursive: bool = False, depth: int = 1) -> str:
    """List a directory.

    The listing is sorted by name and never follows symlinks.

    Args:
        path: The directory to list. Relative paths start
            at the workspace root.
        recursive (bool): Whether to descend into subdirectories.

    Returns:
        One line per entry.

    Raises:
        FileNotFoundError: If the path is missing.
    """
    return path


def test_description_comes_from_the_docstring_summary() -> None:
    assert documented.description.startswith("List a directory.")
    assert "Args" not in documented.description
    assert "One line per entry" not in documented.description
    assert "workspace root" not in documented.description


def test_argument_descriptions_come_from_the_args_section() -> None:
    properties = schema_of(documented)["properties"]
    assert properties["path"] == {
        "type": "string",
        "description": "The directory to list. Relative paths start at the workspace root.",
    }
    assert properties["recursive"] == {
        "type": "boolean",
        "description": "Whether to descend into subdirectories.",
        "default": False,
    }
    assert properties["depth"] == {"type": "integer", "default": 1}


def test_sections_after_args_do_not_leak_into_argument_descriptions() -> None:
    properties = schema_of(documented)["properties"]
    assert "FileNotFoundError" not in properties
    assert "line" not in properties["recursive"]["description"]


def test_explicit_name_and_description() -> None:
    @tool(name="sum_numbers", description="Sums two numbers exactly.")
    async def anything(left: int, right: int) -> int:
        """Ignored summary."""
        return left + right

    assert anything.name == "sum_numbers"
    assert anything.description == "Sums two numbers exactly."
    assert schema_of(anything)["required"] == ["left", "right"]


def test_decorator_called_with_no_arguments() -> None:
    @tool()
    async def ping() -> str:
        """Reply with pong."""
        return "pong"

    assert ping.name == "ping"
    assert ping.description == "Reply with pong."
    assert schema_of(ping) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_definition_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(add, "name", "other")  # noqa: B010


def test_missing_description_fails_at_decoration_time() -> None:
    async def undocumented(value: int) -> int:
        return value

    with pytest.raises((TypeError, ToolContractError)):
        tool(undocumented)


# --- the execution context ----------------------------------------------------------------------


@tool
async def whoami(prefix: str, context: ToolExecutionContext) -> str:
    """Report the call ID."""
    return f"{prefix}{context.tool_call_id}"


@tool
async def maybe_context(context: ToolExecutionContext | None = None) -> bool:
    """Report whether a context arrived."""
    return context is not None


def test_context_parameter_is_not_in_the_schema() -> None:
    schema = schema_of(whoami)
    assert list(schema["properties"]) == ["prefix"]
    assert schema["required"] == ["prefix"]
    assert schema_of(maybe_context)["properties"] == {}


def test_context_name_is_not_an_accepted_argument() -> None:
    assert invalid_error(whoami, {"prefix": "p", "context": {}}) == "unexpected argument 'context'"


async def test_context_is_injected_on_execution() -> None:
    assert await call_tool(whoami, {"prefix": "id="}, call_id="call-77") == (False, "id=call-77")
    assert await call_tool(maybe_context, {}) == (False, "true")


async def test_context_carries_the_signal_of_the_call() -> None:
    seen: list[object] = []

    @tool
    async def capture(context: ToolExecutionContext) -> None:
        """Capture the signal."""
        seen.append(context.signal)

    controller = AbortController()
    registry = ToolRegistry([capture])
    call = ToolCall(id="c", name="capture", arguments=JsonObject({}))
    await execute_tool_call(registry, call, controller.signal)
    assert seen == [controller.signal]
    assert seen[0] is controller.signal


# --- validation ---------------------------------------------------------------------------------


def test_valid_arguments_become_keyword_arguments() -> None:
    assert valid_value(add, {"left": 1, "right": 2}) == {"left": 1, "right": 2}


def test_defaults_are_filled_in() -> None:
    assert valid_value(documented, {"path": "/tmp"}) == {
        "path": "/tmp",
        "recursive": False,
        "depth": 1,
    }


def test_explicit_values_override_defaults() -> None:
    value = valid_value(documented, {"path": "/", "recursive": True, "depth": 3})
    assert value == {"path": "/", "recursive": True, "depth": 3}


def test_int_is_accepted_for_float_and_becomes_float() -> None:
    value = valid_value(describe_numbers, {"ratio": 2, "count": 1})
    assert value["ratio"] == 2.0
    assert type(value["ratio"]) is float


def test_integral_float_is_accepted_for_int_and_becomes_int() -> None:
    value = valid_value(describe_numbers, {"ratio": 0.5, "count": 3.0})
    assert value["count"] == 3
    assert type(value["count"]) is int


@tool
async def describe_numbers(count: int, ratio: float) -> None:
    """Numbers only."""


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"count": True, "ratio": 1.0}, "count: expected an integer"),
        ({"count": False, "ratio": 1.0}, "count: expected an integer"),
        ({"count": 1.5, "ratio": 1.0}, "count: expected an integer"),
        ({"count": "1", "ratio": 1.0}, "count: expected an integer"),
        ({"count": None, "ratio": 1.0}, "count: expected an integer"),
        ({"count": 1, "ratio": True}, "ratio: expected a number"),
        ({"count": 1, "ratio": "1.5"}, "ratio: expected a number"),
        ({"count": 1, "ratio": [1.5]}, "ratio: expected a number"),
    ],
)
def test_number_checks(arguments: dict[str, Any], error: str) -> None:
    assert invalid_error(describe_numbers, arguments) == error


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"left": 1}, "missing required argument 'right'"),
        ({}, "missing required argument 'left'"),
        ({"left": 1, "right": 2, "extra": 3}, "unexpected argument 'extra'"),
        ({"left": "1", "right": 2}, "left: expected an integer"),
        ({"left": 1, "right": [2]}, "right: expected an integer"),
    ],
)
def test_argument_errors(arguments: dict[str, Any], error: str) -> None:
    assert invalid_error(add, arguments) == error


@tool
async def shapes(
    points: list[Point],
    table: dict[str, list[int]],
    box: Box,
    nested: Nested,
    label: Label | None = None,
    mode: Literal["a", 1, True] = "a",
    tags: tuple[str, ...] = (),
    blob: Any = None,
) -> None:
    """Structured arguments."""


_BOX = {"width": 1}
_NESTED: dict[str, Any] = {"box": {"width": 2}, "points": []}


def _shapes_args(**overrides: Any) -> dict[str, Any]:
    return {"points": [], "table": {}, "box": _BOX, "nested": _NESTED, **overrides}


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"points": [{"x": 1, "y": 2}, {"x": "1", "y": 2}]}, "points[1].x: expected an integer"),
        ({"points": [{"x": 1}]}, "points[0]: missing field 'y'"),
        ({"points": [{"x": 1, "y": 2, "z": 3}]}, "points[0]: unexpected field 'z'"),
        ({"points": {"x": 1}}, "points: expected an array"),
        ({"points": ["p"]}, "points[0]: expected an object"),
        ({"table": {"row": [1, "2"]}}, "table.row[1]: expected an integer"),
        ({"table": [1]}, "table: expected an object"),
        ({"box": {"width": True}}, "box.width: expected an integer"),
        ({"box": {}}, "box: missing field 'width'"),
        ({"box": {"width": 1, "tags": [1]}}, "box.tags[0]: expected a string"),
        (
            {"nested": {"box": {"width": 1}, "points": [{"x": 1, "y": "no"}]}},
            "nested.points[0].y: expected a number",
        ),
        (
            {"nested": {"box": {"width": "w"}, "points": []}},
            "nested.box.width: expected an integer",
        ),
        (
            {"label": {"color": "red"}},
            "label: missing field 'text' or label: expected null",
        ),
        ({"tags": ["a", None]}, "tags[1]: expected a string"),
    ],
)
def test_nested_errors_name_the_path(overrides: dict[str, Any], error: str) -> None:
    assert invalid_error(shapes, _shapes_args(**overrides)) == error


@pytest.mark.parametrize("value", ["b", 2, False, "A", 1.0])
def test_literal_rejects_values_outside_the_set(value: object) -> None:
    error = invalid_error(shapes, _shapes_args(mode=value))
    assert error.startswith("mode: expected one of")


@pytest.mark.parametrize("value", ["a", 1, True])
def test_literal_accepts_exact_members(value: object) -> None:
    chosen = valid_value(shapes, _shapes_args(mode=value))["mode"]
    assert chosen == value
    assert type(chosen) is type(value)


def test_union_error_mentions_every_option() -> None:
    error = invalid_error(shapes, _shapes_args(label="text"))
    assert error == "label: expected an object or label: expected null"


def test_structured_values_are_converted() -> None:
    arguments = _shapes_args(
        points=[{"x": 1, "y": 2}],
        table={"r": [1, 2]},
        box={"width": 3, "tags": ["t"]},
        nested={"box": {"width": 4}, "points": [{"x": 0, "y": 0.5}]},
        label={"text": "hi"},
        tags=["a", "b"],
        blob={"free": [1, {"form": None}]},
    )
    value = valid_value(shapes, arguments)
    assert value["points"] == [{"x": 1, "y": 2.0}]
    assert type(value["points"]) is list
    assert type(value["points"][0]) is dict
    assert value["table"] == {"r": [1, 2]}
    assert value["box"] == Box(width=3, label="box", tags=["t"])
    assert value["nested"] == Nested(box=Box(width=4), points=[{"x": 0, "y": 0.5}])
    assert value["label"] == {"text": "hi"}
    assert value["tags"] == ("a", "b")
    assert value["blob"] == {"free": [1, {"form": None}]}
    assert type(value["blob"]) is dict
    assert type(value["blob"]["free"]) is list


def test_optional_typed_dict_key_may_be_omitted_or_given() -> None:
    assert valid_value(shapes, _shapes_args(label={"text": "t"}))["label"] == {"text": "t"}
    both = valid_value(shapes, _shapes_args(label={"text": "t", "color": "red"}))
    assert both["label"] == {"text": "t", "color": "red"}


def test_validator_rejects_non_mapping_arguments() -> None:
    assert isinstance(add.validate(freeze_json([1, 2])), Invalid)
    assert isinstance(add.validate(None), Invalid)
    assert isinstance(add.validate("left=1"), Invalid)


def test_validator_accepts_a_plain_json_dict() -> None:
    decision = add.validate({"left": 1, "right": 2})
    assert isinstance(decision, Valid)


# --- decoration-time errors ---------------------------------------------------------------------


async def _var_positional(*values: int) -> int:
    """Star args."""
    return 0


async def _var_keyword(**values: int) -> int:
    """Star kwargs."""
    return 0


async def _unannotated(value) -> int:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
    """No annotation."""
    return 0


async def _positional_only(value: int, /) -> int:
    """Positional only."""
    return value


class _Opaque:
    pass


async def _set_param(values: set[int]) -> None:
    """Sets are not JSON."""


async def _bytes_param(value: bytes) -> None:
    """Bytes are not JSON."""


async def _class_param(value: _Opaque) -> None:
    """Custom classes are not JSON."""


async def _int_keys(value: dict[int, str]) -> None:
    """Mapping keys must be str."""


async def _fixed_tuple(value: tuple[int, str]) -> None:
    """Only homogeneous tuples."""


async def _float_literal(value: Literal[1.5]) -> None:  # pyright: ignore[reportInvalidTypeForm, reportUnknownParameterType]
    """Literal floats are not allowed."""


async def _complex_param(value: complex) -> None:
    """Complex numbers are not JSON."""


async def _nested_unsupported(value: list[set[int]]) -> None:
    """Nested unsupported."""


DECORATION_ERRORS: list[tuple[str, Callable[..., Any]]] = [
    ("*args", _var_positional),
    ("**kwargs", _var_keyword),
    ("missing annotation", _unannotated),
    ("positional-only", _positional_only),
    ("set", _set_param),
    ("bytes", _bytes_param),
    ("custom class", _class_param),
    ("dict with int keys", _int_keys),
    ("fixed tuple", _fixed_tuple),
    ("float literal", _float_literal),
    ("complex", _complex_param),
    ("nested set", _nested_unsupported),
]


@pytest.mark.parametrize(
    "function",
    [function for _, function in DECORATION_ERRORS],
    ids=[name for name, _ in DECORATION_ERRORS],
)
def test_unsupported_functions_fail_at_decoration_time(function: Callable[..., Any]) -> None:
    with pytest.raises(TypeError) as caught:
        tool(cast(Callable[..., Coroutine[Any, Any, Any]], function))
    assert "@tool" in str(caught.value)


def test_a_sync_function_is_accepted_at_decoration_time() -> None:
    def double(value: int) -> int:
        """Double a number."""
        return value * 2

    definition = tool(double)
    assert definition.name == "double"
    assert schema_of(definition)["required"] == ["value"]
    assert valid_value(definition, {"value": 2}) == {"value": 2}


def test_unsupported_annotation_error_names_the_parameter() -> None:
    with pytest.raises(TypeError) as caught:
        tool(_set_param)
    assert "values" in str(caught.value)


def test_undocumented_lambda_fails_at_decoration_time() -> None:
    with pytest.raises(TypeError) as caught:
        tool(cast(Any, lambda: None))
    assert "description" in str(caught.value)


def test_typed_dict_with_not_required_field() -> None:
    async def sparse(value: Sparse) -> None:
        """Sparse argument."""

    definition = tool(sparse)
    schema = schema_of(definition)["properties"]["value"]
    assert schema["required"] == ["required"]
    assert schema["properties"]["optional"] == {"type": "string"}


# --- end to end ---------------------------------------------------------------------------------


async def test_decorated_tool_runs_through_the_registry() -> None:
    assert await call_tool(add, {"left": 2, "right": 40}) == (False, "42")


async def test_invalid_arguments_become_an_arguments_invalid_result() -> None:
    is_error, content = await call_tool(add, {"left": 2, "right": "x"})
    assert is_error is True
    assert content == (
        '{"error":{"code":"TOOL_ARGUMENTS_INVALID","message":"right: expected an integer"}}'
    )


async def test_unexpected_argument_becomes_an_arguments_invalid_result() -> None:
    is_error, content = await call_tool(add, {"left": 1, "right": 2, "carry": 1})
    assert is_error is True
    assert json.loads(content) == {
        "error": {"code": "TOOL_ARGUMENTS_INVALID", "message": "unexpected argument 'carry'"}
    }


async def test_structured_output_is_serialized() -> None:
    @tool
    async def make_box(width: int, label: str = "crate") -> dict[str, Any]:
        """Build a box description."""
        await asyncio.sleep(0)
        return {"width": width, "label": label, "area": width * 1.0}

    assert await call_tool(make_box, {"width": 3}) == (
        False,
        '{"area":3,"label":"crate","width":3}',
    )


async def test_function_receives_converted_structures() -> None:
    received: list[object] = []

    @tool
    async def take(box: Box, points: list[Point]) -> str:
        """Take structured input."""
        received.extend([box, points])
        return "ok"

    result = await call_tool(take, {"box": {"width": 5}, "points": [{"x": 1, "y": 2}]})
    assert result == (False, "ok")
    assert received == [Box(width=5), [{"x": 1, "y": 2.0}]]


async def test_exception_in_the_function_becomes_an_execution_failure() -> None:
    @tool
    async def explode(reason: str) -> None:
        """Always fails."""
        raise RuntimeError(reason)

    is_error, content = await call_tool(explode, {"reason": "boom"})
    assert is_error is True
    assert json.loads(content) == {"error": {"code": "TOOL_EXECUTION_FAILED", "message": "boom"}}


async def test_non_recoverable_error_in_the_function_propagates() -> None:
    error = NonRecoverableToolError("state corrupted")

    @tool
    async def corrupt() -> None:
        """Hits an invariant failure."""
        raise error

    with pytest.raises(NonRecoverableToolError) as caught:
        await call_tool(corrupt, {})
    assert caught.value is error


async def test_unserializable_return_becomes_a_serialization_failure() -> None:
    @tool
    async def leak() -> object:
        """Returns a set."""
        return {1, 2}

    is_error, content = await call_tool(leak, {})
    assert is_error is True
    assert json.loads(content)["error"]["code"] == "TOOL_OUTPUT_SERIALIZATION_FAILED"


async def test_abort_while_the_function_is_blocked_raises_the_reason() -> None:
    started = asyncio.Event()
    seen: list[str] = []

    @tool
    async def wait_forever() -> None:
        """Blocks until cancelled."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            seen.append("finally")

    controller = AbortController()
    reason = RuntimeError("stop")
    registry = ToolRegistry([wait_forever])
    call = ToolCall(id="c", name="wait_forever", arguments=JsonObject({}))
    task = asyncio.create_task(execute_tool_call(registry, call, controller.signal))
    await started.wait()
    controller.abort(reason)
    for _ in range(50):
        if task.done():
            break
        await asyncio.sleep(0)
    assert task.done()
    with pytest.raises(RuntimeError) as caught:
        task.result()
    assert caught.value is reason
    assert seen == ["finally"]


async def test_several_decorated_tools_share_one_registry() -> None:
    registry = ToolRegistry([add, documented, whoami])
    assert registry.names == ("add", "documented", "whoami")
    call = ToolCall(id="x", name="documented", arguments=JsonObject({"path": "/srv"}))
    result = await execute_tool_call(registry, call, AbortController().signal)
    assert result.content == "/srv"
