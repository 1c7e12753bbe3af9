"""A list to pick one item from: arrows move, Enter picks, typing filters, Esc cancels.

``tether chat`` opens it for ``/model`` without an argument (the models it knows, then the
server's) and for ``/resume`` or ``-r`` without an ID (the saved sessions). It is drawn below
the output, not full screen, and gone once answered:

* a title row, then ``filter: `` and what was typed (the query), then at most ``rows`` items
  (the selected one marked ``▸``, reverse video with colour), then how many items match and
  any note (``loading …``, or why the extra items could not be had);
* ↑/↓ (Ctrl-P/Ctrl-N) move, PgUp/PgDn move a page, Enter picks the selected item, Esc or
  Ctrl-C cancels (``None``); typing or deleting changes the query and selects the first
  match again.

``more`` is work that brings more items while the list is already up (the server's models):
it resolves to ``(items, note)``, the whole list from then on (the first items and the new
ones, in the order to show them) and a note shown after the count (``""``: none); it is
cancelled if the person answers first.

``filter_items`` is the pure part: an item matches when every word of the query is in its
label or detail (any case), and the order is kept. Nothing here imports prompt_toolkit until
``pick`` runs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from tether.cli.ui.text import cell_width, clip, visible

if TYPE_CHECKING:
    from prompt_toolkit.formatted_text import StyleAndTextTuples

__all__ = ["PICKER_ROWS", "More", "PickItem", "Picker", "filter_items", "pick", "picker_rows"]

PICKER_ROWS: Final = 10
"""The most items shown at once (the list scrolls)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PickItem:
    """One item: the ``value`` picking it returns, the ``label`` shown and a ``detail``
    shown dimmed after it (both searched by the filter)."""

    value: str
    label: str
    detail: str = ""


More: TypeAlias = Awaitable[tuple[Sequence[PickItem], str]]
"""The whole list, brought while the first one is up, and a note about it (``""``: none)."""

Picker: TypeAlias = Callable[[str, Sequence[PickItem], "More | None"], Awaitable[str | None]]
"""Opens a list (title, items, extra items) and returns the picked value (``None``:
cancelled); ``pick`` is the terminal's."""


def filter_items(items: Sequence[PickItem], query: str) -> list[PickItem]:
    """The items that match ``query`` (see the module docstring), in their order."""
    words = query.casefold().split()
    if not words:
        return list(items)
    return [
        item
        for item in items
        if all(word in f"{item.label} {item.detail}".casefold() for word in words)
    ]


def picker_rows(
    items: Sequence[PickItem], selected: int, *, rows: int, width: int
) -> list[tuple[bool, str, str]]:
    """The visible window of ``items`` around ``selected``: ``(is selected, label,
    detail)``, label and detail made visible and clipped together to ``width`` cells."""
    if not items:
        return []
    rows = max(rows, 1)
    start = min(max(selected - rows // 2, 0), max(len(items) - rows, 0))
    out: list[tuple[bool, str, str]] = []
    for index in range(start, min(start + rows, len(items))):
        item = items[index]
        label = clip(visible(item.label, strict=True), max(width, 1))
        room = width - cell_width(label) - 2
        detail = clip(visible(item.detail, strict=True), room) if room > 0 and item.detail else ""
        out.append((index == selected, label, detail))
    return out


@dataclass(slots=True)
class _State:
    items: list[PickItem]
    note: str
    selected: int = 0


async def pick(
    title: str,
    items: Sequence[PickItem],
    more: More | None = None,
    *,
    color: bool = True,
    rows: int = PICKER_ROWS,
) -> str | None:
    """Show the list on the terminal and return the value picked (``None``: Esc, Ctrl-C or
    nothing to pick); see the module docstring."""
    from prompt_toolkit.application import Application, get_app
    from prompt_toolkit.buffer import Buffer
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.key_binding.key_processor import KeyPressEvent
    from prompt_toolkit.layout import HSplit, Layout, Window
    from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
    from prompt_toolkit.layout.processors import BeforeInput
    from prompt_toolkit.styles import Style

    state = _State(items=list(items), note="" if more is None else "loading …")
    query = Buffer(multiline=False)

    def matches() -> list[PickItem]:
        return filter_items(state.items, query.text)

    def reset(_: Buffer) -> None:
        state.selected = 0

    query.on_text_changed += reset

    def width() -> int:
        return max(get_app().output.get_size().columns - 3, 10)

    def list_text() -> StyleAndTextTuples:
        found = matches()
        state.selected = min(state.selected, max(len(found) - 1, 0))
        out: StyleAndTextTuples = []
        for chosen, label, detail in picker_rows(found, state.selected, rows=rows, width=width()):
            out.append(("class:selected" if chosen else "", ("▸ " if chosen else "  ") + label))
            if detail:
                out.append(("class:detail", "  " + detail))
            out.append(("", "\n"))
        if not found:
            out.append(("class:detail", "  (nothing matches)\n"))
        shown = f"{len(found)} of {len(state.items)}"
        out.append(("class:detail", f"  {shown}" + (f" · {state.note}" if state.note else "")))
        return out

    keys = KeyBindings()

    def move(by: int) -> Callable[[KeyPressEvent], None]:
        def handler(event: KeyPressEvent) -> None:
            count = len(matches())
            if count:
                state.selected = min(max(state.selected + by, 0), count - 1)

        return handler

    for names, by in (
        (("up",), -1),
        (("c-p",), -1),
        (("down",), 1),
        (("c-n",), 1),
        (("pageup",), -rows),
        (("pagedown",), rows),
    ):
        keys.add(*names)(move(by))

    @keys.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        found = matches()
        if found:
            event.app.exit(result=found[state.selected].value)

    @keys.add("escape", eager=True)
    @keys.add("c-c")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    style = Style.from_dict(
        {"selected": "reverse", "detail": "fg:ansibrightblack", "title": "bold"} if color else {}
    )
    header: StyleAndTextTuples = [
        ("class:title", title),
        ("class:detail", "  (↑↓ move · Enter picks · type to filter · Esc cancels)"),
    ]
    layout = Layout(
        HSplit(
            [
                Window(FormattedTextControl(header), height=1, wrap_lines=False),
                Window(BufferControl(query, input_processors=[BeforeInput("filter: ")]), height=1),
                Window(FormattedTextControl(list_text), wrap_lines=False),
            ]
        ),
        focused_element=query,
    )
    application: Application[str | None] = Application(
        layout=layout,
        key_bindings=keys,
        style=style,
        full_screen=False,
        erase_when_done=True,
        color_depth=None if color else _monochrome(),
    )
    loader: asyncio.Future[Any] | None = None
    if more is not None:
        extra = more

        async def load() -> None:
            try:
                found, note = await extra
            except Exception as error:  # the list stays usable; the note says why
                found, note = state.items, f"failed: {type(error).__name__}: {error}"
            value = None
            if state.items:
                shown = filter_items(state.items, query.text)
                value = shown[state.selected].value if shown else None
            state.items = list(found)
            state.note = note
            shown = filter_items(state.items, query.text)
            values = [item.value for item in shown]
            state.selected = values.index(value) if value in values else 0  # stays on it
            application.invalidate()
            application.invalidate()

        loader = asyncio.ensure_future(load())
    try:
        return await application.run_async(handle_sigint=False)
    finally:
        if loader is not None:
            loader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await loader


def _monochrome() -> Any:
    from prompt_toolkit.output import ColorDepth

    return ColorDepth.DEPTH_1_BIT
