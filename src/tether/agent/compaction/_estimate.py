"""The public size estimates of a context: units (exact) and tokens (rough)."""

from __future__ import annotations

from tether.agent.compaction._context import ContextInput, context_of
from tether.agent.compaction._limits import CODE_POINTS_PER_TOKEN, ContextLimits
from tether.agent.compaction._units import context_units


def estimate_context_units(context: ContextInput, *, limits: ContextLimits | None = None) -> int:
    """The deterministic size of a context (or of a bare transcript) in units.

    See the package docstring for the weights; compaction records are not counted. The input
    is validated as ``build_active_context(context, limits=limits)`` does: an
    ``ActiveContext`` under its own limits unless ``limits`` says otherwise, a ``dict`` or a
    bare transcript under ``limits`` (the workshop's when omitted).
    """
    return context_units(context_of(context, limits))


def estimate_tokens(context: ContextInput, *, limits: ContextLimits | None = None) -> int:
    """A rough token count for a real model: ``ceil(estimate_context_units(context) / 4)``.

    Units are the code points of every string a model is sent plus small structural
    weights, so this is the common "four characters per token" rule of thumb applied to the
    same text the unit estimator counts. No tokenizer is involved (tether has no tokenizer
    dependency): expect it to be off by tens of percent, high for plain English and low for
    CJK text, emoji or dense JSON. Use it to choose budgets (``CODE_POINTS_PER_TOKEN`` units
    per token of context window), never to bill. ``limits`` as for ``estimate_context_units``.
    """
    units = estimate_context_units(context, limits=limits)
    return -(-units // CODE_POINTS_PER_TOKEN)
