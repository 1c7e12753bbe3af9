"""Reading untrusted JSON-shaped input once: the transcript package's field access.

A caller's mapping may be any ``Mapping`` (a hostile one included), so every field is read
exactly once through ``read_field``, and an absent field is ``MISSING`` rather than ``None``.
The fields the constructors and the validator do not word themselves (a tool result's
``errorCode``, a message's ``images``, any field added later) are decoded by the one
protocol decoder, configured here as the IR's ``Layer`` (``with_rest``, ``rest_of``). The
loop's checks and the tool contract read their input with the same functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeGuard, TypeVar

from tether._base.exact_types import is_dict, type_of
from tether.protocol._decoder import Layer, Problem, Rest
from tether.protocol.codec import problem_text
from tether.protocol.content import TextBlock, ThinkingBlock, ToolCall
from tether.protocol.messages import AssistantMessage, ToolResultMessage, UserMessage

__all__ = ["MISSING", "is_array", "is_mapping", "read_field", "rest_of", "with_rest"]


class _Missing:
    """An absent field, as opposed to a field whose value is ``None``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


def read_field(source: Any, key: str) -> Any:
    """Read ``source[key]`` exactly once; ``MISSING`` when absent. Other errors propagate."""
    if type_of(source) is dict:
        return source.get(key, MISSING)
    try:
        return source[key]
    except KeyError:
        return MISSING


def is_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    """A JSON-shaped object: an exact ``dict`` whose keys are all ``str`` (so a lookup never
    compares a caller's key object), or any other ``Mapping``, read with ``read_field``."""
    if is_dict(value):
        return all(type_of(key) is str for key in value)
    return isinstance(value, Mapping)


def is_array(value: object) -> bool:
    """Whether ``value`` is exactly a ``list`` or a ``tuple`` (a JSON array)."""
    kind = type_of(value)
    return kind is list or kind is tuple


# --- the fields this package does not word itself -------------------------------------------


def _ir_error(path: str, problem: Problem) -> TypeError:
    return TypeError(f"{path}: {problem_text(problem)}")


_IR: Final = Layer(name="messages", fail=_ir_error)
"""The IR's configuration of the one decoder, for the fields read by ``with_rest``."""

_HANDLED: Final[dict[type, frozenset[str]]] = {
    UserMessage: frozenset({"id", "role", "content"}),
    AssistantMessage: frozenset({"id", "role", "content"}),
    ToolResultMessage: frozenset({"id", "role", "toolCallId", "toolName", "content", "isError"}),
    TextBlock: frozenset({"type", "text", "signature"}),
    ThinkingBlock: frozenset({"type", "text", "signature", "redacted"}),
    ToolCall: frozenset({"type", "id", "name", "arguments", "rawArguments", "signature"}),
}
"""The JSON keys this package reads and words itself, by class; every other field of the
class (a tool result's ``errorCode``, any field added later) comes from the one decoder."""
_RESTS: dict[type, Rest] = {}
_Value = TypeVar("_Value", bound=object)


def with_rest(value: _Value, source: Any, where: str) -> _Value:
    """``value`` with the fields of ``source`` (its JSON form, read with ``read_field``) that
    this package does not read itself, decoded by the one decoder (``TypeError`` naming
    ``where`` and the key)."""
    return rest_of(type(value)).onto(value, lambda key: read_field(source, key), MISSING, where)


def rest_of(kind: type) -> Rest:
    """The one decoder's reader of the fields of ``kind`` this package does not word itself."""
    rest = _RESTS.get(kind)
    if rest is None:
        rest = _RESTS[kind] = Rest(kind, _HANDLED[kind], _IR)
    return rest
