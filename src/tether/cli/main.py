"""The ``tether`` command.

``tether run`` runs the agent and shows the run as it happens: streamed text, each tool call
and its result, the final status and token usage. With no options it replays the bundled
round-trip fixture ("What is 20 + 22?") with a built-in ``add`` tool: no key, no network.
``--model PROVIDER/MODEL`` (with ``-p/--prompt``) runs a real model instead, ``--tools
coding`` gives it the coding tools confined to the current directory (see
``tether.cli.run_command``). ``--json`` prints one camelCase JSON event per line instead, always as
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

This module parses (``tether.cli.parser``) and hands each command to its modules, which it
imports only when the command runs, so ``tether --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from tether.cli.arguments import needs_model
from tether.cli.command_setup import choose_with_config, config_or_warn
from tether.cli.exit_codes import EXIT_INTERRUPTED, EXIT_OUTPUT_FAILED, EXIT_USAGE
from tether.cli.parser import DEFAULT_PROMPT, FIXTURE_MAX_STEPS, build_parser
from tether.cli.print_prompt import print_prompt
from tether.cli.render import Output, OutputError, json_line, warn

if TYPE_CHECKING:
    from tether.cli.config import CliConfig

__all__ = ["main"]


def _print_trace(out: Output) -> int:
    from tether.cli.prologue import run_prologue

    prologue = run_prologue()
    for record in prologue.events:
        out.write(json_line(record.to_json()))
    out.write(json_line(prologue.result.to_json()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tether`` console script; returns the process exit status."""
    try:
        words = sys.argv[1:] if argv is None else argv
        parser, commands = build_parser(words)
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
        offline = "without it, the fixture runs offline"
        needs_model(parser, args, ("--base-url", "--tools", "--system", "--session"), offline)
        if args.max_steps is None:
            args.max_steps = 8
        elif args.max_steps > FIXTURE_MAX_STEPS:
            _usage(
                parser,
                f"argument --max-steps: must be between 1 and {FIXTURE_MAX_STEPS} without --model",
            )
        if args.prompt is None:
            args.prompt = DEFAULT_PROMPT
        from tether.cli.run_command import FixtureOptions, run_command

        fixture = FixtureOptions(
            fixture=args.fixture, prompt=args.prompt, max_steps=args.max_steps, json=args.json
        )
        return _writing("run", lambda: asyncio.run(run_command(fixture, make(sys.stdout))))
    if args.fixture is not None:
        _usage(parser, "--fixture and --model are exclusive (a fixture replays a model)")
    prompt = print_prompt(args.prompt, parser)
    if args.max_steps is None:
        args.max_steps = 64
    chosen = choose_with_config(args, "run")
    if chosen is None:
        return EXIT_USAGE
    choice, config = chosen
    from tether.cli.run_command import PrintOptions, run_model_command

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


def _rpc(args: argparse.Namespace) -> int:
    import asyncio

    chosen = choose_with_config(args, "rpc")
    if chosen is None:
        return EXIT_USAGE
    choice, config = chosen
    from tether.cli.rpc import RpcOptions, rpc_command
    from tether.cli.session_index import chat_data_dir

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
    from tether.cli.models import models_command

    config = config_or_warn("models")
    if config is None:
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

    chosen = choose_with_config(args, "chat")  # the config file read once
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
