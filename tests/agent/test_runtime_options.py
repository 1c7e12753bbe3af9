"""Runtime option capture: exact types, known keys, the portable session-path grammar, and
values pinned at call time (``tether.agent.runtime.options``)."""

from __future__ import annotations

import os
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime_support import add, bounded, expect_error, options, returning
from support import examples
from tether import ScriptedModel, text_reply
from tether.agent.extensions import ExtensionDefinition
from tether.agent.runtime import (
    RUNTIME_ERROR_CODES,
    RuntimeFactories,
    RuntimeOptions,
    RuntimeSessionOptions,
    TetherRuntimeError,
    check_runtime_session_path,
    create_runtime,
)
from tether.agent.runtime.options import capture_shared
from tether.agent.session import SessionLimits, SessionStoreOptions
from tether.models.limits import RunLimits

SEGMENT_CHARS = string.ascii_letters + string.digits + "-_."


def invalid(value: Any) -> TetherRuntimeError:
    with pytest.raises(TetherRuntimeError) as caught:
        capture_shared(value)
    assert caught.value.code == "RUNTIME_INVALID_OPTIONS"
    return caught.value


def test_codes() -> None:
    assert RUNTIME_ERROR_CODES[0] == "RUNTIME_INVALID_OPTIONS"
    assert RUNTIME_ERROR_CODES[-1] == "RUNTIME_SESSION_IN_USE"
    assert len(RUNTIME_ERROR_CODES) == 11


segment = st.text(SEGMENT_CHARS, min_size=1, max_size=12).filter(
    lambda s: (
        not s.endswith(".")
        and s not in (".", "..")
        and s.split(".", 1)[0].upper() not in {"CON", "PRN", "AUX", "NUL", "COM1", "LPT1"}
        and not (
            s.split(".", 1)[0].upper()[:3] in ("COM", "LPT") and s.split(".", 1)[0][3:].isdigit()
        )
    )
)


@settings(max_examples=examples(200))
@given(st.lists(segment, min_size=1, max_size=5), st.sampled_from(["/", "\\"]))
def test_portable_paths_are_accepted(segments: list[str], separator: str) -> None:
    assert check_runtime_session_path(separator.join(segments)) == tuple(segments)


@settings(max_examples=examples(200))
@given(
    st.lists(segment, min_size=1, max_size=4),
    st.integers(min_value=0, max_value=4),
    st.sampled_from(["", ".", "..", "a.", "a ", "CON", "nul.txt", "Com3", "lpt9.log", "x:y"]),
)
def test_a_bad_segment_anywhere_is_refused(segments: list[str], at: int, bad: str) -> None:
    segments.insert(min(at, len(segments)), bad)
    with pytest.raises(TetherRuntimeError) as caught:
        check_runtime_session_path("/".join(segments))
    assert caught.value.code == "RUNTIME_INVALID_OPTIONS"


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("/abs.jsonl", "is absolute"),
        ("\\\\server\\share\\s.jsonl", "is absolute"),
        ("C:\\s.jsonl", "contains ':' (a drive or stream name)"),
        ("C:s.jsonl", "contains ':' (a drive or stream name)"),
        ("a:b", "contains ':' (a drive or stream name)"),
        ("a//b", "has an empty segment"),
        ("a/", "has an empty segment"),
        ("./a", "has a '.' segment"),
        ("a/../b", "has a '..' segment"),
        ("a./b", "has a segment ending in '.' or a space"),
        ("a /b", "has a segment ending in '.' or a space"),
        ("aux/s.jsonl", "names a reserved device"),
        ("dir/PRN.jsonl", "names a reserved device"),
        ("a\0b", "contains NUL"),
    ],
)
def test_session_path_grammar(path: str, problem: str) -> None:
    with pytest.raises(TetherRuntimeError) as caught:
        check_runtime_session_path(path)
    assert str(caught.value) == f"Runtime session path {path!r} {problem}"


def test_session_path_must_be_a_string() -> None:
    for value in (None, "", b"s", 3):
        with pytest.raises(TetherRuntimeError) as caught:
            check_runtime_session_path(value)
        assert str(caught.value) == "Runtime session path must be a non-empty string"
    long = "x" * 50 + ":"
    with pytest.raises(TetherRuntimeError) as caught:
        check_runtime_session_path(long)
    assert (
        str(caught.value)
        == f"Runtime session path {('x' * 40 + '...')!r} contains ':' (a drive or stream name)"
    )


