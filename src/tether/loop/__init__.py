"""Layer 07: the agent loop.

* ``run``: ``run_agent_loop`` and the step state machine;
* ``limits``: ``RunLimits``, every per-run bound (workshop defaults, ``for_real_models()``);
* ``checks``: the chunk, response and transcript boundary checks and their agreement rules.
"""

from tether.loop.run import *  # noqa: F403
from tether.loop.run import __all__  # noqa: F401
