"""Write ``docs/ERROR_CODES.md``: every stable error code of every layer, with what to do.

The codes are gathered from the source, never listed by hand:

* every module-level ``X...Code: TypeAlias = ...`` of ``src/tether`` (a ``Literal`` of codes,
  or a union of such aliases), read by importing its module;
* every code an error is built with literally (``super().__init__("CODE", ...)`` or
  ``SomethingError("CODE", ...)``) that no such alias lists.

``ADVICE`` below is the one table of what a user should do about each code. A code without a
row, or a row without a code, is an error: ``make error-codes`` (this script) refuses to
write the file, and ``--check`` (run by ``tests/project/test_error_codes.py``) also fails when the
committed file is stale.

    python scripts/generate_error_codes.py [--check]
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "tether"
OUTPUT = ROOT / "docs" / "ERROR_CODES.md"

_RAISED = re.compile(
    r'(?:super\(\)\.__init__|\b[A-Z]\w*Error)\(\s*"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)"'
)
"""A code an error is built with: ``super().__init__("CODE", ...)``, ``XError("CODE", ...)``."""

ADVICE: dict[str, str] = {
    "CLI_TRACING_UNAVAILABLE": "Tracing is on (the config's `[tracing]` or an "
    "`OTEL_EXPORTER_OTLP_*` endpoint) but OpenTelemetry is missing: install `tether[otel]` and "
    "`opentelemetry-exporter-otlp-proto-http`, or unset the variable.",
    "CODING_THINKING_INVALID": "Give one of the thinking levels: off, minimal, low, medium, high.",
    "MCP_CALL_FAILED": "The MCP server answered a tool call with a protocol error: check the "
    "server's log (`tether mcp list` shows its state) and the tool's arguments.",
    "MCP_CONFIG_INVALID": "Fix the `[mcp_servers.NAME]` table the message names: a `command` "
    "(with `args`, `env`) or a `url` (with `headers`), and only the documented keys.",
    "MCP_NOT_INSTALLED": "Install the MCP extra (`pip install 'tether[mcp]'`), or remove the "
    "`[mcp_servers]` tables.",
    "MCP_SERVER_DIED": "The MCP server's process or connection ended mid-session; tether "
    "restarts it at the next call (up to 3 times): check its stderr if it keeps dying.",
    "MCP_SERVER_START_FAILED": "The MCP server did not start: run its `command` by hand (the "
    "message has its last stderr line) or check that its `url` answers.",
    "MCP_SERVER_STOPPED": "The runtime stopped the MCP server while a call was going on (a new "
    "session, a model switch, exit); send the prompt again.",
    "MCP_SERVER_TIMEOUT": "The MCP server did not finish starting in time: raise its "
    "`startup_timeout`, or check what it waits for.",
    "MCP_TOOL_ERROR": "The MCP tool reported an error; the model sees its text and usually "
    "retries with other arguments.",
    "MCP_TOOL_NOT_FOUND": "The server no longer offers that tool (its list changed); the model "
    "sees the current tools on its next turn.",
    "MCP_TOOL_TIMEOUT": "The MCP tool call took longer than its server's `tool_timeout`: raise "
    "it, or ask for less work per call.",
    "TRACING_UNAVAILABLE": "Install OpenTelemetry (`pip install 'tether[otel]'`), or run "
    "without `tracing=`.",
    # --- foundation -----------------------------------------------------------------------
    "ABORTED": "The work was cancelled through its AbortSignal; nothing is wrong. Start it "
    "again if the cancellation was not meant (check what called abort()).",
    "NO_RUNNING_LOOP": "Call it from async code (inside `asyncio.run(main())`), or use the "
    "synchronous door (`Agent.run_sync()`) from a plain script.",
    "EVENT_STREAM_STATE": "An EventStream has one consumer: iterate it once, and await "
    "`.result` instead of iterating it a second time.",
    "INVALID_JSON_VALUE": "Pass only JSON values (dict with str keys, list, str, int, float, "
    "bool, None; no NaN, no cycles); the message names the path of the bad part.",
    "INVALID_PROTOCOL_JSON": "The JSON is not a tether protocol value: compare the field the "
    "message names with `tether.protocol` (it may come from a newer tether; upgrade this one).",
    "PROVIDER_TOO_MANY_IMAGES": "The conversation carries more than 20 images and a request "
    "sends them all: drop older images (compact the session or start a new one), or send fewer "
    "at once.",
    "MODEL_CANNOT_SEE_IMAGES": "tether's model catalog says this model reads no images: switch "
    "to one that does (`tether models` lists them), or remove the images from the prompt.",
    "IMAGE_INVALID": "The bytes are not a PNG, JPEG, GIF or WebP image, or the ImageBlock's "
    "media type or size disagrees with its header: build it with `ImageBlock.from_bytes(data)`, "
    "or convert the image to PNG.",
    "IMAGE_TOO_LARGE": "The image is over 3.75 MiB (5 MiB as base64) or 8000 pixels a side; "
    "tether does not downscale: shrink or crop it (e.g. to 2000 px a side) and send it again.",
    # --- messages -------------------------------------------------------------------------
    "INVALID_TRANSCRIPT": "The messages are not a valid conversation: the message names the "
    "index and rule; fix or drop that message (unanswered tool calls: "
    "`unanswered_call_results`).",
    "INVALID_MESSAGE": "A message lacks a required field or has the wrong type: build it "
    "with the `tether.protocol` classes instead of a hand-written dict.",
    "DUPLICATE_TOOL_CALL_ID": "Two tool calls share an id: give every call in the transcript "
    "its own id (a replayed or merged transcript usually causes this).",
    "DUPLICATE_TOOL_RESULT": "A tool call has two results: keep one `ToolResultMessage` per "
    "`tool_call_id`.",
    "ORPHAN_TOOL_RESULT": "A tool result answers no call in the transcript: drop it, or keep "
    "the assistant message with its call when trimming history.",
    "TOOL_RESULT_BEFORE_CALL": "Move the tool result after the assistant message that makes "
    "the call.",
    "MISSING_TOOL_RESULT": "Answer every tool call before the next user or assistant "
    "message; `unanswered_call_results(messages, reason)` writes the missing results.",
    "TOOL_NAME_MISMATCH": "Set the result's `tool_name` to the name of the call it answers.",
    "EMPTY_TOOL_NAME": "Give the tool call a non-empty name.",
    "INVALID_TOOL_ARGUMENTS": "Tool call arguments must be a JSON object; an invalid call "
    "keeps the model's text in `raw_arguments` with empty `arguments`.",
    # --- run results ----------------------------------------------------------------------
    "SIGNAL_ACCESS_FAILED": "Pass a real `AbortSignal` (from `AbortController().signal`); "
    "reading the signal you gave raised.",
    "MODEL_PROTOCOL_ERROR": "The model sent a stream that breaks the protocol (the message "
    "says where); for a custom Model fix its chunks, for a provider report it with the "
    "trace (`tether trace`).",
    "MODEL_ASYNC_VALUE_UNOBSERVABLE": "Your Model's `stream()` returned an awaitable tether "
    "cannot await; return an async iterator of chunks.",
    "MODEL_STREAM_FAILED": "The model's stream raised: read the message (a provider code is "
    "in it), fix the network or key, and retry the run.",
    "MODEL_OUTPUT_TRUNCATED": "The answer hit the output-token limit: raise "
    '`max_output_tokens` for the model (`[models."P/M"]` in config.toml) or ask for '
    "shorter output.",
    "MODEL_REFUSED": "The model declined to answer: rephrase the request, or use another "
    "model for this task.",
    "SCRIPT_EXHAUSTED": "A ScriptedModel got more requests than it has replies: add a "
    "`ScriptedReply` for every turn the run takes (tool calls take one each).",
    "TOOL_EXECUTION_FAILED": "A tool raised: the result's message says why (a coding tool's "
    "code is its `error_code`); the model usually retries, otherwise fix the tool or its "
    "input.",
    "TOOL_RETRIES_EXHAUSTED": "A tool failed too many times in a row: read the last "
    "failures in the transcript, then fix the tool or raise `@tool(retries=...)` / "
    "`tool_retries=`.",
    "OUTPUT_RETRIES_EXHAUSTED": "The model never produced a valid structured answer: loosen "
    "`output_type`, describe its fields better, or raise `output_retries`.",
    "AGENT_RUNTIME_FAILED": "tether itself failed during the run (a bug): report it with the "
    "message and a trace; the transcript is unchanged.",
    "AGENT_MESSAGE_LIMIT": "The transcript (or the queued work) would pass its cap: compact "
    "(`/compact`, `AutoCompaction`), start a new session, or raise "
    "`RunLimits.max_initial_messages`.",
    "AGENT_RECORDING_FAILED": "The session file could not be written (disk full, removed, "
    "permissions): free space or fix the directory; the next run writes what was missed.",
    "AGENT_STATE_FAILED": "The Agent's own bookkeeping failed (a bug): report it; queued "
    "steering and follow-ups are still queued.",
    # --- agent ----------------------------------------------------------------------------
    "AGENT_BUSY": "A run is already in progress: wait for it (`wait_until_idle()`, or the "
    "run's result), or add to it with `steer()` / `follow_up()`.",
    "AGENT_INVALID_MESSAGE": "The user text holds a surrogate code point (a lone `\\ud800`, "
    "often from bytes decoded with `surrogateescape`), which is no Unicode text: a provider "
    "would be sent U+FFFD for a lone one. Decode the bytes with `errors='replace'`, or repair "
    "the text (`text.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')`), "
    "before `prompt()`.",
    "AGENT_NOTHING_TO_CONTINUE": "There is nothing to continue: `prompt()` a new message, or "
    "queue a `follow_up()` before `continue_()`.",
    "TOOL_CALL_NOT_RUN": "The turn ended before this call ran (cut off, refused, or a "
    "failure stopped the batch): nothing to undo; ask again if you still want it.",
    "TOOL_CALL_INTERRUPTED": "You interrupted this call: check what it may have changed "
    "(files, processes) before asking the model to go on.",
    # --- providers ------------------------------------------------------------------------
    "PROVIDER_REDIRECTED": "The server answered with a redirect, which tether never follows: "
    "set `base_url` to the final URL (often a missing or extra `/v1`).",
    "PROVIDER_AUTH_FAILED": "The server refused the API key: check the key in its variable "
    "(`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, or the provider's `api_key_env`).",
    "PROVIDER_RATE_LIMITED": "Wait and retry (the message gives Retry-After when sent), or "
    "raise your account's rate limit.",
    "PROVIDER_OVERLOADED": "The provider is overloaded: retry in a minute or switch model.",
    "PROVIDER_SERVER_ERROR": "The provider failed (5xx): retry; if it persists check its "
    "status page.",
    "PROVIDER_BAD_REQUEST": "The server rejected the request (400): check the model name and "
    "settings such as `max_output_tokens`; the message quotes the server's reason.",
    "PROVIDER_CONTEXT_OVERFLOW": "The conversation is too long for the model: `/compact`, "
    "start a new session, or set the right `context_window` so tether compacts earlier.",
    "PROVIDER_CONNECTION_FAILED": "The server could not be reached: check `base_url`, that "
    "the server runs, and your network or proxy.",
    "PROVIDER_TIMEOUT": "The server stopped answering in time: retry, or check a local "
    "server is not overloaded.",
    "PROVIDER_STREAM_INTERRUPTED": "The connection dropped mid-answer: retry the run; "
    "frequent drops point to a proxy or an unstable network.",
    "PROVIDER_PROTOCOL_ERROR": "The server's reply is not the API it claims: check `api` "
    "(`openai-chat` or `anthropic-messages`) for a custom provider and `base_url`.",
    "PROVIDER_ERROR_EVENT": "The provider reported an error inside the stream: the message "
    "quotes it; retry, or act on what it says.",
    "PROVIDER_INVALID_FIXTURE": "The fixture file is not a recorded stream: re-record it, or "
    "fix the line the message names.",
    "PROVIDER_EXHAUSTED": "The fixture has fewer recorded responses than the run made "
    "requests: record more turns or shorten the run (`--max-steps`).",
    "PROVIDER_UNKNOWN_EVENT": "The fixture holds an event type tether does not know: "
    "re-record it with this tether version.",
    "PROVIDER_INVALID_EVENT": "A fixture event is malformed: fix the event the message names "
    "or re-record the fixture.",
    "PROVIDER_MISSING_START": "A fixture response lacks its start event: re-record it.",
    "PROVIDER_DUPLICATE_START": "A fixture response has two start events: re-record it.",
    "PROVIDER_MISSING_TERMINAL": "A fixture response never finishes: re-record it (the "
    "recording was probably cut short).",
    "PROVIDER_DUPLICATE_TERMINAL": "A fixture response finishes twice: re-record it.",
    "PROVIDER_RESPONSE_MISMATCH": "The run's requests no longer match the recorded ones "
    "(prompt, tools or system changed): re-record the fixture.",
    "PROVIDER_INVALID_TERMINAL": "A fixture response ends with an invalid stop: re-record it.",
    "PROVIDER_ITERATOR_REUSED": "Each fixture stream can be read once: call "
    "`model.stream()` again for a new one.",
    "PROVIDER_TRANSPORT_ERROR": "The fixture recorded a transport failure on purpose: the "
    "run reports it as the real provider would.",
    # --- scripted model -------------------------------------------------------------------
    "SCRIPT_REQUEST_MISMATCH": "The ScriptedModel expected another request: update its "
    "`expect=` checks to the request the run now sends.",
    "SCRIPT_INVALID_RESPONSE": "A ScriptedReply is not a valid response: fix the reply the "
    "message names (text, tool calls or stop reason).",
    "SCRIPT_ITERATOR_REUSED": "Each scripted stream can be read once: open a new one with "
    "`model.stream()`.",
    # --- tools ----------------------------------------------------------------------------
    "INVALID_TOOL_DEFINITION": "Fix the tool's definition as the message says (a name of "
    "letters, digits, `_` or `-`; a typed signature for `@tool`; a JSON Schema object).",
    "INVALID_TOOL_BATCH": "Register tools as a list or tuple of tool definitions.",
    "DUPLICATE_TOOL_NAME": "Two tools share a name: rename one (extensions' tools share the "
    "namespace with the built-in ones).",
    "INVALID_TOOL_CALL": "Pass `execute_tool_call` a `ToolRegistry` and a `ToolCall`.",
    "NON_RECOVERABLE_TOOL_ERROR": "A tool stopped the run on purpose: read its message and "
    "fix the condition it names before running again.",
    "TOOL_NOT_FOUND": "The model called a tool that is not registered: register it, or tell "
    "the model (system prompt) which tools exist.",
    "TOOL_ARGUMENTS_INVALID": "The model's arguments did not fit the tool: the model sees "
    "why and usually retries; if not, make the parameter descriptions clearer.",
    "TOOL_VALIDATION_FAILED": "The tool's `validate` raised: fix `validate` so it returns "
    "`Invalid(error=...)` for bad input instead of raising.",
    "TOOL_OUTPUT_SERIALIZATION_FAILED": "Return JSON-serializable output from the tool "
    "(str, numbers, lists, dicts, dataclasses).",
    "TOOL_RETRY_REQUESTED": "The tool asked the model to try again (`ModelRetry`); nothing "
    "to do unless it repeats: then see TOOL_RETRIES_EXHAUSTED.",
    "TOOL_CALL_BLOCKED": "A `before_tool_call` hook (or the person asked) declined the call; "
    "approve it, or change the hook's policy.",
    "TOOL_HOOK_FAILED": "A `before_tool_call`/`after_tool_call` hook raised: fix the hook; "
    "the message says which call it was.",
    # --- coding tools ---------------------------------------------------------------------
    "EDIT_AMBIGUOUS_MATCH": "`old` occurs more than once: include more surrounding lines so "
    "it matches exactly one place.",
    "EDIT_CONFLICT": "The file changed between read and write: read it again and redo the edit.",
    "EDIT_NO_MATCH": "`old` is not in the file: read the file again and copy the text "
    "exactly (whitespace and indentation included).",
    "FILE_NOT_FOUND": "No such file in the workspace: check the path (relative to the "
    "workspace root) with list_files.",
    "FILE_NOT_REGULAR": "The path is a directory, device or FIFO: give the path of a regular file.",
    "FILE_NOT_UTF8": "The file is not UTF-8 text: tether's file tools only read text; "
    "convert it or use bash to inspect it.",
    "FILE_TOO_LARGE": "The file (or the content to write) is over 64 KiB: find the lines "
    "you need with grep and read them with bash (`sed -n 100,200p FILE`); write smaller "
    "files.",
    "INVALID_BASH_INPUT": "Give bash a non-empty `command` string (at most 64 KiB) and, "
    "optionally, `timeout_seconds` within the bounds the message gives.",
    "INVALID_EDIT_INPUT": "Give edit_file a `path`, a non-empty `old` and a `new` string.",
    "INVALID_GREP_INPUT": "Give grep a non-empty `pattern` and an optional `path` and "
    "`limit` within bounds.",
    "INVALID_GREP_PATTERN": "The pattern is not a valid Python regular expression: escape "
    "special characters (`\\(`, `\\.`) or fix the group.",
    "INVALID_LIST_INPUT": "Give list_files an optional glob `pattern` and a `limit` within bounds.",
    "INVALID_PROCESS_INPUT": "Give python_process a non-empty `source` and string "
    "`arguments` within the size bounds.",
    "INVALID_READ_INPUT": "Give read_file a `path` and, optionally, a positive `offset` and "
    "`limit`.",
    "INVALID_RELATIVE_PATH": "Use a path relative to the workspace root, without `..`, `~`, "
    "a drive letter or a leading `/`.",
    "INVALID_WORKSPACE_ROOT": "Start tether in (or point it at) an existing directory you "
    "can read.",
    "INVALID_WRITE_INPUT": "Give write_file a `path` and the `content` string (at most 64 KiB).",
    "PATH_CHANGED_DURING_READ": "The file was replaced while it was read: read it again.",
    "PATH_OUTSIDE_WORKSPACE": "The path (or a symlink in it) leads outside the workspace: "
    "work on files inside the workspace root.",
    "PROCESS_ARGUMENTS_TOO_LARGE": "The process arguments are too large together: pass "
    "data through a file in the workspace instead.",
    "PROCESS_ARGUMENT_TOO_LARGE": "One argument is too large: write it to a file and pass "
    "the file's path.",
    "PROCESS_FAILED": "The process could not be run or supervised: the message says why; "
    "retry, and check the machine's process limits.",
    "PROCESS_OUTPUT_FAILED": "The process's output could not be read: retry; if it repeats "
    "redirect the output to a file and read that.",
    "PROCESS_SCRIPT_CLEANUP_FAILED": "tether could not delete the temporary script it wrote: "
    "remove the leftover `.pify-py-*.py` file from the workspace root.",
    "PROCESS_SCRIPT_IDENTITY_CHANGED": "Something replaced tether's temporary script before "
    "it ran: check what else writes to the workspace, then retry.",
    "PROCESS_SCRIPT_NOT_REGULAR": "The temporary script path is not a regular file: remove "
    "whatever occupies it and retry.",
    "PROCESS_SOURCE_TOO_LARGE": "The Python source is over its size limit: write it to a "
    "file with write_file and run that file with bash.",
    "PROCESS_START_FAILED": "The command could not start (no process supervisor, or exec "
    "failed): check the program exists and retry.",
    "PROCESS_TIMEOUT": "The command ran past its timeout and was killed: raise "
    "`timeout_seconds` (up to the maximum) or make the command finish sooner; the output "
    "so far is shown.",
    "READ_FAILED": "The operating system refused the read (the message gives the reason): "
    "check permissions.",
    "SANDBOX_UNAVAILABLE": "The sandbox is on but bubblewrap cannot run here: install "
    "bubblewrap (`apt-get install bubblewrap`), allow user namespaces, or use "
    "`--sandbox auto`.",
    "TOO_MANY_PROCESS_ARGUMENTS": "Pass fewer arguments: put the rest in a file and read it "
    "from the script.",
    "WORKSPACE_ROOT_CHANGED": "The workspace directory was moved or replaced while tether "
    "ran: restart tether in the directory you mean.",
    "WORKSPACE_ROOT_NOT_DIRECTORY": "The workspace root is not a directory: start tether in "
    "a directory.",
    "WORKSPACE_ROOT_NOT_FOUND": "The workspace root does not exist: create it, or start "
    "tether in an existing directory.",
    "WRITE_FAILED": "The operating system refused the write (disk full, read-only, "
    "permissions): the message gives the reason.",
    "WRITE_PARENT_NOT_DIRECTORY": "A parent of the path is a file, not a directory: choose "
    "another path or remove that file.",
    "WRITE_TARGET_SYMLINK": "The target is a symlink, which tether never writes through: "
    "write to the file it points at.",
    "WRITE_TEMP_CLEANUP_FAILED": "tether could not remove its temporary file: delete the "
    "leftover `.pify-*` file next to the target.",
    "WRITE_TEMP_IDENTITY_CHANGED": "Something replaced tether's temporary file during the "
    "write: check what else writes there, then retry.",
    "WRITE_TEMP_NOT_REGULAR": "The temporary file path is not a regular file: remove what "
    "occupies it and retry.",
    # --- coding session -------------------------------------------------------------------
    "CODING_SESSION_NOT_FOUND": "No saved session has that id: list sessions (`/resume` "
    "with no argument) and pick one.",
    "CODING_SESSION_AMBIGUOUS": "The id prefix matches several sessions: type more of it.",
    "CODING_ENTRY_NOT_FOUND": "No entry has that id in this session: list the entries "
    "(`/tree`) and pick one.",
    "CODING_ENTRY_AMBIGUOUS": "The entry id prefix matches several entries: type more of it.",
    "CODING_NOT_STARTED": "Nothing to act on yet: send a first prompt, then retry.",
    "CODING_SESSION_FIXED": "This session was opened from one file (`--session FILE`): start "
    "tether without it to switch sessions.",
    "RPC_CLIENT_CLOSED": "`tether rpc` exited before answering: read its stderr (a config or "
    "key problem is reported there) and start it again.",
    # --- compaction -----------------------------------------------------------------------
    "CONTEXT_INVALID_INPUT": "Build the context with `build_active_context` or the "
    "`tether.agent.compaction` classes; the message names the bad field.",
    "CONTEXT_INVALID_TRANSCRIPT": "The transcript to compact is invalid: see "
    "INVALID_TRANSCRIPT and fix the message it names.",
    "CONTEXT_LIMIT_EXCEEDED": "The context is larger than its limits: use "
    "`ContextLimits.for_coding()` or compact more often.",
    "CONTEXT_INVALID_BUDGET": "Fix the compaction options: `target_units` must be below "
    "`max_units`, and both within the limits.",
    "CONTEXT_BOUNDARY_UNAVAILABLE": "No safe place to cut (one huge tool round): lower "
    "`retain_recent_messages`, or start a new session.",
    "CONTEXT_SUMMARY_INVALID": "The summarizer returned an empty or malformed summary: fix "
    "it to return non-blank text.",
    "CONTEXT_SUMMARY_INSUFFICIENT": "The summary is too large to save space: make the "
    "summarizer write shorter (raise `summary_max_units` only if it must).",
    "CONTEXT_SUMMARIZER_FAILED": "The summarizer (or its model call) failed: read the cause, "
    "fix the model or key, then `/compact` again.",
    "CONTEXT_ASYNC_VALUE_UNOBSERVABLE": "The summarizer returned an awaitable tether cannot "
    "await: make it an `async def` that returns a string.",
    "CONTEXT_CANCELLED": "The compaction was cancelled; nothing changed. Run it again when "
    "you want it.",
    # --- sessions -------------------------------------------------------------------------
    "SESSION_ALREADY_EXISTS": "A session file with that id exists: open it instead, or "
    "choose another id.",
    "SESSION_CLOSED": "The session was closed: open it again from the store.",
    "SESSION_DUPLICATE_ENTRY_ID": "The session file has two entries with one id: it was "
    "edited by hand or merged; restore it from a backup.",
    "SESSION_ENTRY_NOT_FOUND": "No entry has that id: list the session's entries and pick an "
    "existing one.",
    "SESSION_FILE_CHANGED": "Another program changed the session file: reopen the session "
    "(and close the other writer).",
    "SESSION_FILE_TOO_LARGE": "The session file is over the size limit: start a new "
    "session (compaction keeps new ones smaller).",
    "SESSION_INVALID_HEADER": "The file is not a tether session (bad first line): check you "
    "opened the right file.",
    "SESSION_INVALID_JSON": "A line of the session file is not JSON (often a cut-off last "
    "line after a crash): remove that line.",
    "SESSION_INVALID_MESSAGE": "A message in the session file is invalid: the message names "
    "the line; remove it or restore a backup.",
    "SESSION_INVALID_RECORD": "A record in the session file is malformed: the message names "
    "the line; remove it or restore a backup.",
    "SESSION_INVALID_TOOL_LINKAGE": "A tool result in the session file answers no call: the "
    "file was edited; restore it or drop the line named.",
    "SESSION_INVALID_UTF8": "The session file is not UTF-8: restore it from a backup.",
    "SESSION_IN_USE": "Another tether process has this session open: close it, or open "
    "another session.",
    "SESSION_LINE_TOO_LARGE": "A session line is over the limit: the file was not written "
    "by tether; restore it.",
    "SESSION_PARENT_NOT_FOUND": "An entry names a parent the file lacks: the file was "
    "truncated or edited; restore it.",
    "SESSION_RECORD_LIMIT": "The session holds the maximum number of records: start a new session.",
    "SESSION_ROOT_CHANGED": "The session directory was moved or replaced: restart with the "
    "directory you mean (`--session-dir`).",
    "SESSION_UNSUPPORTED_VERSION": "The session was written by a newer tether: upgrade tether "
    "to open it.",
    "SESSION_WRITE_FAILED": "The session file could not be written: free disk space or fix "
    "the directory's permissions.",
    # --- resources, skills, extensions ----------------------------------------------------
    "RESOURCE_INVALID_ROOTS": "Give the ResourceLoader a list of existing directories.",
    "DUPLICATE_RESOURCE_ROOT_ID": "Two resource roots share an id: give each its own.",
    "RESOURCE_OUTSIDE_TRUSTED_ROOTS": "The file (or a symlink in its path) is outside the "
    "trusted roots: move it inside one, or add its directory as a root.",
    "RESOURCE_ROOT_CHANGED": "A resource root was moved or replaced while in use: restart "
    "with the directory in place.",
    "RESOURCE_NOT_FILE": "The resource path is not a regular file: point at the file itself.",
    "RESOURCE_TOO_LARGE": "The resource file is over its size limit: make it smaller or split it.",
    "RESOURCE_INVALID_UTF8": "Save the resource file as UTF-8.",
    "RESOURCE_IO_FAILED": "The file could not be read (permissions, I/O error): the message "
    "gives the reason.",
    "SKILL_MISSING_FRONT_MATTER": "Start SKILL.md with a `---` front matter block holding "
    "`name:` and `description:`.",
    "SKILL_INVALID_NAME": "Use a skill name of lowercase letters, digits and hyphens.",
    "SKILL_NAME_MISMATCH": "Make the front matter `name:` equal to the skill's directory name.",
    "SKILL_INVALID_DESCRIPTION": "Give the skill a non-empty `description:` within the "
    "length limit the message gives.",
    "TEMPLATE_INVALID_NAME": "Name the prompt template file with lowercase letters, digits "
    "and hyphens (`fix-tests.md`).",
    "TEMPLATE_INVALID_DESCRIPTION": "Give the template a non-empty `description:` in its "
    "front matter, within the length limit.",
    "SKILL_NOT_FOUND": "No skill has that name: list the skills and check the spelling.",
    "SKILL_UNAVAILABLE": "The skill failed to load (see its problem code): fix its SKILL.md.",
    "EXTENSION_INVALID_OPTIONS": "Fix the ExtensionHost options (a ResourceLoader, tools as "
    "a list, a positive `timeout` or None) or the `extension_timeout` setting.",
    "INVALID_EXTENSION_DEFINITION": "The extension must provide an `id` and a `create()` "
    "whose instance has an `activate(context)` function; fix the part the message names.",
    "DUPLICATE_EXTENSION_ID": "Two extensions share an id: remove one from `extensions = "
    "[...]` or uninstall the duplicate package.",
    "EXTENSION_NOT_FOUND": "No installed extension has that name: install its package, or "
    "fix the name in `extensions = [...]`.",
    "EXTENSION_ALREADY_ACTIVE": "The extension is already active: nothing to do.",
    "EXTENSION_ACTIVATION_FAILED": "The extension raised while activating (the cause is "
    "attached): fix or update the extension; nothing it staged was kept.",
    "EXTENSION_ACTIVATION_ROLLBACK_FAILED": "Activation failed and so did a cleanup: fix "
    "the extension; a resource it holds may be left over.",
    "EXTENSION_CANCELLED": "The activation was cancelled (shutdown or your signal); nothing "
    "was kept. Activate again if needed.",
    "EXTENSION_HOST_DISPOSED": "The host was disposed: create a new runtime to use "
    "extensions again.",
    "EXTENSION_REENTRANT_OPERATION": "An extension callback called the host back: move that "
    "call out of the callback (schedule it after activation).",
    "EXTENSION_DISPOSAL_FAILED": "One or more extension cleanups failed (each is attached): "
    "fix the extension's disposers.",
    "INVALID_AGENT_EVENT": "Emit only tether's agent events (`tether.protocol.AgentEvent`).",
    "EXTENSION_LOAD_FAILED": "The extension's package could not be imported: reinstall it "
    "(`pip install ...`) and check its entry point.",
    "EXTENSION_TIMED_OUT": "The extension took longer than its timeout: fix it, or raise "
    "`extension_timeout` in config.toml.",
    # --- runtime --------------------------------------------------------------------------
    "RUNTIME_INVALID_OPTIONS": "Fix the runtime options the message names (workspace "
    "directory, session store, model).",
    "RUNTIME_CONSTRUCTION_FAILED": "Building the runtime failed (the cause is attached): fix "
    "that cause (model, extension, session) and start again.",
    "RUNTIME_ROOT_CHANGED": "The workspace was moved or replaced: restart in the directory "
    "you mean.",
    "RUNTIME_EVENT_FAILED": "Forwarding an agent event failed (an extension hook): see the "
    "attached cause and fix the extension.",
    "RUNTIME_SESSION_DIVERGED": "The session on disk no longer matches the running agent: "
    "reopen the session.",
    "RUNTIME_REENTRANT_OPERATION": "A runtime callback called the runtime back: move that "
    "call out of the callback.",
    "RUNTIME_DISPOSED": "The runtime was disposed: create a new one.",
    "RUNTIME_DISPOSAL_FAILED": "Some cleanups failed while disposing (each is attached): fix "
    "the extension or resource named.",
    "RUNTIME_SESSION_ROLLBACK_FAILED": "A failed start could not undo its new session file: "
    "delete the empty session file the message names.",
    "RUNTIME_REPLACEMENT_CLEANUP_FAILED": "The old runtime did not clean up after a switch: "
    "the new one works; fix the extension that failed.",
    "RUNTIME_SESSION_IN_USE": "Another tether process uses this session: close it or open "
    "another session.",
    # --- evals ----------------------------------------------------------------------------
    "EVALUATION_INVALID_OPTIONS": "Fix the evaluation options the message names (tasks, "
    "trials, timeouts, concurrency).",
    "EVALUATION_CANCELLED": "The evaluation was cancelled; rerun it to get a report.",
    "EVALUATION_WORKSPACE_FAILED": "A trial's temporary workspace could not be made: check "
    "disk space and the temp directory.",
    "EVALUATION_RUNTIME_FACTORY_FAILED": "Your runtime factory raised: fix it (the cause is "
    "attached).",
    "EVALUATION_RUNTIME_FAILED": "The trial's runtime (or the Ray executor) failed: see the "
    "cause; for Ray check the cluster is up.",
    "EVALUATION_JUDGE_FAILED": "The judge raised: fix the judge function (the cause is attached).",
    "EVALUATION_CLOCK_FAILED": "The clock you passed failed or went backwards: pass a "
    "monotonic clock.",
    "EVALUATION_CLEANUP_FAILED": "A trial's cleanup failed: remove its leftover workspace "
    "and fix the cleanup.",
    "EVALUATION_CLEANUP_TIMEOUT": "A trial's cleanup did not finish in time: look for a "
    "process still running in its workspace.",
    "EVALUATION_INVALID_REPORT": "The report file is not a tether evaluation report: "
    "regenerate it with `tether eval`.",
    "MODEL_JUDGE_INVALID_ANSWER": "The judge model did not answer in the expected form: use a "
    "stronger judge model or a clearer rubric.",
    "MODEL_JUDGE_RUN_FAILED": "The judge model's run failed (its code is in the message): "
    "fix that (key, network), then rerun.",
    # --- cli and rpc ----------------------------------------------------------------------
    "CLI_CONFIG_INVALID": "Fix config.toml where the message points (a misspelt key, a "
    "wrong type); keys are never read from the file, only variable names.",
    "CLI_CONFIG_UNREADABLE": "config.toml could not be read: check it is a regular UTF-8 file "
    "you can read (or set `TETHER_CONFIG` to another path).",
    "CLI_NO_MODEL": "Choose a model: `--model PROVIDER/MODEL`, or `default_model` in "
    "config.toml (`tether models` lists them).",
    "CLI_INVALID_MODEL_SPEC": "Write the model as `PROVIDER/MODEL`, e.g. `openai/gpt-4o-mini`.",
    "CLI_UNKNOWN_PROVIDER": "Use a catalog provider (`tether models`) or add "
    "`[providers.NAME]` with a `base_url` to config.toml.",
    "CLI_MISSING_API_KEY": "Export the provider's key variable (e.g. `OPENAI_API_KEY`, "
    "`ANTHROPIC_API_KEY`, or the `api_key_env` you configured) and run again.",
    "CLI_SERVER_UNREACHABLE": "The model's server did not answer: check `--base-url` / "
    "`base_url`, that the server runs, and your network.",
    "CLI_AUTH_FAILED": "The server refused the key: check the key variable holds a valid "
    "key for this provider.",
    "CLI_RATE_LIMITED": "Wait a little and run again, or use a key with a higher limit.",
    "CLI_CONTEXT_OVERFLOW": "The conversation is too long for the model: `/compact`, start a "
    "new session, or set `context_window` for the model in config.toml.",
    "CLI_EXTENSION_UNAVAILABLE": "An extension in `extensions = [...]` is not installed or "
    "failed to load: install it or remove it from config.toml.",
    "CLI_SANDBOX_UNAVAILABLE": "`--sandbox on` needs bubblewrap: install it, or use "
    "`--sandbox auto` / `off`.",
    "CLI_EXPORT_FAILED": "The export file could not be written: choose a writable path.",
    "CLI_EVAL_TASKS_INVALID": "The tasks file is not valid JSON or not valid tasks: fix it "
    "where the message points.",
    "CLI_EVAL_TASKS_UNREADABLE": "The tasks file could not be read: check the path and "
    "permissions.",
    "CLI_EVAL_BASELINE_UNREADABLE": "The `--compare` report could not be read: check the "
    "path (a regular file of at most 64 MiB), or run without `--compare`.",
    "CLI_EVAL_WRITE_FAILED": "The report could not be written: choose a writable output path.",
    "CLI_EVAL_RAY_MISSING": "Install the Ray extra (`pip install 'tether[ray]'`) or run "
    "without `--executor ray`.",
    "CLI_EVAL_RAY_FAILED": "Ray could not start, or the `--ray-address` cluster could not be "
    "joined: check `ray status`, or run without `--executor ray`.",
    "RPC_INVALID_JSON": "Send one JSON object per line on stdin (no pretty-printing across lines).",
    "RPC_INVALID_REQUEST": "The command lacks a field or has a wrong type: compare it with "
    "the rpc protocol (the message names the field).",
    "RPC_UNKNOWN_COMMAND": "Use one of the rpc commands (`prompt`, `steer`, `follow_up`, "
    "`abort`, `get_state`, ...; `COMMANDS` in `tether.cli.rpc`): check the spelling of "
    "`type`.",
    "RPC_NO_SUCH_APPROVAL": "Answer only approval requests that are still pending (use the "
    "`id` of the latest `approval_request`).",
}
"""What to do about each code, for the person who sees it (one line each)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Layer:
    """One section of the file: where the codes come from and which are listed there."""

    module: str
    alias: str | None
    codes: tuple[str, ...]
    shared: tuple[str, ...]


