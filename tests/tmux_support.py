"""Drive a terminal program through tmux: start it in a detached session, type, read the screen.

``Tmux`` owns one private tmux server (its own socket in a temporary directory, no user
config: ``-f`` points at a file written here), so a test never touches a person's tmux and
the finalizer can kill everything it started with ``kill-server``. The pane stays when the
program exits (``remain-on-exit``), so a test can read its last screen and exit status, and
the server stays when its last session is killed (``exit-empty off``): a test that starts a
second program never races a server that is still exiting.

Waiting is coordination, never a fixed sleep: ``wait_for`` polls ``capture-pane`` every
``POLL`` seconds until the text appears, and fails at an overall deadline with the screen
as it was. The polls yield to the event loop (``asyncio.sleep``), so a loopback server on the
test's loop keeps serving while the test waits.

``tmux_binary()`` finds tmux; when it is missing it installs the Debian package if running as
root (``apt-get install -y tmux``), else returns ``None`` so the fixture skips with a reason.
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from support import debian_binary

POLL: Final = 0.02
"""Seconds between two looks at the screen."""
DEADLINE: Final = 15.0
"""The longest a wait lasts by default."""
WIDTH: Final = 120
HEIGHT: Final = 40

_CONFIG: Final = """\
set -s exit-empty off
set -g remain-on-exit on
set -g history-limit 5000
set -g status off
set -g escape-time 0
"""


def tmux_binary() -> str | None:
    """The tmux executable, installed first when missing and running as root."""
    return debian_binary("tmux", "tmux")


class Tmux:
    """One private tmux server with (at most) one session running one program."""

    def __init__(self, binary: str, directory: Path) -> None:
        self.binary = binary
        self.directory = directory
        self.socket = directory / "tmux.sock"
        self.config = directory / "tmux.conf"
        self.config.write_text(_CONFIG, encoding="utf-8")
        self.session = "chat"
        self.status_file = directory / "chat.status"
        self.started = False

    def _tmux(self, *arguments: str, env: Mapping[str, str] | None = None) -> str:
        completed = subprocess.run(
            [self.binary, "-S", str(self.socket), "-f", str(self.config), *arguments],
            check=True,
            capture_output=True,
            text=True,
            env=None if env is None else dict(env),
            timeout=10,
        )
        return completed.stdout

    def start(self, command: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> None:
        """Start ``command`` in a new detached 120x40 session. The server's environment is
        ``env`` (the first start launches the server with it), and the program inherits it: no
        value, a key least of all, is spelled out on a command line a screen could show."""
        if self.started:  # one program at a time: the previous session goes first
            self._tmux("kill-session", "-t", self.session)
        self.session = f"chat{time.monotonic_ns()}"
        self.status_file = self.directory / f"{self.session}.status"
        self._tmux(
            "new-session",
            "-d",
            "-s",
            self.session,
            "-x",
            str(WIDTH),
            "-y",
            str(HEIGHT),
            "-c",
            str(cwd),
            shlex.join(
                ["sh", "-c", 'trap : INT; "$@"; echo "$?" > "$0"', str(self.status_file), *command]
            ),
            env=env,
        )
        self.started = True

    def send(self, *keys: str) -> None:
        """Send tmux key names (``"Enter"``, ``"C-c"``, ``"C-d"``)."""
        self._tmux("send-keys", "-t", self.session, *keys)

    def type(self, text: str) -> None:
        """Type ``text`` literally (no key names), without Enter."""
        self._tmux("send-keys", "-t", self.session, "-l", text)

    def resize(self, width: int, height: int) -> None:
        """Resize the window (the program gets ``SIGWINCH``)."""
        self._tmux("resize-window", "-t", self.session, "-x", str(width), "-y", str(height))

    def screen(self) -> str:
        """The pane's text: the scrollback and the screen, wrapped lines joined."""
        return self._tmux("capture-pane", "-p", "-J", "-S", "-2000", "-t", self.session)

    def visible(self) -> str:
        """The pane's text as it is on screen now (no scrollback), wrapped lines joined."""
        return self._tmux("capture-pane", "-p", "-J", "-t", self.session)

    def dead(self) -> tuple[bool, int | None]:
        """Whether the program exited, and its exit status then (written by the ``sh``
        wrapper the program runs under: tmux 3.3 does not report it reliably)."""
        try:
            text = self.status_file.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return False, None
        return True, int(text) if text.isdigit() else None

    async def wait_for(self, text: str, *, count: int = 1, deadline: float = DEADLINE) -> str:
        """The screen once ``text`` appears on it ``count`` times; fails at the deadline (or
        when the program exited without showing it)."""
        end = time.monotonic() + deadline
        while True:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            if self.dead()[0]:
                screen = self.screen()
                if screen.count(text) >= count:
                    return screen
                raise AssertionError(f"the program exited before showing {text!r}:\n{screen}")
            if time.monotonic() > end:
                raise AssertionError(f"{text!r} did not appear in {deadline} s:\n{screen}")
            await asyncio.sleep(POLL)

    async def wait_exit(self, *, deadline: float = DEADLINE) -> int | None:
        """The program's exit status, once it exited (fails at the deadline)."""
        end = time.monotonic() + deadline
        while True:
            dead, status = self.dead()
            if dead and status is not None:  # tmux may show the pane dead before its status
                return status
            if time.monotonic() > end:
                raise AssertionError(f"the program did not exit in {deadline} s:\n{self.screen()}")
            await asyncio.sleep(POLL)

    def kill(self) -> None:
        """Kill the server and everything it runs (the finalizer calls this)."""
        subprocess.run(
            [self.binary, "-S", str(self.socket), "kill-server"],
            check=False,
            capture_output=True,
            timeout=10,
        )
