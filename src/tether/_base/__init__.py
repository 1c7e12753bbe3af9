"""The lowest layer of tether, below everything else: the fast frozen dataclass
decorator (``dataclass``), ``TetherError`` (``tether_error``), lazy exports (``lazy``), text
helpers (``strings``) and the exact-type and awaitable rules (``exact_types``)."""
