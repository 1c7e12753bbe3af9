"""Skills and prompt templates as resources: front matter, discovery over several roots with
precedence and problems, the system prompt section, the ``load_skill`` tool end to end through
``execute_tool_call``, template expansion and slash commands. Real temp directories."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import examples
from tether import AbortController, JsonObject, ToolCall, ToolRegistry, ToolResultMessage
from tether.agent.resources import (
    MAX_RESOURCE_TEXT_BYTES,
    ResourceEntry,
    ResourceError,
    ResourceLoader,
    ResourceRootDefinition,
)
from tether.agent.skills import (
    NAME_PATTERN,
    PromptTemplate,
    Skill,
    SkillError,
    SkillProblem,
    TemplateProblem,
    discover_prompt_templates,
    discover_skills,
    expand_slash_command,
    expand_template,
    load_skill_tool,
    parse_front_matter,
    parse_slash_command,
    skills_system_prompt,
    split_arguments,
)
from tether.tools.execution import execute_tool_call


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def skill_text(name: str, description: str, body: str = "Do the thing.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


async def loader_for(*directories: Path) -> ResourceLoader:
    return await ResourceLoader.create(
        [
            ResourceRootDefinition(id=f"r{index}", directory=directory)
            for index, directory in enumerate(directories)
        ]
    )


# --- front matter -------------------------------------------------------------------------------


def test_front_matter_fields_and_body() -> None:
    text = (
        "---  \n"
        "name: my-skill\n"
        'description: "Quoted: with colon"\n'
        "# a comment\n"
        "\n"
        "  indented: ignored\n"
        "no colon here\n"
        "single: 'x'\n"
        "name: second wins not\n"
        "empty:\n"
        ": no key\n"
        "mismatched: \"x'\n"
        "---\t\n"
        "Body line\n---\nmore\n"
    )
    parsed = parse_front_matter(text)
    assert parsed is not None
    fields, body = parsed
    assert dict(fields) == {
        "name": "my-skill",
        "description": "Quoted: with colon",
        "single": "x",
        "empty": "",
        "mismatched": "\"x'",
    }
    assert body == "Body line\n---\nmore\n"


_LINE_ENDINGS: list[tuple[str, tuple[dict[str, str], str]]] = [
    ("---\r\nname: a\r\n---\r\nbody\r\n", ({"name": "a"}, "body\r\n")),
    ("---\rname: a\r---\rbody", ({"name": "a"}, "body")),
    ("---\n---", ({}, "")),
    ("---\n---\n", ({}, "")),
]


@pytest.mark.parametrize(("text", "expected"), _LINE_ENDINGS)
def test_front_matter_line_endings(text: str, expected: tuple[dict[str, str], str]) -> None:
    parsed = parse_front_matter(text)
    assert parsed is not None
    assert (dict(parsed[0]), parsed[1]) == expected


@pytest.mark.parametrize(
    "text", ["", "no front matter", "---\nname: a\n", " ---\nname: a\n---\n", "----\n---\n"]
)
def test_front_matter_absent(text: str) -> None:
    assert parse_front_matter(text) is None


@given(st.text(max_size=200))
def test_front_matter_never_raises_and_body_is_a_suffix(text: str) -> None:
    parsed = parse_front_matter(text)
    if parsed is not None:
        assert text.endswith(parsed[1])
        for key, value in parsed[0].items():
            assert key
            assert ":" not in key
            assert key in text
            # a block scalar's value is re-joined, but every word of it comes from the text
            assert all(word in text for word in value.split())


_BLOCK_SCALARS: list[tuple[str, dict[str, str]]] = [
    (
        "description: >-\n  Extract text and tables.\n  Use for PDFs.\nname: pdf\n",
        {"description": "Extract text and tables. Use for PDFs.", "name": "pdf"},
    ),
    (
        "description: >\n    One\n    two\n\n    New paragraph\n",
        {"description": "One two\nNew paragraph"},
    ),
    (
        "description: |\n  Line one\n    indented more\n\n  last\n",
        {"description": "Line one\n  indented more\n\nlast"},
    ),
    ("description: |-\n\tTabbed\n\tlines\n", {"description": "Tabbed\nlines"}),
    ("a: >+\n  kept\nb: |+\n  too\n", {"a": "kept", "b": "too"}),
    ("description: >\nname: x\n", {"description": "", "name": "x"}),
    ("description: |\n  ---\n  not the end\n", {"description": "---\nnot the end"}),
    ("description: |2\n  taken literally\n", {"description": "|2"}),
    ("description: '>'\n  ignored\n", {"description": ">"}),
    ("a: first\na: >\n  second ignored\nb: c\n", {"a": "first", "b": "c"}),
]


@pytest.mark.parametrize(("fields", "expected"), _BLOCK_SCALARS)
def test_front_matter_block_scalars(fields: str, expected: dict[str, str]) -> None:
    parsed = parse_front_matter(f"---\n{fields}---\nbody\n")
    assert parsed is not None
    assert (dict(parsed[0]), parsed[1]) == (expected, "body\n")


async def test_a_block_scalar_description_reaches_the_system_prompt(tmp_path: Path) -> None:
    write(
        tmp_path / "skills" / "pdf" / "SKILL.md",
        "---\nname: pdf\ndescription: >-\n  Extract text and tables from PDF files.\n"
        "  Use when the user mentions PDFs.\n---\nbody\n",
    )
    write(
        tmp_path / "skills" / "notes" / "SKILL.md",
        "---\ndescription: |\n  Keep notes.\n  One per line.\nname: notes\n---\n",
    )
    found = await discover_skills(await loader_for(tmp_path))
    assert found.problems == ()
    assert [(skill.name, skill.description) for skill in found.skills] == [
        ("notes", "Keep notes.\nOne per line."),
        ("pdf", "Extract text and tables from PDF files. Use when the user mentions PDFs."),
    ]
    assert skills_system_prompt(found.skills).endswith(
        "- notes: Keep notes. One per line.\n"
        "- pdf: Extract text and tables from PDF files. Use when the user mentions PDFs.\n"
    )


# --- skills discovery ---------------------------------------------------------------------------


async def test_discover_skills_precedence_and_problems(tmp_path: Path) -> None:
    high, low = tmp_path / "high", tmp_path / "low"
    write(high / "skills" / "shared" / "SKILL.md", skill_text("shared", "From high"))
    write(low / "skills" / "shared" / "SKILL.md", skill_text("shared", "From low"))
    write(low / "skills" / "pdf" / "SKILL.md", skill_text("pdf", "Work with PDF files"))
    # a directory in high without SKILL.md does not hide low's skill
    (high / "skills" / "fallback").mkdir(parents=True)
    write(low / "skills" / "fallback" / "SKILL.md", skill_text("fallback", "From low too"))
    # not skills at all: no SKILL.md, or a plain file
    (low / "skills" / "empty-dir").mkdir()
    write(low / "skills" / "README.md", "# notes")
    # problems
    write(high / "skills" / "no-front" / "SKILL.md", "# just markdown\n")
    write(high / "skills" / "Bad_Name" / "SKILL.md", skill_text("Bad_Name", "x"))
    write(high / "skills" / "mismatch" / "SKILL.md", skill_text("other", "x"))
    write(high / "skills" / "blank" / "SKILL.md", skill_text("blank", '"  "'))
    write(high / "skills" / "long" / "SKILL.md", skill_text("long", "d" * 1025))
    write(high / "skills" / "ok-long" / "SKILL.md", skill_text("ok-long", "d" * 1024))
    write(high / "skills" / "binary" / "SKILL.md", b"---\nname: binary\n\xff\n---\n")
    write(high / "skills" / "huge" / "SKILL.md", b"x" * (MAX_RESOURCE_TEXT_BYTES + 1))
    loader = await loader_for(high, low)
    found = await discover_skills(loader)
    assert found.skills == (
        Skill(
            name="fallback",
            description="From low too",
            path="skills/fallback/SKILL.md",
            root_id="r1",
        ),
        Skill(
            name="ok-long",
            description="d" * 1024,
            path="skills/ok-long/SKILL.md",
            root_id="r0",
        ),
        Skill(
            name="pdf", description="Work with PDF files", path="skills/pdf/SKILL.md", root_id="r1"
        ),
        Skill(name="shared", description="From high", path="skills/shared/SKILL.md", root_id="r0"),
    )
    pattern = NAME_PATTERN.pattern
    assert found.problems == (
        SkillProblem(
            path="skills/Bad_Name/SKILL.md",
            code="SKILL_INVALID_NAME",
            message=f"skills/Bad_Name/SKILL.md: name 'Bad_Name' must match {pattern}",
        ),
        SkillProblem(
            path="skills/binary/SKILL.md",
            code="RESOURCE_INVALID_UTF8",
            message='Resource "skills/binary/SKILL.md" is not valid UTF-8',
        ),
        SkillProblem(
            path="skills/blank/SKILL.md",
            code="SKILL_INVALID_DESCRIPTION",
            message="skills/blank/SKILL.md: description must be a non-empty string",
        ),
        SkillProblem(
            path="skills/huge/SKILL.md",
            code="RESOURCE_TOO_LARGE",
            message=f'Resource "skills/huge/SKILL.md" exceeds {MAX_RESOURCE_TEXT_BYTES} bytes',
        ),
        SkillProblem(
            path="skills/long/SKILL.md",
            code="SKILL_INVALID_DESCRIPTION",
            message="skills/long/SKILL.md: description exceeds 1024 characters",
        ),
        SkillProblem(
            path="skills/mismatch/SKILL.md",
            code="SKILL_NAME_MISMATCH",
            message=(
                "skills/mismatch/SKILL.md: name 'other' must equal its directory name 'mismatch'"
            ),
        ),
        SkillProblem(
            path="skills/no-front/SKILL.md",
            code="SKILL_MISSING_FRONT_MATTER",
            message=(
                "skills/no-front/SKILL.md: missing front matter "
                "(a first line '---', fields, a '---' line)"
            ),
        ),
    )


async def test_discover_skills_missing_name_and_custom_directory(tmp_path: Path) -> None:
    write(tmp_path / "agent" / "skills" / "x" / "SKILL.md", "---\ndescription: d\n---\n")
    write(tmp_path / "agent" / "skills" / "y" / "SKILL.md", "---\nname: y\n---\n")
    loader = await loader_for(tmp_path)
    assert await discover_skills(loader) == type(await discover_skills(loader))(
        skills=(), problems=()
    )
    found = await discover_skills(loader, "agent/skills")
    assert found.skills == ()
    assert [(problem.path, problem.code) for problem in found.problems] == [
        ("agent/skills/x/SKILL.md", "SKILL_INVALID_NAME"),
        ("agent/skills/y/SKILL.md", "SKILL_INVALID_DESCRIPTION"),
    ]


async def test_discover_skills_listing_failure_raises(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "skills").symlink_to(outside)
    loader = await loader_for(root)
    with pytest.raises(ResourceError) as caught:
        await discover_skills(loader)
    assert caught.value.code == "RESOURCE_OUTSIDE_TRUSTED_ROOTS"


async def test_escaping_skill_file_is_a_problem(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(tmp_path / "secret.md", skill_text("evil", "steal things"))
    (root / "skills" / "evil").mkdir(parents=True)
    (root / "skills" / "evil" / "SKILL.md").symlink_to(tmp_path / "secret.md")
    loader = await loader_for(root)
    found = await discover_skills(loader)
    assert found.skills == ()
    assert found.problems == (
        SkillProblem(
            path="skills/evil/SKILL.md",
            code="RESOURCE_OUTSIDE_TRUSTED_ROOTS",
            message='Resource "skills/evil/SKILL.md" is outside the trusted roots',
        ),
    )


def test_skills_system_prompt() -> None:
    assert skills_system_prompt([]) == ""
    skills = [
        Skill(name="pdf", description="Work with PDF files", path="p", root_id="r"),
        Skill(name="git", description="Multi\nline   description", path="g", root_id="r"),
    ]
    assert skills_system_prompt(skills) == (
        "## Skills\n"
        "\n"
        "Skills are specialized instructions for particular tasks. When a task matches a\n"
        "skill's description, call the `load_skill` tool with that skill's name and follow\n"
        "the instructions it returns. Available skills:\n"
        "\n"
        "- pdf: Work with PDF files\n"
        "- git: Multi line description\n"
    )


# --- the load_skill tool ------------------------------------------------------------------------

_ids = iter(range(1_000_000))


async def call(registry: ToolRegistry, **arguments: object) -> ToolResultMessage:
    tool_call = ToolCall(
        id=f"call-{next(_ids)}", name="load_skill", arguments=JsonObject(arguments)
    )
    async with asyncio.timeout(20):
        return await execute_tool_call(registry, tool_call, AbortController().signal)


def error_of(result: ToolResultMessage) -> tuple[str, str]:
    assert result.is_error, result.content
    error = json.loads(result.content)["error"]
    return str(error["code"]), str(error["message"])


async def test_load_skill_tool_end_to_end(tmp_path: Path) -> None:
    high, low = tmp_path / "high", tmp_path / "low"
    body = "\n# PDF\n\nUse pdftotext.\n" + "x" * 10_000 + "\n"
    write(low / "skills" / "pdf" / "SKILL.md", skill_text("pdf", "Work with PDF files", body))
    write(high / "skills" / "git" / "SKILL.md", skill_text("git", "Use git", "Commit often.\n"))
    loader = await loader_for(high, low)
    found = await discover_skills(loader)
    definition = load_skill_tool(loader, found.skills)
    assert definition.name == "load_skill"
    assert definition.description == (
        "Load the full instructions of a skill by name. Available skills: git, pdf"
    )
    assert definition.parameters is not None
    assert definition.parameters["required"] == ("name",)
    registry = ToolRegistry([definition])

    result = await call(registry, name="pdf")
    assert not result.is_error
    assert result.content == body.lstrip("\n")  # untruncated, front matter removed
    assert result.tool_name == "load_skill"

    # re-read at call time: an edit is seen, a removal is an error
    write(high / "skills" / "git" / "SKILL.md", skill_text("git", "Use git", "Rebase.\n"))
    assert (await call(registry, name="git")).content == "Rebase.\n"
    (high / "skills" / "git" / "SKILL.md").unlink()
    assert error_of(await call(registry, name="git")) == (
        "TOOL_EXECUTION_FAILED",
        "SKILL_UNAVAILABLE: Skill 'git' no longer exists",
    )

    assert error_of(await call(registry, name="nope")) == (
        "TOOL_EXECUTION_FAILED",
        "SKILL_NOT_FOUND: Unknown skill 'nope'; known skills: git, pdf",
    )
    code, _ = error_of(await call(registry))
    assert code == "TOOL_ARGUMENTS_INVALID"


async def test_load_skill_tool_confinement_and_format_at_call_time(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "skills" / "a" / "SKILL.md", skill_text("a", "A"))
    write(root / "skills" / "b" / "SKILL.md", skill_text("b", "B"))
    write(tmp_path / "secret.md", skill_text("a", "stolen", "SECRET"))
    loader = await loader_for(root)
    found = await discover_skills(loader)
    registry = ToolRegistry([load_skill_tool(loader, found.skills)])
    target = root / "skills" / "a" / "SKILL.md"
    target.unlink()
    target.symlink_to(tmp_path / "secret.md")
    code, message = error_of(await call(registry, name="a"))
    assert code == "TOOL_EXECUTION_FAILED"
    assert message == (
        "SKILL_UNAVAILABLE: Skill 'a' could not be read: RESOURCE_OUTSIDE_TRUSTED_ROOTS: "
        'Resource "skills/a/SKILL.md" is outside the trusted roots'
    )
    assert "SECRET" not in message
    write(root / "skills" / "b" / "SKILL.md", "no front matter any more")
    assert error_of(await call(registry, name="b")) == (
        "TOOL_EXECUTION_FAILED",
        "SKILL_UNAVAILABLE: Skill 'b' no longer has front matter",
    )


async def test_load_skill_tool_without_skills(tmp_path: Path) -> None:
    loader = await loader_for(tmp_path)
    definition = load_skill_tool(loader, [], output_limit=100)
    assert definition.output_limit == 100
    assert definition.description.endswith("Available skills: (none)")
    assert error_of(await call(ToolRegistry([definition]), name="x")) == (
        "TOOL_EXECUTION_FAILED",
        "SKILL_NOT_FOUND: Unknown skill 'x'; known skills: (none)",
    )


def test_skill_error_shape() -> None:
    error = SkillError("SKILL_NOT_FOUND", "detail")
    assert (error.code, str(error)) == ("SKILL_NOT_FOUND", "SKILL_NOT_FOUND: detail")


# --- prompt templates ---------------------------------------------------------------------------


async def test_discover_prompt_templates(tmp_path: Path) -> None:
    high, low = tmp_path / "high", tmp_path / "low"
    write(high / "prompts" / "review.md", "---\ndescription: Review code\n---\nReview $1\n")
    write(low / "prompts" / "review.md", "low review")
    write(low / "prompts" / "fix.md", "\n\n  Fix the bug in $@  \nThen test.\n")
    write(low / "prompts" / "plain.md", "---\nunclosed front matter\n")
    write(low / "prompts" / "empty.md", "")
    write(low / "prompts" / "notes.txt", "not a template")
    (low / "prompts" / "dir.md").mkdir()
    write(high / "prompts" / "Bad.md", "x")
    write(high / "prompts" / "long.md", "---\ndescription: " + "d" * 1025 + "\n---\nx")
    write(high / "prompts" / "bin.md", b"\xff")
    loader = await loader_for(high, low)
    found = await discover_prompt_templates(loader)
    assert found.templates == (
        PromptTemplate(
            name="empty", description="", content="", path="prompts/empty.md", root_id="r1"
        ),
        PromptTemplate(
            name="fix",
            description="Fix the bug in $@",
            content="\n\n  Fix the bug in $@  \nThen test.\n",
            path="prompts/fix.md",
            root_id="r1",
        ),
        PromptTemplate(
            name="plain",
            description="---",
            content="---\nunclosed front matter\n",
            path="prompts/plain.md",
            root_id="r1",
        ),
        PromptTemplate(
            name="review",
            description="Review code",
            content="Review $1\n",
            path="prompts/review.md",
            root_id="r0",
        ),
    )
    assert found.problems == (
        TemplateProblem(
            path="prompts/Bad.md",
            code="TEMPLATE_INVALID_NAME",
            message=f"prompts/Bad.md: name 'Bad' must match {NAME_PATTERN.pattern}",
        ),
        TemplateProblem(
            path="prompts/bin.md",
            code="RESOURCE_INVALID_UTF8",
            message='Resource "prompts/bin.md" is not valid UTF-8',
        ),
        TemplateProblem(
            path="prompts/long.md",
            code="TEMPLATE_INVALID_DESCRIPTION",
            message="prompts/long.md: description exceeds 1024 characters",
        ),
    )
    assert await discover_prompt_templates(loader, "nothing") == type(found)(
        templates=(), problems=()
    )


async def test_template_removed_after_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "prompts" / "kept.md", "kept")
    loader = await loader_for(tmp_path)
    real = ResourceLoader.list_directory

    async def with_ghost(self: ResourceLoader, path: str) -> tuple[ResourceEntry, ...]:
        ghost = ResourceEntry(root_id="r0", path="prompts/gone.md", kind="file")
        return (ghost, *await real(self, path))

    monkeypatch.setattr(ResourceLoader, "list_directory", with_ghost)
    found = await discover_prompt_templates(loader)
    assert [item.name for item in found.templates] == ["kept"]
    assert found.problems == ()


def template(content: str) -> PromptTemplate:
    return PromptTemplate(name="t", description="d", content=content, path="p", root_id="r")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("", ()),
        ("   ", ()),
        ("a b  c", ("a", "b", "c")),
        ('"a b" c', ("a b", "c")),
        ("'a \"b\"' c", ('a "b"', "c")),
        ('x"y z"w', ("xy zw",)),
        ('"" a', ("", "a")),
        ("''", ("",)),
        ('a "unclosed rest  of it', ("a", "unclosed rest  of it")),
        ("a 'b", ("a", "b")),
        ("\ta\nb\r\n", ("a", "b")),
        ("a\\ b", ("a\\", "b")),
    ],
)
def test_split_arguments(arguments: str, expected: tuple[str, ...]) -> None:
    assert split_arguments(arguments) == expected


@pytest.mark.parametrize(
    ("content", "arguments", "expected"),
    [
        ("Review $1 then $2.", "main.py 'the tests'", "Review main.py then the tests."),
        ("[$1][$3]", "a", "[a][]"),
        ("All: $@ / $ARGUMENTS", ' x  "y z" ', "All: x y z / x y z"),
        ("$10 $9", "a b c d e f g h i", " i"),
        ("$10|$11|$01", "a b c d e f g h i j", "j||a"),
        ("$0 $$1 $ARG $arguments $", "v", " $v $ARG $arguments $"),
        ("${@:2}|${@:2:2}|${@:0}|${@:1:0}|${@:9}", "a b c d", "b c d|b c|a b c d||"),
        ("${@:3:99}|${@:99999999999999999999999}|$99999999999999999999999", "a b c", "c||"),
        ("${@}|${@:}|${@:1:}|${@:x}|${ARGUMENTS}", "a", "${@}|${@:}|${@:1:}|${@:x}|${ARGUMENTS}"),
        ("${@:1}", "'$2' '${@:1}'", "$2 ${@:1}"),
        ("$1", "'$2' other", "$2"),  # substituted text is not expanded again
        ("no placeholders", "ignored", "no placeholders"),
    ],
)
def test_expand_template(content: str, arguments: str, expected: str) -> None:
    assert expand_template(template(content), arguments) == expected


_WORDS = st.lists(st.from_regex(r"[A-Za-z0-9_.,/-]{1,12}", fullmatch=True), max_size=8)


@settings(max_examples=examples(200))
@given(st.text(max_size=80), st.text(max_size=80))
def test_expansion_never_raises(content: str, arguments: str) -> None:
    result = expand_template(template(content), arguments)
    if "$" not in content:
        assert result == content


@settings(max_examples=examples(200))
@given(
    st.text(alphabet="${}@:0123456789ARGUMENTS x", max_size=80),
    st.text(alphabet="ab '\"$1{}@: ", max_size=40),
)
def test_placeholder_heavy_expansion_never_raises(content: str, arguments: str) -> None:
    expand_template(template(content), arguments)


@given(_WORDS, st.integers(0, 12), st.integers(0, 12) | st.none())
def test_argument_slices_match_python_slices(
    words: list[str], start: int, length: int | None
) -> None:
    placeholder = f"${{@:{start}}}" if length is None else f"${{@:{start}:{length}}}"
    first = max(start - 1, 0)
    chosen = words[first:] if length is None else words[first : first + length]
    assert expand_template(template(placeholder), " ".join(words)) == " ".join(chosen)


@given(_WORDS)
def test_simple_words_round_trip(words: list[str]) -> None:
    assert split_arguments(" ".join(words)) == tuple(words)
    quoted = " ".join(f'"{word} {word}"' for word in words)
    assert split_arguments(quoted) == tuple(f"{word} {word}" for word in words)


@given(_WORDS)
def test_positional_expansion_matches_words(words: list[str]) -> None:
    content = " ".join(f"<${index}>" for index in range(1, 10))
    expected = " ".join(f"<{words[index] if index < len(words) else ''}>" for index in range(9))
    assert expand_template(template(content), " ".join(words)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/review main.py", ("review", "main.py")),
        ("/review", ("review", "")),
        ("/review   a  b  ", ("review", "a  b")),
        ("/fix-bug\nline two", ("fix-bug", "line two")),
        ("/a1 x", ("a1", "x")),
        ("review x", None),
        (" /review x", None),
        ("/", None),
        ("/ x", None),
        ("/Review x", None),
        ("/-x", None),
        ("/usr/bin/env", None),
        ("/review:x", None),
        ("/" + "a" * 65, None),
    ],
)
def test_parse_slash_command(text: str, expected: tuple[str, str] | None) -> None:
    assert parse_slash_command(text) == expected


def test_expand_slash_command() -> None:
    templates = [
        PromptTemplate(name="review", description="d", content="Review $1", path="p", root_id="r")
    ]
    assert expand_slash_command("/review a.py", templates) == "Review a.py"
    assert expand_slash_command("/other a.py", templates) is None
    assert expand_slash_command("plain text", templates) is None


@given(st.text(max_size=40))
def test_parse_slash_command_properties(text: str) -> None:
    parsed = parse_slash_command(text)
    if parsed is not None:
        name, rest = parsed
        assert NAME_PATTERN.fullmatch(name)
        assert text.startswith("/" + name)
        assert rest == rest.strip()
