"""Tools declare their effects; who is asked before a call runs derives from them.

Adding a coding tool is its module plus one line in ``tether.tools.coding.catalog``: a child
process adds a test-only ``note`` tool (``effects={"write"}``) to the catalog and every
default follows (the config's ``approve`` list, the coding session's, the sandbox's, the
tools built, the chat's preview) without another file knowing its name.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether import ToolContractError, ToolDefinition, ToolRegistry, define_tool, tool
from tether.cli.config import APPROVABLE_TOOLS, DEFAULT_APPROVE
from tether.cli.session_config import SANDBOXED_TOOLS
from tether.coding import APPROVED_BY_DEFAULT
from tether.protocol import Valid
from tether.tools.coding import coding_tools
from tether.tools.coding.catalog import CODING_TOOLS
from tether.tools.contract import checked_effects
from tether.tools.effects import TOOL_EFFECTS, asks, tools_to_ask

TESTS = Path(__file__).resolve().parents[1]


def _definitions(registry: ToolRegistry) -> list[ToolDefinition[Any, Any]]:
    found = [registry.get(name) for name in registry.names]
    return [definition for definition in found if definition is not None]


def test_every_coding_tool_carries_the_effects_its_catalog_line_declares(tmp_path: Path) -> None:
    registry = coding_tools(tmp_path)
    declared = {entry.name: entry.effects for entry in CODING_TOOLS}
    built = {definition.name: definition.effects for definition in _definitions(registry)}
    assert built == declared
    assert registry.names == tuple(declared)
    assert built["read_file"] == frozenset({"read"})
    assert built["bash"] == frozenset({"execute"})


def test_the_defaults_derive_from_the_effects(tmp_path: Path) -> None:
    registry = _definitions(coding_tools(tmp_path))
    asked = tools_to_ask(registry)
    assert asked == {"write_file", "edit_file", "bash", "python_process"}
    assert set(DEFAULT_APPROVE) == asked == set(APPROVED_BY_DEFAULT)
    assert coding_tools(tmp_path).names == APPROVABLE_TOOLS
    assert tools_to_ask(registry, contained=("execute",)) == {"write_file", "edit_file"}
    assert {"bash", "python_process"} == SANDBOXED_TOOLS


async def _noop(value: object, context: object) -> str:
    return "ok"


def _valid(value: object) -> Valid[object]:
    return Valid(value=value)


def test_a_tool_without_declared_effects_is_asked_about() -> None:
    @tool
    def look(path: str) -> str:
        """Look at a path."""
        return path

    @tool(effects={"read"})
    def peek(path: str) -> str:
        """Peek at a path."""
        return path

    assert look.effects is None
    assert peek.effects == frozenset({"read"})
    assert tools_to_ask([look, peek]) == {"look"}
    assert "effects" not in str(peek.parameters)


@pytest.mark.parametrize("bad", ["read", b"read", {"delete"}, 3, [None], {"read", 1}])
def test_bad_effects_are_an_invalid_definition(bad: object) -> None:
    with pytest.raises(ToolContractError, match="effects must be None or a set of") as caught:
        define_tool(
            name="t",
            description="A tool.",
            validate=_valid,
            execute=_noop,
            effects=bad,  # type: ignore[arg-type]
        )
    assert caught.value.code == "INVALID_TOOL_DEFINITION"


@given(st.lists(st.sampled_from([*sorted(TOOL_EFFECTS), "delete", "READ", ""]), max_size=6))
def test_effects_are_exactly_the_subsets_of_the_known_ones(names: list[str]) -> None:
    if set(names) <= TOOL_EFFECTS:
        checked = checked_effects(names, "t")
        assert checked is not None
        assert checked == frozenset(names)
        assert asks(checked) == bool(checked & {"write", "execute", "network"})
    else:
        with pytest.raises(ToolContractError):
            checked_effects(names, "t")


_CHILD = """
import sys
from pathlib import Path

import tether.tools.coding.catalog as catalog

note = catalog.CodingToolEntry(
    name="note", effects=frozenset({"write"}), factory="tool_effects_note:note_tool"
)
catalog.CODING_TOOLS = (*catalog.CODING_TOOLS, note)  # the one line a new tool adds

from tether.cli.config import APPROVABLE_TOOLS, load_config
from tether.cli.session_config import SANDBOXED_TOOLS
from tether.cli.ui.approval import approval_preview
from tether.coding import APPROVED_BY_DEFAULT
from tether.tools.coding import coding_tools

root = Path(sys.argv[1])
config = Path(sys.argv[2])
config.write_text('[tools]\\nauto_approve = false\\n', encoding="utf-8")
print("approvable", "note" in APPROVABLE_TOOLS)
print("config asks", "note" in load_config(config).tools.approve)
print("session asks", "note" in APPROVED_BY_DEFAULT)
print("sandbox skips", "note" in SANDBOXED_TOOLS)
print("built", coding_tools(root).names[-1])
preview = approval_preview("note", {"text": "hello"}, workspace=None, width=60, color=False)
print("preview", " ".join(preview.split()))
"""


def test_a_new_coding_tool_is_its_module_and_one_catalog_line(tmp_path: Path) -> None:
    (tmp_path / "tool_effects_note.py").write_text(
        "from tether import Valid, define_tool\n"
        "from tether.tools.coding.catalog import coding_tool_effects\n"
        "async def _run(value, context):\n"
        "    return 'noted'\n"
        "def note_tool(workspace):\n"
        "    return define_tool(name='note', description='Write a note.',\n"
        "                       validate=lambda value: Valid(value=value),\n"
        "                       execute=_run, effects=coding_tool_effects('note'))\n",
        encoding="utf-8",
    )
    root = tmp_path / "ws"
    root.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), str(tmp_path / "config.toml")],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:5] == [
        "approvable True",
        "config asks True",
        "session asks True",
        "sandbox skips False",
        "built note",
    ]
    assert lines[5].startswith("preview ")
    assert "hello" in lines[5]
