"""Rendering a streamed Markdown answer: CPU µs per token, next to what 300 tokens/s allows.

A model streaming 300 tokens per second leaves 3,333 µs per token for everything; the
rendering must take a small part of it. The answer is a long Markdown text (about 4,000
tokens: headings, paragraphs with emphasis, lists, tables, fenced Python), fed in deltas of
one token (4 characters) to ``tether.cli.ui.markdown.StreamingMarkdown`` at width 100, with
colour. Measured (CPU time, ``time.process_time``; fresh renderer each repeat, after one
warm-up):

* ``stream, live tail per token``: ``feed`` each delta and re-render the live tail after
  every one (the worst case: a redraw per token);
* ``stream, live tail at 30 fps``: ``feed`` each delta, the live tail every 10th delta (a
  30 frames/s redraw of a 300 tokens/s stream);
* ``re-render whole at 30 fps``: the naive way, the whole answer so far rendered with rich's
  ``Markdown`` every 10th delta (O(n²) in the answer's length): the baseline.

And a 600-line fenced Python block (about 5,000 tokens), the live tail at 30 fps: rendered
whole each frame (``live()``), and bounded to a 50-row terminal (``live(max_rows=50)``: the
last lines highlighted once per 8 new lines, the newest shown plain until then), which keeps
each redraw's cost the same however long the block grows.

Goals: the 30 fps stream at most 333 µs per token (a tenth of the 3,333 µs budget); the
per-token stream within the budget (3,333 µs); the 30 fps stream at most 1/5 of the naive
re-render's cost per token (ratios of the same round); the long code block with ``max_rows``
at most 333 µs per token.

    python benchmarks/bench_render.py [--quick] [--json-out PATH]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import time
from pathlib import Path
from typing import Any

import goals

BUDGET_US = 1_000_000 / 300
TOKEN_CHARS = 4
FRAME_EVERY = 10

SECTION = """## Step {n}: fix the *flaky* test

The failure comes from **two** things: the timeout in `conftest.py` is too short, and
`pytest -x` stops at the first failure, so the later tests never ran. Here is what changes
and why, in the order the files are touched; each change is small and reviewed on its own.

1. Raise the timeout from 5 to 30 seconds.
2. Retry the health check once, since the server may still be starting.
3. Run the suite again with `-p no:cacheprovider`.

```python
def test_health_{n}(client):
    # the server may take a moment to start
    for attempt in range(2):
        response = client.get("/health")
        if response.status_code == 200:
            break
    assert response.json() == {{"ok": True, "step": {n}}}
```

| file | change | risk |
|------|--------|------|
| conftest.py | timeout 5 → 30 | low |
| test_api.py | retry once | low |

> This is a workaround, not a fix: the server's start-up should be awaited explicitly.

"""


def answer() -> str:
    return "# Making the suite reliable\n\n" + "".join(SECTION.format(n=n) for n in range(16))


def long_code() -> str:
    lines = "".join(
        f"def handler_{n}(request, retries={n % 5}):\n    return request.get('/items/{n}')\n"
        for n in range(300)
    )
    return "The module:\n\n```python\n" + lines + "```\n"


def deltas(text: str) -> list[str]:
    return [text[i : i + TOKEN_CHARS] for i in range(0, len(text), TOKEN_CHARS)]


def stream(parts: list[str], frame_every: int, max_rows: int | None = None) -> float:
    """CPU µs per token to stream ``parts``, the live tail every ``frame_every`` deltas."""
    from tether.cli.ui.markdown import StreamingMarkdown

    md = StreamingMarkdown(width=100, color=True)
    started = time.process_time()
    for index, part in enumerate(parts):
        md.feed(part)
        if index % frame_every == 0:
            md.live(max_rows)
    md.finish()
    return (time.process_time() - started) * 1e6 / len(parts)


def naive(parts: list[str], frame_every: int) -> float:
    """CPU µs per token to re-render the whole answer so far every ``frame_every`` deltas."""
    from rich.console import Console
    from rich.markdown import Markdown

    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True, color_system="truecolor")
    text = ""
    started = time.process_time()
    for index, part in enumerate(parts):
        text += part
        if index % frame_every == 0 or index == len(parts) - 1:
            out.seek(0)
            out.truncate()
            console.print(Markdown(text))
    return (time.process_time() - started) * 1e6 / len(parts)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--json-out", help="also write the figures as JSON here")
    options = parser.parse_args(argv)
    repeats = 3 if options.quick else 5
    parts = deltas(answer())
    code = deltas(long_code())
    runs = {
        "stream, live tail per token": lambda: stream(parts, 1),
        "stream, live tail at 30 fps": lambda: stream(parts, FRAME_EVERY),
        "re-render whole at 30 fps": lambda: naive(parts, FRAME_EVERY),
        "600-line code, live whole": lambda: stream(code, FRAME_EVERY),
        "600-line code, last 50 rows": lambda: stream(code, FRAME_EVERY, 50),
    }
    for run in runs.values():  # warm-up: imports, lexers, caches
        run()
    samples: dict[str, list[float]] = {label: [] for label in runs}
    for index in range(repeats):
        order = list(runs) if index % 2 == 0 else list(reversed(runs))
        for label in order:
            samples[label].append(runs[label]())
    print(
        f"Markdown rendering: {len(parts)} tokens (the code block: {len(code)}) of "
        f"{TOKEN_CHARS} characters, width 100, median of {repeats}; 300 tokens/s allows "
        f"{BUDGET_US:,.0f} µs per token"
    )
    figures: dict[str, Any] = {}
    for label, values in samples.items():
        median = statistics.median(values)
        share = median / BUDGET_US
        figures[label] = {"us_per_token": median, "share_of_budget": share}
        print(f"  {label:<30} {median:9.1f} µs/token   {share:6.1%} of {BUDGET_US:,.0f} µs")
    found = [
        goals.at_most(
            "streamed Markdown, live tail at 30 fps: CPU per token",
            samples["stream, live tail at 30 fps"],
            BUDGET_US / 10,
            unit="µs",
        ),
        goals.at_most(
            "streamed Markdown, live tail per token: CPU per token",
            samples["stream, live tail per token"],
            BUDGET_US,
            unit="µs",
        ),
        goals.at_most(
            "streamed Markdown at 30 fps vs re-rendering the whole answer",
            goals.ratios(
                samples["stream, live tail at 30 fps"], samples["re-render whole at 30 fps"]
            ),
            0.2,
        ),
        goals.at_most(
            "a streamed 600-line code block, last 50 rows at 30 fps: CPU per token",
            samples["600-line code, last 50 rows"],
            BUDGET_US / 10,
            unit="µs",
        ),
    ]
    for goal in found:
        print(goals.line(goal))
    if options.json_out:
        output: dict[str, Any] = {**figures, "goals": found}
        Path(options.json_out).write_text(json.dumps(output, indent=2), encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
