"""``/export``: a session as one self-contained HTML page.

``session_html(messages, title=...)`` builds the page from protocol messages (a session
branch's ``SessionContext.messages``, the Agent's transcript): the person's messages, the
model's text, its thinking in a collapsed ``<details>`` (a redacted block says so), every
tool call with its name and indented JSON arguments, every tool result (an error marked as
one; a long result collapsed behind its first line), the images of messages inline (``data:``
URLs), and an optional compaction summary at the top. The page has inline CSS, no external
asset, no script, and a Content-Security-Policy that forbids loading or running anything but
its own ``data:`` images, so it opens the same anywhere, offline.

Every piece of session text is HTML-escaped (``&``, ``<``, ``>``, both quotes), so no content
can close a tag or open a script, and control characters are shown as visible escapes
(``tether.cli.ui.text``). Text is shown as written, whitespace kept (``pre-wrap``).

``export_html(messages, path, title=...)`` writes the page atomically: a temporary file in
the same directory (mode ``0600``: a session can hold tool output a person would not
publish), flushed to disk, then renamed over ``path``; on failure nothing is left behind and
``CliError`` ``CLI_EXPORT_FAILED`` says why.
"""

from __future__ import annotations

import base64
import contextlib
import html
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from tether.cli.ui.text import pretty_json, visible
from tether.protocol import (
    AssistantMessage,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    assert_never,
)

__all__ = ["RESULT_OPEN_LINES", "export_html", "session_html"]

RESULT_OPEN_LINES: Final = 12
"""A tool result of at most this many lines is shown open; a longer one starts collapsed."""

_CSS: Final = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #656d76;
  --box: #f6f8fa; --line: #d0d7de; --user: #ddf4ff; --error: #cf222e; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #8d96a0;
  --box: #161b22; --line: #30363d; --user: #0c2d6b; --error: #ff7b72; } }
body { margin: 0 auto; max-width: 60rem; padding: 1.5rem; color: var(--fg);
  background: var(--bg); font: 15px/1.5 system-ui, sans-serif; }
h1 { font-size: 1.3rem; }
.message { margin: 1rem 0; padding: 0.75rem 1rem; border: 1px solid var(--line);
  border-radius: 6px; }
.user { background: var(--user); }
.image { display: block; max-width: 100%; margin-top: 0.5rem; }
.role { font-size: 0.8rem; font-weight: 600; color: var(--muted); text-transform: uppercase; }
pre, .text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.4rem 0; }
pre { font: 13px/1.45 ui-monospace, monospace; background: var(--box); padding: 0.5rem;
  border-radius: 4px; }
details { margin: 0.4rem 0; }
summary { cursor: pointer; color: var(--muted); }
.thinking pre { font-style: italic; color: var(--muted); }
.tool-name { font-family: ui-monospace, monospace; font-weight: 600; }
.error .role, .error summary { color: var(--error); }
.meta { color: var(--muted); font-size: 0.85rem; }
"""

_CSP: Final = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'"


def _e(text: str) -> str:
    return html.escape(visible(text, strict=False), quote=True)


def _pre(text: str, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<pre{attr}>{_e(text)}</pre>"


def _assistant(message: AssistantMessage) -> list[str]:
    out = ['<section class="message assistant">', '<div class="role">assistant</div>']
    for block in message.content:
        match block:
            case TextBlock():
                out.append(f'<div class="text">{_e(block.text)}</div>')
            case ThinkingBlock():
                body = "(redacted thinking)" if block.redacted or not block.text else block.text
                out.append(
                    f'<details class="thinking"><summary>thinking</summary>{_pre(body)}</details>'
                )
            case ToolCall():
                arguments = pretty_json(block.arguments)
                out.append(
                    '<div class="tool-call">→ <span class="tool-name">'
                    f"{_e(block.name)}</span>{_pre(arguments)}</div>"
                )
            case _:
                assert_never(block)
    out.append("</section>")
    return out


def _images(images: Sequence[ImageBlock]) -> list[str]:
    """Each image inline, as a ``data:`` URL (the page loads nothing else)."""
    return [
        f'<img class="image" alt="{image.media_type} {image.width}x{image.height}" '
        f'src="data:{image.media_type};base64,{base64.b64encode(image.data).decode()}">'
        for image in images
    ]


def _result(message: ToolResultMessage) -> list[str]:
    kind = "error" if message.is_error else "result"
    lines = message.content.split("\n")
    head = next((line for line in lines if line.strip()), "(empty)")
    opened = " open" if len(lines) <= RESULT_OPEN_LINES else ""
    label = f"{kind} of {message.tool_name} ({len(lines)} line{'' if len(lines) == 1 else 's'})"
    return [
        f'<section class="message tool-result{" error" if message.is_error else ""}">',
        f'<div class="role">{_e(label)}</div>',
        f"<details{opened}><summary>{_e(head[:200])}</summary>{_pre(message.content)}</details>",
        *_images(message.images),
        "</section>",
    ]


def session_html(
    messages: Sequence[Message],
    *,
    title: str,
    summary: str | None = None,
    note: str | None = None,
) -> str:
    """The page for ``messages`` (see the module docstring). ``summary`` is a compaction
    summary shown first; ``note`` a line under the title (the model, the date)."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{_e(title)}</h1>",
    ]
    if note is not None:
        out.append(f'<p class="meta">{_e(note)}</p>')
    if summary is not None:
        out.append(
            '<details class="message summary"><summary>summary of the earlier conversation'
            f"</summary>{_pre(summary)}</details>"
        )
    for message in messages:
        match message:
            case UserMessage():
                out += [
                    '<section class="message user">',
                    '<div class="role">you</div>',
                    f'<div class="text">{_e(message.content)}</div>',
                    *_images(message.images),
                    "</section>",
                ]
            case AssistantMessage():
                out += _assistant(message)
            case ToolResultMessage():
                out += _result(message)
            case _:
                assert_never(message)
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def export_html(
    messages: Sequence[Message],
    path: str | os.PathLike[str],
    *,
    title: str,
    summary: str | None = None,
    note: str | None = None,
) -> Path:
    """Write ``session_html(...)`` to ``path`` atomically (see the module docstring); the
    path written. ``CliError`` ``CLI_EXPORT_FAILED`` when it cannot be written."""
    from tether.cli.config import CliError

    target = Path(path)
    page = session_html(messages, title=title, summary=summary, note=note).encode("utf-8")
    temporary: str | None = None
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
        )
        with os.fdopen(handle, "wb") as file:
            file.write(page)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
        temporary = None
    except (OSError, ValueError) as error:  # ValueError: a NUL byte in the path
        reason = (error.strerror if isinstance(error, OSError) else None) or str(error)
        raise CliError(
            "CLI_EXPORT_FAILED",
            f"could not write {target}: {reason} (choose a path in a writable directory)",
        ) from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    return target
