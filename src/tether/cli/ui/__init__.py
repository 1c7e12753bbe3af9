"""Building blocks of the interactive chat's terminal view (issue 28).

One module per job, each a small typed API with no global state (terminal width and colour
are always passed in), so each is tested on its own and the interactive mode only wires them:

* ``approval``: the text shown before ``allow TOOL?`` (the whole command, a file preview or
  diff, full JSON arguments) and the parsing of the answer (yes / no with a reason / always).
* ``results``: a tool result's head and tail with the hidden line count, and the full text.
* ``markdown``: streamed Markdown rendered with ``rich`` as committed lines plus a live tail.
* ``export``: a session written as one self-contained HTML page.
* ``status``: the status line, and ``@path`` / slash-command completion.

``text`` holds what they share: neutralising control characters and wrapping to a width.
Nothing here imports ``rich`` or ``prompt_toolkit`` at import time.
"""
