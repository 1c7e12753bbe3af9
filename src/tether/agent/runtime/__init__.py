"""Checkpoint 13: runtime composition and replacement.

``await create_runtime(options)`` builds one ``Runtime``: a workspace (canonical root, session
path), tools, resources, a session, extensions and an Agent, each from a factory that an
override can replace (see ``ledger``), with everything made so far rolled back if any step
fails (see ``build``). ``RuntimeManager`` owns a current runtime and replaces it without a
gap: the new one is fully built before it is published, then the old one is disposed (see
``manager``). Options are captured once, at call time (see ``options``).

**Where tether differs from the workshop** (on purpose):

1. *Default tools* are ``coding_tools(root)``, tether's seven coding tools (``read_file``,
   ``write_file``, ``edit_file``, ``list_files``, ``grep``, ``bash``, ``python_process``;
   the workshop had three), followed by the base tools.
2. *Persistence.* The workshop appends messages to the session from an Agent subscriber and
   reconciles afterwards. tether's Agent writes through its ``recorder``: the default agent
   factory is ``resume_agent`` (the last compaction's summary plus the messages after it,
   unanswered tool calls closed and recorded, ``recorder=SessionRecorder(tree)``), so every
   message is on disk before the run goes on and automatic compaction records compaction
   entries. The runtime's event tail therefore does not append; it (a) checks *coherence*
   (the session's active context equals the Agent's transcript) where that is exact: at
   construction, synchronously when ``run.finished`` is published (the Agent publishes it
   after its last recorder write, before any new run can start; ``message.accepted`` is
   published *before* the recorder writes that message, so it is not a checkpoint), and in
   ``flush``/``dispose`` while the Agent is idle. A mismatch is ``RUNTIME_SESSION_DIVERGED``
   and poisons the runtime. A run that ended ``AGENT_RECORDING_FAILED`` (a storage failure)
   poisons it with ``RUNTIME_EVENT_FAILED`` instead, caused by the store's error (that run's
   result reported it: disposal does not report it again). (b) It
   emits each event to the ``ExtensionHost`` in order.
   Extension hooks for ``message.accepted`` may run before that message reaches the file.
3. *One runtime per session file.* A process-wide registry keyed by the canonical session
   path is held from construction until disposal; a second runtime on a held file (another
   ``create_runtime``, another manager) fails ``RUNTIME_SESSION_IN_USE``, and so does a file
   another process writes (the store's lock, ``SESSION_IN_USE``, is the cause). A manager may
   replace its current runtime with one on the same file only while the current Agent is
   idle; the two share the claim and the store until the swap, and if the session changed
   after the candidate was built from it, the candidate is disposed and the replace fails
   ``RUNTIME_SESSION_DIVERGED`` (the old runtime stays current). Such a candidate writes
   nothing before it is published: its default agent factory passes ``resume_agent`` a
   ``SessionRecorder`` that *holds* the closing results of unanswered tool calls (the
   candidate's construction coherence allows exactly that unrecorded tail); the manager
   writes them once the candidate is published and the old runtime disposed (or the Agent's
   first write does). A candidate that wrote anyway fails ``RUNTIME_SESSION_DIVERGED`` with a
   message of its own. Disposal detaches the old Agent from the session first, so a stale
   reference to it cannot write into the session the new runtime now owns.
4. *Session directory.* ``RuntimeSessionOptions.directory`` puts the session file under a
   directory other than the workspace (captured and identity-checked like the root), so a
   host can keep sessions in a per-user data directory.
5. *Agent options.* ``RuntimeOptions.agent_options`` (``RuntimeAgentOptions``) passes the
   system prompt, ``RunLimits``, the tool-call approval hooks and ``AutoCompaction`` through
   to the default agent factory.

Python forms: ``dispose()`` returns one awaitable (shielded: cancelling a waiter does not
stop the disposal; a cancelled manager operation still waits for a disposal it started before
the queue moves on); ``RuntimeManager.replace()`` captures its options synchronously and
returns an ``asyncio.Task``; reentrancy scopes are ``ContextVar``-based (see ``scope``): the
manager's ``replace``/``flush``/``dispose`` are refused (``RUNTIME_REENTRANT_OPERATION``, at
once) from inside the manager's scope and from inside its current runtime's (an extension
hook). Cancelling a construction while an override holds a started fallback cancels that
fallback and waits for it before the rollback.
"""

from tether.agent.runtime.errors import (
    RUNTIME_ERROR_CODES,
    RuntimeAggregateError,
    RuntimeErrorCode,
    TetherRuntimeError,
)
from tether.agent.runtime.inputs import (
    RuntimeAgentInput,
    RuntimeExtensionsInput,
    RuntimeResourcesInput,
    RuntimeSessionInput,
    RuntimeToolsInput,
)
from tether.agent.runtime.ledger import RUNTIME_MAX_ADOPTION_DEPTH
from tether.agent.runtime.manager import RuntimeManager, RuntimeManagerState, create_runtime
from tether.agent.runtime.options import (
    RUNTIME_WORKSPACE_ROOT_ID,
    RuntimeAgentOptions,
    RuntimeFactories,
    RuntimeOptions,
    RuntimeSessionMode,
    RuntimeSessionOptions,
    RuntimeWorkspaceOptions,
    check_runtime_session_path,
)
from tether.agent.runtime.owned import RUNTIME_DISPOSE_REASON, Runtime, RuntimeState
from tether.agent.runtime.workspace_root import RuntimeWorkspace

__all__ = [
    "RUNTIME_DISPOSE_REASON",
    "RUNTIME_ERROR_CODES",
    "RUNTIME_MAX_ADOPTION_DEPTH",
    "RUNTIME_WORKSPACE_ROOT_ID",
    "Runtime",
    "RuntimeAgentInput",
    "RuntimeAgentOptions",
    "RuntimeAggregateError",
    "RuntimeErrorCode",
    "RuntimeExtensionsInput",
    "RuntimeFactories",
    "RuntimeManager",
    "RuntimeManagerState",
    "RuntimeOptions",
    "RuntimeResourcesInput",
    "RuntimeSessionInput",
    "RuntimeSessionMode",
    "RuntimeSessionOptions",
    "RuntimeState",
    "RuntimeToolsInput",
    "RuntimeWorkspace",
    "RuntimeWorkspaceOptions",
    "TetherRuntimeError",
    "check_runtime_session_path",
    "create_runtime",
]
