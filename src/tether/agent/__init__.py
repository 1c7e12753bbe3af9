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

Import the submodule you need; ``tether`` re-exports their public names lazily. This package
re-exports ``tether.agent.agent``'s names too, loaded on first use: importing a sibling
(``tether.agent.session`` for a ``SessionStore``) does not load the ``Agent`` and the
compaction it needs.
"""

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: this package's import must stay cheap

if TYPE_CHECKING:
    from tether.agent.agent import *  # noqa: F403


def __getattr__(name: str) -> object:
    from importlib import import_module

    agent = import_module("tether.agent.agent")  # not a from-import: that would ask here again
    if name == "__all__":
        return list(agent.__all__)
    if name not in agent.__all__:
        raise AttributeError(f"module 'tether.agent' has no attribute {name!r}")
    value = getattr(agent, name)
    globals()[name] = value
    return value