def test_the_option_shapes(tmp_path: Path) -> None:
    class Sub(dict[str, Any]):
        pass

    assert str(invalid(Sub(options(tmp_path)))) == (
        "Runtime options must be a RuntimeOptions or a plain dict"
    )
    assert str(invalid({**options(tmp_path), "extra": 1})) == (
        "Runtime options has an unknown key 'extra'"
    )
    assert str(invalid({1: 2})) == "Runtime options has an unknown key of type int"
    assert str(invalid({"cwd": tmp_path})) == "Runtime options needs 'session'"
    assert str(invalid({**options(tmp_path), "session": {"path": "s"}})) == (
        "Runtime session needs 'mode'"
    )
    assert str(invalid({**options(tmp_path), "session": {"path": "s", "mode": "open"}})) == (
        "Runtime session mode must be 'create' or 'resume'"
    )
    for cwd, message in (
        (None, "Runtime cwd must be a string path"),
        (b"/tmp", "Runtime cwd must be a string path"),
        ("", "Runtime cwd must be a non-empty path without NUL"),
        ("a\0", "Runtime cwd must be a non-empty path without NUL"),
    ):
        assert str(invalid({**options(tmp_path), "cwd": cwd})) == message


class BytesPath(os.PathLike[bytes]):
    def __fspath__(self) -> bytes:
        return b"/tmp"


def test_values_are_checked(tmp_path: Path) -> None:
    base = options(tmp_path)
    assert str(invalid({**base, "cwd": BytesPath()})) == "Runtime cwd must be a string path"
    for model in (None, 3, "m", object()):
        invalid({**base, "model": model})

    class Broken:
        @property
        def stream(self) -> Any:
            raise RuntimeError("no")

    assert str(invalid({**base, "model": Broken()})) == "Runtime model.stream must be a function"
    for steps in (0, -1, True, 1.5, 2**53):
        assert str(invalid({**base, "max_steps": steps})) == (
            "Runtime max_steps must be a positive safe integer"
        )
    assert str(invalid({**base, "max_steps": 65})).startswith(
        "Runtime max_steps must not exceed 64"
    )
    _, shared = capture_shared(
        {**base, "max_steps": 65, "agent_options": {"limits": RunLimits.for_real_models()}}
    )
    assert shared.max_steps == 65
    assert str(invalid({**base, "tools": {"a": 1}})) == "Runtime tools must be a list or tuple"
    assert str(invalid({**base, "tools": [add, add]})).startswith("Runtime tools are invalid: ")
    assert str(invalid({**base, "tools": [None]})).startswith("Runtime tools are invalid: ")


def test_resource_roots_and_extensions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = options(tmp_path)
    monkeypatch.chdir(tmp_path)
    _, shared = capture_shared({**base, "resource_roots": [{"id": "docs", "directory": "docs"}]})
    assert shared.resource_roots[0].directory == os.path.join(
        os.path.realpath(tmp_path), "docs"
    ) or (shared.resource_roots[0].directory == os.path.join(str(tmp_path), "docs"))
    for roots, message in (
        ([{"id": "workspace", "directory": "x"}], "reserved for the workspace"),
        ([{"id": " a", "directory": "x"}], "must be a non-empty string without surrounding spaces"),
        ([{"id": "a", "directory": "x"}, {"id": "a", "directory": "y"}], 'id "a" is repeated'),
        ([{"id": "a"}], "needs 'directory'"),
        ([{"id": "a", "directory": ""}], "must be a non-empty path without NUL"),
        ([None], "must be a ResourceRootDefinition or a plain dict"),
    ):
        assert message in str(invalid({**base, "resource_roots": roots}))

    def create() -> Any:
        raise AssertionError("never called at capture")

    definition = ExtensionDefinition(id="e", create=create)
    _, shared = capture_shared({**base, "extensions": [definition, {"id": "f", "create": create}]})
    assert [d.id for d in shared.extensions] == ["e", "f"]
    assert shared.extensions[0] is definition
    assert 'id "e" is repeated' in str(invalid({**base, "extensions": [definition, definition]}))
    assert str(invalid({**base, "extensions": [{"id": "", "create": create}]})).startswith(
        "Runtime extensions[0] is invalid: "
    )


