"""Layer 07: the agent loop. ``run`` drives the steps."""

from tether.loop.run import *  # noqa: F403
from tether.loop.run import __all__  # noqa: F401
