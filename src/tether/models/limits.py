"""``RunLimits``: every per-run bound of the agent loop in one frozen value.

The defaults are the workshop's limits exactly (the module constants below keep their old
names). They suit scripted and fixture runs, and they are deliberately small: a real model
streams a chunk per token, thinks at length and writes whole files through tool arguments,
and would trip them on an ordinary turn. ``RunLimits.for_real_models()`` is the profile for
that; its reasoning is in its docstring.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Final

from tether._base.dataclass import dataclass
from tether.protocol import MAX_SAFE_INTEGER

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "MAX_AGENT_STEPS",
    "MAX_INITIAL_MESSAGES",
    "MAX_MODEL_BLOCKS_PER_STEP",
    "MAX_MODEL_CHUNKS_PER_STEP",
    "MAX_MODEL_TEXT_CODE_POINTS",
    "MAX_TOOL_ARGUMENT_DEPTH",
    "MAX_TOOL_ARGUMENT_ENTRIES",
    "MAX_TOOL_ARGUMENT_NODES",
    "MAX_TOOL_ARGUMENT_STRING_CODE_POINTS",
    "RunLimits",
    "limits_for",
]

MAX_AGENT_STEPS: Final = 64
"""Workshop ceiling on model steps per run (``RunLimits.max_steps``)."""
MAX_INITIAL_MESSAGES: Final = 4096
"""Workshop cap on the messages a run may start from."""
MAX_MODEL_CHUNKS_PER_STEP: Final = 1024
"""Workshop cap on chunks accepted from one model turn."""
MAX_MODEL_TEXT_CODE_POINTS: Final = 65_536
"""Workshop cap on streamed text per turn, and on text per assistant message, in code points."""
MAX_MODEL_BLOCKS_PER_STEP: Final = 1024
"""Workshop cap on content blocks in one assistant message."""
MAX_TOOL_ARGUMENT_DEPTH: Final = 32
"""Workshop cap on container nesting in tool arguments (the arguments object is depth 0)."""
MAX_TOOL_ARGUMENT_NODES: Final = 257
"""Workshop cap on JSON values in one call's arguments, the root included."""
MAX_TOOL_ARGUMENT_ENTRIES: Final = 256
"""Workshop cap on object fields plus array slots in one call's arguments."""
MAX_TOOL_ARGUMENT_STRING_CODE_POINTS: Final = 4096
"""Workshop cap on code points of keys and string values in one call's arguments."""


def check_positive(value: object, name: str) -> int:
    """``value`` when it is exactly an ``int`` from 1 to ``MAX_SAFE_INTEGER``, else
    ``TypeError("<name> must be a positive safe integer")``: the check of every limit and
    budget (``RunLimits``, ``ContextLimits``, ``AutoCompaction``, the summarizer's bounds)."""
    if type(value) is not int or not 1 <= value <= MAX_SAFE_INTEGER:
        raise TypeError(f"{name} must be a positive safe integer")
    return value


