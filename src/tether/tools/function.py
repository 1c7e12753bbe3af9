"""``@tool``: a typed tool from an annotated function.

The decorator reads the function's signature and docstring once, at decoration time, and
derives both halves of the tool contract from them:

* ``parameters``, a JSON Schema of the arguments (``properties``, ``required``,
  ``additionalProperties: false``, descriptions from the docstring's ``Args:`` section, and
  each default as ``"default"`` when it has a JSON form), and
* ``validate``, which accepts exactly what the schema describes and returns the keyword
  arguments to call the function with (``Invalid`` with a readable error otherwise); an
  absent argument that has a default gets that default.

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Literal[...]`` and
``Enum`` classes (both an ``enum`` of their JSON values; an enum's values must be ``str`` or
``int``, and a value validates to its member), unions (``X | None``), ``list[X]``,
``tuple[X, ...]``, ``dict[str, X]``, ``Any``/``object`` (any JSON value, passed as plain
``dict``/``list``), ``typing.Annotated[X, "description"]``, ``TypedDict`` classes and
dataclasses (built from an object). A parameter annotated ``ToolExecutionContext`` or
``RunContext[Deps]`` receives the call's context (its ``deps`` are the run's ``deps=``) and is
not part of the schema. Anything else, including a dataclass or
``TypedDict`` that contains itself (directly or through another), is a ``TypeError`` when the
function is decorated, never at call time.

An ``async def`` runs on the event loop. A plain ``def`` runs in a worker thread
(``asyncio.to_thread``), so blocking work does not stall the loop. Cancellation cannot
interrupt a running thread: when the run is aborted it stops waiting for the thread at once,
the thread runs on to completion, and its result (or exception) is discarded.

The result is a ``FunctionTool``: an ordinary ``ToolDefinition`` whose ``fn`` is the
decorated function, still callable directly with its own types.

::

    @tool
    async def add(left: int, right: int) -> int:
        \"\"\"Add two integers.

        Args:
            left: The first addend.
            right: The second addend.
        \"\"\"
        return left + right
"""

from __future__ import annotations

import asyncio
import types
import typing
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, ParamSpec, Protocol, TypeAlias, TypeVar, Union, overload

from tether.jsonvalue import entries
from tether.protocol import Invalid, RunContext, ToolExecutionContext, ToolValidation
from tether.protocol import _trusted as trusted
from tether.tools._annotations import (
    Field,
    Reject,
    Where,
    describe_default,
    field_for,
    json_object_of,
    resolved_hints,
)
from tether.tools.contract import FunctionTool, ToolSignatureError, define_tool
from tether.tools.effects import ToolEffect
from tether.tools.serialize import TOOL_OUTPUT_CAP_CHARACTERS

__all__ = ["tool"]

P = ParamSpec("P")
R = TypeVar("R")


class _Decorator(Protocol):
    """What ``tool(name=..., ...)`` returns: ``@tool`` with those options applied."""

    @overload
    def __call__(
        self, function: Callable[P, Coroutine[Any, Any, R]], /
    ) -> FunctionTool[P, Coroutine[Any, Any, R], R]: ...

    @overload
    def __call__(self, function: Callable[P, R], /) -> FunctionTool[P, R, R]: ...


@overload
def tool(
    function: Callable[P, Coroutine[Any, Any, R]], /
) -> FunctionTool[P, Coroutine[Any, Any, R], R]: ...


