"""The async helpers at the bottom of tether: racing an awaitable against the abort
signal (``race``), the producer task behind a generator-backed stream (``producer``), owned
resources (``ownership``), adopting an awaitable's outcome (``adoption``) and releasing
several resources in order with their errors aggregated (``aggregate``, ``release``)."""
