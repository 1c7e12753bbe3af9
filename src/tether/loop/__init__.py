"""Layer 07: the agent loop.

* ``agent_loop``: ``run_agent_loop`` (``_steps``: the step state machine; ``_model_turn``: one
  model turn);
* ``hooks``: ``ToolHooks``, a host's say before a tool call runs and after it returns;
* ``RunLimits`` and the limit constants, re-exported from ``tether.models.limits``;
* ``checks``: the chunk, response and transcript boundary checks and their agreement rules;
* ``collector``: ``relaxed_cycle_collector``, an opt-in knob for thousands of runs in flight.
"""

from tether.loop import agent_loop as _run
from tether.loop import collector as _collector
from tether.loop import hooks as _hooks
from tether.loop.agent_loop import *  # noqa: F403
from tether.loop.collector import *  # noqa: F403
from tether.loop.hooks import *  # noqa: F403
from tether.models import limits as _limits
from tether.models.limits import *  # noqa: F403


def _isort_key(name: str) -> tuple[int, str]:
    return (0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2, name)


__all__ = sorted(
    [*_run.__all__, *_hooks.__all__, *_collector.__all__, *_limits.__all__], key=_isort_key
)  # pyright: ignore[reportUnsupportedDunderAll] - a computed __all__