@overload
def tool(function: Callable[P, R], /) -> FunctionTool[P, R, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    output_limit: int = TOOL_OUTPUT_CAP_CHARACTERS,
    retries: int | None = None,
    expose_errors: bool = True,
    effects: Iterable[ToolEffect] | None = None,
) -> _Decorator: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    output_limit: int = TOOL_OUTPUT_CAP_CHARACTERS,
    retries: int | None = None,
    expose_errors: bool = True,
    effects: Iterable[ToolEffect] | None = None,
) -> Any:
    """Turn an annotated function into a tool the model can call (a ``FunctionTool``).

    The parameters' annotations become the JSON Schema the model sees (descriptions from the
    docstring's ``Args:`` section) and the validation its arguments go through before the
    function runs; a parameter annotated ``RunContext[Deps]`` (or ``ToolExecutionContext``)
    receives the call's context, its ``deps`` included. Use it bare (``@tool``) or with
    options (``@tool(name=..., retries=2)``).

    ``name`` defaults to the function's name and ``description`` to its docstring summary
    (one of them must exist: ``TypeError`` otherwise). ``output_limit`` caps the result
    content in code points, as for ``define_tool``; ``retries`` (failed calls in a row before
    the run fails with ``TOOL_RETRIES_EXHAUSTED``; ``None``: the run's ``tool_retries``) and
    ``expose_errors`` (``False``: the model never sees an exception's text) and ``effects``
    (what a call may do, e.g. ``effects={"write"}``; undeclared by default) are described on
    ``ToolDefinition``. Raise ``ModelRetry("...")`` in the function to send the model a
    message asking it to try again. A plain ``def`` runs in a worker thread;
    an abort stops waiting for it but cannot interrupt it, and its result is then discarded.
    """

    def decorate(target: Callable[..., Any]) -> FunctionTool[Any, Any, Any]:
        label, summary, parameters, validate, execute = _derive(target, name, description)
        checked = define_tool(
            name=label,
            description=summary,
            validate=validate,
            execute=execute,
            parameters=parameters,
            output_limit=output_limit,
            retries=retries,
            expose_errors=expose_errors,
            effects=effects,
        )
        frozen = checked.parameters
        assert frozen is not None  # define_tool froze the schema _derive built
        return FunctionTool(
            name=checked.name,
            description=checked.description,
            validate=checked.validate,
            execute=checked.execute,
            parameters=frozen,
            output_limit=checked.output_limit,
            retries=checked.retries,
            expose_errors=checked.expose_errors,
            effects=checked.effects,
            fn=target,
        )

    if function is None:
        return decorate
    return decorate(function)


_Validate: TypeAlias = Callable[[object], ToolValidation[dict[str, Any]]]
_Execute: TypeAlias = Callable[[dict[str, Any], ToolExecutionContext], Coroutine[Any, Any, Any]]


