"""The slash commands as ``tether chat`` runs them (``tether.cli.slash_commands`` is the
table): a typed line read as a ``Command``, its dispatch, and what the chat does for the
commands that need its terminal (``ChatHost``): ``/help``, the ``/model`` and ``/resume``
lists to pick from (``tether.cli.ui.picker``), ``/new`` and ``/cd``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from tether._base.tether_error import TetherError
from tether.cli.chat_approval import Ask
from tether.cli.chat_operations import ChatOperations, OperationCancelled
from tether.cli.config import CliConfig, CliError
from tether.cli.render import shorten
from tether.cli.session_index import session_directories
from tether.cli.slash_commands import COMMANDS, HELP, find_command, list_sessions

if TYPE_CHECKING:
    from pathlib import Path

    from tether.cli.ui.picker import Picker, PickItem
    from tether.protocol import Message, RunResult

__all__ = ["MODEL_LIST_SECONDS", "ChatCommands", "Command", "parse_command"]
MODEL_LIST_SECONDS: Final = 5.0
"""How long the ``/model`` list waits for the server's models (then says so)."""


@dataclass(frozen=True, slots=True)
class Command:
    """A slash command as typed: its ``name`` (without the slash, lower case) and the rest of
    the line (``argument``, stripped; empty when there is none)."""

    name: str
    argument: str = ""

    @property
    def known(self) -> bool:
        """Whether ``name`` is one of ``COMMANDS``."""
        return self.name in COMMANDS


def parse_command(line: str) -> Command | None:
    """The slash command ``line`` is, or ``None`` for a message to the model (anything not
    starting with ``/``, and ``//text``, which sends ``/text``)."""
    text = line.strip()
    if not text.startswith("/") or text.startswith("//") or len(text) == 1:
        return None
    name, _, rest = text[1:].partition(" ")
    return Command(name.lower(), rest.strip())


def _numbered(text: str, listed: list[str]) -> str | None:
    """The item of ``listed`` numbered ``text`` (from 1, in ASCII digits), or ``None``.
    ``str.isdigit()`` alone also takes ``"²"`` and any number of digits, which ``int()``
    refuses with a ``ValueError``."""
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        return None
    number = int(text)
    return listed[number - 1] if 1 <= number <= len(listed) else None


