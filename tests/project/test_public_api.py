"""Guards on the public interface: the ``tether`` namespace, docstrings, dataclass shape,
error codes, and how much ``import tether`` costs."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import tether
from image_support import png
from tether import protocol
from tether._base.tether_error import TetherError
from tether.abort import AbortController, AbortError
from tether.jsonvalue import JsonObject, JsonValueError

MODULE_EXPORTS: dict[str, tuple[str, ...]] = tether._MODULE_EXPORTS  # pyright: ignore[reportPrivateUsage]
"""The package root's table: the names it re-exports, by module."""


def _generator() -> Any:
    """``scripts/generate_init.py``, loaded as a module (it lists the public modules)."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "generate_init.py"
    spec = importlib.util.spec_from_file_location("generate_init", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()
PUBLIC: dict[str, tuple[str, ...]] = GENERATOR.public_names()
"""Every public module and its ``__all__``: what the docstring and error checks cover."""


def _exported() -> list[tuple[str, str]]:
    """(module, name) for every name the package root re-exports."""
    return [(module, name) for module, names in MODULE_EXPORTS.items() for name in names]


def _public() -> list[tuple[str, str]]:
    """(module, name) for every public name of every public module."""
    return [(module, name) for module, names in PUBLIC.items() for name in names]


def _isort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps ``__all__`` in: CONSTANTS, then Classes, then functions."""
    if len(name) > 1 and name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


# --- the package namespace ----------------------------------------------------------------


def test_dunder_all_is_sorted_and_unique() -> None:
    names = list(tether.__all__)
    assert len(names) == len(set(names))
    assert names == sorted(names, key=_isort_key)


def test_dunder_all_is_exactly_what_the_module_table_exports() -> None:
    assert sorted(tether.__all__) == sorted(name for _, name in _exported())


def test_no_name_is_exported_by_two_modules() -> None:
    names = [name for _, name in _public()]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("module_name", list(PUBLIC))
def test_every_public_module_lists_its_names_sorted_in_its_own_all(module_name: str) -> None:
    module_all: list[str] = list(getattr(_module(module_name), "__all__"))  # noqa: B009
    assert set(MODULE_EXPORTS.get(module_name, ())) <= set(module_all)
    assert module_all == sorted(module_all, key=_isort_key)
    assert len(module_all) == len(set(module_all))


def test_the_root_exports_at_most_80_names_a_user_imports() -> None:
    assert len(tether.__all__) <= 80
    assert set(tether.__all__) == set(GENERATOR.ROOT_NAMES)
    assert set(MODULE_EXPORTS) <= set(PUBLIC)


@pytest.mark.parametrize(("module_name", "name"), _public())
def test_every_public_name_resolves_in_its_module(module_name: str, name: str) -> None:
    assert hasattr(_module(module_name), name)


@pytest.mark.parametrize(("module_name", "name"), _exported())
def test_every_name_resolves_to_the_object_in_its_module(module_name: str, name: str) -> None:
    assert getattr(tether, name) is getattr(_module(module_name), name)


def test_star_import_yields_exactly_dunder_all() -> None:
    namespace: dict[str, Any] = {}
    exec("from tether import *", namespace)
    del namespace["__builtins__"]
    assert sorted(namespace) == sorted(tether.__all__)


def test_dir_lists_every_export() -> None:
    assert set(tether.__all__) <= set(dir(tether))


def test_unknown_attributes_raise_attribute_error() -> None:
    missing = "no_such_name"
    with pytest.raises(AttributeError, match=missing):
        getattr(tether, missing)


def test_private_helpers_are_not_exported() -> None:
    assert not [name for name in tether.__all__ if name.startswith("_")]


# --- docstrings -----------------------------------------------------------------------------


def _public_callables() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for module_name, name in _public():
        value = getattr(_module(module_name), name)
        defined_here = getattr(value, "__module__", "").startswith("tether")
        if defined_here and (inspect.isclass(value) or inspect.isfunction(value)):
            found.append((name, value))  # ID aliases such as MessageId = str are skipped
    return found


@pytest.mark.parametrize(("name", "value"), _public_callables())
def test_every_public_class_and_function_has_its_own_docstring(name: str, value: Any) -> None:
    doc = value.__doc__
    assert doc is not None
    assert doc.strip()
    # a dataclass without a docstring gets its signature as __doc__: that does not count
    assert not doc.startswith(f"{value.__name__}(")


