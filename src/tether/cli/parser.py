"""The ``tether`` command line's parser: every command, its options and its help.

``build_parser`` makes the parser ``tether.cli.main`` parses with. It imports only what
parsing needs, and builds only the arguments of the command ``argv`` names (their choices load
modules), so ``tether --help`` stays fast (``benchmarks/bench_cli_startup.py``). The slash
commands' parts of ``tether chat`` and ``tether rpc``'s help are filled in from their table
only when that help is written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from tether.cli.arguments import non_empty_path, non_empty_text, url
from tether.cli.exit_codes import EXIT_CODES_HELP

__all__ = [
    "DEFAULT_PROMPT",
    "FIXTURE_MAX_STEPS",
    "MODEL_HELP",
    "MODEL_MAX_STEPS",
    "build_parser",
    "command_named",
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


def command_named(argv: Sequence[str]) -> str:
    """The command ``argv`` names: its first word that is not an option (the top-level
    parser's only options, ``--help`` and ``--version``, take no value); ``""`` for none."""
    return next((word for word in argv if not word.startswith("-")), "")


_EPILOG: Final = MODEL_HELP + "\n" + EXIT_CODES_HELP
"""How most commands' help ends: model selection, then the exit statuses."""


def _add_command(
    commands: Any,
    name: str,
    *,
    help: str,
    description: str,
    epilog: str = _EPILOG,
    formatter: type[argparse.HelpFormatter] = argparse.RawDescriptionHelpFormatter,
) -> argparse.ArgumentParser:
    """Add the command ``name`` to ``commands`` (``add_subparsers()``'s value): its help in
    the list of commands, its own help's ``description`` and ``epilog`` as written."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=help, description=description, epilog=epilog, formatter_class=formatter
    )
    return parser


def build_parser(
    argv: Sequence[str] | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The ``tether`` parser and the ``run``, ``rpc`` and ``models`` parsers (for their
    errors). Every command is listed with its help, but given ``argv`` only the command it
    names gets its arguments (``None``: every command): their choices load modules
    (``--thinking``'s levels are ``tether.providers.thinking``'s, which loads the dataclass
    machinery), so ``tether --help`` adds none and ``tether chat`` only its own."""
    named = None if argv is None else command_named(argv)

    def wanted(command: str) -> bool:
        return named is None or named == command

    parser = argparse.ArgumentParser(
        prog="tether",
        description="The tether agent runtime.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True)
    run = _add_command(
        commands,
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
    )
    if wanted("run"):
        _run_arguments(run)
    rpc = _add_command(
        commands,
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
        formatter=_SlashHelpFormatter,
    )
    if wanted("rpc"):
        _rpc_arguments(rpc)
    models = _add_command(
        commands,
        "models",
        help="list the providers and their key variables, or a provider's models",
        description=(
            "Without PROVIDER: list the catalog presets and the config file's providers (base\n"
            "URL, the API key variable and whether it is set, never its value), model\n"
            "settings and the default model. With PROVIDER: list the models its server\n"
            "offers (GET /models; the key, if the provider needs one, must be set)."
        ),
    )
    if wanted("models"):
        models.add_argument(
            "provider", nargs="?", metavar="PROVIDER", help="list this provider's models"
        )
        models.add_argument(
            "--base-url", type=url, metavar="URL", help="ask the server at URL instead"
        )
        models.add_argument("--json", action="store_true", help="one JSON object per line")
    chat = _add_command(
        commands,
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
        formatter=_SlashHelpFormatter,
    )
    if wanted("chat"):
        _chat_arguments(chat)
    _add_command(
        commands,
        "trace",
        help="print the checkpoint-00 agent trace as JSON lines",
        description="Print the checkpoint-00 agent trace (a scripted run) as JSON lines.",
        epilog=EXIT_CODES_HELP,
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
