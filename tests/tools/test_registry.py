"""Checkpoint 06 (6.A-6.C, 6.F): tool definitions, the atomic registry and ``execute_tool_call``.

Definitions are snapshotted (each field read once, frozen, later caller mutation ignored);
the registry registers batches all or nothing; ``execute_tool_call`` follows the spec's exact
order, turns every ordinary failure into a linked ``is_error`` result with one of five codes,
and never turns cancellation into a result: the abort reason is raised, even while ``execute``
is blocked. Registered ``NonRecoverableToolError`` instances propagate as the same object.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import datetime
import gc
import inspect
import json
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator, Mapping
from typing import Any, cast

import pytest

from tether.abort import AbortController, AbortError, AbortSignal
from tether.jsonvalue import JsonObject
from tether.protocol import Invalid, ToolCall, ToolExecutionContext, ToolResultMessage, Valid
from tether.tools import (
    NonRecoverableToolError,
    ToolContractError,
    ToolDefinition,
    ToolRegistry,
    define_tool,
    execute_tool_call,
)
from tether.tools.serialize import serialize_output

CALL_ID = "call-1"
NOT_INSPECTABLE = "Tool call could not be inspected safely"


# --- helpers ------------------------------------------------------------------------------------


class Halt(BaseException):
    """A bare ``BaseException`` that tether must never swallow or rewrap."""


def accept(value: object) -> Valid[object]:
    return Valid(value=value)


async def echo(value: object, context: ToolExecutionContext) -> object:
    return value


def definition(
    name: str = "echo",
    *,
    validate: Callable[[Any], object] = accept,
    execute: Callable[[Any, ToolExecutionContext], object] = echo,
) -> dict[str, object]:
    """An untrusted (plain dict) definition, so hostile validators need no casts."""
    return {
        "name": name,
        "description": f"The {name} tool",
        "validate": validate,
        "execute": execute,
    }


def tool_call(name: str = "echo", call_id: str = CALL_ID, **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=JsonObject(arguments))


async def run_tool(
    validate: Callable[[Any], object] = accept,
    execute: Callable[[Any, ToolExecutionContext], object] = echo,
    *,
    signal: AbortSignal | None = None,
    **arguments: object,
) -> ToolResultMessage:
    registry = ToolRegistry([definition(validate=validate, execute=execute)])
    used = AbortController().signal if signal is None else signal
    call = ToolCall(id=CALL_ID, name="echo", arguments=JsonObject(arguments))
    return await execute_tool_call(registry, call, used)


def error_of(result: ToolResultMessage) -> tuple[str, str]:
    """The ``(code, message)`` of an error result, checking its exact content shape."""
    assert result.is_error is True
    parsed: Any = json.loads(result.content)
    assert list(parsed) == ["error"]
    assert list(parsed["error"]) == ["code", "message"]
    code: str = parsed["error"]["code"]
    message: str = parsed["error"]["message"]
    assert result.content == serialize_output({"error": {"code": code, "message": message}})
    return code, message


def assert_linked(result: ToolResultMessage, call_id: str = CALL_ID, name: str = "echo") -> None:
    assert result.id == f"tool-result-{call_id}"
    assert result.tool_call_id == call_id
    assert result.tool_name == name
    assert result.role == "toolResult"


@contextlib.contextmanager
def loop_reports() -> Generator[list[dict[str, Any]], None, None]:
    """Collect what reaches the running loop's exception handler inside the block."""
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    reports: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reports.append(context))
    try:
        yield reports
    finally:
        loop.set_exception_handler(previous)


async def settle(task: asyncio.Task[Any], turns: int = 50) -> None:
    """Give ``task`` a bounded number of loop turns to finish (never a timed wait)."""
    for _ in range(turns):
        if task.done():
            return
        await asyncio.sleep(0)
    assert task.done(), "task did not finish: the abort did not win"


def assign(target: object, attribute: str, value: object) -> None:
    """Attribute assignment that must be refused (kept out of line for the linters)."""
    setattr(target, attribute, value)


def never_called(value: object, context: ToolExecutionContext) -> object:
    raise AssertionError("execute must not be called")


def validate_never_called(value: object) -> object:
    raise AssertionError("validate must not be called")


# --- define_tool --------------------------------------------------------------------------------


async def _add(value: int, context: ToolExecutionContext) -> int:
    return value + 1


def _validate_int(value: object) -> Valid[int] | Invalid:
    return Valid(value=1)


def test_define_tool_returns_the_checked_definition() -> None:
    tool = define_tool(name="add", description="Adds one", validate=_validate_int, execute=_add)
    assert isinstance(tool, ToolDefinition)
    assert tool.name == "add"
    assert tool.description == "Adds one"
    assert tool.validate is _validate_int
    assert tool.execute is _add
    assert tool.parameters is None
    assert tool.output_limit == 4096


@pytest.mark.parametrize(
    "field", ["name", "description", "validate", "execute", "parameters", "output_limit"]
)
def test_define_tool_returns_a_frozen_definition(field: str) -> None:
    tool = define_tool(name="add", description="Adds one", validate=_validate_int, execute=_add)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(tool, field, "changed")
    assert tool.name == "add"


def test_define_tool_parameters_are_snapshotted_and_frozen() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer"}}}
    tool = define_tool(
        name="add", description="Adds one", validate=_validate_int, execute=_add, parameters=schema
    )
    schema["properties"]["x"] = {"type": "string"}
    assert tool.parameters == {"type": "object", "properties": {"x": {"type": "integer"}}}
    assert isinstance(tool.parameters, JsonObject)


def _define(**fields: object) -> ToolDefinition[Any, Any]:
    merged: dict[str, Any] = {
        "name": "t",
        "description": "A tool",
        "validate": _validate_int,
        "execute": _add,
        **fields,
    }
    return define_tool(**merged)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": ""}, "Tool name must be a non-empty string"),
        ({"name": "   "}, "Tool name must be a non-empty string"),
        ({"name": "\t\n\u3000\ufeff"}, "Tool name must be a non-empty string"),
        ({"name": 42}, "Tool name must be a non-empty string"),
        ({"name": None}, "Tool name must be a non-empty string"),
        ({"description": ""}, 'Tool "t" description must be a non-empty string'),
        ({"description": " \n "}, 'Tool "t" description must be a non-empty string'),
        ({"description": b"bytes"}, 'Tool "t" description must be a non-empty string'),
        ({"validate": None}, 'Tool "t" validate must be a function'),
        ({"validate": "validate"}, 'Tool "t" validate must be a function'),
        ({"execute": 3}, 'Tool "t" execute must be a function'),
        ({"execute": None}, 'Tool "t" execute must be a function'),
    ],
)
def test_define_tool_rejects_invalid_fields(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ToolContractError) as caught:
        _define(**fields)
    assert caught.value.code == "INVALID_TOOL_DEFINITION"
    assert str(caught.value) == message


def test_definition_checks_run_in_field_order() -> None:
    with pytest.raises(ToolContractError) as caught:
        _define(name=" ", description="", validate=None, execute=None)
    assert str(caught.value) == "Tool name must be a non-empty string"
    with pytest.raises(ToolContractError) as caught:
        _define(description="", validate=None, execute=None)
    assert str(caught.value) == 'Tool "t" description must be a non-empty string'
    with pytest.raises(ToolContractError) as caught:
        _define(validate=None, execute=None)
    assert str(caught.value) == 'Tool "t" validate must be a function'