def check_positive_fields(limits: DataclassInstance, owner: str) -> None:
    """``check_positive`` on every field of the dataclass ``limits``, each named
    ``<owner>.<field>``: the ``__post_init__`` of every limits class whose fields are all
    positive safe integers (``RunLimits``, ``ContextLimits``, ``SessionLimits``)."""
    for field in fields(limits):
        check_positive(getattr(limits, field.name), f"{owner}.{field.name}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunLimits:
    """The bounds one run enforces. Every field is a positive ``int``.

    * ``max_steps``: the largest ``max_steps`` a run accepts (model steps per run);
    * ``max_initial_messages``: messages the starting transcript may hold;
    * ``max_chunks_per_step``: chunks of every kind accepted from one model turn;
    * ``max_text_code_points``: streamed text plus thinking per turn, and text plus thinking
      per assistant message, counted as the workshop counts code points;
    * ``max_blocks_per_step``: content blocks of one assistant message;
    * ``max_argument_depth`` / ``max_argument_nodes`` / ``max_argument_entries`` /
      ``max_argument_string_code_points``: the budgets of one tool call's arguments.
    """

    max_steps: int = MAX_AGENT_STEPS
    max_initial_messages: int = MAX_INITIAL_MESSAGES
    max_chunks_per_step: int = MAX_MODEL_CHUNKS_PER_STEP
    max_text_code_points: int = MAX_MODEL_TEXT_CODE_POINTS
    max_blocks_per_step: int = MAX_MODEL_BLOCKS_PER_STEP
    max_argument_depth: int = MAX_TOOL_ARGUMENT_DEPTH
    max_argument_nodes: int = MAX_TOOL_ARGUMENT_NODES
    max_argument_entries: int = MAX_TOOL_ARGUMENT_ENTRIES
    max_argument_string_code_points: int = MAX_TOOL_ARGUMENT_STRING_CODE_POINTS

    def __post_init__(self) -> None:
        check_positive_fields(self, "RunLimits")

    @classmethod
    def for_real_models(cls) -> RunLimits:
        """Limits sized for real models in a coding session.

        * 1,024 steps: a long agentic task runs hundreds of tool turns; the caller still
          chooses ``max_steps`` per run.
        * 131,072 messages to start from: a long session's transcript, far beyond any
          context window, so the model (not tether) is what says "too long".
        * 262,144 chunks per turn: real streams send about one chunk per token, and tool-call
          argument fragments are chunks too; current models emit up to 128k output tokens
          per turn, with room to spare for thinking and argument deltas.
        * 4,194,304 code points of text and thinking per turn (128k tokens at up to 4 code
          points each is 512k; eight times that leaves room for verbose thinking).
        * 16,384 blocks per message.
        * Tool arguments: depth 64, 1,048,577 values, 1,048,576 entries and 4,194,304 code
          points of strings, so a ``write_file`` call can carry a multi-megabyte file; the
          checks are linear, so these cost milliseconds, not seconds (measured by
          ``tests/loop/test_stop_reasons_and_usage.py``'s large-argument case).
        """
        return cls(
            max_steps=1024,
            max_initial_messages=131_072,
            max_chunks_per_step=262_144,
            max_text_code_points=4_194_304,
            max_blocks_per_step=16_384,
            max_argument_depth=64,
            max_argument_nodes=1_048_577,
            max_argument_entries=1_048_576,
            max_argument_string_code_points=4_194_304,
        )


DEFAULT_LIMITS: Final = RunLimits()
REAL_MODEL_LIMITS: Final = RunLimits.for_real_models()
"""``RunLimits.for_real_models()``, built once: what the HTTP models' ``run_limits`` say."""


def limits_for(model: object, limits: RunLimits | None) -> RunLimits:
    """The limits of a run: ``limits`` when given, else the model's ``run_limits`` when its
    class declares one (the HTTP models: ``RunLimits.for_real_models()``), else the
    workshop's (scripted and fixture models). ``TypeError`` for anything else."""
    if limits is not None:
        if type(limits) is not RunLimits:
            raise TypeError("limits must be a RunLimits or None")
        return limits
    if getattr(type(model), "run_limits", None) is None:
        return DEFAULT_LIMITS
    try:
        declared: object = getattr(model, "run_limits")  # noqa: B009
    except Exception as error:
        raise TypeError("model.run_limits could not be read") from error
    if type(declared) is not RunLimits:
        raise TypeError("model.run_limits must be a RunLimits")
    return declared


def check_max_steps(steps: object, limits: RunLimits, name: str) -> int:
    """``steps`` as a run's step budget: a positive safe integer at most ``limits.max_steps``
    (``TypeError`` naming ``name`` otherwise). The loop and the Agent check it alike."""
    checked = check_positive(steps, name)
    if checked > limits.max_steps:
        raise TypeError(
            f"{name} must not exceed {limits.max_steps} (raise RunLimits.max_steps, "
            "e.g. with RunLimits.for_real_models())"
        )
    return checked