def _public_members() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for name, cls in _public_callables():
        # typing.Protocol members are interface stubs, documented by the protocol's docstring
        if not inspect.isclass(cls) or getattr(cls, "_is_protocol", False):
            continue
        for member_name, member in vars(cls).items():
            if member_name.startswith("_"):
                continue
            if inspect.isfunction(member) or isinstance(member, property | classmethod):
                found.append((f"{name}.{member_name}", getattr(cls, member_name)))
    return found


@pytest.mark.parametrize(("qualified_name", "member"), _public_members())
def test_every_public_method_and_property_is_documented(qualified_name: str, member: Any) -> None:
    doc = inspect.getdoc(member)
    assert doc, qualified_name


@pytest.mark.parametrize("module_name", ["tether", *PUBLIC])
def test_every_module_has_a_docstring(module_name: str) -> None:
    doc = _module(module_name).__doc__
    assert doc
    assert doc.strip()


# --- protocol dataclasses -------------------------------------------------------------------


def _instances() -> dict[type, object]:
    """One instance of each public protocol dataclass (keyed by class)."""
    user = protocol.UserMessage(id="m", content="hi")
    tool_call = protocol.ToolCall(id="c", name="n", arguments=JsonObject({"a": [1]}))
    tool_result = protocol.ToolResultMessage(
        id="r", tool_call_id="c", tool_name="n", content="", is_error=False
    )
    assistant = protocol.AssistantMessage(id="a", content=(protocol.TextBlock(text="t"), tool_call))
    chunk = protocol.TextDeltaChunk(request_id="q", delta="d")
    completed = protocol.CompletedRunResult(messages=(user,), final_text="t")
    run_error = protocol.RunError(code="MODEL_STREAM_FAILED", message="m")
    values: list[object] = [
        user,
        tool_call,
        tool_result,
        assistant,
        chunk,
        completed,
        run_error,
        protocol.TextBlock(text="t"),
        protocol.ImageBlock.from_bytes(png(1, 1)),
        protocol.ModelRequest(id="q", messages=(user,)),
        protocol.ToolCallChunk(request_id="q", tool_call=tool_call),
        protocol.ModelUsage(input_tokens=1, output_tokens=2),
        protocol.ModelResponse(
            id="p",
            request_id="q",
            message=assistant,
            stop_reason="toolCall",
            usage=protocol.ModelUsage(input_tokens=1, output_tokens=2),
        ),
        protocol.Valid(value=1),
        protocol.Invalid(error="e"),
        protocol.ToolExecutionContext(signal=AbortController().signal, tool_call_id="c"),
        protocol.RunContext(signal=AbortController().signal, tool_call_id="c", deps=1),
        protocol.CancelledRunResult(messages=(), reason="r"),
        protocol.MaxStepsRunResult(messages=(), max_steps=2),
        protocol.FailedRunResult(messages=(), error=run_error),
        protocol.MessageAcceptedPayload(message=user),
        protocol.ModelChunkPayload(chunk=chunk),
        protocol.ToolStartedPayload(tool_call=tool_call),
        protocol.ToolFinishedPayload(message=tool_result),
        protocol.RunFinishedPayload(result=completed),
        protocol.MessageAcceptedEvent(
            sequence=0, payload=protocol.MessageAcceptedPayload(message=user)
        ),
        protocol.ModelChunkEvent(sequence=1, payload=protocol.ModelChunkPayload(chunk=chunk)),
        protocol.ToolStartedEvent(
            sequence=2, payload=protocol.ToolStartedPayload(tool_call=tool_call)
        ),
        protocol.ToolFinishedEvent(
            sequence=3, payload=protocol.ToolFinishedPayload(message=tool_result)
        ),
        protocol.RunFinishedEvent(
            sequence=4, payload=protocol.RunFinishedPayload(result=completed)
        ),
        protocol.ToolProgressPayload(tool_call_id="c", tool_name="n", text="out"),
        protocol.ToolProgressEvent(
            sequence=5,
            payload=protocol.ToolProgressPayload(tool_call_id="c", tool_name="n", text="out"),
        ),
        protocol.ModelRetryPayload(
            request_id="q", attempt=1, delay_ms=2000, code="PROVIDER_OVERLOADED", reason="HTTP 503"
        ),
        protocol.ModelRetryEvent(
            sequence=6,
            payload=protocol.ModelRetryPayload(
                request_id="q",
                attempt=1,
                delay_ms=2000,
                code="PROVIDER_OVERLOADED",
                reason="HTTP 503",
            ),
        ),
        protocol.ThinkingBlock(text="t"),
        protocol.ToolSpec(name="n", description="d", parameters=JsonObject()),
        protocol.ThinkingDeltaChunk(request_id="q", delta="d"),
        protocol.ToolCallDeltaChunk(request_id="q", index=0),
    ]
    return {type(value): value for value in values}


