"""Checkpoint 12: transactional extensions over trusted resources.

* ``ExtensionHost`` (``host``): discovery, serialized transactional activation, agent-event
  hooks, reverse-order disposal, reentrancy guards;
* the values extension authors use (``values``): ``ExtensionDefinition``,
  ``ExtensionInstance``, ``ExtensionContext`` and the host's metadata and hook failures;
* ``ExtensionError`` and ``ExtensionAggregateError`` (``errors``);
* ``load_entry_point_extensions`` (``entry_points``): extensions that installed packages
  advertise under the ``tether.extensions`` entry-point group. Nothing is loaded until it is
  called; importing tether never imports an extension.
"""

from tether.agent.extensions.entry_points import (
    ENTRY_POINT_GROUP,
    load_entry_point_extensions,
)
from tether.agent.extensions.errors import (
    EXTENSION_ERROR_CODES,
    ExtensionAggregateError,
    ExtensionError,
    ExtensionErrorCode,
)
from tether.agent.extensions.host import EXTENSION_TIMEOUT, ExtensionHost
from tether.agent.extensions.values import (
    AgentEventHook,
    ExtensionContext,
    ExtensionDefinition,
    ExtensionDisposer,
    ExtensionFactory,
    ExtensionHookFailure,
    ExtensionInstance,
    ExtensionMetadata,
    ExtensionStatus,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "EXTENSION_ERROR_CODES",
    "EXTENSION_TIMEOUT",
    "AgentEventHook",
    "ExtensionAggregateError",
    "ExtensionContext",
    "ExtensionDefinition",
    "ExtensionDisposer",
    "ExtensionError",
    "ExtensionErrorCode",
    "ExtensionFactory",
    "ExtensionHookFailure",
    "ExtensionHost",
    "ExtensionInstance",
    "ExtensionMetadata",
    "ExtensionStatus",
    "load_entry_point_extensions",
]
