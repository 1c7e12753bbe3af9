"""``AgentCandidate`` and ``ModelJudge``: real agents and model-graded verdicts in evaluations.

The agent candidate runs ``OpenAIChatModel`` against the loopback ``ReplayServer`` (a real
socket): verdicts from the final text, usage metrics, a provider failure as an ``error`` run
with its code, and the key only ever in the request header. Scripted models (through
``model_factory``) cover the rest: the coding tools, max steps, cancellation, evidence
trimming and cutting, and every answer a judge model may give.
"""

from __future__ import annotations

import functools
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from servers.replay import ReplayServer, Script, json_response, sse_body, sse_response
from tether import to_json
from tether._base.strings import JS_WHITESPACE
from tether.abort import AbortController
from tether.evals.candidates import (
    JUDGE_SYSTEM_PROMPT,
    AgentCandidate,
    ModelJudge,
    ModelJudgeError,
    judge_prompt,
    parse_judge_answer,
)
from tether.evals.errors import EvaluationInfrastructureError
from tether.evals.report import serialize_evaluation_report
from tether.evals.runner import run_evaluation
from tether.evals.types import (
    EvaluationCompleted,
    EvaluationFailed,
    EvaluationRuntimeInput,
    ExpectedEvidence,
    JudgeInput,
    RuntimeFactoryInput,
)
from tether.models.scripted import ScriptedModel, text_reply, tool_call_reply
from tether.protocol import ModelUsage

ROOT = Path(__file__).resolve().parents[2]
SOURCE: dict[str, Any] = json.loads((ROOT / "fixtures" / "eval-tasks.json").read_text("utf-8"))
FAKE_KEY = "sk-eval-FAKE-KEY-0123456789-never-print-me"
KEY_ENV = "TETHER_EVAL_TEST_KEY"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-eval",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test-2026",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def text_reply_script(text: str, prompt_tokens: int = 11, completion_tokens: int = 2) -> Script:
    usage: dict[str, Any] = {
        "id": "chatcmpl-eval",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test-2026",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    payloads = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": text}),
        chunk({}, "stop"),
        usage,
    ]
    return sse_response(sse_body(payloads))


def runtime_input(run_id: str = "run-000001", workspace: str = "/nonexistent") -> Any:
    return RuntimeFactoryInput(
        candidate_id="agent",
        task_id="task",
        run_id=run_id,
        repetition=1,
        workspace_path=workspace,
        signal=AbortController().signal,
    )


# --- model factories (module level: they pickle) -----------------------------------------------

MODELS: list[ScriptedModel] = []


def scripted(*replies: Any) -> ScriptedModel:
    model = ScriptedModel(list(replies))
    MODELS.append(model)
    return model


def answers_42() -> ScriptedModel:
    return scripted(text_reply("  4", "2\n", usage=ModelUsage(input_tokens=7, output_tokens=3)))


def answers_blank() -> ScriptedModel:
    return scripted(text_reply(" \n\t"))


def answers_long() -> ScriptedModel:
    return scripted(text_reply("x" * 5000))


def loops_on_tools() -> ScriptedModel:
    return scripted(tool_call_reply(("list_files", {"pattern": "*"})))


def lists_then_answers() -> ScriptedModel:
    return scripted(tool_call_reply(("list_files", {"pattern": "*"})), text_reply("done"))


def truncated() -> ScriptedModel:
    return scripted(text_reply("PA", stop_reason="length"))


# --- AgentCandidate --------------------------------------------------------------------------


async def test_an_agent_on_a_real_http_model_is_judged_by_its_final_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    async with ReplayServer() as server:
        server.respond(text_reply_script("42"))
        server.respond(text_reply_script(" 16 "))
        candidate = AgentCandidate(
            id="gpt-test",
            model_spec="openai/gpt-test",
            base_url=server.url,
            api_key_env=KEY_ENV,
            system="Answer with the number only.",
        )
        report = await run_evaluation(candidate=candidate, tasks=SOURCE)

    assert [(run.task_id, run.verdict) for run in report.runs] == [
        ("held-out-arithmetic-pass", "pass"),
        ("held-out-arithmetic-fail", "fail"),
    ]
    assert dict(report.runs[0].public_metrics) == {
        "inputTokens": 11.0,
        "matchedEvidence": 1.0,
        "outputTokens": 2.0,
        "requiredEvidence": 1.0,
        "steps": 1.0,
    }
    first = server.requests[0]
    assert first.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert first.json["messages"] == [
        {"role": "system", "content": "Answer with the number only."},
        {
            "role": "user",
            "content": "Add 20 and 22, then report the result as a decimal number.",
        },
    ]
    assert "tools" not in first.json
    text = serialize_evaluation_report(report)
    assert FAKE_KEY not in text
    assert FAKE_KEY not in repr(candidate)
    assert "Add 20" not in text


