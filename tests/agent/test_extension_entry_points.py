"""Extensions from entry points (``tether.agent.extensions.entry_points``).

The example package ``examples/hello-extension`` is installed into the project venv (the
Makefile's dev install step does ``pip install --no-deps --no-build-isolation -e
examples/hello-extension``): it is loaded here through its real ``tether.extensions`` entry
point and run on a host. The failure paths use fake distributions, real ``*.dist-info``
directories in a temporary directory put on ``sys.path`` for the test only.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from tether import (
    AbortController,
    CompletedRunResult,
    FailedRunResult,
    JsonObject,
    RunError,
    ToolCall,
    UserMessage,
    execute_tool_call,
)
from tether.agent.extensions import (
    ENTRY_POINT_GROUP,
    ExtensionDefinition,
    ExtensionError,
    ExtensionHost,
    ExtensionMetadata,
    load_entry_point_extensions,
)
from tether.agent.resources import ResourceLoader
from tether.protocol import RunFinishedEvent, RunFinishedPayload

USER = UserMessage(id="u1", content="hi")


def finished(sequence: int, *, failed: bool = False) -> RunFinishedEvent:
    result = (
        FailedRunResult(messages=(USER,), error=RunError(code="MODEL_STREAM_FAILED", message="x"))
        if failed
        else CompletedRunResult(messages=(USER,), final_text="done")
    )
    return RunFinishedEvent(sequence=sequence, payload=RunFinishedPayload(result=result))


def raises(call: Any, code: str, message: str) -> ExtensionError:
    with pytest.raises(ExtensionError) as caught:
        call()
    assert (caught.value.code, str(caught.value)) == (code, message)
    return caught.value


# -- the installed example ---------------------------------------------------------------------


def test_the_example_is_advertised_in_the_tether_group() -> None:
    assert ENTRY_POINT_GROUP == "tether.extensions"
    (hello,) = load_entry_point_extensions(["hello"])
    assert type(hello) is ExtensionDefinition
    assert hello.id == "hello"
    assert "hello" in [definition.id for definition in load_entry_point_extensions()]


async def test_the_example_runs_its_tool_and_logs_finished_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "runs.log"
    monkeypatch.setenv("TETHER_HELLO_LOG", str(log))
    loader = await ResourceLoader.create([{"id": "root", "directory": str(tmp_path)}])
    host = ExtensionHost(resources=loader)
    host.discover(load_entry_point_extensions(["hello"]))
    await host.activate("hello")
    assert host.extensions == (ExtensionMetadata(id="hello", status="active"),)
    tools = host.tools
    assert tools.names == ("hello_word_count",)
    call = ToolCall(
        id="c1", name="hello_word_count", arguments=JsonObject({"text": " one two\tthree "})
    )
    result = await execute_tool_call(tools, call, AbortController().signal)
    assert (result.is_error, result.content) == (False, "3")
    assert await host.emit(finished(4)) == ()
    assert await host.emit(finished(7, failed=True)) == ()
    assert log.read_text(encoding="utf-8") == "run.finished 4 completed\nrun.finished 7 failed\n"
    await host.dispose()
    assert host.tools.names == ()
    assert host.extensions == (ExtensionMetadata(id="hello", status="disposed"),)


def test_importing_tether_loads_no_extension() -> None:
    code = (
        "import sys, tether, tether.agent.extensions\n"
        "print('tether_hello' in sys.modules)\n"
        "tether.agent.extensions.load_entry_point_extensions(['hello'])\n"
        "print('tether_hello' in sys.modules)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert completed.stdout.split() == ["False", "True"]


# -- fake distributions ------------------------------------------------------------------------

MODULE = """
from tether.agent.extensions import ExtensionDefinition

NUMBER = 7


class Made:
    def activate(self, context):
        context.register_tool(
            {"name": "made", "description": "Made", "validate": None, "execute": None}
        )


def make():
    return {"activate": lambda context: None}


def needs_args(a, b):
    return None


