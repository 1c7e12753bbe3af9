"""Loopback HTTP servers for testing tether's real providers (127.0.0.1 only).

* ``servers.replay``: ``ReplayServer``, a scripted HTTP/1.1 server on raw asyncio streams with
  byte-level split modes and transport faults (reset, clean close, stall, first-byte delay).
* ``servers.katan``: start and stop the real ``llm-katan`` process (the ``katan_server`` and
  ``katan_factory`` fixtures in ``tests/conftest.py`` use it).
"""