def test_factories_and_agent_options(tmp_path: Path) -> None:
    base = options(tmp_path)
    assert "unknown key 'create_model'" in str(
        invalid({**base, "factories": {"create_model": returning(None)}})
    )
    assert str(invalid({**base, "factories": {"create_tools": 3}})) == (
        "Runtime factories.create_tools must be a function or None"
    )
    _, shared = capture_shared({**base, "factories": RuntimeFactories(create_tools=None)})
    assert shared.factories == RuntimeFactories()
    cases: tuple[tuple[dict[str, Any], str], ...] = (
        ({"system": 3}, "Runtime agent_options.system must be a string or None"),
        ({"limits": {}}, "Runtime agent_options.limits must be a RunLimits"),
        (
            {"before_tool_call": 1},
            "Runtime agent_options.before_tool_call must be a function or None",
        ),
        ({"compaction": 1}, "Runtime agent_options.compaction must be an AutoCompaction or None"),
        ({"temperature": 1}, "Runtime agent_options has an unknown key 'temperature'"),
        (
            {"interrupted_turns": "sometimes"},
            'Runtime agent_options.interrupted_turns must be "discard" or "keep"',
        ),
    )
    for agent_options, message in cases:
        assert str(invalid({**base, "agent_options": agent_options})) == message
    _, kept = capture_shared({**base, "agent_options": {"interrupted_turns": "keep"}})
    assert kept.agent_options.interrupted_turns == "keep"


def test_session_store_options(tmp_path: Path) -> None:
    base = options(tmp_path)
    limits = SessionLimits.for_coding()
    workspace, _ = capture_shared(
        {**base, "session": {"path": "s", "mode": "create", "options": {"limits": limits}}}
    )
    assert workspace.session.options.limits is limits
    chosen = SessionStoreOptions(session_id="fixed")
    workspace, _ = capture_shared(
        {**base, "session": RuntimeSessionOptions(path="s", mode="create", options=chosen)}
    )
    assert workspace.session.options is chosen
    assert "unknown key 'color'" in str(
        invalid({**base, "session": {"path": "s", "mode": "create", "options": {"color": 1}}})
    )
    assert str(
        invalid({**base, "session": {"path": "s", "mode": "create", "options": {"clock": 1}}})
    ).startswith("Runtime session options are invalid: ")


async def test_a_dataclass_is_captured_once(tmp_path: Path) -> None:
    class Swappable:
        def __init__(self) -> None:
            self.stream: Any = ScriptedModel([text_reply("hi")]).stream

    model = Swappable()
    given_options = RuntimeOptions(
        cwd=str(tmp_path),
        session=RuntimeSessionOptions(
            path="s.jsonl", mode="create", options={"session_id": "fixed-id"}
        ),
        model=model,
    )
    runtime = await bounded(create_runtime(given_options))
    assert runtime.store.header.id == "fixed-id"
    # The model's stream was bound at capture: replacing it later changes nothing.
    model.stream = None
    assert (await bounded(runtime.agent.run("hi"))).status == "completed"
    await bounded(runtime.dispose())


async def test_create_runtime_reports_invalid_options(tmp_path: Path) -> None:
    await expect_error(create_runtime({"cwd": tmp_path}), "RUNTIME_INVALID_OPTIONS")


def test_small_values(tmp_path: Path) -> None:
    from tether.agent.runtime.owned import file_mark

    assert file_mark(str(tmp_path / "missing")) is None
    _, shared = capture_shared(options(tmp_path))
    assert repr(shared.model).startswith("<BoundModel <bound method ScriptedModel.stream")


def test_a_session_directory_is_resolved_at_capture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    session = {"path": "s.jsonl", "mode": "create", "directory": "sessions"}
    workspace, _ = capture_shared({**options(tmp_path), "session": session})
    assert workspace.session.directory == str(Path.cwd() / "sessions")
    assert str(invalid({**options(tmp_path), "session": {**session, "directory": ""}})) == (
        "Runtime session directory must be a non-empty path without NUL"
    )