# --- untrusted definitions ----------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, 42, 1.5, True, "tool", b"tool"])
def test_registering_a_non_object_is_rejected(value: object) -> None:
    registry = ToolRegistry()
    with pytest.raises(ToolContractError) as caught:
        registry.register(value)
    assert caught.value.code == "INVALID_TOOL_DEFINITION"
    assert str(caught.value) == "Tool definition must be an object"
    assert len(registry) == 0


@pytest.mark.parametrize("missing", ["name", "description", "validate", "execute"])
def test_dict_definition_missing_a_field_is_rejected(missing: str) -> None:
    source = definition()
    del source[missing]
    with pytest.raises(ToolContractError) as caught:
        ToolRegistry().register(source)
    assert caught.value.code == "INVALID_TOOL_DEFINITION"
    assert str(caught.value) == f"Tool definition must have an own {missing} field"


@pytest.mark.parametrize("missing", ["name", "description", "validate", "execute"])
def test_object_definition_missing_a_field_is_rejected(missing: str) -> None:
    fields = {key: value for key, value in definition().items() if key != missing}
    source = type("Partial", (), {})()
    for key, value in fields.items():
        setattr(source, key, value)
    with pytest.raises(ToolContractError) as caught:
        ToolRegistry().register(source)
    assert caught.value.code == "INVALID_TOOL_DEFINITION"
    assert str(caught.value) == f"Tool definition must have an own {missing} field"


def test_empty_list_definition_has_no_name_field() -> None:
    with pytest.raises(ToolContractError) as caught:
        ToolRegistry().register([])
    assert str(caught.value) == "Tool definition must have an own name field"


class _Boom(RuntimeError):
    pass


def _raising_property(key: str) -> property:
    def getter(self: object) -> object:
        raise _Boom(f"{key} exploded")

    return property(getter)


@pytest.mark.parametrize("key", ["name", "description", "validate", "execute"])
def test_definition_field_that_raises_could_not_be_read(key: str) -> None:
    fields: dict[str, object] = {
        "name": "t",
        "description": "d",
        "validate": staticmethod(accept),
        "execute": staticmethod(echo),
    }
    fields[key] = _raising_property(key)
    source = type("Hostile", (), fields)()
    with pytest.raises(ToolContractError) as caught:
        ToolRegistry().register(source)
    assert caught.value.code == "INVALID_TOOL_DEFINITION"
    assert str(caught.value) == f"Tool definition {key} could not be read"
    assert isinstance(caught.value.__cause__, _Boom)


class _HostileMapping(Mapping[str, object]):
    """A mapping whose item access fails for one key."""

    def __init__(self, data: dict[str, object], failing: str) -> None:
        self._data = data
        self._failing = failing

    def __getitem__(self, key: str) -> object:
        if key == self._failing:
            raise _Boom(key)
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("a definition mapping must not be iterated")

    def __len__(self) -> int:
        raise AssertionError("a definition mapping must not be measured")


@pytest.mark.parametrize("key", ["name", "description", "validate", "execute"])
def test_mapping_definition_whose_item_access_raises_could_not_be_read(key: str) -> None:
    with pytest.raises(ToolContractError) as caught:
        ToolRegistry().register(_HostileMapping(definition(), key))
    assert caught.value.code == "INVALID_TOOL_DEFINITION"
    assert str(caught.value) == f"Tool definition {key} could not be read"


class _CountingDefinition:
    """Every field is a property that counts its reads and changes on the second read."""

    def __init__(self) -> None:
        self.reads: dict[str, int] = {}

    def _read(self, key: str, first: object, later: object) -> object:
        count = self.reads.get(key, 0) + 1
        self.reads[key] = count
        return first if count == 1 else later

    @property
    def name(self) -> object:
        return self._read("name", "counted", "")

    @property
    def description(self) -> object:
        return self._read("description", "Counts reads", None)

    @property
    def validate(self) -> object:
        return self._read("validate", accept, None)

    @property
    def execute(self) -> object:
        return self._read("execute", echo, None)


def test_object_definition_fields_are_read_exactly_once() -> None:
    source = _CountingDefinition()
    snapshot = ToolRegistry().register(source)
    assert source.reads == {"name": 1, "description": 1, "validate": 1, "execute": 1}
    assert snapshot.name == "counted"
    assert snapshot.description == "Counts reads"
    assert snapshot.validate is accept
    assert snapshot.execute is echo


class _CountingMapping(Mapping[str, object]):
    def __init__(self, data: dict[str, object]) -> None:
        self._data = data
        self.reads: dict[str, int] = {}

    def __getitem__(self, key: str) -> object:
        self.reads[key] = self.reads.get(key, 0) + 1
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_mapping_definition_fields_are_read_exactly_once() -> None:
    source = _CountingMapping(definition("mapped"))
    snapshot = ToolRegistry().register(source)
    for key in ("name", "description", "validate", "execute"):
        assert source.reads[key] == 1
    assert snapshot.name == "mapped"


def test_mutating_a_dict_definition_after_registration_changes_nothing() -> None:
    source = definition("stable")
    registry = ToolRegistry([source])
    source["name"] = "renamed"
    source["execute"] = never_called
    source["validate"] = validate_never_called
    assert registry.names == ("stable",)
    tool = registry.get("stable")
    assert tool is not None
    assert tool.execute is echo
    assert tool.validate is accept
    assert registry.get("renamed") is None


async def test_mutating_an_object_definition_after_registration_changes_nothing() -> None:
    source = SimpleDefinition()
    registry = ToolRegistry([source])
    source.name = "renamed"
    source.execute = never_called
    result = await execute_tool_call(registry, tool_call("plain", x=1), AbortController().signal)
    assert result.is_error is False
    assert result.content == '{"x":1}'


class SimpleDefinition:
    """A plain object definition with instance attributes."""

    def __init__(self) -> None:
        self.name = "plain"
        self.description = "A plain object"
        self.validate: Callable[[object], object] = accept
        self.execute: Callable[[Any, ToolExecutionContext], object] = echo


def test_registering_a_tool_definition_keeps_it() -> None:
    tool = define_tool(name="add", description="Adds one", validate=_validate_int, execute=_add)
    registry = ToolRegistry([tool])
    assert registry.get("add") is tool


# --- ToolRegistry -------------------------------------------------------------------------------


def test_empty_registry() -> None:
    registry = ToolRegistry()
    assert len(registry) == 0
    assert registry.names == ()
    assert registry.get("anything") is None
    assert "anything" not in registry


def test_registry_len_names_get_and_contains() -> None:
    registry = ToolRegistry([definition("b"), definition("a")])
    registry.register(definition("c"))
    assert len(registry) == 3
    assert registry.names == ("b", "a", "c")
    assert "a" in registry
    assert "z" not in registry
    tool = registry.get("a")
    assert tool is not None
    assert tool.name == "a"
    assert registry.get("z") is None


def test_registry_names_is_a_new_immutable_tuple() -> None:
    registry = ToolRegistry([definition("a")])
    names = registry.names
    assert isinstance(names, tuple)
    registry.register(definition("b"))
    assert names == ("a",)
    assert registry.names == ("a", "b")


