"""``ProviderError``: every failure of a real (HTTP) provider, with a stable code.

Codes (docs/providers.md, "HTTP: retries, timeouts, errors"):

* ``PROVIDER_REDIRECTED`` (a 3xx: tether never follows a redirect for a model request, so
  neither the key nor custom headers can reach another origin; the message names the
  ``Location``, bounded and with the key redacted);
* ``PROVIDER_AUTH_FAILED`` (401/403), ``PROVIDER_RATE_LIMITED`` (429),
  ``PROVIDER_OVERLOADED`` (503/529), ``PROVIDER_SERVER_ERROR`` (other 5xx),
  ``PROVIDER_BAD_REQUEST`` (400/404/413/422 and other 4xx), ``PROVIDER_CONTEXT_OVERFLOW``
  (a 4xx whose body says the context is too long);
* ``PROVIDER_CONNECTION_FAILED`` (no connection), ``PROVIDER_TIMEOUT`` (connect, first byte,
  idle gap between events or the total deadline), ``PROVIDER_STREAM_INTERRUPTED``
  (connection lost or EOF before the stream's end, a compressed body cut short),
  ``PROVIDER_PROTOCOL_ERROR`` (malformed SSE or JSON, impossible order, invalid tool
  arguments, a compressed body that is corrupt, in an unknown encoding or inflates beyond its
  bound), ``PROVIDER_ERROR_EVENT`` (the vendor reported an error inside the stream);
* before anything is sent (``tether.providers._images``): ``PROVIDER_TOO_MANY_IMAGES`` (more
  than ``MAX_IMAGES_PER_REQUEST`` images in one request), ``MODEL_CANNOT_SEE_IMAGES`` (images
  for a model tether's catalog knows does not read them).

``message`` carries the vendor's error text, bounded and never the API key; ``status`` is the
HTTP status when there was one, ``retry_after`` the server's requested delay in seconds,
``provider_code`` the vendor's own error code or type (vendor text too: bounded to
``MAX_PROVIDER_CODE`` characters here, and the key redacted before an error leaves a model).
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from tether._base.tether_error import TetherError

__all__ = ["MAX_ERROR_TEXT", "MAX_PROVIDER_CODE", "ProviderError", "ProviderErrorCode"]

ProviderErrorCode: TypeAlias = Literal[
    "PROVIDER_REDIRECTED",
    "PROVIDER_AUTH_FAILED",
    "PROVIDER_RATE_LIMITED",
    "PROVIDER_OVERLOADED",
    "PROVIDER_SERVER_ERROR",
    "PROVIDER_BAD_REQUEST",
    "PROVIDER_CONTEXT_OVERFLOW",
    "PROVIDER_CONNECTION_FAILED",
    "PROVIDER_TIMEOUT",
    "PROVIDER_STREAM_INTERRUPTED",
    "PROVIDER_PROTOCOL_ERROR",
    "PROVIDER_ERROR_EVENT",
    "PROVIDER_TOO_MANY_IMAGES",
    "MODEL_CANNOT_SEE_IMAGES",
]

MAX_ERROR_TEXT: Final = 2000
"""Most characters of vendor error text kept in a ``ProviderError`` message."""

MAX_PROVIDER_CODE: Final = 200
"""Most characters of a vendor's error code kept in ``ProviderError.provider_code``."""


def bounded(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ProviderError(TetherError[ProviderErrorCode]):
    """A real provider failed; ``code`` says how (see the module docstring)."""

    def __init__(
        self,
        code: ProviderErrorCode,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        provider_code: str | None = None,
    ) -> None:
        super().__init__(code, bounded(message, MAX_ERROR_TEXT))
        self._status = status
        self._retry_after = retry_after
        self._provider_code = (
            None if provider_code is None else bounded(provider_code, MAX_PROVIDER_CODE)
        )

    @property
    def status(self) -> int | None:
        """The HTTP status of the failed response, if there was one."""
        return self._status

    @property
    def retry_after(self) -> float | None:
        """The delay in seconds the server asked for (``retry-after``), if any."""
        return self._retry_after

    @property
    def provider_code(self) -> str | None:
        """The vendor's own error code or type, if it sent one (at most
        ``MAX_PROVIDER_CODE`` characters)."""
        return self._provider_code