def _protocol_dataclasses() -> list[type]:
    return [
        value
        for name in protocol.__all__
        if dataclasses.is_dataclass(value := getattr(protocol, name)) and isinstance(value, type)
    ]


def test_every_public_protocol_dataclass_is_covered() -> None:
    assert set(_instances()) == set(_protocol_dataclasses())


@pytest.mark.parametrize("cls", _protocol_dataclasses(), ids=lambda cls: cls.__name__)
def test_protocol_dataclasses_are_frozen(cls: type) -> None:
    instance = _instances()[cls]
    for field in dataclasses.fields(cls):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(instance, field.name, getattr(instance, field.name))


@pytest.mark.parametrize("cls", _protocol_dataclasses(), ids=lambda cls: cls.__name__)
def test_protocol_dataclasses_are_slotted(cls: type) -> None:
    assert "__slots__" in vars(cls)
    # RunContext extends ToolExecutionContext: its slots are the base's.
    slots = {name for klass in cls.__mro__ for name in vars(klass).get("__slots__", ())}
    assert slots == {field.name for field in dataclasses.fields(cls)}
    assert not hasattr(_instances()[cls], "__dict__")


@pytest.mark.parametrize("cls", _protocol_dataclasses(), ids=lambda cls: cls.__name__)
def test_protocol_dataclasses_are_keyword_only(cls: type) -> None:
    assert all(field.kw_only for field in dataclasses.fields(cls))
    instance = _instances()[cls]
    values = [getattr(instance, field.name) for field in dataclasses.fields(cls)]
    with pytest.raises(TypeError):
        cls(*values)


# --- errors ---------------------------------------------------------------------------------


def _public_error_classes() -> list[type]:
    found: dict[type, None] = {}
    for module_name, name in _public():
        value = getattr(_module(module_name), name)
        if isinstance(value, type) and issubclass(value, BaseException):
            found[value] = None
    return list(found)


def test_the_foundation_errors_are_public() -> None:
    assert {TetherError, AbortError, JsonValueError} <= set(_public_error_classes())


@pytest.mark.parametrize("cls", _public_error_classes(), ids=lambda cls: cls.__name__)
def test_every_error_class_has_read_only_code_and_name_properties(cls: type) -> None:
    assert TetherError in inspect.getmro(cls)
    for attribute in ("code", "name"):
        descriptor = inspect.getattr_static(cls, attribute)
        assert isinstance(descriptor, property), attribute
        assert descriptor.fset is None, attribute


@pytest.mark.parametrize(
    "error",
    [TetherError("SOME_CODE", "message"), AbortError(), JsonValueError("value.a", "value")],
    ids=lambda error: type(error).__name__,
)
def test_foundation_error_instances_keep_their_code_and_name(error: TetherError) -> None:
    code = error.code
    assert re.fullmatch(r"[A-Z][A-Z_]*", code)
    assert error.name == type(error).__name__
    for attribute in ("code", "name"):
        with pytest.raises(AttributeError):
            setattr(error, attribute, "OTHER")
    assert (error.code, error.name) == (code, type(error).__name__)


# --- import weight --------------------------------------------------------------------------

_PROBE = """
import json, sys
import tether
after_import = sorted(
    name for name in sys.modules if name == "asyncio" or name.startswith("tether")
)
for name in ("ToolCall", "RunResult", "to_json", "JsonObject", "AbortController"):
    getattr(tether, name)
after_protocol = "asyncio" in sys.modules
print(json.dumps({"after_import": after_import, "after_protocol": after_protocol}))
"""


def _probe(code: str) -> Any:
    """What ``code`` prints as JSON in a fresh interpreter (warnings are errors)."""
    completed = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "error"},
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


