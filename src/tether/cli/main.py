"""The ``tether`` command.

``tether run`` runs the agent and shows the run as it happens: streamed text, each tool call
and its result, the final status and token usage. With no options it replays the bundled
round-trip fixture ("What is 20 + 22?") with a built-in ``add`` tool: no key, no network.
``--model PROVIDER/MODEL`` (with ``-p/--prompt``) runs a real model instead, ``--tools
coding`` gives it the coding tools confined to the current directory (see
``tether.cli.run``). ``--json`` prints one camelCase JSON event per line instead, always as
valid UTF-8. Ctrl-C cancels the run; a second Ctrl-C quits at once. How output is written,
and why it never fails on text it cannot encode, is in ``tether.cli.render``.

``tether run --model ... -p TEXT`` (print mode; ``-p -`` or a piped stdin: the prompt from
standard input), ``tether chat`` and ``tether rpc`` are adapters over one coding session
(``tether.coding``). ``tether rpc`` drives it over JSON lines on stdin and stdout (the
protocol is ``docs/rpc.md``, its code ``tether.cli.rpc``). ``tether models`` lists the
providers, their key variables and whether they are set, and the config file's settings
(``tether.cli.models``; the config file is described in ``tether.cli.config``). ``tether
trace`` prints the checkpoint-00 trace as JSON lines. ``tether eval TASKS`` runs an
evaluation suite and prints its summary; its exit statuses are its own (0 ran, 1
``--compare`` found a regression, 2 a problem to fix; see ``tether.cli.eval``). ``tether mcp
list`` starts the config file's MCP servers, lists their state and tools, and stops them
(``tether.cli.mcp``).

Model selection is shared by ``run`` and ``rpc``: ``--model PROVIDER/MODEL`` (a catalog
preset or a ``[providers.NAME]`` of the config file; ``rpc`` falls back to the config's
``default_model``) and ``--base-url URL``. Errors a person can act on are one line on stderr,
``tether COMMAND: [CODE] message``, with a stable code and exit status 2.

Exit status (``tether.cli.exit_codes``; also listed by every ``--help``):

* 0 completed: the run completed (``tether models`` and ``tether trace``: the output was
  written; ``tether rpc``: standard input ended and the running prompt settled);
* 1 failed: the run failed;
* 2 usage error, or a setup a person must fix: a bad option, an invalid config file
  (``CLI_CONFIG_...``), an unknown provider, a missing API key, a fixture that could not be
  loaded (a ``PROVIDER_...`` code on stderr), or a model run that failed because the server
  was unreachable, refused the key (401/403), rate limited it, or found the conversation too
  long for its context (``CLI_...`` code and advice on stderr);
* 3 max steps: the run stopped after ``--max-steps`` model steps;
* 4 output failed: stdout was closed, full or otherwise unwritable (one line on stderr says
  why; nothing when the reader of a pipe went away, as with ``tether run --json | head -1``);
* 130 interrupted: Ctrl-C (the run was cancelled).

This module imports only what parsing needs; each command imports its own modules, so
``tether --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, NoReturn

from tether.cli.arguments import non_empty_path, non_empty_text, url
from tether.cli.exit_codes import (
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_MAX_STEPS,
    EXIT_OK,
    EXIT_OUTPUT_FAILED,
    EXIT_STATUS,
    EXIT_USAGE,
)
from tether.cli.render import Output, OutputError, json_line, warn

if TYPE_CHECKING:
    from tether.cli.config import CliConfig
    from tether.cli.models import ModelChoice

__all__ = [
    "DEFAULT_PROMPT",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_MAX_STEPS",
    "EXIT_OK",
    "EXIT_OUTPUT_FAILED",
    "EXIT_STATUS",
    "EXIT_USAGE",
    "main",
    "stdin_prompt",
]

DEFAULT_PROMPT: Final = "What is 20 + 22?"
"""The user message of a fixture run without ``--prompt``."""

FIXTURE_MAX_STEPS: Final = 64
"""``--max-steps`` ceiling of a fixture run (``tether.MAX_AGENT_STEPS``)."""
MODEL_MAX_STEPS: Final = 1024
"""``--max-steps`` ceiling with ``--model`` (``RunLimits.for_real_models().max_steps``)."""


MODEL_HELP: Final = """\
model selection:
  --model PROVIDER/MODEL picks a catalog preset (openai/gpt-4o-mini, anthropic/...,
  ollama/...) or a [providers.NAME] of the config file ($TETHER_CONFIG, else
  $XDG_CONFIG_HOME/tether/config.toml, else ~/.config/tether/config.toml); `tether models`
  lists every provider, its API key variable and whether it is set (never its value).