async def test_a_priced_model_s_runs_carry_cost_usd(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: ``costUsd`` comes from the catalog's prices for the spec (gpt-4o-mini: $0.15
    per million in, $0.60 out), or the candidate's own ``prices``; without prices it is left
    out (unknown), never 0."""
    from tether.providers.model_catalog import ModelPrices

    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    metrics: dict[str, dict[str, float]] = {}
    for name, spec, prices in (
        ("catalog", "openai/gpt-4o-mini", None),
        ("given", "openai/gpt-test", ModelPrices(input=1000, output=2000)),
        ("unknown", "openai/gpt-test", None),
    ):
        async with ReplayServer() as server:
            server.respond(text_reply_script("42"))
            server.respond(text_reply_script("16"))
            candidate = AgentCandidate(
                id="c", model_spec=spec, base_url=server.url, api_key_env=KEY_ENV, prices=prices
            )
            report = await run_evaluation(candidate=candidate, tasks=SOURCE)
        metrics[name] = dict(report.runs[0].public_metrics)
    assert metrics["catalog"]["costUsd"] == pytest.approx((11 * 0.15 + 2 * 0.6) / 1e6)
    assert metrics["given"]["costUsd"] == pytest.approx((11 * 1000 + 2 * 2000) / 1e6)
    assert "costUsd" not in metrics["unknown"]
    with pytest.raises(TypeError, match="prices"):
        AgentCandidate(id="c", model_spec="openai/x", prices=1.0)  # pyright: ignore[reportArgumentType]


async def test_a_refused_key_is_an_error_run_with_the_provider_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    async with ReplayServer() as server:
        for _ in range(2):
            server.respond(json_response(401, {"error": {"message": f"bad key {FAKE_KEY}"}}))
        candidate = AgentCandidate(
            id="gpt-test", model_spec="openai/gpt-test", base_url=server.url, api_key_env=KEY_ENV
        )
        report = await run_evaluation(candidate=candidate, tasks=SOURCE)

    assert [(run.verdict, run.error_code) for run in report.runs] == [
        ("error", "PROVIDER_AUTH_FAILED"),
        ("error", "PROVIDER_AUTH_FAILED"),
    ]
    assert dict(report.runs[0].public_metrics) == {"steps": 0.0}
    assert FAKE_KEY not in serialize_evaluation_report(report)


async def test_evidence_is_the_trimmed_final_text_cut_to_the_item_limit() -> None:
    results: dict[str, tuple[str, ...]] = {}
    for name, factory in (("42", answers_42), ("blank", answers_blank), ("long", answers_long)):
        runtime = AgentCandidate(
            id="agent", model_spec="scripted/x", model_factory=factory
        ).create_runtime(runtime_input())
        output = await runtime.run(
            EvaluationRuntimeInput(prompt="go", signal=AbortController().signal)
        )
        await runtime.dispose()
        assert isinstance(output, EvaluationCompleted)
        results[name] = output.public_evidence
        if name == "42":
            assert dict(output.public_metrics) == {
                "inputTokens": 7.0,
                "outputTokens": 3.0,
                "steps": 1.0,
            }
        else:
            assert dict(output.public_metrics) == {"steps": 1.0}

    assert results == {"42": ("42",), "blank": (), "long": ("x" * 4096,)}


async def test_the_coding_tools_are_rooted_at_the_run_workspace(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    MODELS.clear()
    candidate = AgentCandidate(
        id="agent", model_spec="scripted/x", tools="coding", model_factory=lists_then_answers
    )
    runtime = candidate.create_runtime(runtime_input(workspace=str(tmp_path)))
    output = await runtime.run(EvaluationRuntimeInput(prompt="go", signal=AbortController().signal))

    assert output == EvaluationCompleted(public_evidence=("done",), public_metrics={"steps": 2.0})
    (model,) = MODELS
    first, second = model.requests
    assert "read_file" in [spec.name for spec in first.tools]
    results = [m for m in second.messages if m.role == "toolResult"]
    assert "notes.txt" in json.dumps(to_json(results[0]))


async def test_max_steps_and_cancellation_are_failed_outputs() -> None:
    candidate = AgentCandidate(
        id="agent", model_spec="scripted/x", max_steps=1, model_factory=loops_on_tools
    )
    runtime = candidate.create_runtime(runtime_input())
    output = await runtime.run(EvaluationRuntimeInput(prompt="go", signal=AbortController().signal))
    assert output == EvaluationFailed(error_code="MAX_STEPS", public_metrics={"steps": 1.0})

    controller = AbortController()
    controller.abort()
    runtime = AgentCandidate(
        id="agent", model_spec="scripted/x", model_factory=answers_42
    ).create_runtime(runtime_input())
    output = await runtime.run(EvaluationRuntimeInput(prompt="go", signal=controller.signal))
    assert isinstance(output, EvaluationFailed)
    assert output.error_code == "CANCELLED"

    runtime = AgentCandidate(
        id="agent", model_spec="scripted/x", model_factory=truncated
    ).create_runtime(runtime_input())
    output = await runtime.run(EvaluationRuntimeInput(prompt="go", signal=AbortController().signal))
    assert isinstance(output, EvaluationFailed)
    assert output.error_code == "MODEL_OUTPUT_TRUNCATED"
    assert repr(runtime) == "<AgentRuntime candidate='agent'>"


def test_an_agent_candidate_is_plain_data_that_pickles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    candidate = AgentCandidate(id="gpt", model_spec="openai/gpt-4o-mini", tools="coding")

    assert pickle.loads(pickle.dumps(candidate)) == candidate
    assert FAKE_KEY not in repr(candidate)
    assert FAKE_KEY.encode() not in pickle.dumps(candidate)


def build_with_key(*, api_key: str) -> ScriptedModel:
    """A factory that (wrongly) captures a key: the repr must not show it."""
    return ScriptedModel([text_reply(api_key)])


def test_the_model_factory_is_not_in_the_repr() -> None:
    factory = functools.partial(build_with_key, api_key=FAKE_KEY)
    candidate = AgentCandidate(id="agent", model_spec="openai/gpt", model_factory=factory)
    judge = ModelJudge(model_spec="openai/gpt", model_factory=factory)

    assert FAKE_KEY not in repr(candidate)
    assert "model_factory" not in repr(candidate)
    assert FAKE_KEY not in repr(judge)
    assert "model_factory" not in repr(judge)
    assert candidate.model_factory is factory  # still there, and still compared
    assert candidate != AgentCandidate(id="agent", model_spec="openai/gpt")


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"id": "Bad ID"}, ValueError, "id must match"),
        ({"model_spec": " "}, TypeError, "model_spec"),
        ({"base_url": "ftp://x"}, TypeError, "base_url"),
        ({"api_key_env": ""}, TypeError, "api_key_env"),
        ({"model_factory": 3}, TypeError, "model_factory"),
        ({"system": 3}, TypeError, "system"),
        ({"tools": "all"}, ValueError, "tools"),
        ({"max_steps": 0}, ValueError, "max_steps"),
        ({"max_steps": 1025}, ValueError, "max_steps"),
    ],
)
def test_agent_candidate_options_are_checked(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    arguments: dict[str, Any] = {"id": "ok", "model_spec": "openai/gpt", **options}
    with pytest.raises(error, match=message):
        AgentCandidate(**arguments)


async def test_a_spec_without_factory_builds_the_preset_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    runtime = AgentCandidate(id="gpt", model_spec="openai/gpt-4o-mini").create_runtime(
        runtime_input()
    )
    model = runtime._model  # pyright: ignore[reportPrivateUsage]
    assert type(model).__name__ == "OpenAIChatModel"
    await runtime.dispose()


# --- ModelJudge ------------------------------------------------------------------------------


def judge_pass() -> ScriptedModel:
    return scripted(text_reply(" PASS\n", usage=ModelUsage(input_tokens=30, output_tokens=1)))


def judge_fail() -> ScriptedModel:
    return scripted(text_reply("FAIL"))


def judge_chatty() -> ScriptedModel:
    return scripted(text_reply("PASS, because 42 is right"))


def judge_lowercase() -> ScriptedModel:
    return scripted(text_reply("pass"))


def judge_truncated() -> ScriptedModel:
    return scripted(text_reply("PA", stop_reason="length"))


async def test_a_model_judge_turns_pass_and_fail_into_verdicts() -> None:
    MODELS.clear()
    fixture = {**SOURCE, "tasks": SOURCE["tasks"][:1]}
    from tether.evals.fixture_candidate import fixture_candidate

    passed = await run_evaluation(
        candidate=fixture_candidate(fixture),
        tasks=fixture,
        judge=ModelJudge(model_spec="scripted/judge", model_factory=judge_pass),
    )
    failed = await run_evaluation(
        candidate=fixture_candidate(fixture),
        tasks=fixture,
        judge=ModelJudge(model_spec="scripted/judge", model_factory=judge_fail),
    )

    assert passed.runs[0].verdict == "pass"
    assert dict(passed.runs[0].public_metrics) == {
        "judgeInputTokens": 30.0,
        "judgeOutputTokens": 1.0,
    }
    assert failed.runs[0].verdict == "fail"
    assert dict(failed.runs[0].public_metrics) == {}
    request = MODELS[0].requests[0]
    assert request.system == JUDGE_SYSTEM_PROMPT
    user = to_json(request.messages[0])
    assert "Add 20 and 22" in json.dumps(user)
    assert "- 42" in json.dumps(user)


@pytest.mark.parametrize(
    ("factory", "code"),
    [
        (judge_chatty, "MODEL_JUDGE_INVALID_ANSWER"),
        (judge_lowercase, "MODEL_JUDGE_INVALID_ANSWER"),
        (judge_truncated, "MODEL_JUDGE_RUN_FAILED"),
    ],
)
async def test_anything_but_pass_or_fail_fails_the_judge(factory: Any, code: str) -> None:
    from tether.evals.fixture_candidate import fixture_candidate

    with pytest.raises(EvaluationInfrastructureError) as caught:
        await run_evaluation(
            candidate=fixture_candidate(SOURCE),
            tasks=SOURCE,
            judge=ModelJudge(model_spec="scripted/judge", model_factory=factory),
        )

    assert caught.value.code == "EVALUATION_JUDGE_FAILED"
    cause = caught.value.__cause__
    assert isinstance(cause, ModelJudgeError)
    assert cause.code == code
    assert "42" not in str(cause)  # the answer is not repeated


def test_the_judge_prompt_shows_public_evidence_only() -> None:
    text = judge_prompt(
        JudgeInput(
            task_id="t",
            run_id="run-000001",
            prompt="What is 2 + 2?",
            expected_public_evidence=ExpectedEvidence(includes=("4",)),
            candidate_public_evidence=(),
            signal=AbortController().signal,
        )
    )
    assert text == (
        "Task:\nWhat is 2 + 2?\n\nRequired evidence (every item must be satisfied):\n- 4\n\n"
        "Evidence the agent produced:\n(none)\n\nAnswer with exactly one word: PASS or FAIL."
    )


def test_model_judge_options_are_checked() -> None:
    with pytest.raises(TypeError, match="system"):
        ModelJudge(model_spec="openai/gpt", system=" ")
    with pytest.raises(TypeError, match="model_spec"):
        ModelJudge(model_spec="")
    judge = ModelJudge(model_spec="openai/gpt", base_url="http://127.0.0.1:1/v1")
    assert pickle.loads(pickle.dumps(judge)) == judge


@given(st.text(max_size=12), st.sampled_from(["PASS", "FAIL", "Pass", "PASS.", ""]))
def test_only_a_bare_pass_or_fail_is_an_answer(padding: str, word: str) -> None:
    space = "".join(c for c in padding if c in JS_WHITESPACE)
    text = space + word + space
    if word in ("PASS", "FAIL"):
        assert parse_judge_answer(text) == word.lower()
    else:
        with pytest.raises(ModelJudgeError) as caught:
            parse_judge_answer(text)
        assert caught.value.code == "MODEL_JUDGE_INVALID_ANSWER"