def _public(module: str) -> str:
    """The module path without its private segments (``tether.agent.agent._errors``)."""
    parts = module.split(".")
    while parts and parts[-1].startswith("_") and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _module_of(path: Path) -> str:
    parts = list(path.with_suffix("").relative_to(SOURCE.parent).parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _codes_of(value: object, aliases: dict[str, tuple[str, ...]]) -> list[str]:
    if isinstance(value, str):  # a string alias: a union of other aliases' names
        return [code for name in value.split("|") for code in aliases[name.strip()]]
    origin = typing.get_origin(value)
    if origin is typing.Literal:
        codes: list[str] = []
        for arg in typing.get_args(value):
            codes.extend([arg] if isinstance(arg, str) else _codes_of(arg, aliases))
        return codes
    if origin in (typing.Union, types.UnionType):
        return [code for arg in typing.get_args(value) for code in _codes_of(arg, aliases)]
    raise TypeError(f"not a Literal of codes: {value!r}")


def gather() -> list[Layer]:
    """Every layer's codes, in source order; each code in the first layer that lists it."""
    sys.path.insert(0, str(SOURCE.parent))
    aliases: dict[str, tuple[str, ...]] = {}
    found: list[tuple[str, str, tuple[str, ...]]] = []
    raised: dict[str, list[str]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        module = _module_of(path)
        for node in ast.parse(text).body:
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            name = node.target.id
            if not name.endswith("Code") or name.startswith("_"):
                continue
            value = getattr(importlib.import_module(module), name)
            codes = tuple(dict.fromkeys(_codes_of(value, aliases)))
            aliases[name] = codes
            found.append((module, name, codes))
        for match in _RAISED.finditer(text):
            raised.setdefault(_public(module), []).append(match.group(1))
    layers: list[Layer] = []
    seen: set[str] = set()
    for module, name, codes in found:
        new = tuple(code for code in codes if code not in seen)
        shared = tuple(code for code in codes if code in seen)
        seen.update(new)
        layers.append(Layer(module=_public(module), alias=name, codes=new, shared=shared))
    for module in sorted(raised):
        new = tuple(dict.fromkeys(code for code in raised[module] if code not in seen))
        seen.update(new)
        if new:
            layers.append(Layer(module=module, alias=None, codes=new, shared=()))
    return layers


def problems(layers: list[Layer]) -> list[str]:
    """Codes without advice and advice without a code."""
    codes = {code for layer in layers for code in layer.codes}
    missing = [f"{code}: no row in ADVICE" for code in sorted(codes - ADVICE.keys())]
    stale = [
        f"{code}: ADVICE row for a code that no longer exists"
        for code in sorted(ADVICE.keys() - codes)
    ]
    return missing + stale


def render(layers: list[Layer]) -> str:
    lines = [
        "# Error codes",
        "",
        "Every stable error code tether reports, by the layer (module) that defines it, with what",
        "to do about it. A code is stable: match on it (`error.code`, a result's",
        "`error.code`, a tool result's `error_code`), never on the message.",
        "",
        "This file is generated by `scripts/generate_error_codes.py` from the code `Literal`",
        "aliases and the errors in `src/tether`; `tests/project/test_error_codes.py` fails when a",
        "code has no row or the file is stale. Edit the advice in the script, then run it.",
        "",
    ]
    for layer in layers:
        title = f"`{layer.module}`" + (f" — `{layer.alias}`" if layer.alias else "")
        lines += [f"## {title}", ""]
        if layer.shared:
            listed = ", ".join(f"`{code}`" for code in layer.shared)
            lines += [f"Also: {listed} (listed in an earlier section).", ""]
        if not layer.codes:
            continue
        lines += ["| Code | What to do |", "| --- | --- |"]
        lines += [f"| `{code}` | {ADVICE[code]} |" for code in layer.codes]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    layers = gather()
    errors = problems(layers)
    if errors:
        print("scripts/generate_error_codes.py: " + "; ".join(errors), file=sys.stderr)
        return 1
    text = render(layers)
    if "--check" in sys.argv:
        if OUTPUT.read_text(encoding="utf-8") != text:
            print(
                "docs/ERROR_CODES.md is stale: run scripts/generate_error_codes.py", file=sys.stderr
            )
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