def test_register_many_returns_snapshots_in_order() -> None:
    registry = ToolRegistry()
    snapshots = registry.register_many([definition("x"), definition("y")])
    assert [snapshot.name for snapshot in snapshots] == ["x", "y"]
    assert registry.get("x") is snapshots[0]


def test_register_many_accepts_a_tuple_and_an_empty_batch() -> None:
    registry = ToolRegistry()
    registry.register_many((definition("x"),))
    registry.register_many([])
    registry.register_many(())
    assert registry.names == ("x",)


def test_register_returns_the_frozen_snapshot() -> None:
    snapshot = ToolRegistry().register(definition("one"))
    assert isinstance(snapshot, ToolDefinition)
    with pytest.raises(dataclasses.FrozenInstanceError):
        assign(snapshot, "name", "two")


def test_snapshot_is_independent_in_both_directions() -> None:
    original = ToolRegistry([definition("shared")])
    copy_ = original.snapshot()
    assert copy_ is not original
    assert copy_.names == ("shared",)
    assert copy_.get("shared") is original.get("shared")
    original.register(definition("only-original"))
    copy_.register(definition("only-copy"))
    assert original.names == ("shared", "only-original")
    assert copy_.names == ("shared", "only-copy")
    assert "only-copy" not in original
    assert "only-original" not in copy_


def test_snapshots_share_the_specs_their_source_builds_once() -> None:
    """Every run snapshots the caller's registry: the snapshots share one specs tuple (built
    on the source), and a registration on either side gives that side its own again."""
    original = ToolRegistry([definition("shared")])
    first, second = original.snapshot(), original.snapshot()
    assert first.specs() is original.specs()
    assert second.specs() is original.specs()
    first.register(definition("only-first"))
    assert [spec.name for spec in first.specs()] == ["shared", "only-first"]
    assert [spec.name for spec in original.specs()] == ["shared"]
    assert second.specs() is original.specs()


def _generator_batch() -> Generator[dict[str, object], None, None]:
    yield definition("g")


@pytest.mark.parametrize(
    "batch",
    [None, "abc", 42, {"a": 1}, {1, 2}, frozenset[int](), _generator_batch(), range(0), iter([])],
    ids=["None", "str", "int", "dict", "set", "frozenset", "generator", "range", "iterator"],
)
def test_register_many_requires_a_list_or_tuple(batch: Any) -> None:
    registry = ToolRegistry([definition("keep")])
    with pytest.raises(ToolContractError) as caught:
        registry.register_many(batch)
    assert caught.value.code == "INVALID_TOOL_BATCH"
    assert str(caught.value) == "Tool definitions must be an array"
    assert registry.names == ("keep",)


def test_registry_constructor_requires_a_list_or_tuple() -> None:
    with pytest.raises(ToolContractError) as caught:
        ToolRegistry(cast(Any, {"name": "x"}))
    assert caught.value.code == "INVALID_TOOL_BATCH"


def test_list_subclass_batch_is_rejected() -> None:
    class Batch(list[object]):
        pass

    with pytest.raises(ToolContractError) as caught:
        ToolRegistry().register_many(Batch([definition("x")]))
    assert caught.value.code == "INVALID_TOOL_BATCH"


def test_duplicate_name_within_a_batch() -> None:
    registry = ToolRegistry()
    with pytest.raises(ToolContractError) as caught:
        registry.register_many([definition("a"), definition("b"), definition("a")])
    assert caught.value.code == "DUPLICATE_TOOL_NAME"
    assert str(caught.value) == 'Tool name "a" is already registered'
    assert len(registry) == 0


def test_duplicate_name_against_existing_entries() -> None:
    registry = ToolRegistry([definition("a")])
    with pytest.raises(ToolContractError) as caught:
        registry.register(definition("a"))
    assert caught.value.code == "DUPLICATE_TOOL_NAME"
    assert str(caught.value) == 'Tool name "a" is already registered'


def test_duplicate_names_are_case_and_space_sensitive() -> None:
    registry = ToolRegistry([definition("a"), definition("A"), definition(" a")])
    assert registry.names == ("a", "A", " a")


def test_constructor_with_duplicates_raises() -> None:
    with pytest.raises(ToolContractError) as caught:
        ToolRegistry([definition("x"), definition("x")])
    assert caught.value.code == "DUPLICATE_TOOL_NAME"


@pytest.mark.parametrize(
    ("bad_entry", "code"),
    [
        (42, "INVALID_TOOL_DEFINITION"),
        ({"name": "broken"}, "INVALID_TOOL_DEFINITION"),
        ({**definition("broken"), "execute": None}, "INVALID_TOOL_DEFINITION"),
        (definition("existing"), "DUPLICATE_TOOL_NAME"),
        (definition("first"), "DUPLICATE_TOOL_NAME"),
    ],
    ids=["not an object", "missing fields", "bad execute", "existing name", "duplicate in batch"],
)
def test_failing_batch_leaves_the_registry_exactly_as_before(bad_entry: object, code: str) -> None:
    registry = ToolRegistry([definition("existing")])
    before = registry.get("existing")
    batch = [definition("first"), bad_entry, definition("last")]
    with pytest.raises(ToolContractError) as caught:
        registry.register_many(batch)
    assert caught.value.code == code
    assert registry.names == ("existing",)
    assert len(registry) == 1
    assert registry.get("existing") is before
    assert "first" not in registry
    assert "last" not in registry
    registry.register_many([definition("first"), definition("last")])
    assert registry.names == ("existing", "first", "last")


def test_failing_batch_via_register_leaves_registry_unchanged() -> None:
    registry = ToolRegistry([definition("a")])
    with pytest.raises(ToolContractError):
        registry.register(definition(""))
    assert registry.names == ("a",)


# --- errors -------------------------------------------------------------------------------------


def test_tool_contract_error_has_read_only_code_and_name() -> None:
    error = ToolContractError("INVALID_TOOL_CALL", "bad")
    assert error.code == "INVALID_TOOL_CALL"
    assert error.name == "ToolContractError"
    assert str(error) == "bad"
    assert isinstance(error, Exception)
    with pytest.raises(AttributeError):
        assign(error, "code", "OTHER")
    assert error.code == "INVALID_TOOL_CALL"


def test_non_recoverable_error_fields_are_read_only() -> None:
    error = NonRecoverableToolError("broken invariant")
    assert error.code == "NON_RECOVERABLE_TOOL_ERROR"
    assert error.non_recoverable is True
    assert error.name == "NonRecoverableToolError"
    assert str(error) == "broken invariant"
    with pytest.raises(AttributeError):
        assign(error, "code", "OTHER")
    with pytest.raises(AttributeError):
        assign(error, "non_recoverable", False)
    assert error.code == "NON_RECOVERABLE_TOOL_ERROR"
    assert error.non_recoverable is True


# --- execute_tool_call: order of checks ---------------------------------------------------------


async def test_pre_aborted_signal_raises_the_reason_before_anything_else() -> None:
    controller = AbortController()
    reason = RuntimeError("stop")
    controller.abort(reason)
    with pytest.raises(RuntimeError) as caught:
        await execute_tool_call(cast(Any, "not a registry"), cast(Any, 42), controller.signal)
    assert caught.value is reason