@pytest.mark.slow
def test_import_tether_does_not_import_asyncio() -> None:
    report = _probe(_PROBE)
    assert "asyncio" not in report["after_import"]
    assert report["after_import"] == ["tether"]  # submodules load on first use
    assert report["after_protocol"] is False


@pytest.mark.slow
def test_the_package_root_is_generated_from_the_modules() -> None:
    # src/tether/__init__.py is written by scripts/generate_init.py (make exports).
    script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "generate_init.py")
    completed = subprocess.run(
        [sys.executable, script, "--check"], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr


_USABLE_API_PROBE = """
import json, sys
import tether
tether.SessionStore
session_only = sorted(name for name in ("tether.agent.agent", "tether.agent.compaction")
                      if name in sys.modules)
tether.run_agent_loop, tether.OpenAIChatModel, tether.coding_tools
deferred = ["email.utils", "difflib", "tether.models.scripted", "tether.providers.fixture",
            "tether.providers.catalog", "tether.providers.registry", "tether.tracing",
            "tether.providers.openai_wire", "tether.providers.openai_chat_stream",
            "tether.providers.openai_chat_body"]
# Issue 30: each of the four loads its machinery with its first use (a run, a request, a
# store opened, the tools built), so none of it, nor the protocol, loads with the names.
deferred += ["tether.protocol", "tether.jsonvalue", "tether.models.limits",
             "tether.loop._run_steps", "tether.loop._model_turn", "tether.loop.checks",
             "tether.loop.hooks", "tether.loop.output", "tether.loop.retries",
             "tether.tools.contract", "tether.tools.tool_registry",
             "tether.tools.coding.catalog", "tether.tools.coding.workspace",
             "tether.tools.coding.environment",
             "tether.agent.session.records", "tether.agent.session.store_options",
             "tether.agent.session.parse", "tether.agent.session.decoder",
             "tether.agent.session.blobs", "tether.agent.session.linkage",
             "tether.agent.session.journal", "tether.agent.session._opening",
             "tether.agent.session._staging", "tether.agent.session.tree",
             "tether.providers._sse", "tether.providers._decoding"]
if "coverage" not in sys.modules:  # coverage imports these itself
    deferred += ["random", "uuid", "hashlib", "zlib"]
print(json.dumps({"session_only": session_only,
                  "deferred": [name for name in deferred if name in sys.modules]}))
"""


@pytest.mark.slow
def test_the_usable_api_loads_only_what_it_uses() -> None:
    """A ``SessionStore`` does not load the ``Agent`` and compaction (``tether.agent`` loads
    its own names on first use), and the HTTP layer imports ``email.utils`` (a Retry-After
    date) and ``random`` (backoff jitter) only when it needs them; ``difflib`` (an edit's
    diff) and ``uuid`` (a session ID, a script name) load when first used (``random`` and
    ``uuid`` are not checked under coverage, which imports them itself; nor is ``hashlib``,
    an image blob's digest, which loads OpenSSL), and the loop's imports of
    ``tether.models.base`` and ``tether.providers.errors`` leave the scripted model and the
    fixture provider unloaded (their packages load their names on first use); the provider
    catalog and registry load with ``from_spec``, not with ``OpenAIChatModel``, nor do its
    request builder and parsers, which load with its first request; tracing loads with a
    traced run. Nor does any of the four load what it needs only when used (issue 30): the
    loop's steps, checks and hooks load with the first run, the coding tools' catalog and
    workspace with ``coding_tools()``, the session store's parser, records and journal when a
    store is opened, the SSE decoder and the body decoders (``zlib``) with a model's first
    response, and the protocol with whichever comes first (an HTTP model's modules name its
    types for annotations only)."""
    assert _probe(_USABLE_API_PROBE) == {"session_only": [], "deferred": []}


_FIRST_USES = {
    "run_agent_loop": """
import asyncio
from tether import run_agent_loop
async def main():
    from tether import ScriptedModel, ToolRegistry, UserMessage, text_reply
    stream = run_agent_loop(messages=[UserMessage(content="hi")], tools=ToolRegistry([]),
                            model=ScriptedModel([text_reply("hello")]), max_steps=1)
    result = await stream.result
    return [result.status, result.final_text]
print(json.dumps(asyncio.run(main())))
""",
    "coding_tools": """
import tempfile
from tether import coding_tools
with tempfile.TemporaryDirectory() as root:
    print(json.dumps([spec.name for spec in coding_tools(root).specs()][:2]))
""",
    "SessionStore": """
import asyncio, os, tempfile
from tether import SessionStore
async def main(root):
    store = await SessionStore.create(os.path.join(root, "s.jsonl"))
    from tether import UserMessage
    entry = await store.append(None, UserMessage(content="hi"))
    await store.close()
    again = await SessionStore.read(os.path.join(root, "s.jsonl"))
    return [len(again.entries), again.entries[0].id == entry.id]
with tempfile.TemporaryDirectory() as root:
    print(json.dumps(asyncio.run(main(root))))
""",
    "OpenAIChatModel": """
import asyncio
from tether import OpenAIChatModel
async def main():
    from tether import AbortController
    model = OpenAIChatModel(model="gpt-4o-mini", api_key="key")
    try:
        model.stream("not a request", AbortController().signal)
    except TypeError as error:
        return [str(error)]
    finally:
        await model.aclose()
print(json.dumps(asyncio.run(main())))
""",
}
_FIRST_USE_RESULTS = {
    "run_agent_loop": ["completed", "hello"],
    "coding_tools": ["read_file", "write_file"],
    "SessionStore": [1, True],
    "OpenAIChatModel": ["request must be a ModelRequest"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_FIRST_USES))
def test_each_usable_name_works_from_a_cold_start(name: str) -> None:
    """What the usable API defers loads at its first use: each name used first thing in a
    fresh interpreter, before anything else has loaded the protocol or the layer's machinery
    (an import cycle among the deferred imports would fail here, not in-process tests)."""
    assert _probe("import json\n" + _FIRST_USES[name]) == _FIRST_USE_RESULTS[name]


_STANDARD_DATACLASS_PROBE = """
import dataclasses, json
standard = []
process_class = dataclasses._process_class
def spy(cls, *args):
    standard.append(f"{cls.__module__}.{cls.__qualname__}")
    return process_class(cls, *args)
dataclasses._process_class = spy
import tether
tether.run_agent_loop, tether.OpenAIChatModel, tether.coding_tools, tether.SessionStore
print(json.dumps(standard))
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info >= (3, 13), reason="3.13+ compiles once per class anyway")
def test_the_usable_api_compiles_no_dataclass_with_the_standard_decorator() -> None:
    """Issue 30: on 3.11 and 3.12 the standard decorator compiles six methods per class, so
    every dataclass the usable API defines goes through ``tether._base.dataclass.dataclass``'s
    fast path, and that path's prototypes are assembled rather than decorated: the standard
    decorator processes no class at all."""
    assert _probe(_STANDARD_DATACLASS_PROBE) == []


_HTTP_MODELS_PROBE = """
import json, sys
import tether
models = [
    tether.OpenAIChatModel.__module__,
    tether.AnthropicModel.__module__,
    tether.OpenAIResponsesModel.__module__,
    tether.GeminiModel.__module__,
]
print(json.dumps({"modules": models, "httpx2": "httpx2" in sys.modules}))
"""


@pytest.mark.slow
def test_the_http_models_are_exported_from_the_root_without_loading_httpx2() -> None:
    """DESIGN Part II: the real models are re-exported from ``tether``; resolving them still
    leaves httpx2 unimported until a request is sent."""
    from tether.providers.anthropic import AnthropicModel
    from tether.providers.gemini import GeminiModel
    from tether.providers.openai_chat import OpenAIChatModel
    from tether.providers.openai_responses import OpenAIResponsesModel

    assert tether.AnthropicModel is AnthropicModel
    assert tether.OpenAIChatModel is OpenAIChatModel
    assert tether.OpenAIResponsesModel is OpenAIResponsesModel
    assert "AnthropicModel" in tether.__all__
    assert "OpenAIResponsesModel" in tether.__all__
    assert tether.GeminiModel is GeminiModel
    assert "AnthropicModel" in tether.__all__
    assert "GeminiModel" in tether.__all__
    completed = subprocess.run(
        [sys.executable, "-c", _HTTP_MODELS_PROBE],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert report == {
        "modules": [
            "tether.providers.openai_chat",
            "tether.providers.anthropic",
            "tether.providers.openai_responses",
            "tether.providers.gemini",
        ],
        "httpx2": False,
    }
