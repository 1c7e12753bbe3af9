"""Base URLs as the ``tether`` commands take and show them.

``http_url_problem(text)`` is the one rule every base URL meets before a request is built from
it (``--base-url``, a config file's ``base_url``, ``tether rpc``'s ``set_model``): an
``http://`` or ``https://`` URL that ``urllib.parse`` can split, with a host and, if it has a
port, a number from 1 to 65535, and no whitespace or control characters. Otherwise the
request would fail at run time with an error far from the option (an out-of-range port is an
"unhandled errors in a TaskGroup", ``http://[::1/v1`` an "Invalid port"). The problem it
names never quotes the URL, which may hold a password.

``display_url(url)`` is how a URL is shown in messages and listings: the ``user:password@``
part becomes ``***@``, every query value ``***`` (a key passed as ``?key=...`` is a secret
too), a fragment ``#***``. It works on the text itself, without parsing, so a URL that cannot
be parsed is redacted all the same.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit

__all__ = ["display_url", "http_url_problem"]

_SCHEMES: Final = ("http://", "https://")
_HIDDEN: Final = "***"


def http_url_problem(text: str) -> str | None:
    """What is wrong with ``text`` as a base URL (see the module docstring), or ``None``."""
    if not text.lower().startswith(_SCHEMES):
        return "must be an http:// or https:// URL"
    if any(character.isspace() or not character.isprintable() for character in text):
        return "must not contain spaces or control characters"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return "must be a URL with a valid host and port (1-65535)"
    if not parts.hostname:
        return "must name a host"
    if port is not None and not 1 <= port <= 65535:
        return "must have a port from 1 to 65535"
    return None


def display_url(url: str) -> str:
    """``url`` with its user information, query values and fragment hidden (see the module
    docstring)."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        scheme, rest = "", url
    end = len(rest)
    for delimiter in "/?#":
        found = rest.find(delimiter)
        if found != -1:
            end = min(end, found)
    authority, tail = rest[:end], rest[end:]
    if "@" in authority:
        authority = f"{_HIDDEN}@{authority.rpartition('@')[2]}"
    before_fragment, hash_mark, fragment = tail.partition("#")
    path, question, query = before_fragment.partition("?")
    if question:
        path += "?" + "&".join(_hidden_value(part) for part in query.split("&"))
    if hash_mark and fragment:
        path += "#" + _HIDDEN
    elif hash_mark:
        path += "#"
    return f"{scheme}{separator}{authority}{path}"


def _hidden_value(parameter: str) -> str:
    """``name=***`` for a query parameter with a value; a bare parameter (which may itself
    be a key) is ``***``; an empty one stays empty."""
    if not parameter:
        return parameter
    name, equals, _ = parameter.partition("=")
    return f"{name}={_HIDDEN}" if equals else _HIDDEN