async def test_pre_aborted_signal_wins_over_an_unknown_tool() -> None:
    controller = AbortController()
    reason = ValueError("cancelled")
    controller.abort(reason)
    with pytest.raises(ValueError, match="cancelled") as caught:
        await execute_tool_call(ToolRegistry(), tool_call("missing"), controller.signal)
    assert caught.value is reason


async def test_pre_aborted_signal_with_default_reason_raises_abort_error() -> None:
    controller = AbortController()
    controller.abort()
    with pytest.raises(AbortError) as caught:
        await execute_tool_call(ToolRegistry([definition()]), tool_call(), controller.signal)
    assert caught.value.name == "AbortError"
    assert str(caught.value) == "This operation was aborted"
    assert caught.value is controller.signal.reason


async def test_pre_aborted_signal_with_non_exception_reason_raises_abort_error_carrying_it() -> (
    None
):
    controller = AbortController()
    controller.abort("user pressed stop")
    with pytest.raises(AbortError) as caught:
        await execute_tool_call(ToolRegistry([definition()]), tool_call(), controller.signal)
    assert caught.value.reason == "user pressed stop"


class _SpyRegistry(ToolRegistry):
    __slots__ = ("lookups",)

    def __init__(self, definitions: list[object]) -> None:
        super().__init__(definitions)
        self.lookups: list[str] = []

    def get(self, name: str) -> ToolDefinition[Any, Any] | None:
        self.lookups.append(name)
        return super().get(name)


class _SpyCall(Mapping[str, object]):
    def __init__(self, data: dict[str, object]) -> None:
        self._data = data
        self.reads: list[str] = []

    def __getitem__(self, key: str) -> object:
        self.reads.append(key)
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def _call_mapping(
    name: str = "echo", call_id: str = CALL_ID, arguments: object = None
) -> dict[str, object]:
    return {
        "type": "toolCall",
        "id": call_id,
        "name": name,
        "arguments": {} if arguments is None else arguments,
    }


async def test_pre_aborted_signal_touches_neither_registry_nor_call() -> None:
    validated: list[object] = []
    registry = _SpyRegistry([definition(validate=lambda value: validated.append(value))])
    call = _SpyCall(_call_mapping())
    controller = AbortController()
    controller.abort()
    with pytest.raises(AbortError):
        await execute_tool_call(registry, cast(Any, call), controller.signal)
    assert registry.lookups == []
    assert call.reads == []
    assert validated == []


async def test_spy_registry_sees_one_lookup_when_not_aborted() -> None:
    registry = _SpyRegistry([definition()])
    result = await execute_tool_call(registry, tool_call(), AbortController().signal)
    assert result.is_error is False
    assert registry.lookups == ["echo"]


@pytest.mark.parametrize("registry", [None, {}, "registry", [definition()], object()])
async def test_non_registry_is_an_invalid_tool_call(registry: object) -> None:
    with pytest.raises(ToolContractError) as caught:
        await execute_tool_call(cast(Any, registry), tool_call(), AbortController().signal)
    assert caught.value.code == "INVALID_TOOL_CALL"
    assert str(caught.value) == "execute_tool_call requires a ToolRegistry"


async def test_registry_is_checked_before_the_tool_call() -> None:
    with pytest.raises(ToolContractError) as caught:
        await execute_tool_call(cast(Any, None), cast(Any, 42), AbortController().signal)
    assert str(caught.value) == "execute_tool_call requires a ToolRegistry"


class _ExplodingCall(Mapping[str, object]):
    """A tool-call mapping whose every item access raises."""

    def __getitem__(self, key: str) -> object:
        raise _Boom(f"cannot read {key}")

    def __iter__(self) -> Iterator[str]:
        raise _Boom("cannot iterate")

    def __len__(self) -> int:
        raise _Boom("cannot measure")


BAD_CALLS: list[tuple[str, object]] = [
    ("None", None),
    ("int", 42),
    ("string", "toolCall"),
    ("list", [_call_mapping()]),
    ("wrong type", {**_call_mapping(), "type": "toolcall"}),
    ("missing type", {key: value for key, value in _call_mapping().items() if key != "type"}),
    ("blank id", _call_mapping(call_id="")),
    ("whitespace id", _call_mapping(call_id="  \t")),
    ("int id", {**_call_mapping(), "id": 7}),
    ("missing id", {key: value for key, value in _call_mapping().items() if key != "id"}),
    ("blank name", _call_mapping(name=" ")),
    ("None name", {**_call_mapping(), "name": None}),
    ("array arguments", _call_mapping(arguments=[1, 2])),
    ("tuple arguments", _call_mapping(arguments=(1,))),
    ("None arguments", {**_call_mapping(), "arguments": None}),
    ("string arguments", _call_mapping(arguments="{}")),
    (
        "missing arguments",
        {key: value for key, value in _call_mapping().items() if key != "arguments"},
    ),
    ("set inside arguments", _call_mapping(arguments={"x": {1}})),
    ("NaN inside arguments", _call_mapping(arguments={"x": float("nan")})),
    ("int key inside arguments", _call_mapping(arguments={"x": {1: 2}})),
    ("hostile mapping", _ExplodingCall()),
]


@pytest.mark.parametrize(
    "call", [call for _, call in BAD_CALLS], ids=[name for name, _ in BAD_CALLS]
)
async def test_bad_tool_call_is_an_invalid_tool_call(call: object) -> None:
    registry = ToolRegistry([definition(validate=validate_never_called)])
    with pytest.raises(ToolContractError) as caught:
        await execute_tool_call(registry, cast(Any, call), AbortController().signal)
    assert caught.value.code == "INVALID_TOOL_CALL"
    assert str(caught.value) == NOT_INSPECTABLE


async def test_invalid_tool_call_keeps_the_underlying_cause() -> None:
    with pytest.raises(ToolContractError) as caught:
        await execute_tool_call(
            ToolRegistry([definition()]), cast(Any, _ExplodingCall()), AbortController().signal
        )
    assert isinstance(caught.value.__cause__, _Boom)


async def test_forged_tool_contract_error_from_a_call_is_wrapped_in_a_new_one() -> None:
    forged = ToolContractError("DUPLICATE_TOOL_NAME", "forged")

    class Forging(Mapping[str, object]):
        def __getitem__(self, key: str) -> object:
            raise forged

        def __iter__(self) -> Iterator[str]:
            return iter(())

        def __len__(self) -> int:
            return 0

    with pytest.raises(ToolContractError) as caught:
        await execute_tool_call(
            ToolRegistry([definition()]), cast(Any, Forging()), AbortController().signal
        )
    assert caught.value is not forged
    assert caught.value.code == "INVALID_TOOL_CALL"
    assert str(caught.value) == NOT_INSPECTABLE


async def test_abort_during_call_snapshot_failure_raises_the_reason() -> None:
    controller = AbortController()
    reason = RuntimeError("aborted while inspecting")

    class Aborting(Mapping[str, object]):
        def __getitem__(self, key: str) -> object:
            controller.abort(reason)
            raise _Boom(key)

        def __iter__(self) -> Iterator[str]:
            return iter(())

        def __len__(self) -> int:
            return 0

    with pytest.raises(RuntimeError) as caught:
        await execute_tool_call(
            ToolRegistry([definition()]), cast(Any, Aborting()), controller.signal
        )
    assert caught.value is reason


