"""The installed ``tether`` console script, run as a subprocess (offline, bundled fixture)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

pytestmark = pytest.mark.slow

TETHER = Path(sys.executable).parent / "tether"
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "provider-tool-roundtrip.json"
ROUND_TRIP_TYPES = [
    "message.accepted",
    "model.chunk",
    "tool.started",
    "tool.finished",
    "model.chunk",
    "run.finished",
]


def tether(*arguments: str | Path) -> subprocess.CompletedProcess[str]:
    # Without asyncio's debug mode: on a loaded machine it prints "Executing <Task...> took
    # 0.1 seconds" to stderr, which the tests read as the command's own output.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONASYNCIODEBUG"}
    return subprocess.run(
        [str(TETHER), *map(str, arguments)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        check=False,
        timeout=120,
    )


def json_lines(output: str) -> list[dict[str, Any]]:
    lines = output.splitlines()
    assert lines, "expected JSON lines"
    return [json.loads(line) for line in lines]


def fixture_data() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def write_fixture(directory: Path, data: dict[str, Any]) -> Path:
    path = directory / "fixture.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def keys_everywhere(value: object) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in cast(dict[str, object], value).items():
            found.add(key)
            found |= keys_everywhere(item)
    elif isinstance(value, list):
        for item in cast(list[object], value):
            found |= keys_everywhere(item)
    return found


def test_the_console_script_is_installed() -> None:
    assert TETHER.is_file()


def test_run_shows_the_round_trip_for_a_person() -> None:
    completed = tether("run")

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    out = completed.stdout
    lines = out.splitlines()
    assert "What is 20 + 22?" in lines[0]
    call_lines = [line for line in lines if "add" in line and "left" in line]
    assert len(call_lines) == 1
    assert '"left":20' in call_lines[0].replace(" ", "")
    assert '"right":22' in call_lines[0].replace(" ", "")
    result_lines = [line for line in lines if "42" in line and "The sum" not in line]
    assert any("add" in line for line in result_lines)
    assert "The sum is 42." in out
    assert out.index("add") < out.index("The sum is 42.")
    summary = lines[-1]
    assert "completed" in summary
    assert "32 in" in summary
    assert "14 out" in summary


@pytest.fixture(scope="module")
def run_json() -> subprocess.CompletedProcess[str]:
    """``tether run --json`` on the bundled fixture, run once for the tests that only read it."""
    return tether("run", "--json")


def test_run_json_writes_one_camel_case_event_per_line(
    run_json: subprocess.CompletedProcess[str],
) -> None:
    completed = run_json

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    events = json_lines(completed.stdout)
    assert [event["type"] for event in events] == ROUND_TRIP_TYPES
    assert [event["sequence"] for event in events] == list(range(6))
    keys = keys_everywhere(events)
    assert {"requestId", "toolCall", "toolCallId", "toolName", "isError", "finalText"} <= keys
    assert not [key for key in keys if "_" in key]


def test_run_json_events_carry_the_round_trip_values(
    run_json: subprocess.CompletedProcess[str],
) -> None:
    events = json_lines(run_json.stdout)

    tool_chunk = events[1]["payload"]["chunk"]
    assert tool_chunk["requestId"] == "request-001"
    assert tool_chunk["toolCall"]["id"] == "call-add-001"
    assert tool_chunk["toolCall"]["arguments"] == {"left": 20, "right": 22}
    assert events[2]["payload"]["toolCall"]["name"] == "add"
    finished = events[3]["payload"]["message"]
    assert finished["toolCallId"] == "call-add-001"
    assert finished["content"] == "42"
    assert finished["isError"] is False
    assert events[4]["payload"]["chunk"] == {
        "type": "textDelta",
        "requestId": "request-002",
        "delta": "The sum is 42.",
    }
    result = events[5]["payload"]["result"]
    assert result["status"] == "completed"
    assert result["finalText"] == "The sum is 42."
    assert len(result["messages"]) == 4


def test_run_with_one_step_stops_with_max_steps_and_a_non_zero_status() -> None:
    completed = tether("run", "--max-steps", "1")

    assert completed.returncode != 0
    assert "max steps" in completed.stdout.lower()
    assert "The sum is 42." not in completed.stdout


def test_run_json_with_one_step_ends_with_a_max_steps_result() -> None:
    completed = tether("run", "--json", "--max-steps", "1")

    assert completed.returncode != 0
    events = json_lines(completed.stdout)
    assert [event["type"] for event in events] == [*ROUND_TRIP_TYPES[:4], "run.finished"]
    result = events[-1]["payload"]["result"]
    assert result["status"] == "maxSteps"
    assert result["maxSteps"] == 1


@pytest.mark.parametrize("value", ["0", "65", "two"])
def test_an_out_of_range_max_steps_is_a_usage_error(value: str) -> None:
    completed = tether("run", "--max-steps", value)

    assert completed.returncode == 2
    assert "--max-steps" in completed.stderr
    assert completed.stdout == ""


def test_a_missing_fixture_exits_2_with_provider_invalid_fixture(tmp_path: Path) -> None:
    completed = tether("run", "--fixture", tmp_path / "missing.json")

    assert completed.returncode == 2
    assert "PROVIDER_INVALID_FIXTURE" in completed.stderr
    assert completed.stdout == ""


def test_an_empty_fixture_path_is_a_usage_error() -> None:
    completed = tether("run", "--fixture", "")

    assert completed.returncode == 2
    assert "--fixture" in completed.stderr
    assert "usage" in completed.stderr.lower()
    assert completed.stdout == ""


def test_a_fixture_that_is_not_json_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{not json", encoding="utf-8")

    completed = tether("run", "--fixture", path)

    assert completed.returncode == 2
    assert "PROVIDER_INVALID_FIXTURE" in completed.stderr


def test_a_fixture_with_the_wrong_schema_version_exits_2(tmp_path: Path) -> None:
    data = fixture_data()
    data["schemaVersion"] = 2

    completed = tether("run", "--fixture", write_fixture(tmp_path, data))

    assert completed.returncode == 2
    assert "PROVIDER_INVALID_FIXTURE" in completed.stderr


def test_a_fixture_missing_response_end_fails_the_run_with_exit_1(tmp_path: Path) -> None:
    data = fixture_data()
    records = data["responses"][0]["records"]
    data["responses"][0]["records"] = [r for r in records if r["type"] != "response_end"]
    path = write_fixture(tmp_path, data)

    human = tether("run", "--fixture", path)
    machine = tether("run", "--json", "--fixture", path)

    assert human.returncode == 1
    assert "failed" in human.stdout
    assert "MODEL_STREAM_FAILED" in human.stdout or "PROVIDER_MISSING_TERMINAL" in human.stdout
    assert machine.returncode == 1
    result = json_lines(machine.stdout)[-1]["payload"]["result"]
    assert result["status"] == "failed"
    assert result["error"]["code"] == "MODEL_STREAM_FAILED"
    assert "response_end" in result["error"]["message"]
    assert [message["role"] for message in result["messages"]] == ["user"]


def test_a_fixture_with_too_few_responses_fails_on_the_second_request(tmp_path: Path) -> None:
    data = fixture_data()
    data["responses"] = data["responses"][:1]

    completed = tether("run", "--json", "--fixture", write_fixture(tmp_path, data))

    assert completed.returncode == 1
    result = json_lines(completed.stdout)[-1]["payload"]["result"]
    assert result["error"]["code"] == "MODEL_STREAM_FAILED"
    assert "request-002" in result["error"]["message"]


def test_a_custom_fixture_is_the_one_replayed(tmp_path: Path) -> None:
    data = copy.deepcopy(fixture_data())
    data["responses"][0]["records"][1]["arguments"] = {"left": 40, "right": 2}
    data["responses"][1]["records"][1]["text"] = "Forty and two make 42."
    path = write_fixture(tmp_path, data)

    completed = tether("run", "--json", "--fixture", path)

    assert completed.returncode == 0, completed.stderr
    events = json_lines(completed.stdout)
    assert events[3]["payload"]["message"]["content"] == "42"
    assert events[2]["payload"]["toolCall"]["arguments"] == {"left": 40, "right": 2}
    assert events[-1]["payload"]["result"]["finalText"] == "Forty and two make 42."


def test_the_prompt_option_is_the_user_message() -> None:
    prompt = "Please add twenty and twenty-two"

    human = tether("run", "--prompt", prompt)
    machine = tether("run", "--json", "--prompt", prompt)

    assert human.returncode == 0
    assert prompt in human.stdout.splitlines()[0]
    assert "What is 20 + 22?" not in human.stdout
    first = json_lines(machine.stdout)[0]
    assert first["type"] == "message.accepted"
    assert first["payload"]["message"]["content"] == prompt
    assert first["payload"]["message"]["role"] == "user"


def test_trace_prints_nine_json_lines() -> None:
    completed = tether("trace")

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    records = json_lines(completed.stdout)
    assert len(records) == 9
    assert all(isinstance(record, dict) for record in records)
    assert [record["sequence"] for record in records[:8]] == list(range(8))


def test_a_missing_command_is_a_usage_error() -> None:
    completed = tether()

    assert completed.returncode == 2
    assert "usage" in completed.stderr.lower()
