"""Each layer's error takes only its own codes and types ``code`` with them: a misspelt code is
a type error (pyright strict reports an unnecessary ignore, so each ignore below proves the
misspelling is caught), and ``error.code`` narrows to the layer's ``Literal`` union."""

from __future__ import annotations

from typing import assert_type

from tether import ProviderError, TetherError, ToolContractError
from tether.agent.compaction import ContextCompactionError, ContextCompactionErrorCode
from tether.agent.extensions import ExtensionError, ExtensionErrorCode
from tether.agent.resources import ResourceError, ResourceErrorCode
from tether.agent.runtime import RuntimeErrorCode, TetherRuntimeError
from tether.agent.session import SessionStoreError, SessionStoreErrorCode
from tether.agent.skills import SkillError, SkillErrorCode
from tether.evals import EvaluationErrorCode, EvaluationInfrastructureError
from tether.models.scripted import ScriptedModelError, ScriptedModelErrorCode
from tether.providers.errors import ProviderErrorCode
from tether.providers.fixture import FixtureProviderError, FixtureProviderErrorCode
from tether.tools import ToolContractErrorCode
from tether.tools.coding import CodingToolError, CodingToolErrorCode


def test_a_misspelt_code_is_a_type_error_in_every_layer() -> None:
    misspelt = [
        ProviderError("PROVIDER_TIMEOUTT", "x"),  # pyright: ignore[reportArgumentType]
        FixtureProviderError("PROVIDER_EXHAUSTD", "x"),  # pyright: ignore[reportArgumentType]
        ExtensionError("EXTENSION_NOT_FOND", "x"),  # pyright: ignore[reportArgumentType]
        ResourceError("RESOURCE_NOT_FIL", "x"),  # pyright: ignore[reportArgumentType]
        TetherRuntimeError("RUNTIME_DISPOSD", "x"),  # pyright: ignore[reportArgumentType]
        SkillError("SKILL_NOT_FOUN", "x"),  # pyright: ignore[reportArgumentType]
        ScriptedModelError("SCRIPT_EXHAUST", "x"),  # pyright: ignore[reportArgumentType]
        ToolContractError("INVALID_TOOL_CAL", "x"),  # pyright: ignore[reportArgumentType]
        SessionStoreError("SESSION_IN_US", "x"),  # pyright: ignore[reportArgumentType]
        ContextCompactionError("CONTEXT_CANCELED", "x"),  # pyright: ignore[reportArgumentType]
        EvaluationInfrastructureError("EVALUATION_CANCELED", "x"),  # pyright: ignore[reportArgumentType]
        CodingToolError("FILE_NOT_FOUN"),  # pyright: ignore[reportArgumentType]
    ]
    # At run time nothing checks a code: the type checker is the guard.
    assert all(isinstance(error, TetherError) for error in misspelt)
    assert [error.code for error in misspelt] == [
        "PROVIDER_TIMEOUTT",
        "PROVIDER_EXHAUSTD",
        "EXTENSION_NOT_FOND",
        "RESOURCE_NOT_FIL",
        "RUNTIME_DISPOSD",
        "SKILL_NOT_FOUN",
        "SCRIPT_EXHAUST",
        "INVALID_TOOL_CAL",
        "SESSION_IN_US",
        "CONTEXT_CANCELED",
        "EVALUATION_CANCELED",
        "FILE_NOT_FOUN",
    ]


def test_code_is_typed_with_the_layers_codes() -> None:
    provider = ProviderError("PROVIDER_TIMEOUT", "slow")
    assert_type(provider.code, ProviderErrorCode)
    fixture = FixtureProviderError("PROVIDER_EXHAUSTED", "done")
    assert_type(fixture.code, FixtureProviderErrorCode)
    extension = ExtensionError("EXTENSION_NOT_FOUND", "no")
    assert_type(extension.code, ExtensionErrorCode)
    resource = ResourceError("RESOURCE_NOT_FILE", "dir")
    assert_type(resource.code, ResourceErrorCode)
    runtime = TetherRuntimeError("RUNTIME_DISPOSED", "gone")
    assert_type(runtime.code, RuntimeErrorCode)
    skill = SkillError("SKILL_NOT_FOUND", "x")
    assert_type(skill.code, SkillErrorCode)
    scripted = ScriptedModelError("SCRIPT_EXHAUSTED", "x")
    assert_type(scripted.code, ScriptedModelErrorCode)
    contract = ToolContractError("INVALID_TOOL_CALL", "x")
    assert_type(contract.code, ToolContractErrorCode)
    session = SessionStoreError("SESSION_IN_USE", "x")
    assert_type(session.code, SessionStoreErrorCode)
    context = ContextCompactionError("CONTEXT_CANCELLED", "x")
    assert_type(context.code, ContextCompactionErrorCode)
    evaluation = EvaluationInfrastructureError("EVALUATION_CANCELLED", "x")
    assert_type(evaluation.code, EvaluationErrorCode)
    coding = CodingToolError("FILE_NOT_FOUND", "a.txt")
    assert_type(coding.code, CodingToolErrorCode)
    codes = [
        provider.code,
        fixture.code,
        extension.code,
        resource.code,
        runtime.code,
        skill.code,
        scripted.code,
        contract.code,
        session.code,
        context.code,
        evaluation.code,
        coding.code,
    ]
    assert codes == [
        "PROVIDER_TIMEOUT",
        "PROVIDER_EXHAUSTED",
        "EXTENSION_NOT_FOUND",
        "RESOURCE_NOT_FILE",
        "RUNTIME_DISPOSED",
        "SKILL_NOT_FOUND",
        "SCRIPT_EXHAUSTED",
        "INVALID_TOOL_CALL",
        "SESSION_IN_USE",
        "CONTEXT_CANCELLED",
        "EVALUATION_CANCELLED",
        "FILE_NOT_FOUND",
    ]
