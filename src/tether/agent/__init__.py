"""Checkpoints 09-13: what owns a conversation across runs.

* ``tether.agent.agent``: the stateful ``Agent`` (09): one owner per transcript, steering and
  follow-ups, subscribers, tool-call hooks;
* ``tether.agent.session``: persistent session trees in JSON-lines files (10);
* ``tether.agent.compaction``: context compaction at safe boundaries (11);
* ``tether.agent.resources``: text files read from trusted roots, confined and re-checked (12);
* ``tether.agent.skills``: skills (``SKILL.md``) and prompt templates, read as resources;
* ``tether.agent.extensions``: transactional extensions, found through entry points (12);
* ``tether.agent.runtime``: a workspace, session, tools, extensions and agent built and
  replaced as one (13).

Import the submodule you need; ``tether`` re-exports their public names lazily.
"""

from tether.agent import agent as _agent
from tether.agent.agent import *  # noqa: F403

__all__ = list(_agent.__all__)  # pyright: ignore[reportUnsupportedDunderAll]
