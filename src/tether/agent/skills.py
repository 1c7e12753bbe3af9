"""Skills and prompt templates, read as resources through a ``ResourceLoader``.

The formats follow Pi's coding agent and the Agent Skills convention:

* a **skill** is ``skills/<name>/SKILL.md`` under any resource root. It opens with front
  matter: a first line ``---``, ``key: value`` lines, a closing ``---`` line, holding
  ``name`` (which must equal the directory name and match ``[a-z0-9][a-z0-9-]{0,63}``) and
  ``description`` (non-empty, at most 1,024 code points). Only the names and descriptions go
  into the system prompt (``skills_system_prompt``); the model reads a skill's body on demand
  with the ``load_skill`` tool (``load_skill_tool``), which re-reads the file through the
  loader at call time, so every confinement and race check applies to each read.
* a **prompt template** is ``prompts/<name>.md`` (the same name rule, from the file name),
  with optional front matter holding ``description``. ``/name args`` in user input
  (``parse_slash_command``) expands the template with shell-like arguments
  (``expand_template``) as Pi does: ``$N`` (the Nth argument, any number of digits; ``$0``
  and missing ones are empty), ``${@:N}`` (the arguments from the Nth on), ``${@:N:L}`` (``L``
  arguments from the Nth), ``$@`` and ``$ARGUMENTS`` (all of them).

Discovery never fails because of one bad file: a file that cannot be read or does not follow
the format becomes a ``SkillProblem``/``TemplateProblem`` next to the good entries. Only a
failure to list the directory itself (its root changed, it escapes its root, too many
entries) raises the loader's ``ResourceError``. Precedence is the loader's: the first root
that has a file wins its name.

The front matter parser is deliberately tiny (no YAML): one ``key: value`` per line, the
value optionally wrapped in matching single or double quotes; blank lines, ``#`` comments,
indented lines and lines without ``:`` are ignored; the first occurrence of a key wins. The
one piece of YAML it knows is the block scalar that skill files commonly use for long
descriptions: a value of ``|`` or ``>`` (optionally with a ``-`` or ``+`` chomping indicator)
takes the indented (and blank) lines after it, dedented; ``|`` keeps their line breaks, ``>``
folds each run of lines into one line joined by spaces (a blank line stays a line break).
The result is stripped, so chomping indicators make no difference; indentation indicators
(``|2``) are not supported (such a value is taken literally).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Final, Literal, TypeAlias

from tether._base.dataclass import dataclass
from tether._base.strings import JS_WHITESPACE, code_points, is_non_empty
from tether._base.tether_error import TetherError
from tether.agent.resources import (
    MAX_RESOURCE_TEXT_BYTES,
    ResourceError,
    ResourceErrorCode,
    ResourceLoader,
)
from tether.tools.contract import ToolDefinition
from tether.tools.function import tool

__all__ = [
    "MAX_DESCRIPTION_CHARACTERS",
    "NAME_PATTERN",
    "PromptTemplate",
    "Skill",
    "SkillDiscovery",
    "SkillError",
    "SkillErrorCode",
    "SkillProblem",
    "SkillProblemCode",
    "TemplateDiscovery",
    "TemplateProblem",
    "TemplateProblemCode",
    "discover_prompt_templates",
    "discover_skills",
    "expand_slash_command",
    "expand_template",
    "load_skill_tool",
    "parse_front_matter",
    "parse_slash_command",
    "skills_system_prompt",
    "split_arguments",
]

NAME_PATTERN: Final = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
"""What a skill or template name must match in full: lowercase letters, digits and ``-``,
not starting with ``-``, 1-64 characters."""

MAX_DESCRIPTION_CHARACTERS: Final = 1_024
"""The longest description, in code points."""

SkillProblemCode: TypeAlias = (
    ResourceErrorCode
    | Literal[
        "SKILL_MISSING_FRONT_MATTER",
        "SKILL_INVALID_NAME",
        "SKILL_NAME_MISMATCH",
        "SKILL_INVALID_DESCRIPTION",
    ]
)
"""Why a ``SKILL.md`` was skipped: a ``ResourceError`` code or a format rule."""

TemplateProblemCode: TypeAlias = (
    ResourceErrorCode | Literal["TEMPLATE_INVALID_NAME", "TEMPLATE_INVALID_DESCRIPTION"]
)
"""Why a prompt template was skipped: a ``ResourceError`` code or a format rule."""

SkillErrorCode: TypeAlias = Literal["SKILL_NOT_FOUND", "SKILL_UNAVAILABLE"]
"""Why a ``load_skill`` call failed."""


class SkillError(TetherError[SkillErrorCode]):
    """A ``load_skill`` call failed; the message starts with the code (``"CODE: detail"``),
    which is what the model sees in the tool's error result."""

    def __init__(self, code: SkillErrorCode, detail: str) -> None:
        super().__init__(code, f"{code}: {detail}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Skill:
    """A discovered skill: its name and description, and where its ``SKILL.md`` was found
    (``path`` is the normalized resource path, ``root_id`` the root that supplied it)."""

    name: str
    description: str
    path: str
    root_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillProblem:
    """A ``SKILL.md`` that was skipped, and why."""

    path: str
    code: SkillProblemCode
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillDiscovery:
    """What ``discover_skills`` found: the valid skills (by name) and the skipped files."""

    skills: tuple[Skill, ...]
    problems: tuple[SkillProblem, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptTemplate:
    """A discovered prompt template: ``content`` is the text after any front matter;
    ``description`` comes from the front matter, else the first non-blank line."""

    name: str
    description: str
    content: str
    path: str
    root_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TemplateProblem:
    """A prompt template file that was skipped, and why."""

    path: str
    code: TemplateProblemCode
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TemplateDiscovery:
    """What ``discover_prompt_templates`` found: valid templates (by name) and problems."""

    templates: tuple[PromptTemplate, ...]
    problems: tuple[TemplateProblem, ...]


# --- front matter -------------------------------------------------------------------------------

_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


def _lines(text: str) -> Iterable[tuple[str, int]]:
    """Each line without its terminator, with the offset just after the terminator."""
    position = 0
    while position < len(text):
        match = _LINE.match(text, position)
        assert match is not None  # the pattern matches at every position
        line = match.group()
        position = match.end()
        yield line.rstrip("\r\n"), position


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


_BLOCK_INDICATORS: Final = frozenset({"|", "|-", "|+", ">", ">-", ">+"})


def _block_scalar(lines: list[str], literal: bool) -> str:
    """A block scalar's value from its lines (see the module docs)."""
    dedented = textwrap.dedent("\n".join(lines)).split("\n")
    if literal:
        return "\n".join(dedented).strip(JS_WHITESPACE)
    paragraphs: list[list[str]] = [[]]
    for line in dedented:
        if line.strip(" \t"):
            paragraphs[-1].append(line.strip(" \t"))
        elif paragraphs[-1]:
            paragraphs.append([])
    return "\n".join(" ".join(paragraph) for paragraph in paragraphs if paragraph)


def parse_front_matter(text: str) -> tuple[Mapping[str, str], str] | None:
    """Split ``text`` into its front matter fields and the body after it, or ``None`` when it
    has none (the first line is not ``---``, or no later line closes it with ``---``).

    Delimiter lines may carry trailing spaces or tabs. Fields are ``key: value`` lines (see
    the module docs); keys and values are stripped and a value's matching outer quotes
    removed; a ``|`` or ``>`` value takes the indented lines after it (a block scalar). The
    body starts right after the closing line's terminator.
    """
    fields: dict[str, str] = {}
    block: list[str] | None = None  # the lines of the block scalar being read, if any
    block_key = ""
    literal = False
    lines = iter(_lines(text))
    first = next(lines, None)
    if first is None or first[0].rstrip(" \t") != "---":
        return None
    for line, end in lines:
        closing = line.rstrip(" \t") == "---"
        if block is not None:
            if not closing and (not line.strip(" \t") or line[0] in " \t"):
                block.append(line)
                continue
            fields[block_key] = _block_scalar(block, literal)
            block = None
        if closing:
            return fields, text[end:]
        if not line or line[0] in " \t#" or ":" not in line:
            continue
        key, value = line.split(":", 1)
        key = key.strip(JS_WHITESPACE)
        if key and key not in fields:
            value = value.strip(JS_WHITESPACE)
            if value in _BLOCK_INDICATORS:
                block, block_key, literal = [], key, value[0] == "|"
            else:
                fields[key] = _unquote(value)
    return None


def _valid_name(name: str) -> bool:
    return NAME_PATTERN.fullmatch(name) is not None


def _description_problem(description: str) -> str | None:
    if not is_non_empty(description):
        return "description must be a non-empty string"
    if code_points(description)[0] > MAX_DESCRIPTION_CHARACTERS:
        return f"description exceeds {MAX_DESCRIPTION_CHARACTERS} characters"
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- skills -------------------------------------------------------------------------------------


async def discover_skills(loader: ResourceLoader, directory: str = "skills") -> SkillDiscovery:
    """The skills under ``<directory>/<name>/SKILL.md`` across the loader's roots.

    Entries without a ``SKILL.md`` are not skills and are ignored. A ``SKILL.md`` that
    cannot be read (``ResourceError`` code: too large, invalid UTF-8, ...), has no front
    matter, a bad or mismatched ``name``, or a bad ``description`` is reported in
    ``problems``. Skills are sorted by name; the first root that has a ``SKILL.md`` for a
    name supplies it. Listing ``directory`` itself can raise ``ResourceError``.
    """
    skills: list[Skill] = []
    problems: list[SkillProblem] = []
    for entry in await loader.list_directory(directory):
        folder = entry.path.rsplit("/", 1)[-1]
        path = f"{entry.path}/SKILL.md"
        try:
            resource = await loader.load_text(path)
        except ResourceError as error:
            problems.append(SkillProblem(path=path, code=error.code, message=error.message))
            continue
        if resource is None:
            continue
        outcome = _skill(folder, resource.content, path, resource.root_id)
        if isinstance(outcome, Skill):
            skills.append(outcome)
        else:
            problems.append(outcome)
    return SkillDiscovery(skills=tuple(skills), problems=tuple(problems))


def _skill(folder: str, content: str, path: str, root_id: str) -> Skill | SkillProblem:
    parsed = parse_front_matter(content)
    if parsed is None:
        return SkillProblem(
            path=path,
            code="SKILL_MISSING_FRONT_MATTER",
            message=f"{path}: missing front matter (a first line '---', fields, a '---' line)",
        )
    fields = parsed[0]
    name = fields.get("name", "")
    if not _valid_name(name):
        return SkillProblem(
            path=path,
            code="SKILL_INVALID_NAME",
            message=f"{path}: name {name!r} must match {NAME_PATTERN.pattern}",
        )
    if name != folder:
        return SkillProblem(
            path=path,
            code="SKILL_NAME_MISMATCH",
            message=f"{path}: name {name!r} must equal its directory name {folder!r}",
        )
    description = fields.get("description", "")
    problem = _description_problem(description)
    if problem is not None:
        return SkillProblem(
            path=path, code="SKILL_INVALID_DESCRIPTION", message=f"{path}: {problem}"
        )
    return Skill(name=name, description=description, path=path, root_id=root_id)


def skills_system_prompt(skills: Sequence[Skill]) -> str:
    """The system prompt section announcing ``skills`` (``""`` when there are none): one
    line per skill with its name and description, and how to read one (``load_skill``)."""
    if not skills:
        return ""
    lines = [
        "## Skills",
        "",
        "Skills are specialized instructions for particular tasks. When a task matches a",
        "skill's description, call the `load_skill` tool with that skill's name and follow",
        "the instructions it returns. Available skills:",
        "",
    ]
    lines.extend(f"- {skill.name}: {_one_line(skill.description)}" for skill in skills)
    return "\n".join(lines) + "\n"


def load_skill_tool(
    loader: ResourceLoader,
    skills: Sequence[Skill],
    *,
    output_limit: int = MAX_RESOURCE_TEXT_BYTES,
) -> ToolDefinition[dict[str, Any], str]:
    """The ``load_skill`` tool: argument ``name``; returns that skill's ``SKILL.md`` body
    (without front matter), read through ``loader`` at call time.

    An unknown name fails with ``SKILL_NOT_FOUND`` listing the known names; a file that is
    gone, unreadable or no longer has front matter fails with ``SKILL_UNAVAILABLE`` (the
    reason inside). Either way the model sees an ``is_error`` result. ``output_limit``
    defaults to ``MAX_RESOURCE_TEXT_BYTES``, so a skill is never truncated.
    """
    by_name = {skill.name: skill for skill in reversed(tuple(skills))}
    known = ", ".join(sorted(by_name)) or "(none)"

    async def load_skill(
        name: Annotated[str, "The name of the skill to load, as listed in the system prompt."],
    ) -> str:
        skill = by_name.get(name)
        if skill is None:
            raise SkillError("SKILL_NOT_FOUND", f"Unknown skill {name!r}; known skills: {known}")
        try:
            resource = await loader.load_text(skill.path)
        except ResourceError as error:
            raise SkillError(
                "SKILL_UNAVAILABLE", f"Skill {name!r} could not be read: {error.code}: {error}"
            ) from error
        if resource is None:
            raise SkillError("SKILL_UNAVAILABLE", f"Skill {name!r} no longer exists")
        parsed = parse_front_matter(resource.content)
        if parsed is None:
            raise SkillError("SKILL_UNAVAILABLE", f"Skill {name!r} no longer has front matter")
        return parsed[1].lstrip("\r\n")

    return tool(
        name="load_skill",
        description=("Load the full instructions of a skill by name. Available skills: " + known),
        output_limit=output_limit,
    )(load_skill)


# --- prompt templates ---------------------------------------------------------------------------


async def discover_prompt_templates(
    loader: ResourceLoader, directory: str = "prompts"
) -> TemplateDiscovery:
    """The prompt templates ``<directory>/<name>.md`` across the loader's roots.

    Other files and subdirectories are ignored. A ``.md`` file whose stem breaks the name
    rule, that cannot be read, or whose description is too long is reported in
    ``problems``. Templates are sorted by name; the first root with the file supplies it.
    Listing ``directory`` itself can raise ``ResourceError``.
    """
    templates: list[PromptTemplate] = []
    problems: list[TemplateProblem] = []
    for entry in await loader.list_directory(directory):
        file_name = entry.path.rsplit("/", 1)[-1]
        if entry.kind != "file" or not file_name.endswith(".md"):
            continue
        name = file_name.removesuffix(".md")
        path = entry.path
        if not _valid_name(name):
            problems.append(
                TemplateProblem(
                    path=path,
                    code="TEMPLATE_INVALID_NAME",
                    message=f"{path}: name {name!r} must match {NAME_PATTERN.pattern}",
                )
            )
            continue
        try:
            resource = await loader.load_text(path)
        except ResourceError as error:
            problems.append(TemplateProblem(path=path, code=error.code, message=error.message))
            continue
        if resource is None:  # removed since the listing
            continue
        outcome = _template(name, resource.content, path, resource.root_id)
        if isinstance(outcome, PromptTemplate):
            templates.append(outcome)
        else:
            problems.append(outcome)
    return TemplateDiscovery(templates=tuple(templates), problems=tuple(problems))


def _template(name: str, text: str, path: str, root_id: str) -> PromptTemplate | TemplateProblem:
    parsed = parse_front_matter(text)
    description = ""
    content = text
    if parsed is not None:
        fields, content = parsed
        description = fields.get("description", "")
    if not is_non_empty(description):
        first = next((line for line in content.splitlines() if is_non_empty(line)), "")
        description = first.strip(JS_WHITESPACE)[:MAX_DESCRIPTION_CHARACTERS]
    elif (problem := _description_problem(description)) is not None:
        return TemplateProblem(
            path=path, code="TEMPLATE_INVALID_DESCRIPTION", message=f"{path}: {problem}"
        )
    return PromptTemplate(
        name=name, description=description, content=content, path=path, root_id=root_id
    )


def split_arguments(arguments: str) -> tuple[str, ...]:
    """Split ``arguments`` like a shell, simply: whitespace separates; ``"..."`` and
    ``'...'`` group (quotes removed, adjacent text joins the same argument, ``""`` is an
    empty argument); there are no escapes. An unclosed quote takes the rest of the text."""
    result: list[str] = []
    current: list[str] = []
    started = False
    quote = ""
    for char in arguments:
        if quote:
            if char == quote:
                quote = ""
            else:
                current.append(char)
        elif char in "\"'":
            quote = char
            started = True
        elif char.isspace():
            if started:
                result.append("".join(current))
                current.clear()
                started = False
        else:
            current.append(char)
            started = True
    if started:
        result.append("".join(current))
    return tuple(result)


_PLACEHOLDER: Final = re.compile(r"\$(?:([0-9]+)|\{@:([0-9]+)(?::([0-9]+))?\}|@|ARGUMENTS)")


def _number(digits: str) -> int:
    """``digits`` as a number, capped far above any possible argument count (so a huge one
    never reaches ``int``'s digit limit)."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10**18


def expand_template(template: PromptTemplate, arguments: str) -> str:
    """``template.content`` with its placeholders replaced, as Pi does, by the arguments
    (``split_arguments``):

    * ``$N`` (any number of digits, ``$10`` is the tenth): the Nth argument; ``$0`` and a
      missing one become ``""``;
    * ``${@:N}``: the arguments from the Nth on, joined with single spaces (``N`` of ``0``
      counts as ``1``); ``${@:N:L}``: at most ``L`` of them from the Nth;
    * ``$@`` and ``$ARGUMENTS``: all the arguments joined with single spaces.

    Nothing else changes; substituted text is never expanded again.
    """
    values = split_arguments(arguments)

    def replace(match: re.Match[str]) -> str:
        position, start, length = match.groups()
        if position is not None:
            index = _number(position) - 1
            return values[index] if 0 <= index < len(values) else ""
        if start is None:
            return " ".join(values)
        first = max(_number(start) - 1, 0)
        last = len(values) if length is None else first + _number(length)
        return " ".join(values[first:last])

    return _PLACEHOLDER.sub(replace, template.content)


_SLASH: Final = re.compile(r"/([a-z0-9][a-z0-9-]{0,63})(?:\s+|$)(.*)", re.DOTALL)


def parse_slash_command(text: str) -> tuple[str, str] | None:
    """``"/name rest"`` as ``("name", "rest")``, else ``None``.

    ``text`` must start with ``/`` directly followed by a name matching ``NAME_PATTERN``
    and then whitespace or the end; the rest has surrounding whitespace removed (``""`` when
    there is none).
    """
    match = _SLASH.fullmatch(text)
    if match is None:
        return None
    return match.group(1), match.group(2).strip()


def expand_slash_command(text: str, templates: Sequence[PromptTemplate]) -> str | None:
    """The expansion of ``text`` when it is ``/name args`` for one of ``templates``, else
    ``None`` (not a command, or no template of that name)."""
    command = parse_slash_command(text)
    if command is None:
        return None
    name, arguments = command
    for template in templates:
        if template.name == name:
            return expand_template(template, arguments)
    return None