def _derive(
    function: Callable[..., Any], name: str | None, description: str | None
) -> tuple[str, str, dict[str, Any], _Validate, _Execute]:
    """What ``function``'s signature and docstring give its tool, read once: the name, the
    description (``name`` and ``description`` replace what it says when given), the JSON
    Schema of the arguments, their ``validate`` and the ``execute`` that calls it.
    ``TypeError`` (``ToolSignatureError``) for a function ``@tool`` cannot describe."""
    import inspect

    if not callable(function):
        raise TypeError("@tool needs a function")
    if not (inspect.isfunction(function) or inspect.ismethod(function)):
        raise ToolSignatureError(
            f"@tool needs a function or method, not {type(function).__name__}",
            "wrap the callable in a def (or async def) whose parameters are annotated, and "
            "call it from there; functools.partial and callable objects have no signature "
            "@tool can describe",
        )
    if inspect.isgeneratorfunction(function) or inspect.isasyncgenfunction(function):
        raise TypeError("@tool does not support generator functions")
    is_async = inspect.iscoroutinefunction(function)
    label: str = name or getattr(function, "__name__", "") or ""
    summary, documented = _parse_docstring(inspect.getdoc(function) or "")
    if not description and not summary:
        raise TypeError(
            f"@tool needs a description for {label!r}: give it a docstring or pass description="
        )
    hints = resolved_hints(function, f"function {label!r}")
    properties: dict[str, Any] = {}
    required: list[str] = []
    checks: dict[str, Field] = {}
    defaults: dict[str, Any] = {}
    context_name: str | None = None
    for parameter in inspect.signature(function).parameters.values():
        key = parameter.name
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"@tool does not support *{key} or **{key} parameters")
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise TypeError(f"@tool parameter {key!r} must not be positional-only")
        if key not in hints:
            raise ToolSignatureError(
                f"@tool parameter {key!r} needs a type annotation",
                f"annotate it (e.g. {key}: str); a parameter annotated ToolExecutionContext or "
                "RunContext[Deps] receives the call's context instead of an argument",
            )
        if _is_context(hints[key]):
            context_name = key
            continue
        where = f"parameter {key!r}"
        field = field_for(hints[key], Where(where, where))
        schema = dict(field.schema)
        if key in documented and "description" not in schema:
            schema["description"] = documented[key]
        if parameter.default is parameter.empty:
            required.append(key)
        else:
            defaults[key] = parameter.default
            describe_default(schema, parameter.default)
        properties[key] = schema
        checks[key] = field
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }

    names = checks.keys()

    def validate(arguments: object) -> ToolValidation[dict[str, Any]]:
        frozen = json_object_of(arguments, "arguments must be a JSON object")
        if isinstance(frozen, Invalid):
            return frozen
        values = entries(frozen)  # the object's own dict: read without a call per item
        if not values.keys() <= names:
            unexpected = next(key for key in values if key not in checks)
            return Invalid(error=f"unexpected argument {unexpected!r}")
        result: dict[str, Any] = {}
        try:
            for key, field in checks.items():
                if key in values:
                    result[key] = field.check(values[key], key)
                elif key in defaults:
                    result[key] = defaults[key]
                else:
                    return Invalid(error=f"missing required argument {key!r}")
        except Reject as problem:
            return Invalid(error=str(problem))
        return trusted.valid(result)  # Valid(value=result), without re-checking its fields

    if is_async:

        def execute(
            arguments: dict[str, Any], context: ToolExecutionContext
        ) -> Coroutine[Any, Any, Any]:
            if context_name is None:
                return function(**arguments)
            return function(**arguments, **{context_name: context})

    else:

        def execute(
            arguments: dict[str, Any], context: ToolExecutionContext
        ) -> Coroutine[Any, Any, Any]:
            # The thread cannot be interrupted: an abort abandons this coroutine, which stops
            # waiting for the thread; the thread finishes and its result is discarded.
            if context_name is None:
                return asyncio.to_thread(function, **arguments)
            return asyncio.to_thread(function, **arguments, **{context_name: context})

    return label, description or summary, parameters, validate, execute


def _is_context(annotation: Any) -> bool:
    """``ToolExecutionContext`` or ``RunContext[...]``, optionally ``| None``."""
    if annotation is ToolExecutionContext or annotation is RunContext:
        return True
    origin = typing.get_origin(annotation)
    if origin is RunContext:
        return True
    if origin is Union or origin is types.UnionType:
        options = [option for option in typing.get_args(annotation) if option is not type(None)]
        return len(options) == 1 and _is_context(options[0])
    return False


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary paragraph(s) and ``Args:`` entries of a Google-style docstring."""
    summary: list[str] = []
    arguments: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        heading = stripped.rstrip(":").lower()
        if stripped.endswith(":") and heading in ("args", "arguments", "parameters", "params"):
            section, current = "args", None
            continue
        if stripped.endswith(":") and heading in ("returns", "raises", "yields", "examples"):
            section, current = "other", None
            continue
        if section is None:
            summary.append(stripped)
        elif section == "args" and stripped:
            indent = len(line) - len(line.lstrip())
            head, colon, text = stripped.partition(":")
            if colon and indent <= 4 and head.split(" ")[0].isidentifier():
                current = head.split(" ")[0]
                arguments[current] = text.strip()
            elif current is not None:
                arguments[current] = f"{arguments[current]} {stripped}".strip()
    text = " ".join(part for part in summary if part).strip()
    return text, arguments
