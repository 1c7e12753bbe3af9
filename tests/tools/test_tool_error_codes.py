"""A tool failure's own code is a field of its result (``ToolResultMessage.error_code``, protocol
v2), while the text the model reads stays the same: the contract's code and the message,
which for a coding tool starts with the same code."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tether import (
    AbortController,
    Invalid,
    JsonObject,
    TetherError,
    ToolCall,
    ToolExecutionContext,
    ToolRegistry,
    ToolResultMessage,
    Valid,
    from_json,
    to_json,
)
from tether.protocol import ToolValidation
from tether.tools.coding import coding_tools
from tether.tools.contract import define_tool
from tether.tools.execution import execute_tool_call


async def _call(registry: ToolRegistry, name: str, **arguments: object) -> ToolResultMessage:
    call = ToolCall(id="call-1", name=name, arguments=JsonObject(arguments))
    async with asyncio.timeout(20):
        return await execute_tool_call(registry, call, AbortController().signal)


def _error(result: ToolResultMessage) -> dict[str, str]:
    assert result.is_error
    error: dict[str, str] = json.loads(result.content)["error"]
    return error


async def test_a_coding_failure_carries_its_code_as_a_field(tmp_path: Path) -> None:
    result = await _call(coding_tools(tmp_path), "read_file", path="missing.txt")
    assert result.error_code == "FILE_NOT_FOUND"
    error = _error(result)
    assert error["code"] == "TOOL_EXECUTION_FAILED"  # what the model reads is unchanged
    assert error["message"].startswith("FILE_NOT_FOUND: ")


async def test_an_argument_error_carries_its_code_as_a_field(tmp_path: Path) -> None:
    result = await _call(coding_tools(tmp_path), "bash", command="  ")
    assert result.error_code == "INVALID_BASH_INPUT"
    assert _error(result) == {
        "code": "TOOL_ARGUMENTS_INVALID",
        "message": "INVALID_BASH_INPUT: command must be a non-empty string",
    }
    escape = await _call(coding_tools(tmp_path), "read_file", path="../outside")
    assert escape.error_code == "INVALID_RELATIVE_PATH"
    assert _error(escape)["message"].startswith("INVALID_RELATIVE_PATH: ")


class _QuotaError(TetherError):
    def __init__(self) -> None:
        super().__init__("QUOTA_EXCEEDED", "the quota is spent")


def _raises(error: Exception, *, expose_errors: bool = True) -> ToolRegistry:
    async def execute(value: object, context: ToolExecutionContext) -> object:
        raise error

    def validate(value: object) -> ToolValidation[object]:
        return Valid(value=value)

    tool = define_tool(
        name="t", description="d", validate=validate, execute=execute, expose_errors=expose_errors
    )
    return ToolRegistry([tool])


async def test_a_tether_error_a_tool_raises_gives_its_code_a_plain_one_none() -> None:
    coded = await _call(_raises(_QuotaError()), "t")
    assert coded.error_code == "QUOTA_EXCEEDED"
    assert _error(coded) == {"code": "TOOL_EXECUTION_FAILED", "message": "the quota is spent"}
    plain = await _call(_raises(ValueError("nope")), "t")
    assert plain.error_code == ""
    assert _error(plain) == {"code": "TOOL_EXECUTION_FAILED", "message": "nope"}


async def test_an_invalid_with_a_code_gives_it_without_one_nothing() -> None:
    def registry(decision: Invalid) -> ToolRegistry:
        async def execute(value: object, context: ToolExecutionContext) -> object:
            return value

        def validate(value: object) -> ToolValidation[object]:
            return decision

        return ToolRegistry(
            [define_tool(name="t", description="d", validate=validate, execute=execute)]
        )

    coded = await _call(registry(Invalid(error="BAD_INPUT: x", code="BAD_INPUT")), "t")
    assert coded.error_code == "BAD_INPUT"
    assert _error(coded) == {"code": "TOOL_ARGUMENTS_INVALID", "message": "BAD_INPUT: x"}
    plain = await _call(registry(Invalid(error="x")), "t")
    assert plain.error_code == ""


async def test_a_success_and_an_unknown_tool_have_no_error_code(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hi\n", encoding="utf-8")
    read = await _call(coding_tools(tmp_path), "read_file", path="a.txt")
    assert not read.is_error
    assert read.error_code == ""
    unknown = await _call(coding_tools(tmp_path), "nope")
    assert unknown.error_code == ""
    assert _error(unknown)["code"] == "TOOL_NOT_FOUND"


def test_the_json_omits_an_empty_error_code_and_keeps_a_set_one() -> None:
    plain = ToolResultMessage(id="r", tool_call_id="c", tool_name="t", content="x")
    assert "errorCode" not in to_json(plain)  # the workshop's JSON, byte for byte
    coded = ToolResultMessage(
        id="r", tool_call_id="c", tool_name="t", content="x", is_error=True, error_code="E_X"
    )
    encoded: dict[str, object] = to_json(coded)
    assert encoded["errorCode"] == "E_X"
    assert from_json(encoded, ToolResultMessage) == coded


@given(st.text())
def test_any_error_code_round_trips_through_json(code: str) -> None:
    message = ToolResultMessage(
        id="r", tool_call_id="c", tool_name="t", content="x", is_error=True, error_code=code
    )
    assert from_json(to_json(message), ToolResultMessage) == message


class _Prying(TetherError):
    def __getattribute__(self, name: str) -> object:
        if name in ("code", "_code", "__dict__"):
            raise RuntimeError("read me not")
        return super().__getattribute__(name)


async def test_the_code_is_read_without_running_the_errors_code() -> None:
    unbuilt = TetherError.__new__(_QuotaError)  # no constructor: no code stored
    assert (await _call(_raises(unbuilt), "t")).error_code == ""
    prying = _Prying("PRYING_CODE", "m")
    assert (await _call(_raises(prying), "t")).error_code == "PRYING_CODE"


async def test_a_tool_that_hides_its_errors_still_gives_the_program_its_code() -> None:
    hidden = await _call(_raises(_QuotaError(), expose_errors=False), "t")
    assert hidden.error_code == "QUOTA_EXCEEDED"  # for the program; the model sees no detail
    assert "quota" not in hidden.content