async def test_abort_during_successful_call_snapshot_raises_the_reason() -> None:
    controller = AbortController()
    reason = RuntimeError("aborted while inspecting")
    data = _call_mapping()

    class Aborting(Mapping[str, object]):
        def __getitem__(self, key: str) -> object:
            controller.abort(reason)
            return data[key]

        def __iter__(self) -> Iterator[str]:
            return iter(data)

        def __len__(self) -> int:
            return len(data)

    registry = ToolRegistry([definition(validate=validate_never_called)])
    with pytest.raises(RuntimeError) as caught:
        await execute_tool_call(registry, cast(Any, Aborting()), controller.signal)
    assert caught.value is reason


async def test_mapping_tool_call_is_snapshotted_and_linked() -> None:
    seen: list[object] = []

    def validate(value: object) -> Valid[object]:
        seen.append(value)
        return Valid(value=value)

    registry = ToolRegistry([definition(validate=validate)])
    arguments: dict[str, Any] = {"b": [1, 2], "a": {"c": None}}
    call = _call_mapping(call_id="call-7", arguments=arguments)
    result = await execute_tool_call(registry, cast(Any, call), AbortController().signal)
    assert_linked(result, "call-7")
    assert result.is_error is False
    assert result.content == '{"a":{"c":null},"b":[1,2]}'
    assert type(seen[0]) is JsonObject
    assert seen[0] == arguments


async def test_validate_receives_frozen_arguments() -> None:
    seen: list[object] = []

    def validate(value: object) -> Valid[object]:
        seen.append(value)
        return Valid(value=1)

    await run_tool(validate, x=[1, {"y": 2}])
    arguments = seen[0]
    assert isinstance(arguments, JsonObject)
    with pytest.raises(TypeError):
        cast(Any, arguments)["x"] = 0
    assert arguments == {"x": [1, {"y": 2}]}


# --- TOOL_NOT_FOUND -----------------------------------------------------------------------------


async def test_unknown_tool_resolves_an_exact_not_found_result() -> None:
    registry = ToolRegistry([definition("echo")])
    result = await execute_tool_call(
        registry, tool_call("missing", call_id="c-9"), AbortController().signal
    )
    assert result.content == (
        '{"error":{"code":"TOOL_NOT_FOUND","message":"Unknown Tool \\"missing\\""}}'
    )
    assert result.is_error is True
    assert_linked(result, "c-9", "missing")
    assert registry.names == ("echo",)


async def test_unknown_tool_on_an_empty_registry() -> None:
    result = await execute_tool_call(ToolRegistry(), tool_call("x"), AbortController().signal)
    assert error_of(result) == ("TOOL_NOT_FOUND", 'Unknown Tool "x"')


async def test_result_message_is_frozen() -> None:
    result = await run_tool()
    assert isinstance(result, ToolResultMessage)
    with pytest.raises(dataclasses.FrozenInstanceError):
        assign(result, "content", "changed")


# --- validation ---------------------------------------------------------------------------------


class _UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (ValueError("bad input"), "bad input"),
        (TypeError("wrong type"), "wrong type"),
        (ValueError(""), "Tool validation failed"),
        (ValueError(), "Tool validation failed"),
        (_UnprintableError("x"), "Tool validation failed"),
        (ToolContractError("INVALID_TOOL_CALL", "forged contract"), "forged contract"),
    ],
)
async def test_validator_raising_becomes_validation_failed(error: Exception, message: str) -> None:
    def validate(value: object) -> object:
        raise error

    result = await run_tool(validate, never_called)
    assert error_of(result) == ("TOOL_VALIDATION_FAILED", message)
    assert_linked(result)


async def test_validator_raising_a_base_exception_propagates_the_same_object() -> None:
    halt = Halt()

    def validate(value: object) -> object:
        raise halt

    with pytest.raises(Halt) as caught:
        await run_tool(validate, never_called)
    assert caught.value is halt


async def test_validator_returning_a_coroutine_is_rejected_and_closed() -> None:
    created: list[Coroutine[Any, Any, object]] = []
    executed: list[object] = []

    async def later() -> object:
        return Valid(value=1)

    def validate(value: object) -> object:
        coroutine = later()
        created.append(coroutine)
        return coroutine

    async def execute(value: object, context: ToolExecutionContext) -> object:
        executed.append(value)
        return value

    result = await run_tool(validate, execute)
    assert error_of(result) == (
        "TOOL_VALIDATION_FAILED",
        "Tool validation must return synchronously",
    )
    assert inspect.getcoroutinestate(created[0]) == inspect.CORO_CLOSED
    assert executed == []


async def test_validator_returning_a_failed_future_is_rejected_without_a_lost_exception() -> None:
    loop = asyncio.get_running_loop()
    futures: list[asyncio.Future[object]] = []

    def validate(value: object) -> object:
        future: asyncio.Future[object] = loop.create_future()
        future.set_exception(ValueError("async validation failed"))
        futures.append(future)
        return future

    with loop_reports() as reports:
        result = await run_tool(validate, never_called)
        for _ in range(3):
            await asyncio.sleep(0)
        futures.clear()
        gc.collect()
        await asyncio.sleep(0)
    assert error_of(result) == (
        "TOOL_VALIDATION_FAILED",
        "Tool validation must return synchronously",
    )
    assert reports == []


async def test_validator_returning_a_pending_future_that_later_fails_is_observed() -> None:
    loop = asyncio.get_running_loop()
    futures: list[asyncio.Future[object]] = []

    def validate(value: object) -> object:
        future: asyncio.Future[object] = loop.create_future()
        futures.append(future)
        return future

    with loop_reports() as reports:
        result = await run_tool(validate, never_called)
        futures[0].set_exception(ValueError("late"))
        for _ in range(3):
            await asyncio.sleep(0)
        futures.clear()
        gc.collect()
        await asyncio.sleep(0)
    assert error_of(result)[0] == "TOOL_VALIDATION_FAILED"
    assert reports == []


class _CustomAwaitable:
    def __await__(self) -> Generator[Any, None, object]:
        yield from ()
        return Valid(value=1)


async def test_validator_returning_a_custom_awaitable_is_rejected() -> None:
    result = await run_tool(lambda value: _CustomAwaitable(), never_called)
    assert error_of(result) == (
        "TOOL_VALIDATION_FAILED",
        "Tool validation must return synchronously",
    )


@pytest.mark.parametrize(
    "decision",
    [None, 42, "ok", True, [True, 1], (True,), Valid, object()],
    ids=["None", "int", "str", "bool", "list", "tuple", "class", "object"],
)
async def test_non_decision_return_is_validation_failed(decision: object) -> None:
    result = await run_tool(lambda value: decision, never_called)
    assert error_of(result) == (
        "TOOL_VALIDATION_FAILED",
        "Tool validation must return a decision object",
    )


async def test_mapping_decision_ok_true_passes_its_value_to_execute() -> None:
    payload = {"prepared": True}
    received: list[object] = []

    async def execute(value: object, context: ToolExecutionContext) -> object:
        received.append(value)
        return "done"

    result = await run_tool(lambda value: {"ok": True, "value": payload}, execute)
    assert result.is_error is False
    assert result.content == "done"
    assert received[0] is payload