DEFINITION = ExtensionDefinition(id="custom-id", create=make)
"""


def _distribution(root: Path, name: str, version: str, entry_points: str) -> None:
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


@pytest.fixture
def fake_distributions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "fake_ext_mod.py").write_text(MODULE, encoding="utf-8")
    (tmp_path / "fake_ext_quits.py").write_text("raise SystemExit(3)\n", encoding="utf-8")
    _distribution(
        tmp_path,
        "fake-ext",
        "1.0",
        "[tether.test_good]\n"
        "factory = fake_ext_mod:make\n"
        "definition = fake_ext_mod:DEFINITION\n"
        "klass = fake_ext_mod:Made\n"
        "\n[tether.test_bad]\n"
        "broken = fake_ext_missing_module:thing\n"
        "notcallable = fake_ext_mod:NUMBER\n"
        "needsargs = fake_ext_mod:needs_args\n"
        "nosignature = builtins:dict\n"
        "\ufeffbom = fake_ext_mod:make\n"
        "quits = fake_ext_quits:thing\n"
        "\n[tether.test_twice]\n"
        "twice = fake_ext_mod:make\n",
    )
    _distribution(tmp_path, "other-ext", "2.0", "[tether.test_twice]\ntwice = fake_ext_mod:make\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])  # restored afterwards
    importlib.invalidate_caches()  # importlib.metadata's path caches included
    yield tmp_path
    sys.modules.pop("fake_ext_mod", None)
    sys.modules.pop("fake_ext_quits", None)
    importlib.invalidate_caches()


def test_definitions_and_factories_load_in_order(fake_distributions: Path) -> None:
    loaded = load_entry_point_extensions(group="tether.test_good")
    assert [definition.id for definition in loaded] == ["custom-id", "factory", "klass"]
    module = sys.modules["fake_ext_mod"]
    assert loaded[0] is module.DEFINITION
    assert loaded[1].create is module.make
    assert loaded[2].create is module.Made
    chosen = load_entry_point_extensions(("klass", "factory"), group="tether.test_good")
    assert [definition.id for definition in chosen] == ["klass", "factory"]
    assert load_entry_point_extensions([], group="tether.test_good") == ()
    assert load_entry_point_extensions(group="tether.test_empty_group") == ()
    (nosignature,) = load_entry_point_extensions(["nosignature"], group="tether.test_bad")
    assert nosignature.id == "nosignature"
    assert nosignature.create is cast(Any, dict)


def test_unknown_names_and_bad_options(fake_distributions: Path) -> None:
    raises(
        lambda: load_entry_point_extensions(["factory", "nope"], group="tether.test_good"),
        "EXTENSION_NOT_FOUND",
        'No entry point named "nope" in group "tether.test_good"',
    )
    for names in ("factory", [3], [""], ["factory", "factory"], {"factory"}):
        with pytest.raises(ExtensionError) as caught:
            load_entry_point_extensions(cast(Any, names), group="tether.test_good")
        assert caught.value.code == "EXTENSION_INVALID_OPTIONS"
    for group in ("", None, 3):
        raises(
            lambda group=group: load_entry_point_extensions(group=cast(Any, group)),
            "EXTENSION_INVALID_OPTIONS",
            "Entry point group must be a string",
        )


def test_load_failures_name_the_entry_point_and_distribution(fake_distributions: Path) -> None:
    where = 'Extension entry point "{}" ({}) from distribution "fake-ext 1.0"'
    error = raises(
        lambda: load_entry_point_extensions(["broken"], group="tether.test_bad"),
        "EXTENSION_LOAD_FAILED",
        where.format("broken", "fake_ext_missing_module:thing")
        + " failed to load: ModuleNotFoundError: No module named 'fake_ext_missing_module'",
    )
    assert isinstance(error.__cause__, ModuleNotFoundError)
    raises(
        lambda: load_entry_point_extensions(["notcallable"], group="tether.test_bad"),
        "EXTENSION_LOAD_FAILED",
        where.format("notcallable", "fake_ext_mod:NUMBER")
        + " is neither an ExtensionDefinition nor a zero-argument factory (got int)",
    )
    raises(
        lambda: load_entry_point_extensions(["needsargs"], group="tether.test_bad"),
        "EXTENSION_LOAD_FAILED",
        where.format("needsargs", "fake_ext_mod:needs_args")
        + " is neither an ExtensionDefinition nor a zero-argument factory (got function)",
    )
    error = raises(
        lambda: load_entry_point_extensions(["\ufeffbom"], group="tether.test_bad"),
        "EXTENSION_LOAD_FAILED",
        where.format("\ufeffbom", "fake_ext_mod:make")
        + ": Extension id must be a non-empty string without surrounding whitespace",
    )
    assert isinstance(error.__cause__, ExtensionError)
    with pytest.raises(ExtensionError) as caught:
        load_entry_point_extensions(group="tether.test_bad")
    assert caught.value.code == "EXTENSION_LOAD_FAILED"


def test_an_extension_that_exits_at_import_fails_to_load(fake_distributions: Path) -> None:
    error = raises(
        lambda: load_entry_point_extensions(["quits"], group="tether.test_bad"),
        "EXTENSION_LOAD_FAILED",
        'Extension entry point "quits" (fake_ext_quits:thing) from distribution "fake-ext 1.0"'
        " failed to load: SystemExit: 3",
    )
    assert isinstance(error.__cause__, SystemExit)


def test_a_name_two_distributions_provide_is_refused(fake_distributions: Path) -> None:
    message = (
        'Extension entry point "twice" in group "tether.test_twice" is provided by several '
        'distributions: distribution "fake-ext 1.0", distribution "other-ext 2.0"'
    )
    raises(
        lambda: load_entry_point_extensions(["twice"], group="tether.test_twice"),
        "EXTENSION_LOAD_FAILED",
        message,
    )
    raises(
        lambda: load_entry_point_extensions(group="tether.test_twice"),
        "EXTENSION_LOAD_FAILED",
        message,
    )


def test_an_entry_point_without_a_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    orphan = importlib.metadata.EntryPoint(
        name="orphan", value="fake_ext_missing_module:x", group="tether.test_orphan"
    )

    def entry_points(*, group: str) -> importlib.metadata.EntryPoints:
        assert group == "tether.test_orphan"
        return importlib.metadata.EntryPoints([orphan])

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    error = raises(
        lambda: load_entry_point_extensions(group="tether.test_orphan"),
        "EXTENSION_LOAD_FAILED",
        'Extension entry point "orphan" (fake_ext_missing_module:x) from an unknown '
        "distribution failed to load: ModuleNotFoundError: No module named "
        "'fake_ext_missing_module'",
    )
    assert isinstance(error.__cause__, ModuleNotFoundError)
