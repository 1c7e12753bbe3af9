"""Checkpoint 00: the fixed agent trace (``run_prologue``) and ``tether trace``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import FrozenInstanceError, fields
from typing import Any

import pytest

from tether.cli.main import main
from tether.cli.prologue import Prologue, run_prologue
from tether.jsonvalue import JsonObject

EXPECTED_EVENTS: list[dict[str, Any]] = [
    {"type": "user_message_accepted", "sequence": 0, "text": "What is 20 + 22?"},
    {"type": "model_stream_opened", "sequence": 1, "streamId": "model-stream-001"},
    {
        "type": "tool_call_completed",
        "sequence": 2,
        "toolCallId": "call-add-001",
        "toolName": "add",
        "arguments": {"left": 20, "right": 22},
    },
    {
        "type": "tool_execution_started",
        "sequence": 3,
        "toolCallId": "call-add-001",
        "toolName": "add",
    },
    {"type": "tool_result_appended", "sequence": 4, "toolCallId": "call-add-001", "result": 42},
    {"type": "model_stream_opened", "sequence": 5, "streamId": "model-stream-002"},
    {"type": "final_text_completed", "sequence": 6, "text": "The sum is 42."},
    {"type": "agent_ended", "sequence": 7, "status": "completed"},
]
EXPECTED_RESULT: dict[str, Any] = {"status": "completed", "finalText": "The sum is 42."}


def _unchecked(value: object) -> Any:
    """The same object, typed ``Any`` so a test can attempt what the types forbid."""
    return value


def test_run_prologue_returns_the_same_object_every_call() -> None:
    first = run_prologue()
    assert type(first) is Prologue
    assert run_prologue() is first


def test_there_are_exactly_eight_events_in_causal_order() -> None:
    events = run_prologue().events
    assert type(events) is tuple
    assert [event.type for event in events] == [
        "user_message_accepted",
        "model_stream_opened",
        "tool_call_completed",
        "tool_execution_started",
        "tool_result_appended",
        "model_stream_opened",
        "final_text_completed",
        "agent_ended",
    ]
    assert [event.sequence for event in events] == list(range(8))


@pytest.mark.parametrize("index", range(8))
def test_each_event_has_the_workshop_json_form(index: int) -> None:
    encoded = run_prologue().events[index].to_json()
    assert encoded == EXPECTED_EVENTS[index]
    assert json.dumps(encoded) == json.dumps(EXPECTED_EVENTS[index])  # same key order


def test_the_result_has_the_workshop_json_form() -> None:
    result = run_prologue().result
    assert (result.status, result.final_text) == ("completed", "The sum is 42.")
    assert json.dumps(result.to_json()) == json.dumps(EXPECTED_RESULT)


def test_snake_case_attributes_carry_the_same_values() -> None:
    events: Any = run_prologue().events
    assert events[0].text == "What is 20 + 22?"
    assert (events[1].stream_id, events[5].stream_id) == ("model-stream-001", "model-stream-002")
    assert (events[2].tool_name, events[3].tool_name) == ("add", "add")
    assert events[2].arguments == {"left": 20, "right": 22}
    assert events[4].result == 42
    assert events[7].status == "completed"


def test_one_final_text_feeds_event_six_and_the_result() -> None:
    prologue = run_prologue()
    final_event: Any = prologue.events[6]
    assert final_event.text == prologue.result.final_text == "The sum is 42."


def test_one_tool_call_id_links_events_two_three_and_four() -> None:
    events: Any = run_prologue().events
    ids = {events[index].tool_call_id for index in (2, 3, 4)}
    assert ids == {"call-add-001"}


def test_tool_call_arguments_are_a_frozen_json_object() -> None:
    tool_call: Any = run_prologue().events[2]
    arguments = tool_call.arguments
    assert type(arguments) is JsonObject
    with pytest.raises(TypeError):
        _unchecked(arguments)["left"] = 0
    with pytest.raises(TypeError):
        del _unchecked(arguments)["right"]
    assert arguments == {"left": 20, "right": 22}


def _every_level() -> list[object]:
    prologue = run_prologue()
    return [prologue, *prologue.events, prologue.result]


@pytest.mark.parametrize("index", range(10))
def test_every_level_rejects_assignment_to_each_field(index: int) -> None:
    target = _unchecked(_every_level()[index])
    for field in fields(target):
        before = getattr(target, field.name)
        with pytest.raises(FrozenInstanceError):
            setattr(target, field.name, before)
        with pytest.raises(FrozenInstanceError):
            delattr(target, field.name)
        assert getattr(target, field.name) is before


def test_the_event_tuple_cannot_be_changed() -> None:
    events = _unchecked(run_prologue().events)
    assert not hasattr(events, "append")
    assert not hasattr(events, "pop")
    with pytest.raises(TypeError):
        events[0] = events[1]
    assert len(run_prologue().events) == 8


def test_mutating_a_json_form_does_not_change_the_trace() -> None:
    tool_call = run_prologue().events[2]
    encoded = tool_call.to_json()
    encoded["arguments"]["left"] = 0
    encoded["toolName"] = "subtract"
    assert tool_call.to_json() == EXPECTED_EVENTS[2]


# --- the command line -----------------------------------------------------------------------


def _expected_lines() -> list[dict[str, Any]]:
    return [*EXPECTED_EVENTS, EXPECTED_RESULT]


def test_cli_trace_prints_nine_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 9
    assert [json.loads(line) for line in lines] == _expected_lines()
    assert captured.out.endswith("\n")
    assert captured.err == ""


def test_cli_trace_lines_keep_the_workshop_key_order(capsys: pytest.CaptureFixture[str]) -> None:
    main(["trace"])
    lines = capsys.readouterr().out.splitlines()
    assert [list(json.loads(line)) for line in lines] == [list(line) for line in _expected_lines()]


@pytest.mark.parametrize("argv", [[], ["no-such-command"]], ids=["no command", "unknown"])
def test_cli_rejects_a_missing_or_unknown_command(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code != 0
    assert capsys.readouterr().out == ""


@pytest.mark.slow
def test_python_dash_m_tether_cli_trace_exits_zero() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "trace"],
        capture_output=True,
        text=True,
        check=False,
        # no asyncio debug mode: under load its slow-callback lines land on stderr
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONASYNCIODEBUG"},
            "PYTHONWARNINGS": "error",
        },
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    assert [json.loads(line) for line in completed.stdout.splitlines()] == _expected_lines()
