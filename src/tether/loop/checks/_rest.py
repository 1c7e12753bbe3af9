"""The loop's configuration of the one protocol decoder (``protocol._decoder``): the fields
of a model's JSON-shaped chunk or response that the checks do not word themselves (any v2
field added later) are decoded by it, so a new field reaches the run with no edit here."""

from __future__ import annotations

from typing import Any, Final, TypeVar

from tether.loop.checks._failures import ModelProtocolError
from tether.protocol._decoder import Layer, Problem, Rest
from tether.protocol.codec import problem_text
from tether.protocol.transcript._reading import MISSING, read_field

_Value = TypeVar("_Value")


def _model_error(path: str, problem: Problem) -> ModelProtocolError:
    return ModelProtocolError(f"{path}: {problem_text(problem)}")


_LAYER: Final = Layer(name="loop", fail=_model_error)
_RESTS: dict[tuple[type, frozenset[str]], Rest] = {}


def with_rest(value: _Value, source: Any, handled: frozenset[str], where: str) -> _Value:
    """``value`` with the fields of ``source`` (read once each with ``read_field``) other
    than the ``handled`` JSON keys, decoded by the one decoder (``ModelProtocolError``
    naming ``where`` and the key; the constructor's ``TypeError``/``ValueError``)."""
    key = (type(value), handled)
    rest = _RESTS.get(key)
    if rest is None:
        rest = _RESTS[key] = Rest(type(value), handled, _LAYER)
    return rest.onto(value, lambda name: read_field(source, name), MISSING, where)
