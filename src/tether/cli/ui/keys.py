"""Keys read while a turn runs: the terminal does not echo, Esc interrupts, typed text steers.

While the model answers, the prompt is not up, so a terminal in its usual (cooked, echoing)
mode would print what a person types into the middle of the answer, and Esc would show as
``^[``. ``TurnKeys`` puts the terminal in non-canonical, non-echo mode for the turn (Ctrl-C
still raises ``SIGINT``: ``ISIG`` is kept) and reads the keys itself:

* **Esc** (alone in a read: an escape sequence such as an arrow key comes in one read and is
  skipped whole) calls ``on_escape`` (the chat cancels the turn).
* **Shift-Tab** (``ESC [ Z``) calls ``on_shift_tab`` (the chat cycles the thinking level).
* Printable text is collected in ``typed``; Backspace removes the last character; Ctrl-U
  clears it. ``on_change`` is told every change (the chat shows it on the status line).
* **Enter** hands the text to ``on_enter`` (a steer: queued for the next turn boundary), and
  **Alt-Enter** (Esc then Enter in one read) to ``on_alt_enter`` (a follow-up: queued for when
  the model would finish); empty text is ignored.

``parse_keys(text)`` is the pure part: the keys a decoded chunk of input holds.
``pause()`` gives the terminal back (the approval question reads it with its own prompt) and
``resume()`` takes it again; ``stop()`` restores the terminal as it was.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias

from tether._base.dataclass import dataclass

__all__ = ["Key", "KeyName", "TurnKeys", "parse_keys"]

KeyName: TypeAlias = Literal[
    "text", "escape", "enter", "alt-enter", "backspace", "clear", "shift-tab"
]
"""What a key does (``text``: printable characters, in ``Key.text``)."""

_ESC: Final = "\x1b"
_SHIFT_TAB: Final = "\x1b[Z"


@dataclass(frozen=True, slots=True, kw_only=True)
class Key:
    """One key (or a run of printable characters, ``name="text"``)."""

    name: KeyName
    text: str = ""


def _skip_sequence(text: str, start: int) -> int:
    """The index after the escape sequence that starts at ``text[start]`` (an ESC)."""
    if start + 1 >= len(text):
        return start + 1
    kind = text[start + 1]
    index = start + 2
    if kind == "[":  # CSI: parameters, then one final byte in @..~
        while index < len(text) and not ("@" <= text[index] <= "~"):
            index += 1
        return min(index + 1, len(text))
    if kind == "O":  # SS3: one more character
        return min(index + 1, len(text))
    return index  # Alt-<key>: the key goes with it


def parse_keys(text: str) -> list[Key]:
    """The keys one read of input holds (see the module docstring): printable runs merged,
    control characters other than Enter, Backspace and Ctrl-U dropped."""
    keys: list[Key] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == _ESC:
            if index + 1 == len(text):
                keys.append(Key(name="escape"))
                index += 1
            elif text[index + 1] in "\r\n":
                keys.append(Key(name="alt-enter"))
                index += 2
            elif text.startswith(_SHIFT_TAB, index):
                keys.append(Key(name="shift-tab"))
                index += len(_SHIFT_TAB)
            else:
                index = _skip_sequence(text, index)
            continue
        index += 1
        if char in "\r\n":
            keys.append(Key(name="enter"))
        elif char in "\x7f\b":
            keys.append(Key(name="backspace"))
        elif char == "\x15":
            keys.append(Key(name="clear"))
        elif char.isprintable():
            if keys and keys[-1].name == "text":
                keys[-1] = Key(name="text", text=keys[-1].text + char)
            else:
                keys.append(Key(name="text", text=char))
    return keys


class TurnKeys:
    """The terminal's keys during a turn (see the module docstring); ``fd`` is a terminal."""

    def __init__(
        self,
        fd: int,
        *,
        on_escape: Callable[[], None],
        on_enter: Callable[[str], None],
        on_alt_enter: Callable[[str], None],
        on_change: Callable[[str], None],
        on_shift_tab: Callable[[], None] | None = None,
    ) -> None:
        self.fd = fd
        self._on_shift_tab = on_shift_tab
        self.typed = ""
        self._on_escape = on_escape
        self._on_enter = on_enter
        self._on_alt_enter = on_alt_enter
        self._on_change = on_change
        self._saved: list[Any] | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def start(self) -> None:
        """Take the terminal: no echo, keys read on the running loop."""
        import termios

        if self._saved is not None:
            return
        try:
            saved = termios.tcgetattr(self.fd)
        except termios.error:
            return
        mode = termios.tcgetattr(self.fd)
        mode[3] &= ~(termios.ECHO | termios.ICANON)
        mode[6][termios.VMIN] = 1
        mode[6][termios.VTIME] = 0
        termios.tcsetattr(self.fd, termios.TCSANOW, mode)
        self._saved = saved
        asyncio.get_running_loop().add_reader(self.fd, self._readable)

    def stop(self) -> None:
        """Give the terminal back as it was (what was typed and not sent is dropped)."""
        import termios

        saved, self._saved = self._saved, None
        if saved is None:
            return
        asyncio.get_running_loop().remove_reader(self.fd)
        with contextlib.suppress(termios.error):
            termios.tcsetattr(self.fd, termios.TCSANOW, saved)

    def pause(self) -> bool:
        """``stop`` for a while (another reader needs the terminal); whether it was taken."""
        taken = self._saved is not None
        self.stop()
        return taken

    def resume(self) -> None:
        """Take the terminal again after ``pause``."""
        self.start()

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, 4096)
        except OSError:
            return
        before = self.typed
        for key in parse_keys(self._decoder.decode(data)):
            match key.name:
                case "escape":
                    self._on_escape()
                case "shift-tab":
                    if self._on_shift_tab is not None:
                        self._on_shift_tab()
                case "enter" | "alt-enter":
                    text, self.typed = self.typed.strip(), ""
                    if text:
                        (self._on_enter if key.name == "enter" else self._on_alt_enter)(text)
                case "backspace":
                    self.typed = self.typed[:-1]
                case "clear":
                    self.typed = ""
                case "text":
                    self.typed += key.text
        if self.typed != before:
            self._on_change(self.typed)
