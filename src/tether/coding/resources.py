"""The skills and prompt templates ``tether chat`` offers, read as resources.

Two trusted roots, in precedence order, each used only when it is a directory:

* ``project``: ``<cwd>/.tether``;
* ``user``: the user's config directory (``~/.config/tether``, see
  ``tether.coding.context_files.user_config_dir``).

Under them, ``skills/<name>/SKILL.md`` are skills and ``prompts/<name>.md`` are prompt
templates (formats: ``tether.agent.skills``). Skills are announced in the system prompt and
read on demand by the ``load_skill`` tool; ``/name args`` in the chat expands a template and
sends it. Every read goes through one ``ResourceLoader``, so a file is confined to its root
and re-checked on each read. A file that breaks the format is reported once when the chat
starts its agent (``problems``) and otherwise ignored; a root that cannot be listed is too.
"""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from tether._base.dataclass import dataclass

if TYPE_CHECKING:
    from tether.agent.resources import ResourceLoader
    from tether.agent.skills import PromptTemplate, Skill, SkillDiscovery, TemplateDiscovery
    from tether.tools.contract import ToolDefinition

__all__ = ["PROJECT_DIRECTORY", "ChatResources", "load_chat_resources", "resource_directories"]

PROJECT_DIRECTORY: Final = ".tether"
"""The project's resource directory, relative to the chat's working directory."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatResources:
    """What the resource roots of ``root`` (a workspace) hold: ``skills`` and ``templates``
    (sorted by name), the ``loader`` that reads them (``None`` when no root exists) and one
    line per problem."""

    root: Path | None = None
    loader: ResourceLoader | None = None
    skills: tuple[Skill, ...] = ()
    templates: tuple[PromptTemplate, ...] = ()
    problems: tuple[str, ...] = ()

    def system_section(self) -> str:
        """The system prompt section announcing the skills (``""`` when there are none)."""
        from tether.agent.skills import skills_system_prompt

        return skills_system_prompt(self.skills)

    def tools(self) -> tuple[ToolDefinition[Any, Any], ...]:
        """``(load_skill,)`` when there are skills, else ``()``."""
        if self.loader is None or not self.skills:
            return ()
        from tether.agent.skills import load_skill_tool

        return (load_skill_tool(self.loader, self.skills),)

    def expand(self, text: str) -> str | None:
        """The prompt ``/name args`` expands to when ``name`` is a template, else ``None``."""
        from tether.agent.skills import expand_slash_command

        return expand_slash_command(text, self.templates)


def resource_directories(cwd: Path, config_dir: Path | None) -> list[tuple[str, Path]]:
    """The ``(root id, directory)`` pairs that exist, in precedence order (``config_dir``
    ``None``: the project's only)."""
    candidates = [("project", cwd / PROJECT_DIRECTORY)]
    if config_dir is not None:
        candidates.append(("user", config_dir))
    return [(name, path) for name, path in candidates if path.is_dir()]


async def load_chat_resources(cwd: Path, config_dir: Path | None) -> ChatResources:
    """Discover the skills and templates under the roots of ``cwd`` and ``config_dir``."""
    from tether.agent.resources import ResourceError, ResourceLoader, ResourceRootDefinition
    from tether.agent.skills import discover_prompt_templates, discover_skills

    directories = resource_directories(cwd, config_dir)
    if not directories:
        return ChatResources(root=cwd)
    try:
        loader = await ResourceLoader.create(
            [ResourceRootDefinition(id=name, directory=path) for name, path in directories]
        )
    except ResourceError as error:
        return ChatResources(root=cwd, problems=(f"resources: [{error.code}] {error}",))
    problems: list[str] = []
    skills = await _discovered(discover_skills(loader), "skill", "skills", problems)
    templates = await _discovered(
        discover_prompt_templates(loader), "template", "prompts", problems
    )
    return ChatResources(
        root=cwd,
        loader=loader,
        skills=() if skills is None else skills.skills,
        templates=() if templates is None else templates.templates,
        problems=tuple(problems),
    )


D = TypeVar("D", "SkillDiscovery", "TemplateDiscovery")
"""What a discovery finds (skills, or prompt templates)."""


async def _discovered(
    discovery: Awaitable[D], each: str, kind: str, problems: list[str]
) -> D | None:
    """What ``discovery`` found, with a line in ``problems`` for each file it skipped
    (``each PATH: [CODE] message``); ``None`` and one line for all of ``kind`` when the
    resources could not be read (a ``ResourceError``)."""
    from tether.agent.resources import ResourceError

    try:
        found = await discovery
    except ResourceError as error:
        problems.append(f"{kind}: [{error.code}] {error}")
        return None
    problems += [f"{each} {p.path}: [{p.code}] {p.message}" for p in found.problems]
    return found