"""


def _print_trace(out: Output) -> int:
    from tether.trace import run_prologue

    prologue = run_prologue()
    for record in prologue.events:
        out.write(json_line(record.to_json()))
    out.write(json_line(prologue.result.to_json()))
    return 0


def _steps(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= value <= MODEL_MAX_STEPS:
        raise argparse.ArgumentTypeError(
            f"must be between 1 and {FIXTURE_MAX_STEPS} (up to {MODEL_MAX_STEPS} with --model)"
        )
    return value


def _fixture_path(text: str) -> Path:
    return non_empty_path(text, hint=" (omit it to use the bundled fixture)")


def _model_options(parser: argparse.ArgumentParser, *, tools: bool = True) -> None:
    parser.add_argument(
        "--model", metavar="PROVIDER/MODEL", help="the model, e.g. openai/gpt-4o-mini"
    )
    parser.add_argument(
        "--base-url", type=url, metavar="URL", help="send the provider's requests to URL"
    )
    if tools:
        parser.add_argument(
            "--tools",
            choices=["coding"],
            help="coding: read/write/edit files, grep, bash, python, confined to the cwd",
        )
        parser.add_argument(
            "--system",
            type=non_empty_text,
            metavar="TEXT",
            help="replace the system prompt's introduction (its first paragraph)",
        )
    from tether.providers.thinking import THINKING_LEVELS

    parser.add_argument(
        "--thinking",
        choices=THINKING_LEVELS,
        metavar="LEVEL",
        help=(
            "how much the model reasons: off, minimal, low, medium or high (clamped to what "
            "the model takes; beats the config's thinking)"
        ),
    )
    _sandbox_option(parser)


def _sandbox_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sandbox",
        choices=["auto", "on", "off"],
        help=(
            "run bash and python_process in bubblewrap (workspace writable, no network, "
            "credentials hidden); auto: where it works; default: the config's [tools] "
            "sandbox, else off"
        ),
    )


class _Version(argparse.Action):
    """``--version``: prints ``tether VERSION`` (the installed distribution's) and exits 0.
    The version is looked up only when asked for (``importlib.metadata`` is not light)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import version

        sys.stdout.write(f"tether {version('tether')}\n")
        parser.exit(0)


_CHAT_SLASH_HELP: Final = "\0chat-slash-commands\0"
_CHAT_EXIT_HELP: Final = "\0chat-exit-statuses\0"
_RPC_SLASH_COMMANDS: Final = "\0rpc-slash-commands\0"


def _slash_help(text: str) -> str:
    """``text`` with the slash commands' parts of the help filled in from their table
    (``tether.cli.slash_commands``, loaded only when help is written)."""
    if "\0" not in text:
        return text
    from tether.cli.slash_commands import (
        CHAT_EXIT_HELP,
        COMMANDS_HELP,
        KEYS_HELP,
        rpc_commands,
    )

    parts = {
        _CHAT_SLASH_HELP: COMMANDS_HELP + "\n" + KEYS_HELP,
        _CHAT_EXIT_HELP: CHAT_EXIT_HELP,
        _RPC_SLASH_COMMANDS: ", ".join(command.name for command in rpc_commands()),
    }
    for marker, part in parts.items():
        text = text.replace(marker, part)
    return text


class _SlashHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The help of ``tether chat`` and ``tether rpc``: their slash commands written from the
    table when the help is (``tether --help`` never loads it)."""

    def add_text(self, text: str | None) -> None:
        super().add_text(None if text is None else _slash_help(text))


def _command_named(argv: Sequence[str]) -> str:
    """The command ``argv`` names: its first word that is not an option (the top-level
    parser's only options, ``--help`` and ``--version``, take no value); ``""`` for none."""
    return next((word for word in argv if not word.startswith("-")), "")


def _parser(
    argv: Sequence[str] | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The ``tether`` parser and the ``run``, ``rpc`` and ``models`` parsers (for their
    errors). Every command is listed with its help, but given ``argv`` only the command it
    names gets its arguments (``None``: every command): their choices load modules
    (``--thinking``'s levels are ``tether.providers.thinking``'s, which loads the dataclass
    machinery), so ``tether --help`` adds none and ``tether chat`` only its own."""
    named = None if argv is None else _command_named(argv)

    def wanted(command: str) -> bool:
        return named is None or named == command

    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="tether",
        description="The tether agent runtime.",
        epilog=MODEL_HELP + "\n" + EXIT_CODES_HELP,
        formatter_class=formatter,
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="run the agent: the bundled fixture (offline), or a real model with --model",
        description=(
            "Run the agent and show the run. Without --model: a provider fixture with a\n"
            "built-in add tool (offline). With --model (print mode): one prompt to a real\n"
            "model through the same coding session as tether chat: the same system prompt\n"
            "(an introduction, the tools, the date, the directory, AGENTS.md/CLAUDE.md, the\n"
            "skills), its tool calls never asked about. The prompt is -p TEXT; with -p -, or\n"
            "without -p while stdin is a pipe or a file, it is read from stdin. --json writes\n"
            "the run's events, the same ones tether rpc sends. --session PATH continues that\n"
            "session file (created if missing); without it nothing is kept."
        ),
        epilog=MODEL_HELP + "\n" + EXIT_CODES_HELP,
        formatter_class=formatter,
    )
    if wanted("run"):
        _run_arguments(run)
    rpc = commands.add_parser(
        "rpc",
        help="drive one agent with JSON lines over stdin/stdout",
        description=(
            "Drive tether chat's coding session with JSON-lines commands on stdin;\n"
            "responses, run events, approval requests and advice are JSON lines on stdout\n"
            "(protocol version 2, documented in docs/rpc.md). Commands: prompt, steer,\n"
            "follow_up, abort, approve, get_state, get_messages, get_system_prompt,\n"
            "set_model, new_session, list_sessions, resume, get_tree, move_to, set_cwd,\n"
            "set_thinking, compact, command (tether chat's slash commands that need no terminal:\n"
            + _RPC_SLASH_COMMANDS
            + ").\nSessions are kept (a new one at start, or -r ID); write_file, edit_file,\n"
            "bash and python_process calls wait for the client's approve unless\n"
            "--auto-approve. Without --model, the config's default_model."
        ),
        epilog=MODEL_HELP + "\n" + EXIT_CODES_HELP,
        formatter_class=_SlashHelpFormatter,
    )
    if wanted("rpc"):
        _rpc_arguments(rpc)
    models = commands.add_parser(
        "models",
        help="list the providers and their key variables, or a provider's models",
        description=(
            "Without PROVIDER: list the catalog presets and the config file's providers (base\n"
            "URL, the API key variable and whether it is set, never its value), model\n"
            "settings and the default model. With PROVIDER: list the models its server\n"
            "offers (GET /models; the key, if the provider needs one, must be set)."
        ),
        epilog=MODEL_HELP + "\n" + EXIT_CODES_HELP,
        formatter_class=formatter,
    )
    if wanted("models"):
        models.add_argument(
            "provider", nargs="?", metavar="PROVIDER", help="list this provider's models"
        )
        models.add_argument(
            "--base-url", type=url, metavar="URL", help="ask the server at URL instead"
        )
        models.add_argument("--json", action="store_true", help="one JSON object per line")
    chat = commands.add_parser(
        "chat",
        help="the interactive coding agent in the current directory",
        description=(
            "Chat with a coding agent in the current directory: the coding tools, the\n"
            "context files (AGENTS.md/CLAUDE.md), the skills and prompt templates, the\n"
            "extensions of the config file. Every message is kept in a session file\n"
            "(<data dir>/tether/sessions/); -c and -r continue one. Tool calls that change\n"
            "files or run commands are asked about first (unless --auto-approve)."
        ),
        epilog=_CHAT_SLASH_HELP + "\n" + MODEL_HELP + "\n" + _CHAT_EXIT_HELP,
        formatter_class=_SlashHelpFormatter,
    )
    if wanted("chat"):
        _chat_arguments(chat)
    commands.add_parser(
        "trace",
        help="print the checkpoint-00 agent trace as JSON lines",
        description="Print the checkpoint-00 agent trace (a scripted run) as JSON lines.",
        epilog=EXIT_CODES_HELP,
        formatter_class=formatter,
    )
    from tether.cli.eval import add_parser as add_eval_parser
    from tether.cli.mcp import add_parser as add_mcp_parser

    add_eval_parser(commands)
    add_mcp_parser(commands)
    return parser, {"run": run, "rpc": rpc, "models": models}


def _run_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--fixture", type=_fixture_path, metavar="PATH", help="provider fixture (default: bundled)"
    )
    run.add_argument(
        "-p",
        "--prompt",
        metavar="TEXT",
        help=f"the user message; - reads it from stdin (fixture: {DEFAULT_PROMPT!r})",
    )
    run.add_argument(
        "--max-steps",
        type=_steps,
        metavar="N",
        help=f"model steps allowed (fixture: 1-{FIXTURE_MAX_STEPS}, default 8; "
        f"--model: 1-{MODEL_MAX_STEPS}, default 64)",
    )
    run.add_argument("--json", action="store_true", help="one camelCase JSON event per line")
    run.add_argument(
        "--session",
        type=non_empty_text,
        metavar="PATH",
        help="continue this session file and record the run into it (created if missing)",
    )
    _model_options(run)


def _rpc_arguments(rpc: argparse.ArgumentParser) -> None:
    _model_options(rpc)
    rpc.add_argument(
        "--max-steps",
        type=_steps,
        default=64,
        metavar="N",
        help=f"model steps per prompt (1-{MODEL_MAX_STEPS}, default 64)",
    )
    rpc.add_argument(
        "--auto-approve",
        action="store_true",
        help="run every tool call without an approval_request to the client",
    )
    rpc.add_argument(
        "--session-dir",
        type=non_empty_text,
        metavar="DIR",
        help="where sessions are kept (default: tether chat's, <data dir>/tether/sessions)",
    )
    rpc.add_argument(
        "-r", "--resume", metavar="ID", help="resume the session ID (or a unique prefix)"
    )


def _chat_arguments(chat: argparse.ArgumentParser) -> None:
    _model_options(chat, tools=False)
    chat.add_argument(
        "--system", type=non_empty_text, metavar="TEXT", help="replace the introduction"
    )
    chat.add_argument("--auto-approve", action="store_true", help="never ask before tools run")
    where = chat.add_mutually_exclusive_group()
    where.add_argument(
        "-c",
        "--continue",
        dest="continue_last",
        action="store_true",
        help="continue the last session of this directory",
    )
    where.add_argument(
        "-r",
        "--resume",
        metavar="ID",
        nargs="?",
        const="",
        help="resume the session ID (or prefix); without ID, pick one from a list",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tether`` console script; returns the process exit status."""
    try:
        words = sys.argv[1:] if argv is None else argv
        parser, commands = _parser(words)
        args = parser.parse_args(words)
        command: str = args.command
        if command == "trace":
            return _writing("trace", lambda: _print_trace(Output.for_json(sys.stdout)))
        if command == "run":
            return _run(args, commands["run"])
        if command == "rpc":
            return _rpc(args)
        if command == "models":
            return _models(args, commands["models"])
        if command == "chat":
            return _chat(args)
        if command == "eval":
            from tether.cli.eval import main as eval_main

            return eval_main(args)
        if command == "mcp":
            from tether.cli.mcp import main as mcp_main

            return _writing("mcp", lambda: mcp_main(args))
    except KeyboardInterrupt:  # Ctrl-C before a command installed its own handler
        return EXIT_INTERRUPTED
    raise AssertionError(f"unhandled command {command!r}")  # pragma: no cover


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import asyncio

    make = Output.for_json if args.json else Output.for_people
    if args.model is None:
        for option, value in (
            ("--base-url", args.base_url),
            ("--tools", args.tools),
            ("--system", args.system),
            ("--session", args.session),
        ):
            if value is not None:
                _usage(parser, f"{option} needs --model (without it, the fixture runs offline)")
        if args.max_steps is None:
            args.max_steps = 8
        elif args.max_steps > FIXTURE_MAX_STEPS:
            _usage(
                parser,
                f"argument --max-steps: must be between 1 and {FIXTURE_MAX_STEPS} without --model",
            )
        if args.prompt is None:
            args.prompt = DEFAULT_PROMPT
        from tether.cli.run import FixtureOptions, run_command

        fixture = FixtureOptions(
            fixture=args.fixture, prompt=args.prompt, max_steps=args.max_steps, json=args.json
        )
        return _writing("run", lambda: asyncio.run(run_command(fixture, make(sys.stdout))))
    if args.fixture is not None:
        _usage(parser, "--fixture and --model are exclusive (a fixture replays a model)")
    prompt = _print_prompt(args.prompt, parser)
    if args.max_steps is None:
        args.max_steps = 64
    chosen = _choose_with_config(args, "run")
    if chosen is None:
        return EXIT_USAGE
    choice, config = chosen
    from tether.cli.run import PrintOptions, run_model_command

    options = PrintOptions(
        prompt=prompt,
        json=args.json,
        tools="coding" if args.tools == "coding" else "none",
        introduction=args.system,
        max_steps=args.max_steps,
        session=None if args.session is None else Path(args.session),
    )
    return _writing(
        "run", lambda: asyncio.run(run_model_command(options, choice, config, make(sys.stdout)))
    )


MAX_STDIN_PROMPT_BYTES: Final = 16 << 20
"""The longest prompt read from standard input (``-p -``, or a pipe without ``-p``)."""


def _print_prompt(given: str | None, parser: argparse.ArgumentParser) -> str:
    """The prompt of a print run: ``-p TEXT``; with ``-p -``, or no ``-p`` while standard
    input is not a terminal, standard input read to its end (UTF-8, bad bytes replaced, the
    final newline dropped), as ``pi -p`` and ``claude -p`` do."""
    if given is not None and given != "-":
        return given
    stream = sys.stdin
    if stream is None or (given is None and stream.isatty()):
        _usage(parser, "--model needs -p/--prompt TEXT (or the prompt on standard input)")
    data = stream.buffer.read(MAX_STDIN_PROMPT_BYTES + 1)
    if len(data) > MAX_STDIN_PROMPT_BYTES:
        _usage(parser, f"the prompt on standard input is over {MAX_STDIN_PROMPT_BYTES} bytes")
    text = stdin_prompt(data)
    if text is None:
        _usage(parser, "--model needs -p/--prompt TEXT (standard input was empty)")
    return text


def stdin_prompt(data: bytes) -> str | None:
    """The prompt ``data`` (standard input's bytes) holds: UTF-8 with bad bytes replaced,
    one final newline (``\\n`` or ``\\r\\n``) dropped; ``None`` when only whitespace is left."""
    text = data.decode("utf-8", errors="replace")
    if text.endswith("\n"):  # one final LF or CRLF, not a lone CR
        text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return text if text.strip() else None


def _rpc(args: argparse.Namespace) -> int:
    import asyncio

    chosen = _choose_with_config(args, "rpc")
    if chosen is None:
        return EXIT_USAGE
    choice, config = chosen
    from tether.cli.chat import chat_data_dir
    from tether.cli.rpc import RpcOptions, rpc_command

    options = RpcOptions(
        tools="coding" if args.tools == "coding" else "none",
        introduction=args.system,
        max_steps=args.max_steps,
        auto_approve=args.auto_approve,
        sessions_dir=(
            chat_data_dir() / "sessions" if args.session_dir is None else Path(args.session_dir)
        ),
        resume=args.resume,
        thinking=args.thinking,
    )
    return _writing(
        "rpc",
        lambda: asyncio.run(rpc_command(options, choice, config, Output.for_json(sys.stdout))),
    )


def _models(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from tether.cli.config import CliError, load_config
    from tether.cli.models import models_command

    try:
        config = load_config()
    except CliError as error:
        warn(f"tether models: [{error.code}] {error}")
        return EXIT_USAGE
    make = Output.for_json if args.json else Output.for_people
    if args.provider is None:
        if args.base_url is not None:
            _usage(parser, "--base-url needs a PROVIDER")
        return _writing(
            "models", lambda: models_command(config, make(sys.stdout), as_json=args.json)
        )
    return _remote_models(args, config, make(sys.stdout))


def _remote_models(args: argparse.Namespace, config: CliConfig, out: Output) -> int:
    """``tether models PROVIDER``: the provider's model list (``remote_models_command``)."""
    import asyncio

    from tether.cli.config import CliError
    from tether.cli.models import LISTING_MODEL, choose_model, remote_models_command

    spec = f"{args.provider}/{LISTING_MODEL}"
    try:
        choice = choose_model(spec, base_url=args.base_url, config=config)
    except CliError as error:
        warn(f"tether models: [{error.code}] {error}")
        return EXIT_USAGE
    return _writing(
        "models", lambda: asyncio.run(remote_models_command(choice, out, as_json=args.json))
    )


def _chat(args: argparse.Namespace) -> int:
    import asyncio

    chosen = _choose_with_config(args, "chat")  # the config file read once
    if chosen is None:
        return EXIT_USAGE
    choice, config = chosen
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        warn("tether chat: [CLI_NOT_A_TERMINAL] needs a terminal (use tether run -p or tether rpc)")
        return EXIT_USAGE
    from tether.cli.chat import ChatOptions, chat_command

    options = ChatOptions(
        introduction=args.system,
        auto_approve=args.auto_approve,
        resume=args.resume,
        continue_last=args.continue_last,
    )
    return _writing("chat", lambda: asyncio.run(chat_command(options, choice, config)))


def _choose_with_config(
    args: argparse.Namespace, command: str
) -> tuple[ModelChoice, CliConfig] | None:
    """The model ``args`` select and the config file it was chosen with; ``None`` after one
    line on stderr."""
    from tether.cli.config import CliError, load_config, with_thinking_flag
    from tether.cli.models import choose_model

    try:
        config = with_thinking_flag(
            _sandboxed(args, load_config(), command), getattr(args, "thinking", None)
        )
        return choose_model(args.model, base_url=args.base_url, config=config), config
    except CliError as error:
        warn(f"tether {command}: [{error.code}] {error}")
        return None


def _sandboxed(args: argparse.Namespace, config: CliConfig, command: str) -> CliConfig:
    """``config`` with ``--sandbox`` (when given) in place of ``[tools] sandbox``, checked
    against this machine: ``on`` where bubblewrap cannot run is ``CLI_SANDBOX_UNAVAILABLE``
    (the command refuses to start); ``auto`` there says once, on stderr, that commands run
    unsandboxed and why."""
    import dataclasses

    from tether.cli.config import CliError

    mode = getattr(args, "sandbox", None) or config.tools.sandbox
    if mode != config.tools.sandbox:
        config = dataclasses.replace(config, tools=dataclasses.replace(config.tools, sandbox=mode))
    if mode == "off" or getattr(args, "tools", "coding") is None:
        return config
    from tether.tools.coding.sandbox import sandbox_status

    status = sandbox_status()
    if status.available:
        return config
    if mode == "on":
        raise CliError(
            "CLI_SANDBOX_UNAVAILABLE",
            f"the sandbox is on but cannot run: {status.reason} (or use --sandbox auto/off)",
        )
    warn(
        f"tether {command}: the sandbox cannot run here ({status.reason}); commands run unsandboxed"
    )
    return config


def _usage(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    parser.error(message)


def _writing(command: str, work: Callable[[], int]) -> int:
    """Run ``work``; an output failure becomes one line on stderr and exit status 4."""
    try:
        return work()
    except OutputError as error:
        if not error.reader_gone:
            warn(f"tether {command}: cannot write output: {error}")
        _silence_stdout()
        return EXIT_OUTPUT_FAILED


def _silence_stdout() -> None:
    """Point stdout's descriptor at /dev/null, so the flush at exit cannot fail once more."""
    stream = sys.stdout
    if stream is None:
        return
    try:
        descriptor = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError):
        return
    try:
        os.dup2(null, descriptor)
    except OSError:
        pass
    finally:
        os.close(null)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