async def test_mapping_decision_ok_true_with_none_value() -> None:
    result = await run_tool(lambda value: {"ok": True, "value": None})
    assert result.is_error is False
    assert result.content == "null"


async def test_mapping_decision_ok_false_is_arguments_invalid() -> None:
    result = await run_tool(
        lambda value: {"ok": False, "error": "x must be positive"}, never_called
    )
    assert error_of(result) == ("TOOL_ARGUMENTS_INVALID", "x must be positive")


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        ({"ok": False, "error": ""}, "A rejected Tool validation must include a non-empty error"),
        (
            {"ok": False, "error": "   "},
            "A rejected Tool validation must include a non-empty error",
        ),
        ({"ok": False, "error": 5}, "A rejected Tool validation must include a non-empty error"),
        ({"ok": False}, "A rejected Tool validation must include a non-empty error"),
        ({"ok": "yes"}, "Tool validation ok must be a boolean"),
        ({"ok": 1, "value": 1}, "Tool validation ok must be a boolean"),
        ({"ok": 0, "error": "no"}, "Tool validation ok must be a boolean"),
        ({"ok": None}, "Tool validation ok must be a boolean"),
    ],
)
async def test_malformed_mapping_decision_is_validation_failed(
    decision: dict[str, object], message: str
) -> None:
    result = await run_tool(lambda value: decision, never_called)
    assert error_of(result) == ("TOOL_VALIDATION_FAILED", message)


@pytest.mark.parametrize("decision", [{}, {"ok": True}], ids=["no ok", "ok without value"])
async def test_incomplete_mapping_decision_is_validation_failed(
    decision: dict[str, object],
) -> None:
    result = await run_tool(lambda value: decision, never_called)
    code, message = error_of(result)
    assert code == "TOOL_VALIDATION_FAILED"
    assert message


class _HostileDecision(Mapping[str, object]):
    def __init__(self, error: BaseException) -> None:
        self._error = error

    def __getitem__(self, key: str) -> object:
        raise self._error

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (_Boom("decision exploded"), "decision exploded"),
        (_Boom(""), "Tool validation returned an invalid decision"),
    ],
)
async def test_decision_that_raises_when_read_is_validation_failed(
    error: Exception, message: str
) -> None:
    result = await run_tool(lambda value: _HostileDecision(error), never_called)
    assert error_of(result) == ("TOOL_VALIDATION_FAILED", message)


async def test_mapping_decision_fields_are_read_once() -> None:
    decision = _CountingMapping({"ok": True, "value": 3})
    result = await run_tool(lambda value: decision)
    assert result.content == "3"
    assert decision.reads == {"ok": 1, "value": 1}


async def test_invalid_is_arguments_invalid_and_execute_is_not_called() -> None:
    result = await run_tool(lambda value: Invalid(error="left must be an integer"), never_called)
    assert error_of(result) == ("TOOL_ARGUMENTS_INVALID", "left must be an integer")
    assert_linked(result)


async def test_valid_value_reaches_execute_as_the_same_object() -> None:
    prepared = object()
    received: list[object] = []

    async def execute(value: object, context: ToolExecutionContext) -> object:
        received.append(value)
        return 1

    result = await run_tool(lambda value: Valid(value=prepared), execute)
    assert result.content == "1"
    assert received == [prepared]
    assert received[0] is prepared


# --- execution ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (RuntimeError("disk on fire"), "disk on fire"),
        (KeyError("key"), "'key'"),
        (RuntimeError(""), "Tool execution failed"),
        (RuntimeError(), "Tool execution failed"),
        (_UnprintableError(), "Tool execution failed"),
    ],
)
async def test_execute_raising_asynchronously_is_execution_failed(
    error: Exception, message: str
) -> None:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        await asyncio.sleep(0)
        raise error

    result = await run_tool(execute=execute)
    assert error_of(result) == ("TOOL_EXECUTION_FAILED", message)
    assert_linked(result)


@pytest.mark.parametrize(
    ("error", "message"),
    [(RuntimeError("sync failure"), "sync failure"), (ValueError(""), "Tool execution failed")],
)
async def test_execute_raising_synchronously_is_execution_failed(
    error: Exception, message: str
) -> None:
    def execute(value: object, context: ToolExecutionContext) -> object:
        raise error

    result = await run_tool(execute=execute)
    assert error_of(result) == ("TOOL_EXECUTION_FAILED", message)


@pytest.mark.parametrize(
    ("output", "content"),
    [({"n": 1}, '{"n":1}'), ([1, "a"], '[1,"a"]'), ("text", "text"), (3, "3"), (None, "null")],
    ids=["dict", "list", "str", "int", "None"],
)
async def test_execute_returning_a_plain_value_is_accepted(output: object, content: str) -> None:
    def execute(value: object, context: ToolExecutionContext) -> object:
        return output

    result = await run_tool(execute=execute)
    assert result.is_error is False
    assert result.content == content


async def test_execute_returning_a_resolved_future_is_awaited() -> None:
    loop = asyncio.get_running_loop()

    def execute(value: object, context: ToolExecutionContext) -> Awaitable[object]:
        future: asyncio.Future[object] = loop.create_future()
        future.set_result({"from": "future"})
        return future

    result = await run_tool(execute=execute)
    assert result.content == '{"from":"future"}'


async def test_execute_returning_a_failed_future_is_execution_failed() -> None:
    loop = asyncio.get_running_loop()

    def execute(value: object, context: ToolExecutionContext) -> Awaitable[object]:
        future: asyncio.Future[object] = loop.create_future()
        future.set_exception(RuntimeError("future failed"))
        return future

    result = await run_tool(execute=execute)
    assert error_of(result) == ("TOOL_EXECUTION_FAILED", "future failed")


async def test_execute_success_content_is_the_serialized_output() -> None:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        await asyncio.sleep(0)
        return {"sum": 3.0, "items": ("a", None), "ok": True}

    result = await run_tool(execute=execute)
    assert result.is_error is False
    assert result.content == '{"items":["a",null],"ok":true,"sum":3}'
    assert_linked(result)


async def test_execute_output_is_truncated_to_the_cap() -> None:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        return "x" * 10_000

    result = await run_tool(execute=execute)
    assert result.is_error is False
    assert len(result.content) == 4096
    assert result.content == "x" * 4072 + "\n[Tool output truncated]"


async def test_long_error_message_is_bounded() -> None:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        raise RuntimeError("y" * 10_000)

    result = await run_tool(execute=execute)
    assert result.is_error is True
    assert len(result.content) == 4096
    assert result.content.startswith('{"error":{"code":"TOOL_EXECUTION_FAILED","message":"yyy')
    assert result.content.endswith("\n[Tool output truncated]")