class ChatCommands(ChatOperations):
    """The slash commands of ``tether.cli.chat_session.Chat``: ``command`` runs one, and the methods
    below are what the table's handlers call (``tether.cli.slash_commands.ChatHost``)."""

    config: CliConfig
    ask: Ask
    pick: Picker | None
    sessions_dir: Path
    unsent: str
    _model_list: list[str]

    if TYPE_CHECKING:

        async def turn(self, text: str) -> RunResult | None:
            """Send ``text`` (``tether.cli.chat_session.Chat.turn``)."""
            ...

    def model_names(self) -> list[str]:
        """The ``/model`` names Tab offers: the current model, the default one, the config's
        models, then every provider as ``PROVIDER/``."""
        from tether.cli.models import known_providers

        config = self.config
        names = [self.choice.spec]
        if config.default_model:
            names.append(config.default_model)
        names += list(config.models)
        names += [f"{name}/" for name in known_providers(config)]
        return names

    # -- commands ------------------------------------------------------------------------------

    async def command(self, command: Command) -> bool:
        """Run a slash command; ``False`` when the chat should end (``/quit``)."""
        try:
            return await self._command(command)
        except OperationCancelled:
            self.view.line("(cancelled)")
            return True

    async def _command(self, command: Command) -> bool:
        name, argument = command.name, command.argument
        found = find_command(name)
        if found is None:  # not a command: a prompt template, or unknown
            expanded = (await self.resources()).expand(f"/{name} {argument}")
            if expanded is None:
                self.view.line(f"unknown command /{name} (/help lists them)")
            else:
                await self.turn(expanded)
            return True
        if found.chat_handler is not None:
            return await found.chat_handler(self, argument)
        assert found.handler is not None  # SlashCommand holds exactly one
        return await found.handler(self, argument)

    # -- what the commands work on (tether.cli.slash_commands.ChatHost) -------------------------

    def line(self, text: str) -> None:
        """Write one line of a command's output."""
        self.view.line(text)

    async def rebuild(self, work: Awaitable[Any]) -> bool:
        """Wait for a runtime rebuild of the session (``work``, cancelled by Ctrl-C); whether
        it worked. A failure is shown and leaves the current runtime as it was."""
        return await self._rebuild(work)

    async def show_help(self) -> None:
        """``/help``: the commands and keys, then the workspace's prompt templates."""
        self.view.write(HELP)
        templates = (await self.resources()).templates
        if templates:
            self.view.line("prompt templates (/name args):")
            for template in templates:
                self.view.line(f"  /{template.name:<9} {shorten(template.description, 70)}")

    async def resume_command(self, argument: str) -> None:
        """``/resume [ID]``: without an ID, the list of sessions to pick from."""
        await self._resume_command(argument)

    async def new_session(self) -> bool:
        """``/new``: a runtime on a new session (the file is created now when a runtime is
        current, else with the first prompt); whether it worked."""
        rebuilt = self._rebuilt
        await self.command(Command("new"))
        return self._rebuilt > rebuilt

    async def change_directory(self, argument: str) -> bool:
        """``/cd DIR``: the same session in another workspace (tools, context files, skills
        and extensions rebuilt there, through ``RuntimeManager.replace``: the current
        runtime stays until the new one is built); whether it moved."""
        rebuilt = self._rebuilt
        await self.command(Command("cd", argument))
        return self._rebuilt > rebuilt

    async def switch_model(self, spec: str) -> None:
        """``/model [SPEC]``: switch to ``SPEC`` (or ``N`` of the last list); without it,
        the list to pick from (off a terminal: numbered)."""
        from tether.cli.models import choose_model

        if not spec and self.pick is not None:
            picked = await self.pick(
                f"model (now {self.choice.spec})", self._model_items(), self._server_models()
            )
            if picked is None:
                return
            if picked.endswith("/"):  # a provider: the model's name is still to be typed
                self.unsent = f"/model {picked}"
                self.view.line(f"/model {picked}MODEL switches (type the model's name)")
                return
            spec = picked
        if not spec:
            self._model_list = [
                name for name in dict.fromkeys(self.model_names()) if not name.endswith("/")
            ]
            self.view.line(f"model: {self.choice.spec}")
            for number, name in enumerate(self._model_list, 1):
                mark = "*" if name == self.choice.spec else " "
                self.view.line(f"{mark} {number:>2}  {name}")
            self.view.line("/model N switches to one of these, /model PROVIDER/MODEL to any")
            return
        if spec.isascii() and spec.isdigit():
            picked = _numbered(spec, self._model_list)
            if picked is None:
                self.view.line(f"no model {spec} (/model lists them)")
                return
            spec = picked
        same = spec.partition("/")[0] == self.choice.provider.name
        try:
            choice = choose_model(
                spec, base_url=self.choice.base_url if same else None, config=self.config
            )
        except CliError as error:
            self.view.line(f"[{error.code}] {error}")
            return
        if not await self._rebuild(self.coding.switch_model(choice)):
            return
        self.view.line(f"model: {choice.spec}")

    def _model_items(self) -> list[PickItem]:
        """What the ``/model`` list starts with: the current model, the default, the
        config's models, every provider (``PROVIDER/``: then the name is typed)."""
        from tether.cli.ui.picker import PickItem

        config = self.config
        items: dict[str, PickItem] = {}
        for spec in self.model_names():
            if spec in items:
                continue
            if spec == self.choice.spec:
                detail = "current"
            elif spec == config.default_model:
                detail = "default"
            elif spec.endswith("/"):
                detail = "provider: type the model's name next"
            else:
                detail = "configured"
            items[spec] = PickItem(value=spec, label=spec, detail=detail)
        return list(items.values())

    async def _server_models(self) -> tuple[list[PickItem], str]:
        """The ``/model`` list with the models the current provider's server offers
        (``GET /models``, within ``MODEL_LIST_SECONDS``) after the known ones; a failure is
        the note (the list as it was), never raised."""
        from tether.cli.ui.picker import PickItem
        from tether.providers.errors import ProviderError

        name = self.choice.provider.name
        try:
            model = self.choice.build()
        except TetherError as error:
            return self._model_items(), f"{name}'s models: [{error.code}] {error}"
        try:
            async with asyncio.timeout(MODEL_LIST_SECONDS):
                ids = await model.list_models()
        except TimeoutError:
            return self._model_items(), f"{name}'s models: no answer in {MODEL_LIST_SECONDS:g} s"
        except ProviderError as error:
            return self._model_items(), f"{name}'s models: [{error.code}] {error.message}"
        finally:
            await model.aclose()
        first = self._model_items()
        known = {item.value for item in first}
        found = [
            PickItem(value=spec, label=spec, detail=f"{name}'s server")
            for spec in (f"{name}/{ident}" for ident in ids)
            if spec not in known
        ]
        models = [item for item in first if not item.value.endswith("/")]
        providers = [item for item in first if item.value.endswith("/")]
        return [*models, *found, *providers], f"{len(ids)} from {name}"

    async def pick_session(self) -> str | None:
        """``tether chat -r`` or ``/resume`` without an ID: the saved sessions to pick from
        (with a terminal: ``pick``; else numbered, and asked which); its ID (``None``: a new
        session, nothing saved, or Esc / Ctrl-C / Ctrl-D)."""
        if self.pick is not None:
            items = await self._session_items()
            if not items:
                self.view.line("no saved sessions")
                return None
            return await self.pick("resume a session", items, None)
        listed = await list_sessions(self, numbered=True)
        if not listed:
            return None
        while True:
            try:
                reply = (await self.ask("resume which? (a number or an ID; Enter: new): ")).strip()
            except (KeyboardInterrupt, EOFError):
                return None
            if not reply:
                return None
            picked = _numbered(reply, listed)
            if picked is not None:
                return picked
            # Digits no wider than the list's last number are a number out of range, even
            # when some ID happens to start with them ("2" with one session listed).
            as_number = reply.isascii() and reply.isdigit() and len(reply) <= len(str(len(listed)))
            matches = [] if as_number else self.coding.matching_sessions(reply)
            if len(matches) == 1:
                return matches[0]
            if matches:
                self.view.line(f"{reply!r} names {len(matches)} sessions: give more of the ID")
                continue
            self.view.line(f"no session {reply!r}: a number from 1 to {len(listed)}, or an ID")

    async def _session_items(self) -> list[PickItem]:
        """The saved sessions as picker items: the ID's start, when it was created and its
        last message, then its directory."""
        from tether.agent.session import SessionLimits, list_sessions
        from tether.cli.ui.picker import PickItem

        found = await asyncio.to_thread(
            list_sessions, self.sessions_dir, limits=SessionLimits.for_coding()
        )
        directories = session_directories(self.sessions_dir)
        items: list[PickItem] = []
        for info in found:
            if info.id is None:
                continue
            mark = " (this one)" if info.id == self.session_id else ""
            where = directories.get(info.id, "(directory unknown)")
            last = info.last_message or info.title or "(no message)"
            items.append(
                PickItem(
                    value=info.id,
                    label=f"{info.id[:8]}  {(info.created_at or '')[:16]}  {shorten(last, 50)}",
                    detail=where + mark,
                )
            )
        return items

    async def resume(self, ident: str) -> bool:
        """Resume the session ``ident`` names; whether it was found and loaded (a runtime
        built on it replaces the current one)."""
        matches = self.coding.matching_sessions(ident)
        if len(matches) != 1:
            if matches:
                self.view.line(f"{ident!r} names {len(matches)} sessions: give more of the ID")
            else:
                self.view.line(f"no session {ident!r} (/sessions lists them)")
            return False
        session_id = matches[0]
        if session_id == self.session_id:
            self.view.line(f"already in session {session_id}")
            return True
        self.view.line(f"resuming {session_id}.jsonl")
        if not await self._rebuild(self.coding.resume(session_id)):
            return False
        agent = await self.agent()
        count = len(agent.messages)
        self.view.line(f"resumed session {session_id} ({count} messages)")
        self._show_last(agent.messages)
        return True

    def _show_last(self, messages: tuple[Message, ...]) -> None:
        for message in messages[-2:]:
            if message.role == "user":
                images = f" [{len(message.images)} image(s)]" if message.images else ""
                self.view.line(f"  you: {shorten(message.content, 100)}{images}")
            elif message.role == "assistant":
                text = "".join(block.text for block in message.content if block.type == "text")
                if text:
                    self.view.line(f"  assistant: {shorten(text, 100)}")

    async def _resume_command(self, argument: str) -> None:
        if not argument and self.pick is None:
            self.view.line("/resume ID (/sessions lists them)")
            return
        if not argument:
            picked = await self.pick_session()
            if picked is None:
                return
            argument = picked
        await self.resume(argument)
