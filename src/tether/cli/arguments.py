"""Option value types shared by the ``tether`` commands' ``argparse`` parsers.

Each is a ``type=`` callable: it returns the parsed value or raises
``argparse.ArgumentTypeError`` with the message ``argparse`` prints after the option's name.
``needs_model`` checks what only goes with ``--model`` once the arguments are parsed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["bounded_integer", "needs_model", "non_empty_path", "non_empty_text", "url"]


def bounded_integer(low: int, high: int, name: str | None = None) -> Callable[[str], int]:
    """An integer from ``low`` to ``high`` (``name``: how the message calls it)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            what = "must be" if name is None else f"{name} must be"
            raise argparse.ArgumentTypeError(f"{what} between {low} and {high}")
        return value

    return parse


def non_empty_path(text: str, *, hint: str = "") -> Path:
    """A path, never ``""`` (``Path("")`` is ``.``, which would name the current directory)."""
    if not text:
        raise argparse.ArgumentTypeError(f"must not be empty{hint}")
    return Path(text)


def url(text: str) -> str:
    """An ``http://`` or ``https://`` URL a request can go to (``tether.cli.urls``: a host, a
    port from 1 to 65535 if any); the message never quotes it."""
    from tether.cli.urls import http_url_problem

    problem = http_url_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def non_empty_text(text: str) -> str:
    """Any text but ``""``."""
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def needs_model(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    options: Iterable[str],
    without: str,
) -> None:
    """Refuse (``parser.error``, exit status 2) the first of ``options`` (``--base-url``:
    read as ``args.base_url``; ``None`` is not given) that only works with ``--model``;
    ``without`` says what runs without ``--model``."""
    for option in options:
        if getattr(args, option.removeprefix("--").replace("-", "_")) is not None:
            parser.error(f"{option} needs --model ({without})")
