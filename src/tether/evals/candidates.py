"""Real candidates and judges: a tether ``Agent`` on a model as the system under evaluation, and
an optional model-graded judge.

``AgentCandidate`` is plain data (an ID, a ``PROVIDER/MODEL`` spec, where to send requests,
the system prompt, which tools, a step budget), so it pickles and can run on a Ray worker: the
model is built inside ``create_runtime``, on the machine that runs the task, and reads its API
key from *that* machine's environment (``api_key_env``, else the provider's variable). No key
is ever stored in the candidate, its ``repr``, its errors or the reports.

One run of its runtime is one ``Agent`` prompt: the task's prompt, with the coding tools
rooted at the run's workspace when ``tools="coding"``. The outcome, as public data only:

* the run completed: ``completed`` with one evidence item, the final text (surrounding
  whitespace trimmed, cut to ``MAX_EVIDENCE_ITEM_CODE_POINTS``), or none when it is blank;
* otherwise ``failed``: the failed run's error code (``MODEL_OUTPUT_TRUNCATED``...; for a
  model stream that failed with a provider error, the provider's code, such as
  ``PROVIDER_AUTH_FAILED``), ``MAX_STEPS`` when the step budget ran out, ``CANCELLED``
  when the run was cancelled (the evaluation's signal cancels it).

Metrics: ``steps`` (model turns), ``inputTokens`` and ``outputTokens`` when the model reported
usage. The deterministic judge matches evidence items *exactly*, so a task for an agent should
ask for a bare answer ("report the result as a decimal number").

``ModelJudge`` asks a model whether the candidate's public evidence satisfies the required
evidence, and accepts only a strict one-word answer, ``PASS`` or ``FAIL`` (whitespace around it
ignored). Anything else, or a model run that does not complete, raises ``ModelJudgeError``,
which the runner reports as ``EVALUATION_JUDGE_FAILED``. Its metrics are ``judgeInputTokens``
and ``judgeOutputTokens`` (when reported). It sees what every judge sees (``JudgeInput``),
never the candidate's transcript.

Both accept ``model_factory``: a zero-argument callable that builds the ``Model`` instead of
``model_spec`` (a config-file provider, or a scripted model in tests). It must pickle for Ray
(a module-level function, a ``functools.partial`` of one, or a bound method of plain data such
as ``tether.cli.models.ModelChoice.build``), and it *is* pickled and shipped to every Ray
worker: it must not capture an API key (no ``partial(build, api_key=...)``); read the key
from the environment inside the factory, on the machine that runs it. It is left out of the
``repr`` (a captured key would otherwise be printed), but not out of the pickle.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from tether._async.race import follow_signal
from tether._base.dataclass import dataclass
from tether._base.exact_types import type_of
from tether._base.strings import JS_WHITESPACE, is_non_empty
from tether._base.tether_error import TetherError
from tether.abort import AbortController, AbortSignal
from tether.evals.types import (
    ID_PATTERN,
    MAX_EVIDENCE_ITEM_CODE_POINTS,
    EvaluationCompleted,
    EvaluationFailed,
    EvaluationRuntimeInput,
    EvaluationRuntimeOutput,
    JudgeInput,
    JudgeOutput,
    RuntimeFactoryInput,
)
from tether.models.base import close_model

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.models.base import Model
    from tether.protocol import ModelUsage, RunResult
    from tether.providers.model_catalog import ModelPrices

__all__ = [
    "AGENT_CANDIDATE_MAX_STEPS",
    "DEFAULT_AGENT_MAX_STEPS",
    "JUDGE_SYSTEM_PROMPT",
    "AgentCandidate",
    "AgentRuntime",
    "CandidateTools",
    "ModelJudge",
    "ModelJudgeError",
    "ModelJudgeErrorCode",
    "judge_prompt",
    "parse_judge_answer",
]

CandidateTools: TypeAlias = Literal["none", "coding"]
"""The tools an ``AgentCandidate`` runs with."""
DEFAULT_AGENT_MAX_STEPS: Final = 16
"""Model turns an ``AgentCandidate`` may take per task unless told otherwise."""
AGENT_CANDIDATE_MAX_STEPS: Final = 1024
"""The most ``max_steps`` an ``AgentCandidate`` accepts (``RunLimits.for_real_models()``)."""
JUDGE_SYSTEM_PROMPT: Final = (
    "You grade the answer of an AI agent. You are shown the task, the evidence a correct "
    "answer must contain, and the evidence the agent produced. Reply with exactly one word: "
    "PASS if the agent's evidence satisfies every required item, otherwise FAIL."
)
"""What ``ModelJudge`` tells its model (the system prompt)."""

ModelJudgeErrorCode: TypeAlias = Literal["MODEL_JUDGE_INVALID_ANSWER", "MODEL_JUDGE_RUN_FAILED"]

_CANCEL_REASON: Final = "Evaluation cancelled"
_PROVIDER_CODE: Final = re.compile(r"(PROVIDER_[A-Z_]+): ")


class ModelJudgeError(TetherError[ModelJudgeErrorCode]):
    """The judge model gave no usable verdict: ``MODEL_JUDGE_INVALID_ANSWER`` (not exactly
    ``PASS`` or ``FAIL``; the answer itself is not repeated) or ``MODEL_JUDGE_RUN_FAILED``
    (its run did not complete; the message names the run's status and code)."""

    def __init__(self, code: ModelJudgeErrorCode, message: str) -> None:
        super().__init__(code, message)


def _check_model_options(
    owner: str,
    model_spec: object,
    base_url: object,
    api_key_env: object,
    model_factory: object,
) -> None:
    if not is_non_empty(model_spec):
        raise TypeError(f"{owner} model_spec must be a non-empty 'PROVIDER/MODEL' string")
    if base_url is not None and (
        type_of(base_url) is not str or not str(base_url).startswith(("http://", "https://"))
    ):
        raise TypeError(f"{owner} base_url must be an http:// or https:// URL or None")
    if api_key_env is not None and not is_non_empty(api_key_env):
        raise TypeError(f"{owner} api_key_env must be a variable name or None")
    if model_factory is not None and not callable(model_factory):
        raise TypeError(f"{owner} model_factory must be callable or None")


def _check_prices(owner: str, prices: object) -> None:
    from tether.providers.model_catalog import ModelPrices

    if prices is not None and type_of(prices) is not ModelPrices:
        raise TypeError(f"{owner} prices must be ModelPrices or None")


def _build_model(
    model_spec: str,
    base_url: str | None,
    api_key_env: str | None,
    model_factory: Callable[[], Model] | None,
) -> Model:
    if model_factory is not None:
        return model_factory()
    from tether.providers.catalog import model_from_spec

    options: dict[str, Any] = {}
    if base_url is not None:
        options["base_url"] = base_url
    if api_key_env is not None:
        options["api_key_env"] = api_key_env
    return model_from_spec(model_spec, **options)


def _usage_metrics(
    usage: ModelUsage, prefix: str, prices: ModelPrices | None, model_spec: str
) -> dict[str, float]:
    """The run's tokens and, when its cost is known (``prices``, else the model catalog's
    for ``model_spec``), ``costUsd``; prefixed (``judgeInputTokens``...) for the judge."""
    from tether.providers.model_catalog import cost_of, model_info

    if usage.input_tokens == 0 and usage.output_tokens == 0:
        return {}
    if prices is None:
        info = model_info(model_spec)
        prices = None if info is None else info.prices
    metrics = {"InputTokens": float(usage.input_tokens), "OutputTokens": float(usage.output_tokens)}
    cost = cost_of(usage, prices)
    if cost is not None:
        metrics["CostUsd"] = cost.total
    if prefix:
        return {prefix + name: value for name, value in metrics.items()}
    return {name[0].lower() + name[1:]: value for name, value in metrics.items()}


async def _run_agent(agent: Agent, prompt: str, signal: AbortSignal) -> RunResult:
    """``agent.run(prompt)``, cancelled (as a run) when ``signal`` aborts."""
    controller = AbortController()
    stream = agent.prompt(prompt)
    controller.signal.add_listener(lambda: agent.cancel(_CANCEL_REASON))
    unfollow = follow_signal(signal, controller)
    try:
        async for _ in stream:
            pass
        return await stream.result
    finally:
        if unfollow is not None:
            unfollow()


# --- the candidate ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentCandidate:
    """A tether ``Agent`` on a model, as an evaluation candidate (see the module docstring).

    ``id`` names the candidate in reports (the ID pattern: lower-case letters, digits, ``.``,
    ``_``, ``-``); ``model_spec`` is ``PROVIDER/MODEL`` (a catalog preset); ``base_url``
    points the provider elsewhere; ``system`` is the system prompt; ``tools`` is ``"none"``
    or ``"coding"`` (confined to the run's workspace); ``max_steps`` bounds the model turns
    per task (1-1,024); ``api_key_env`` names the variable holding the key (default: the
    provider's); ``model_factory`` builds the model instead of ``model_spec`` (not in the
    ``repr``; pickled to Ray workers, so it must read any key from the environment itself);
    ``prices`` are the model's (``None``: the model catalog's for ``model_spec``), from which
    each run's ``costUsd`` metric comes (left out when the cost is not known).
    """

    id: str
    model_spec: str
    base_url: str | None = None
    system: str | None = None
    tools: CandidateTools = "none"
    max_steps: int = DEFAULT_AGENT_MAX_STEPS
    api_key_env: str | None = None
    model_factory: Callable[[], Model] | None = field(default=None, repr=False)
    prices: ModelPrices | None = None

    def __post_init__(self) -> None:
        if type_of(self.id) is not str or ID_PATTERN.fullmatch(self.id) is None:
            raise ValueError(
                "AgentCandidate id must match [a-z0-9][a-z0-9._-]{0,63}, e.g. 'gpt-4o-mini'"
            )
        _check_model_options(
            "AgentCandidate", self.model_spec, self.base_url, self.api_key_env, self.model_factory
        )
        _check_prices("AgentCandidate", self.prices)
        if self.system is not None and type_of(self.system) is not str:
            raise TypeError("AgentCandidate system must be a string or None")
        if self.tools not in ("none", "coding"):
            raise ValueError("AgentCandidate tools must be 'none' or 'coding'")
        steps = self.max_steps
        if type_of(steps) is not int or not 1 <= steps <= AGENT_CANDIDATE_MAX_STEPS:
            raise ValueError(
                f"AgentCandidate max_steps must be an integer from 1 to {AGENT_CANDIDATE_MAX_STEPS}"
            )

    def create_runtime(self, input: RuntimeFactoryInput, /) -> AgentRuntime:
        """A runtime for one run: builds the model here (reading the key from this machine's
        environment) and the coding tools rooted at ``input.workspace_path``."""
        model = _build_model(self.model_spec, self.base_url, self.api_key_env, self.model_factory)
        return AgentRuntime(self, model, input.workspace_path)


class AgentRuntime:
    """One run of an ``AgentCandidate``: ``run`` prompts a fresh ``Agent``; ``dispose`` closes
    the model's HTTP client."""

    __slots__ = ("_candidate", "_model", "_workspace")

    def __init__(self, candidate: AgentCandidate, model: Model, workspace_path: str) -> None:
        self._candidate = candidate
        self._model = model
        self._workspace = workspace_path

    def __repr__(self) -> str:
        return f"<AgentRuntime candidate={self._candidate.id!r}>"

    async def run(self, input: EvaluationRuntimeInput, /) -> EvaluationRuntimeOutput:
        """Prompt an ``Agent`` with ``input.prompt``; the outcome as public data."""
        from tether.agent.agent import Agent
        from tether.models.limits import RunLimits

        candidate = self._candidate
        tools = None
        if candidate.tools == "coding":
            from tether.tools.coding import coding_tools

            tools = coding_tools(Path(self._workspace))
        agent = Agent(
            model=self._model,
            tools=tools,
            system=candidate.system,
            max_steps=candidate.max_steps,
            limits=RunLimits.for_real_models(),
        )
        result = await _run_agent(agent, input.prompt, input.signal)
        metrics = {
            "steps": float(sum(1 for message in result.messages if message.role == "assistant")),
            **_usage_metrics(result.usage, "", candidate.prices, candidate.model_spec),
        }
        if result.status == "completed":
            return EvaluationCompleted(
                public_evidence=_evidence(result.final_text), public_metrics=metrics
            )
        if result.status == "failed":
            code = _failure_code(result.error.code, result.error.message)
        elif result.status == "maxSteps":
            code = "MAX_STEPS"
        else:
            code = "CANCELLED"
        return EvaluationFailed(error_code=code, public_metrics=metrics)

    async def dispose(self) -> None:
        """Close the model (its HTTP client)."""
        await close_model(self._model)


def _failure_code(code: str, message: str) -> str:
    """The provider's code when the model's stream failed with a ``ProviderError`` (the loop
    reports ``MODEL_STREAM_FAILED`` with a message starting ``PROVIDER_...: ``), else
    ``code``."""
    match = _PROVIDER_CODE.match(message)
    return code if match is None else match.group(1)


def _evidence(text: str) -> tuple[str, ...]:
    trimmed = text.strip(JS_WHITESPACE)
    if not trimmed:
        return ()
    return (trimmed[:MAX_EVIDENCE_ITEM_CODE_POINTS],)


# --- the judge --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelJudge:
    """A judge that asks a model for ``PASS`` or ``FAIL`` (see the module docstring).

    ``model_spec``, ``base_url``, ``api_key_env`` and ``model_factory`` as for
    ``AgentCandidate`` (the factory is not in the ``repr``, and must not capture a key);
    ``system`` replaces ``JUDGE_SYSTEM_PROMPT``; ``prices`` as for ``AgentCandidate`` (the
    judge's cost is its ``judgeCostUsd`` metric).
    """

    model_spec: str
    base_url: str | None = None
    api_key_env: str | None = None
    system: str = JUDGE_SYSTEM_PROMPT
    model_factory: Callable[[], Model] | None = field(default=None, repr=False)
    prices: ModelPrices | None = None

    def __post_init__(self) -> None:
        _check_model_options(
            "ModelJudge", self.model_spec, self.base_url, self.api_key_env, self.model_factory
        )
        _check_prices("ModelJudge", self.prices)
        if not is_non_empty(self.system):
            raise TypeError("ModelJudge system must be a non-empty string")

    async def judge(self, input: JudgeInput, /) -> JudgeOutput:
        """Ask the model; ``pass``/``fail`` from its one-word answer, else ``ModelJudgeError``."""
        from tether.agent.agent import Agent

        model = _build_model(self.model_spec, self.base_url, self.api_key_env, self.model_factory)
        try:
            agent = Agent(model=model, system=self.system, max_steps=1)
            result = await _run_agent(agent, judge_prompt(input), input.signal)
        finally:
            await close_model(model)
        if result.status != "completed":
            detail = f" ({result.error.code})" if result.status == "failed" else ""
            raise ModelJudgeError(
                "MODEL_JUDGE_RUN_FAILED", f"the judge model's run ended {result.status}{detail}"
            )
        verdict = parse_judge_answer(result.final_text)
        metrics = _usage_metrics(result.usage, "judge", self.prices, self.model_spec)
        return JudgeOutput(verdict=verdict, public_metrics=metrics)


def judge_prompt(input: JudgeInput) -> str:
    """The user message ``ModelJudge`` sends for ``input``."""
    required = "\n".join(f"- {item}" for item in input.expected_public_evidence.includes)
    produced = "\n".join(f"- {item}" for item in input.candidate_public_evidence) or "(none)"
    return (
        f"Task:\n{input.prompt}\n\n"
        f"Required evidence (every item must be satisfied):\n{required}\n\n"
        f"Evidence the agent produced:\n{produced}\n\n"
        "Answer with exactly one word: PASS or FAIL."
    )


_ANSWERS: Final[Mapping[str, Literal["pass", "fail"]]] = {"PASS": "pass", "FAIL": "fail"}


def parse_judge_answer(text: str) -> Literal["pass", "fail"]:
    """``"pass"`` for ``PASS``, ``"fail"`` for ``FAIL`` (surrounding whitespace ignored);
    anything else raises ``ModelJudgeError`` (``MODEL_JUDGE_INVALID_ANSWER``)."""
    verdict = _ANSWERS.get(text.strip(JS_WHITESPACE)) if type_of(text) is str else None
    if verdict is None:
        raise ModelJudgeError(
            "MODEL_JUDGE_INVALID_ANSWER", "the judge model did not answer exactly PASS or FAIL"
        )
    return verdict
