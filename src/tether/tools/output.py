"""Structured output: a Python type the run's answer must have, offered as a final tool.

``output_spec(City)`` describes ``City`` (a dataclass, a ``TypedDict``, any annotation
``@tool`` accepts, or a pydantic model when pydantic is installed) as the tool
``final_result``: its parameters are the type's JSON Schema (an annotation that is not an
object, such as ``list[str]``, is wrapped as ``{"response": ...}``), and its ``validate`` turns
the model's arguments into a value of the type with the same checks ``@tool`` applies to tool
arguments (a pydantic model validates itself). The loop (``run_agent_loop(...,
output_type=City)``) offers that tool after the registry's, ends the run when the model calls
it with valid arguments, and answers invalid ones with the validation error so the model can
try again, ``output_retries`` times.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Generic

from tether._base.dataclass import dataclass
from tether.jsonvalue import JsonObject, freeze_json, thaw_json
from tether.protocol import Invalid, ToolSpec, ToolValidation, Valid

__all__ = ["FINAL_RESULT_TOOL", "OutputSpec", "OutputT", "output_spec"]

if TYPE_CHECKING:  # an unsolved OutputT (no output_type given) means Any
    from typing_extensions import TypeVar

    OutputT = TypeVar("OutputT", default=Any)
else:
    from typing import TypeVar

    OutputT = TypeVar("OutputT")

FINAL_RESULT_TOOL: Final = "final_result"
"""The name of the tool a structured output is offered as."""

_DESCRIPTION: Final = (
    "Give your final answer by calling this tool with arguments matching its schema. "
    "Call it exactly once, when you are done."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputSpec(Generic[OutputT]):
    """A structured output as the loop uses it: the ``tool`` offered to the model and the
    ``validate`` that turns its arguments into an ``OutputT`` (``Invalid`` with a readable
    error otherwise). Build one with ``output_spec``."""

    output_type: object
    tool: ToolSpec
    validate: Callable[[object], ToolValidation[OutputT]]


def output_spec(
    output_type: type[OutputT] | Any, *, name: str = FINAL_RESULT_TOOL
) -> OutputSpec[OutputT]:
    """Describe ``output_type`` as a final tool named ``name`` (see the module docstring).

    Raises ``TypeError`` for a type ``@tool`` cannot describe.
    """
    pydantic_model = _pydantic_model(output_type)
    if pydantic_model is not None:
        return _pydantic_spec(output_type, pydantic_model, name)
    from tether.tools._annotations import describe_annotation, json_object_of

    schema, check = describe_annotation(output_type, "output")
    wrapped = schema.get("type") != "object" or "properties" not in schema
    if wrapped:
        schema = {
            "type": "object",
            "properties": {"response": schema},
            "required": ["response"],
            "additionalProperties": False,
        }

    def validate(arguments: object) -> ToolValidation[OutputT]:
        values = json_object_of(arguments, "the final result must be a JSON object")
        if isinstance(values, Invalid):
            return values
        if wrapped:
            if set(values) != {"response"}:
                return Invalid(error='the final result must be {"response": ...}')
            problem, value = check(values["response"], "response")
        else:
            problem, value = check(values, "output")
        if problem is not None:
            return Invalid(error=problem)
        return Valid(value=value)

    return OutputSpec(
        output_type=output_type,
        tool=ToolSpec(name=name, description=_DESCRIPTION, parameters=_schema(schema)),
        validate=validate,
    )


def _schema(schema: object) -> JsonObject:
    frozen = freeze_json(schema)
    if type(frozen) is not JsonObject:  # pragma: no cover - every description is an object
        raise TypeError("the output's JSON Schema is not an object")
    return frozen


def _pydantic_model(output_type: object) -> Any:
    """pydantic's ``BaseModel`` when ``output_type`` is a subclass of it (only when pydantic
    is already imported: tether never imports it), else ``None``."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None:
        return None
    base: Any = getattr(pydantic, "BaseModel", None)
    if isinstance(output_type, type) and base is not None and issubclass(output_type, base):
        return base
    return None


def _pydantic_spec(output_type: Any, base: Any, name: str) -> OutputSpec[Any]:
    schema = _schema(output_type.model_json_schema())

    def validate(arguments: object) -> ToolValidation[Any]:
        try:
            return Valid(value=output_type.model_validate(thaw_json(arguments)))  # pyright: ignore[reportArgumentType] - a call's JsonObject, typed object
        except Exception as error:  # pydantic.ValidationError, or the model's own validator
            return Invalid(error=str(error) or type(error).__name__)

    return OutputSpec(
        output_type=output_type,
        tool=ToolSpec(name=name, description=_DESCRIPTION, parameters=schema),
        validate=validate,
    )