@dataclasses.dataclass
class _Report:
    total: int


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (datetime.date(2024, 1, 1), "Tool output objects must be plain or have a null prototype"),
        ({1, 2}, "Tool output objects must be plain or have a null prototype"),
        (b"bytes", "Tool output objects must be plain or have a null prototype"),
        (_Report(3), "Tool output objects must be plain or have a null prototype"),
        (object(), "Tool output objects must be plain or have a null prototype"),
        ({1: "a"}, "Tool output object keys must be strings"),
        ({"nested": [{"deep": {2}}]}, "Tool output objects must be plain or have a null prototype"),
    ],
    ids=["date", "set", "bytes", "dataclass", "object", "int keys", "nested set"],
)
async def test_unserializable_output_is_serialization_failed(output: object, message: str) -> None:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        return output

    result = await run_tool(execute=execute)
    assert error_of(result) == ("TOOL_OUTPUT_SERIALIZATION_FAILED", message)
    assert_linked(result)


async def test_context_carries_the_same_signal_and_the_call_id() -> None:
    controller = AbortController()
    contexts: list[ToolExecutionContext] = []

    async def execute(value: object, context: ToolExecutionContext) -> object:
        contexts.append(context)
        return None

    registry = ToolRegistry([definition(execute=execute)])
    await execute_tool_call(registry, tool_call(call_id="call-42"), controller.signal)
    context = contexts[0]
    assert isinstance(context, ToolExecutionContext)
    assert context.signal is controller.signal
    assert context.tool_call_id == "call-42"
    with pytest.raises(dataclasses.FrozenInstanceError):
        assign(context, "tool_call_id", "other")


async def test_execute_raising_a_base_exception_propagates_the_same_object() -> None:
    halt = Halt()

    async def execute(value: object, context: ToolExecutionContext) -> object:
        raise halt

    with pytest.raises(Halt) as caught:
        await run_tool(execute=execute)
    assert caught.value is halt


async def test_execute_raising_cancelled_error_propagates() -> None:
    cancelled = asyncio.CancelledError("from the tool")

    async def execute(value: object, context: ToolExecutionContext) -> object:
        raise cancelled

    with pytest.raises(asyncio.CancelledError) as caught:
        await run_tool(execute=execute)
    assert caught.value is cancelled


# --- NonRecoverableToolError --------------------------------------------------------------------


class _FatalToolError(NonRecoverableToolError):
    pass


@pytest.mark.parametrize(
    "error", [NonRecoverableToolError("invariant broken"), _FatalToolError("subclass")]
)
async def test_non_recoverable_error_from_async_execute_propagates(
    error: NonRecoverableToolError,
) -> None:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        await asyncio.sleep(0)
        raise error

    with pytest.raises(NonRecoverableToolError) as caught:
        await run_tool(execute=execute)
    assert caught.value is error


async def test_non_recoverable_error_from_sync_execute_propagates() -> None:
    error = NonRecoverableToolError("sync invariant")

    def execute(value: object, context: ToolExecutionContext) -> object:
        raise error

    with pytest.raises(NonRecoverableToolError) as caught:
        await run_tool(execute=execute)
    assert caught.value is error


async def test_non_recoverable_error_from_validate_propagates() -> None:
    error = NonRecoverableToolError("validator invariant")

    def validate(value: object) -> object:
        raise error

    with pytest.raises(NonRecoverableToolError) as caught:
        await run_tool(validate, never_called)
    assert caught.value is error


async def test_non_recoverable_error_while_reading_a_decision_propagates() -> None:
    error = NonRecoverableToolError("decision invariant")
    with pytest.raises(NonRecoverableToolError) as caught:
        await run_tool(lambda value: _HostileDecision(error), never_called)
    assert caught.value is error


class _ForgedNonRecoverable(Exception):
    code = "NON_RECOVERABLE_TOOL_ERROR"
    non_recoverable = True
    name = "NonRecoverableToolError"


async def test_forged_look_alike_becomes_an_ordinary_execution_failure() -> None:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        raise _ForgedNonRecoverable("pretending")

    result = await run_tool(execute=execute)
    assert error_of(result) == ("TOOL_EXECUTION_FAILED", "pretending")


async def test_forged_look_alike_from_validate_becomes_validation_failed() -> None:
    def validate(value: object) -> object:
        raise _ForgedNonRecoverable("pretending")

    result = await run_tool(validate, never_called)
    assert error_of(result) == ("TOOL_VALIDATION_FAILED", "pretending")


async def test_instance_built_without_the_constructor_is_not_trusted() -> None:
    forged = NonRecoverableToolError.__new__(NonRecoverableToolError, "not constructed")

    async def execute(value: object, context: ToolExecutionContext) -> object:
        raise forged

    result = await run_tool(execute=execute)
    assert error_of(result) == ("TOOL_EXECUTION_FAILED", "not constructed")


async def test_copied_instance_is_not_trusted() -> None:
    replayed = copy.copy(NonRecoverableToolError("copied"))

    async def execute(value: object, context: ToolExecutionContext) -> object:
        raise replayed

    result = await run_tool(execute=execute)
    assert error_of(result) == ("TOOL_EXECUTION_FAILED", "copied")


async def test_abort_wins_over_a_non_recoverable_error() -> None:
    controller = AbortController()
    reason = RuntimeError("stop")

    async def execute(value: object, context: ToolExecutionContext) -> object:
        controller.abort(reason)
        raise NonRecoverableToolError("too late")

    with pytest.raises(RuntimeError) as caught:
        await run_tool(execute=execute, signal=controller.signal)
    assert caught.value is reason


# --- cancellation -------------------------------------------------------------------------------


def _accepting(value: object) -> object:
    return Valid(value=value)


def _raising(value: object) -> object:
    raise ValueError("validator failed too")


def _deciding(decision: object) -> Callable[[object], object]:
    return lambda value: decision


@pytest.mark.parametrize(
    "outcome",
    [
        _accepting,
        _deciding(Invalid(error="rejected")),
        _deciding({"ok": "maybe"}),
        _deciding(42),
        _deciding({"ok": False, "error": "no"}),
        _raising,
    ],
    ids=["Valid", "Invalid", "bad ok", "not a decision", "mapping rejection", "raises"],
)
async def test_abort_during_validation_wins_and_execute_is_not_called(
    outcome: Callable[[object], object],
) -> None:
    controller = AbortController()
    reason = RuntimeError("stop during validation")

    def validate(value: object) -> object:
        controller.abort(reason)
        return outcome(value)

    with pytest.raises(RuntimeError) as caught:
        await run_tool(validate, never_called, signal=controller.signal)
    assert caught.value is reason


async def test_abort_during_validation_wins_over_an_async_validator() -> None:
    controller = AbortController()
    reason = RuntimeError("stop")
    created: list[Coroutine[Any, Any, object]] = []

    async def later() -> object:
        return Valid(value=1)

    def validate(value: object) -> object:
        controller.abort(reason)
        coroutine = later()
        created.append(coroutine)
        return coroutine

    try:
        with pytest.raises(RuntimeError) as caught:
            await run_tool(validate, never_called, signal=controller.signal)
        assert caught.value is reason
    finally:
        for coroutine in created:
            coroutine.close()


async def test_abort_while_execute_is_blocked_raises_the_reason_and_cancels_execute() -> None:
    controller = AbortController()
    reason = RuntimeError("user cancelled")
    started = asyncio.Event()
    never = asyncio.Event()
    seen: list[str] = []

    async def execute(value: object, context: ToolExecutionContext) -> object:
        started.set()
        try:
            await never.wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        finally:
            seen.append("finally")
        return "unreachable"

    task = asyncio.create_task(run_tool(execute=execute, signal=controller.signal))
    await started.wait()
    controller.abort(reason)
    await settle(task)
    with pytest.raises(RuntimeError) as caught:
        task.result()
    assert caught.value is reason
    assert seen == ["cancelled", "finally"]
    assert not never.is_set()


async def test_abort_while_blocked_with_a_non_exception_reason() -> None:
    controller = AbortController()
    started = asyncio.Event()

    async def execute(value: object, context: ToolExecutionContext) -> object:
        started.set()
        await asyncio.Event().wait()
        return None

    task = asyncio.create_task(run_tool(execute=execute, signal=controller.signal))
    await started.wait()
    controller.abort("stop please")
    await settle(task)
    with pytest.raises(AbortError) as caught:
        task.result()
    assert caught.value.reason == "stop please"


async def test_abort_while_blocked_on_a_future_cancels_that_future() -> None:
    controller = AbortController()
    loop = asyncio.get_running_loop()
    pending: asyncio.Future[object] = loop.create_future()

    def execute(value: object, context: ToolExecutionContext) -> Awaitable[object]:
        return pending

    task = asyncio.create_task(run_tool(execute=execute, signal=controller.signal))
    for _ in range(3):
        await asyncio.sleep(0)
    assert not task.done()
    controller.abort()
    await settle(task)
    with pytest.raises(AbortError):
        task.result()
    assert pending.cancelled()


async def test_abandoned_execute_failing_late_is_observed() -> None:
    controller = AbortController()
    reason = RuntimeError("stop")
    started = asyncio.Event()

    async def execute(value: object, context: ToolExecutionContext) -> object:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise ValueError("late failure after abort") from None
        return None

    with loop_reports() as reports:
        task = asyncio.create_task(run_tool(execute=execute, signal=controller.signal))
        await started.wait()
        controller.abort(reason)
        await settle(task)
        with pytest.raises(RuntimeError) as caught:
            task.result()
        gc.collect()
        await asyncio.sleep(0)
    assert caught.value is reason
    assert reports == []


async def test_abandoned_execute_can_finish_async_cleanup() -> None:
    controller = AbortController()
    reason = RuntimeError("stop")
    started = asyncio.Event()
    cleaned = asyncio.Event()

    async def execute(value: object, context: ToolExecutionContext) -> object:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)
            cleaned.set()
        return None

    task = asyncio.create_task(run_tool(execute=execute, signal=controller.signal))
    await started.wait()
    controller.abort(reason)
    await settle(task)
    with pytest.raises(RuntimeError) as caught:
        task.result()
    assert caught.value is reason
    await cleaned.wait()
    for _ in range(3):
        await asyncio.sleep(0)


async def test_tool_waiting_on_its_own_signal_raises_the_reason() -> None:
    controller = AbortController()
    reason = RuntimeError("stop")
    started = asyncio.Event()

    async def execute(value: object, context: ToolExecutionContext) -> object:
        started.set()
        await context.signal.wait()
        return "saw the abort"

    task = asyncio.create_task(run_tool(execute=execute, signal=controller.signal))
    await started.wait()
    controller.abort(reason)
    await settle(task)
    with pytest.raises(RuntimeError) as caught:
        task.result()
    assert caught.value is reason


async def test_abort_inside_async_execute_before_returning_output_raises() -> None:
    controller = AbortController()
    reason = RuntimeError("stop before serialization")

    async def execute(value: object, context: ToolExecutionContext) -> object:
        controller.abort(reason)
        return {"produced": "after abort"}

    with pytest.raises(RuntimeError) as caught:
        await run_tool(execute=execute, signal=controller.signal)
    assert caught.value is reason


async def test_abort_inside_sync_execute_before_returning_output_raises() -> None:
    controller = AbortController()
    reason = RuntimeError("stop before serialization")

    def execute(value: object, context: ToolExecutionContext) -> object:
        controller.abort(reason)
        return {"produced": "after abort"}

    with pytest.raises(RuntimeError) as caught:
        await run_tool(execute=execute, signal=controller.signal)
    assert caught.value is reason


async def test_abort_wins_over_unserializable_output() -> None:
    controller = AbortController()
    reason = RuntimeError("stop")

    async def execute(value: object, context: ToolExecutionContext) -> object:
        controller.abort(reason)
        return {1, 2}

    with pytest.raises(RuntimeError) as caught:
        await run_tool(execute=execute, signal=controller.signal)
    assert caught.value is reason


@pytest.mark.parametrize("synchronous", [True, False], ids=["sync", "async"])
async def test_abort_wins_over_an_execute_error(synchronous: bool) -> None:
    controller = AbortController()
    reason = RuntimeError("stop")

    def sync_execute(value: object, context: ToolExecutionContext) -> object:
        controller.abort(reason)
        raise ValueError("tool failed too")

    async def async_execute(value: object, context: ToolExecutionContext) -> object:
        controller.abort(reason)
        raise ValueError("tool failed too")

    execute = sync_execute if synchronous else async_execute
    with pytest.raises(RuntimeError) as caught:
        await run_tool(execute=execute, signal=controller.signal)
    assert caught.value is reason


async def test_task_cancellation_propagates_into_execute() -> None:
    started = asyncio.Event()
    seen: list[str] = []

    async def execute(value: object, context: ToolExecutionContext) -> object:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return None

    task = asyncio.create_task(run_tool(execute=execute))
    await started.wait()
    task.cancel()
    await settle(task)
    assert task.cancelled()
    assert seen == ["cancelled"]


class _LyingSignal(AbortSignal):
    """Claims to be aborted through overridden attributes, but its controller never aborted."""

    __slots__ = ()

    @property
    def aborted(self) -> bool:
        return True

    @property
    def reason(self) -> object:
        return RuntimeError("lie")

    def throw_if_aborted(self) -> None:
        raise RuntimeError("lie")


async def test_overridden_signal_state_is_ignored() -> None:
    result = await run_tool(signal=_LyingSignal(), x=1)
    assert result.is_error is False
    assert result.content == '{"x":1}'


class _DeafSignal(AbortSignal):
    """Its ``add_listener`` override registers nothing; tether must not rely on it."""

    __slots__ = ()

    def add_listener(self, callback: Callable[[], object]) -> Callable[[], None]:
        return lambda: None


async def test_overridden_listener_registration_is_ignored() -> None:
    signal = _DeafSignal()
    started = asyncio.Event()
    reason = RuntimeError("stop")

    async def execute(value: object, context: ToolExecutionContext) -> object:
        started.set()
        await asyncio.Event().wait()
        return None

    task = asyncio.create_task(run_tool(execute=execute, signal=signal))
    await started.wait()
    signal._abort(reason)  # pyright: ignore[reportPrivateUsage]
    await settle(task)
    with pytest.raises(RuntimeError) as caught:
        task.result()
    assert caught.value is reason


async def test_execute_tool_call_leaves_no_listener_behind() -> None:
    controller = AbortController()

    async def execute(value: object, context: ToolExecutionContext) -> object:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        loop.call_soon(future.set_result, None)
        await future
        return "done"

    result = await run_tool(execute=execute, signal=controller.signal)
    assert result.content == "done"
    assert controller.signal._listeners == {}  # pyright: ignore[reportPrivateUsage]
