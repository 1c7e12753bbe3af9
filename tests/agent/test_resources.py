"""Checkpoint 12 resources: roots, the path grammar, confinement, the checked read, races and
directory listings. Real temp directories; races are injected through the documented
``tether.agent.resource_reads._after_read`` seam (and, for OS failures, by patching one ``os``
function for one test), never with sleeps."""

# Tests build real temp directories synchronously on purpose.
# ruff: noqa: ASYNC240
# The race seam is private by design.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import asyncio
import errno
import os
import posixpath
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import examples
from tether.agent import resource_paths, resource_reads
from tether.agent.resources import (
    MAX_DIRECTORY_ENTRIES,
    MAX_RESOURCE_TEXT_BYTES,
    RESOURCE_ERROR_CODES,
    ResourceEntry,
    ResourceError,
    ResourceLoader,
    ResourceRoot,
    ResourceRootDefinition,
    TextResource,
    normalize_resource_path,
)


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


async def loader_for(*directories: Path) -> ResourceLoader:
    return await ResourceLoader.create(
        [
            ResourceRootDefinition(id=f"r{index}", directory=str(directory))
            for index, directory in enumerate(directories)
        ]
    )


async def load_error(loader: ResourceLoader, path: str) -> ResourceError:
    with pytest.raises(ResourceError) as caught:
        await loader.load_text(path)
    return caught.value


# --- codes and values ---------------------------------------------------------------------------


def test_codes_and_constants() -> None:
    assert MAX_RESOURCE_TEXT_BYTES == 1_048_576
    assert MAX_DIRECTORY_ENTRIES == 4_096
    assert RESOURCE_ERROR_CODES == (
        "RESOURCE_INVALID_ROOTS",
        "DUPLICATE_RESOURCE_ROOT_ID",
        "RESOURCE_OUTSIDE_TRUSTED_ROOTS",
        "RESOURCE_ROOT_CHANGED",
        "RESOURCE_NOT_FILE",
        "RESOURCE_TOO_LARGE",
        "RESOURCE_INVALID_UTF8",
        "RESOURCE_IO_FAILED",
    )
    error = ResourceError("RESOURCE_NOT_FILE", "nope")
    assert (error.code, str(error), error.name) == ("RESOURCE_NOT_FILE", "nope", "ResourceError")


def test_values_are_frozen() -> None:
    resource = TextResource(root_id="a", path="x", content="y")
    with pytest.raises(AttributeError):
        resource.content = "z"  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(TypeError):
        TextResource("a", "x", "y")  # type: ignore[misc]


def test_direct_construction_is_refused() -> None:
    with pytest.raises(TypeError, match=r"ResourceLoader\.create"):
        ResourceLoader()


async def test_loader_is_immutable(tmp_path: Path) -> None:
    loader = await loader_for(tmp_path)
    with pytest.raises(AttributeError, match="immutable"):
        loader._roots = ()
    assert repr(loader) == "ResourceLoader(roots=['r0'])"


# --- create -------------------------------------------------------------------------------------


async def test_create_accepts_dicts_paths_and_tuples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "two")
    monkeypatch.chdir(tmp_path)
    loader = await ResourceLoader.create(
        (
            {"id": "first", "directory": "one", "extra": 1},
            ResourceRootDefinition(id="second", directory=tmp_path / "link"),
        )
    )
    real = os.path.realpath(tmp_path)
    assert loader.roots == (
        ResourceRoot(id="first", directory=os.path.join(real, "one")),
        ResourceRoot(id="second", directory=os.path.join(real, "two")),
    )


class _ListSubclass(list[object]):
    pass


class _DictSubclass(dict[str, object]):
    pass


class _BytesPath(os.PathLike[bytes]):
    def __fspath__(self) -> bytes:
        return b"/tmp"


class _BrokenPath(os.PathLike[str]):
    def __fspath__(self) -> str:
        raise RuntimeError("no path")


def _invalid_definitions(tmp: str) -> list[tuple[object, str]]:
    return [
        (None, "Resource roots must be a list or tuple"),
        ("abc", "Resource roots must be a list or tuple"),
        (_ListSubclass([{"id": "a", "directory": tmp}]), "Resource roots must be a list or tuple"),
        ([], "At least one resource root is required"),
        ((), "At least one resource root is required"),
        ([None], "Resource root 0 must be a ResourceRootDefinition or a dict"),
        (
            [_DictSubclass(id="a", directory=tmp)],
            "Resource root 0 must be a ResourceRootDefinition or a dict",
        ),
        ([{"id": "a"}], "Resource root 0 must have an id and a directory"),
        ([{"directory": tmp}], "Resource root 0 must have an id and a directory"),
        (
            [{"id": "a", "directory": tmp}, {"id": "", "directory": tmp}],
            "Resource root 1 needs a non-empty id without surrounding whitespace",
        ),
        (
            [{"id": "   ", "directory": tmp}],
            "Resource root 0 needs a non-empty id without surrounding whitespace",
        ),
        (
            [{"id": " a", "directory": tmp}],
            "Resource root 0 needs a non-empty id without surrounding whitespace",
        ),
        (
            [{"id": "a\ufeff", "directory": tmp}],
            "Resource root 0 needs a non-empty id without surrounding whitespace",
        ),
        (
            [{"id": 1, "directory": tmp}],
            "Resource root 0 needs a non-empty id without surrounding whitespace",
        ),
        (
            [{"id": "a", "directory": ""}],
            'Resource root "a" needs a non-empty directory without NUL',
        ),
        (
            [{"id": "a", "directory": tmp + "\0x"}],
            'Resource root "a" needs a non-empty directory without NUL',
        ),
        (
            [{"id": "a", "directory": tmp.encode()}],
            'Resource root "a" needs a non-empty directory without NUL',
        ),
        (
            [{"id": "a", "directory": _BytesPath()}],
            'Resource root "a" needs a non-empty directory without NUL',
        ),
        (
            [{"id": "a", "directory": _BrokenPath()}],
            'Resource root "a" has an unusable directory',
        ),
    ]


async def test_create_rejects_invalid_definitions(tmp_path: Path) -> None:
    for definitions, message in _invalid_definitions(str(tmp_path)):
        with pytest.raises(ResourceError) as caught:
            await ResourceLoader.create(definitions)  # pyright: ignore[reportArgumentType]
        assert (caught.value.code, str(caught.value)) == ("RESOURCE_INVALID_ROOTS", message)


async def test_create_rejects_duplicate_ids_before_touching_disk(tmp_path: Path) -> None:
    with pytest.raises(ResourceError) as caught:
        await ResourceLoader.create(
            [
                {"id": "a", "directory": str(tmp_path)},
                {"id": "a", "directory": str(tmp_path / "missing")},
            ]
        )
    assert caught.value.code == "DUPLICATE_RESOURCE_ROOT_ID"
    assert str(caught.value) == 'Duplicate resource root id "a"'


async def test_create_rejects_missing_and_non_directories(tmp_path: Path) -> None:
    with pytest.raises(ResourceError) as caught:
        await ResourceLoader.create([{"id": "a", "directory": str(tmp_path / "missing")}])
    assert caught.value.code == "RESOURCE_IO_FAILED"
    assert str(caught.value) == 'Could not open resource root "a": No such file or directory'
    file = write(tmp_path / "file.txt", "x")
    with pytest.raises(ResourceError) as caught:
        await ResourceLoader.create([{"id": "a", "directory": str(file)}])
    assert caught.value.code == "RESOURCE_INVALID_ROOTS"
    assert str(caught.value) == 'Resource root "a" is not a directory'


# --- the path grammar ---------------------------------------------------------------------------

ACCEPTED = [
    ("nested/../instructions.md", "instructions.md"),
    ("folder\\..\\safe.txt", "safe.txt"),
    ("a/./b//c", "a/b/c"),
    ("./a/", "a"),
    ("a\\b", "a/b"),
    ("a/b/../../c", "c"),
    ("console.txt", "console.txt"),
    ("com10", "com10"),
    ("lpt0.md", "lpt0.md"),
    ("x.y.z", "x.y.z"),
    (".hidden", ".hidden"),
    ("dir/.git/config", "dir/.git/config"),
    (" leading-space", " leading-space"),
]

REJECTED = [
    "",
    "/etc/passwd",
    "\\x",
    "\\\\server\\share",
    "C:/x",
    "C:x",
    "a/b:c",
    "file.txt:stream",
    "..",
    "../x",
    "a/../../x",
    "a/..",
    ".",
    "./",
    "a/\0b",
    "con.txt",
    "CON",
    "com9",
    "Com1.tar.gz",
    "folder/lpt9.md",
    "nul",
    "aux/x",
    "prn.md",
    "trailing.",
    "space ",
    "dir./x",
    "...",
]


@pytest.mark.parametrize(("path", "normalized"), ACCEPTED)
def test_grammar_accepts(path: str, normalized: str) -> None:
    assert normalize_resource_path(path) == normalized


@pytest.mark.parametrize("path", REJECTED)
def test_grammar_rejects(path: str) -> None:
    with pytest.raises(ResourceError) as caught:
        normalize_resource_path(path)
    assert caught.value.code == "RESOURCE_OUTSIDE_TRUSTED_ROOTS"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (None, "Resource path must be a non-empty string"),
        ("", "Resource path must be a non-empty string"),
        ("a\0", "Resource path must not contain NUL"),
        ("/a", "Resource path must be relative"),
        ("a:b", "Resource path must not contain ':'"),
        ("../a", "Resource path climbs above its root"),
        ("./.", "Resource path names no file"),
        ("a./b", "Resource path segment must not end in '.' or a space"),
        ("lpt1.x", "Resource path segment is a reserved device name"),
    ],
)
def test_grammar_messages(path: object, message: str) -> None:
    with pytest.raises(ResourceError, match="^" + message.replace(".", r"\.") + "$"):
        normalize_resource_path(path)  # pyright: ignore[reportArgumentType]


_ALPHABET = st.sampled_from(["a", "b", "C", ".", "..", "/", "\\", ":", " ", "\0", "con", "x1"])
_paths = st.lists(_ALPHABET, max_size=12).map("".join) | st.text(max_size=30)


def _normalized_or_none(path: str) -> str | None:
    try:
        return normalize_resource_path(path)
    except ResourceError as error:
        if error.code != "RESOURCE_OUTSIDE_TRUSTED_ROOTS":  # pragma: no cover - a failure
            raise
        return None


@settings(max_examples=examples(300))
@given(_paths)
def test_normalizer_properties(path: str) -> None:
    normalized = _normalized_or_none(path)
    if normalized is None:
        return
    segments = normalized.split("/")
    assert not set(":\\\0") & set(normalized)
    assert not normalized.startswith("/")
    assert all(segment not in ("", ".", "..") for segment in segments)
    assert normalize_resource_path(normalized) == normalized  # idempotent
    root = "/srv/root"
    joined = posixpath.normpath(posixpath.join(root, normalized))
    assert joined.startswith(root + "/")


@given(st.lists(st.sampled_from(["a", "b.md", "..", ".", "sub"]), min_size=1, max_size=10))
def test_dot_dot_pops_like_a_stack(parts: list[str]) -> None:
    stack: list[str] = []
    climbed = False
    for part in parts:
        if part == "..":
            if not stack:
                climbed = True
                break
            stack.pop()
        elif part != ".":
            stack.append(part)
    path = "/".join(parts)
    if climbed or not stack:
        assert _normalized_or_none(path) is None
    else:
        assert normalize_resource_path(path) == "/".join(stack)


# --- load_text ----------------------------------------------------------------------------------


async def test_precedence_and_fallthrough(tmp_path: Path) -> None:
    high, low = tmp_path / "high", tmp_path / "low"
    write(high / "shared.md", "from high")
    write(low / "shared.md", "from low")
    write(low / "only-low.md", "low only")
    write(low / "deep" / "file.md", "deep")
    write(high / "deep", "a file where low has a directory")
    loader = await loader_for(high, low)
    assert await loader.load_text("shared.md") == TextResource(
        root_id="r0", path="shared.md", content="from high"
    )
    assert await loader.load_text("x/../only-low.md") == TextResource(
        root_id="r1", path="only-low.md", content="low only"
    )
    # ENOTDIR in the first root falls through to the next
    assert await loader.load_text("deep\\file.md") == TextResource(
        root_id="r1", path="deep/file.md", content="deep"
    )
    assert await loader.load_text("missing.md") is None


async def test_grammar_rejection_through_load(tmp_path: Path) -> None:
    loader = await loader_for(tmp_path)
    error = await load_error(loader, "../escape")
    assert error.code == "RESOURCE_OUTSIDE_TRUSTED_ROOTS"
    with pytest.raises(ResourceError) as caught:
        await loader.list_directory("/abs")
    assert caught.value.code == "RESOURCE_OUTSIDE_TRUSTED_ROOTS"


async def test_utf8_bom_and_invalid_bytes(tmp_path: Path) -> None:
    write(tmp_path / "bom.md", b"\xef\xbb\xbf---\nname: x\n")
    write(tmp_path / "two-boms.md", b"\xef\xbb\xbf\xef\xbb\xbfx")
    write(tmp_path / "bad.md", b"ok \xff\xfe")
    write(tmp_path / "surrogate.md", b"\xed\xa0\x80")
    write(tmp_path / "empty.md", b"")
    loader = await loader_for(tmp_path)
    bom = await loader.load_text("bom.md")
    assert bom is not None
    assert bom.content == "---\nname: x\n"
    two = await loader.load_text("two-boms.md")
    assert two is not None
    assert two.content == "\ufeffx"
    empty = await loader.load_text("empty.md")
    assert empty is not None
    assert empty.content == ""
    for name in ("bad.md", "surrogate.md"):
        error = await load_error(loader, name)
        assert (error.code, str(error)) == (
            "RESOURCE_INVALID_UTF8",
            f'Resource "{name}" is not valid UTF-8',
        )


async def test_size_cap(tmp_path: Path) -> None:
    write(tmp_path / "exact.txt", b"a" * MAX_RESOURCE_TEXT_BYTES)
    write(tmp_path / "over.txt", b"a" * (MAX_RESOURCE_TEXT_BYTES + 1))
    loader = await loader_for(tmp_path)
    exact = await loader.load_text("exact.txt")
    assert exact is not None
    assert len(exact.content) == MAX_RESOURCE_TEXT_BYTES
    error = await load_error(loader, "over.txt")
    assert (error.code, str(error)) == (
        "RESOURCE_TOO_LARGE",
        f'Resource "over.txt" exceeds {MAX_RESOURCE_TEXT_BYTES} bytes',
    )


async def test_file_growing_past_the_cap_during_the_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fstat reports a small size but the read finds more than the cap (a file that grew)
    write(tmp_path / "grows.txt", b"a" * (MAX_RESOURCE_TEXT_BYTES + 10))
    loader = await loader_for(tmp_path)
    real_fstat = os.fstat

    def small_fstat(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_size > MAX_RESOURCE_TEXT_BYTES:
            fields = list(info)
            fields[stat.ST_SIZE] = 10
            return os.stat_result(fields)
        return info

    monkeypatch.setattr(os, "fstat", small_fstat)
    error = await load_error(loader, "grows.txt")
    assert error.code == "RESOURCE_TOO_LARGE"


def _sized(info: os.stat_result, size: int) -> os.stat_result:
    """``info`` with ``st_size`` replaced, every other field (``st_mtime_ns`` too) kept."""
    fields = list(info)
    fields[stat.ST_SIZE] = size
    extra = {name: getattr(info, name) for name in dir(info) if name.startswith("st_")}
    return os.stat_result(fields, extra)


async def test_a_file_returning_more_than_its_reported_size_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Like a /proc file: stat and fstat report size 0 every time, yet the read returns data.
    # Identity, mtime and the path all stay the same, so only "size == bytes read" catches it.
    target = os.path.realpath(write(tmp_path / "proc.txt", "data"))
    loader = await loader_for(tmp_path)
    real_fstat, real_stat = os.fstat, os.stat
    inode = real_stat(target).st_ino

    def zero_fstat(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        return _sized(info, 0) if info.st_ino == inode else info

    def zero_stat(path: str, *args: Any, **kwargs: Any) -> os.stat_result:
        info = real_stat(path, *args, **kwargs)
        return _sized(info, 0) if info.st_ino == inode else info

    monkeypatch.setattr(os, "fstat", zero_fstat)
    monkeypatch.setattr(os, "stat", zero_stat)
    error = await load_error(loader, "proc.txt")
    assert (error.code, str(error)) == (
        "RESOURCE_ROOT_CHANGED",
        'Resource "proc.txt" changed while it was read',
    )


async def test_directory_and_fifo_are_not_files(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "pipe")
    loader = await loader_for(tmp_path)
    for name in ("dir", "pipe"):
        async with asyncio.timeout(10):  # a blocking open of the FIFO would hang here
            error = await load_error(loader, name)
        assert (error.code, str(error)) == (
            "RESOURCE_NOT_FILE",
            f'Resource "{name}" is not a regular file',
        )


async def test_symlinks_inside_are_followed_and_escapes_rejected(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    write(root / "real" / "doc.md", "inside")
    write(outside / "secret.md", "secret")
    (root / "alias.md").symlink_to(root / "real" / "doc.md")
    (root / "relative.md").symlink_to("real/doc.md")
    (root / "escape.md").symlink_to(outside / "secret.md")
    (root / "escape-dir").symlink_to(outside)
    (root / "dangling.md").symlink_to(root / "nothing.md")
    loader = await loader_for(root)
    for name in ("alias.md", "relative.md"):
        assert await loader.load_text(name) == TextResource(
            root_id="r0", path=name, content="inside"
        )
    for name in ("escape.md", "escape-dir/secret.md"):
        error = await load_error(loader, name)
        assert (error.code, str(error)) == (
            "RESOURCE_OUTSIDE_TRUSTED_ROOTS",
            f'Resource "{name}" is outside the trusted roots',
        )
    assert await loader.load_text("dangling.md") is None


async def test_escape_in_first_root_is_final(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    write(second / "x.md", "second")
    write(tmp_path / "secret.md", "secret")
    (first / "x.md").symlink_to(tmp_path / "secret.md")
    loader = await loader_for(first, second)
    assert (await load_error(loader, "x.md")).code == "RESOURCE_OUTSIDE_TRUSTED_ROOTS"


async def test_symlink_loop_is_an_io_failure(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    loader = await loader_for(tmp_path)
    error = await load_error(loader, "a")
    assert error.code == "RESOURCE_IO_FAILED"
    assert str(error) == 'Could not read resource "a": Too many levels of symbolic links'


async def test_root_replaced_after_create(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "x.md", "old")
    loader = await loader_for(root)
    assert (await loader.load_text("x.md")) is not None
    root.rename(tmp_path / "moved")
    write(root / "x.md", "new")
    error = await load_error(loader, "x.md")
    assert (error.code, str(error)) == (
        "RESOURCE_ROOT_CHANGED",
        'Resource root "r0" changed since it was loaded',
    )
    with pytest.raises(ResourceError) as caught:
        await loader.list_directory("any")
    assert caught.value.code == "RESOURCE_ROOT_CHANGED"


async def test_root_removed_or_swapped_for_a_symlink(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "x.md", "x")
    loader = await loader_for(root)
    root.rename(tmp_path / "moved")
    assert (await load_error(loader, "x.md")).code == "RESOURCE_ROOT_CHANGED"
    root.symlink_to(tmp_path / "moved")  # same directory, but no longer the canonical path
    assert (await load_error(loader, "x.md")).code == "RESOURCE_ROOT_CHANGED"


async def test_second_root_checked_only_when_reached(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write(first / "x.md", "first")
    second.mkdir()
    loader = await loader_for(first, second)
    second.rename(tmp_path / "gone")
    assert await loader.load_text("x.md") is not None
    assert (await load_error(loader, "y.md")).code == "RESOURCE_ROOT_CHANGED"


def _hook(monkeypatch: pytest.MonkeyPatch, action: Callable[[str], None]) -> list[str]:
    calls: list[str] = []

    def hook(target: str) -> None:
        calls.append(target)
        action(target)

    monkeypatch.setattr(resource_reads, "_after_read", hook)
    return calls


async def test_file_replaced_during_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = write(tmp_path / "x.md", "original")
    loader = await loader_for(tmp_path)

    def replace(path: str) -> None:
        write(tmp_path / "new.md", "original")  # same size, different inode
        os.replace(tmp_path / "new.md", path)

    calls = _hook(monkeypatch, replace)
    error = await load_error(loader, "x.md")
    assert (error.code, str(error)) == (
        "RESOURCE_ROOT_CHANGED",
        'Resource "x.md" changed while it was read',
    )
    assert calls == [os.path.realpath(target)]


async def test_file_rewritten_in_place_during_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "x.md", "original")
    loader = await loader_for(tmp_path)

    def append(path: str) -> None:
        with open(path, "ab") as handle:
            handle.write(b" and more")

    _hook(monkeypatch, append)
    assert (await load_error(loader, "x.md")).code == "RESOURCE_ROOT_CHANGED"


async def test_file_removed_or_root_replaced_during_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    write(root / "x.md", "x")
    loader = await loader_for(root)
    _hook(monkeypatch, os.remove)
    assert (await load_error(loader, "x.md")).code == "RESOURCE_ROOT_CHANGED"
    write(root / "x.md", "x")

    def swap_root(_path: str) -> None:
        root.rename(tmp_path / "moved")
        write(root / "x.md", "x")

    _hook(monkeypatch, swap_root)
    error = await load_error(loader, "x.md")
    assert (error.code, str(error)) == (
        "RESOURCE_ROOT_CHANGED",
        'Resource root "r0" changed since it was loaded',
    )


async def test_target_becomes_a_symlink_during_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "x.md", "x")
    write(tmp_path / "y.md", "x")
    loader = await loader_for(tmp_path)

    def relink(path: str) -> None:
        os.remove(path)
        os.symlink(tmp_path / "y.md", path)

    _hook(monkeypatch, relink)
    assert (await load_error(loader, "x.md")).code == "RESOURCE_ROOT_CHANGED"


async def test_unreadable_file(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads files regardless of their mode")
    target = write(tmp_path / "secret.md", "x")  # pragma: no cover - not run as root
    target.chmod(0)  # pragma: no cover
    loader = await loader_for(tmp_path)  # pragma: no cover
    error = await load_error(loader, "secret.md")  # pragma: no cover
    assert (error.code, str(error)) == (  # pragma: no cover
        "RESOURCE_IO_FAILED",
        'Could not read resource "secret.md": Permission denied',
    )


def _failing(
    monkeypatch: pytest.MonkeyPatch, name: str, fault: int, when: Callable[[object], bool]
) -> None:
    real = getattr(os, name)

    def fake(*args: object, **kwargs: object) -> object:
        if when(args[0]):
            if name == "close":
                real(*args)
            raise OSError(fault, os.strerror(fault))
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, fake)


async def test_os_failures_are_io_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = os.path.realpath(write(tmp_path / "x.md", "x"))
    loader = await loader_for(tmp_path)
    with monkeypatch.context() as patch:
        _failing(patch, "open", errno.EACCES, lambda path: path == target)
        error = await load_error(loader, "x.md")
        assert (error.code, str(error)) == (
            "RESOURCE_IO_FAILED",
            'Could not read resource "x.md": Permission denied',
        )
    with monkeypatch.context() as patch:
        _failing(patch, "read", errno.EIO, lambda _fd: True)
        error = await load_error(loader, "x.md")
        assert (error.code, str(error)) == (
            "RESOURCE_IO_FAILED",
            'Could not read resource "x.md": Input/output error',
        )
    with monkeypatch.context() as patch:
        _failing(patch, "close", errno.EIO, lambda _fd: True)
        error = await load_error(loader, "x.md")
        assert (error.code, str(error)) == (
            "RESOURCE_IO_FAILED",
            'Could not read resource "x.md": Input/output error',
        )
    with monkeypatch.context() as patch:
        # a close failure after another failure does not hide the first one
        write(tmp_path / "bad.md", b"\xff")
        _failing(patch, "close", errno.EIO, lambda _fd: True)

        def grow(path: str) -> None:
            with open(path, "ab") as handle:
                handle.write(b"more")

        _hook(patch, grow)
        assert (await load_error(loader, "bad.md")).code == "RESOURCE_ROOT_CHANGED"
    assert await loader.load_text("x.md") is not None


async def test_concurrent_loads(tmp_path: Path) -> None:
    for index in range(8):
        write(tmp_path / f"f{index}.md", f"content {index}")
    loader = await loader_for(tmp_path)
    loaded = await asyncio.gather(*(loader.load_text(f"f{index}.md") for index in range(8)))
    assert [item.content if item else None for item in loaded] == [
        f"content {index}" for index in range(8)
    ]


# --- list_directory -----------------------------------------------------------------------------


async def test_list_directory_union_and_precedence(tmp_path: Path) -> None:
    high, low, outside = tmp_path / "high", tmp_path / "low", tmp_path / "outside"
    write(high / "skills" / "b" / "SKILL.md", "b")
    write(high / "skills" / "shared.md", "high")
    write(low / "skills" / "shared.md", "low")
    write(low / "skills" / "a.md", "a")
    write(low / "skills" / "z" / "x", "z")
    write(outside / "secret.md", "secret")
    skills = low / "skills"
    (skills / "inside-link.md").symlink_to(skills / "a.md")
    (skills / "dir-link").symlink_to(skills / "z")
    (skills / "escape.md").symlink_to(outside / "secret.md")
    (skills / "dangling.md").symlink_to(skills / "nothing")
    os.mkfifo(skills / "pipe")
    for bad in ("con.txt", "trailing.", "x ", "a:b", "back\\slash"):
        write(skills / bad, "bad name")
    loader = await loader_for(high, low)
    assert await loader.list_directory("./skills/") == (
        ResourceEntry(root_id="r1", path="skills/a.md", kind="file"),
        ResourceEntry(root_id="r0", path="skills/b", kind="directory"),
        ResourceEntry(root_id="r1", path="skills/dir-link", kind="directory"),
        ResourceEntry(root_id="r1", path="skills/inside-link.md", kind="file"),
        ResourceEntry(root_id="r0", path="skills/shared.md", kind="file"),
        ResourceEntry(root_id="r1", path="skills/z", kind="directory"),
    )
    assert await loader.list_directory("skills/b") == (
        ResourceEntry(root_id="r0", path="skills/b/SKILL.md", kind="file"),
    )


async def test_list_directory_missing_and_files(tmp_path: Path) -> None:
    write(tmp_path / "a" / "prompts", "a file, not a directory")
    (tmp_path / "b").mkdir()
    loader = await loader_for(tmp_path / "a", tmp_path / "b")
    assert await loader.list_directory("prompts") == ()
    assert await loader.list_directory("nothing/here") == ()


async def test_list_directory_escape(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "root" / "skills").symlink_to(tmp_path / "other")
    loader = await loader_for(tmp_path / "root")
    with pytest.raises(ResourceError) as caught:
        await loader.list_directory("skills")
    assert caught.value.code == "RESOURCE_OUTSIDE_TRUSTED_ROOTS"


async def test_list_directory_entry_cap(tmp_path: Path) -> None:
    full, over = tmp_path / "full", tmp_path / "over"
    full.mkdir()
    over.mkdir()
    for index in range(MAX_DIRECTORY_ENTRIES):
        (full / f"f{index}").touch()
        (over / f"f{index}").touch()
    (over / "one-more").touch()
    loader = await loader_for(tmp_path)
    assert len(await loader.list_directory("full")) == MAX_DIRECTORY_ENTRIES
    with pytest.raises(ResourceError) as caught:
        await loader.list_directory("over")
    assert (caught.value.code, str(caught.value)) == (
        "RESOURCE_TOO_LARGE",
        f'Resource directory "over" has more than {MAX_DIRECTORY_ENTRIES} entries',
    )


async def test_list_directory_os_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "d"
    write(directory / "x", "x")
    canonical = os.path.realpath(directory)
    loader = await loader_for(tmp_path)
    with monkeypatch.context() as patch:
        _failing(patch, "open", errno.EACCES, lambda path: path == canonical)
        with pytest.raises(ResourceError) as caught:
            await loader.list_directory("d")
        assert (caught.value.code, str(caught.value)) == (
            "RESOURCE_IO_FAILED",
            'Could not read resource "d": Permission denied',
        )
    with monkeypatch.context() as patch:
        _failing(patch, "scandir", errno.EIO, lambda _fd: True)
        with pytest.raises(ResourceError) as caught:
            await loader.list_directory("d")
        assert caught.value.code == "RESOURCE_IO_FAILED"
    with monkeypatch.context() as patch:
        # the directory is replaced by a file between resolution and open
        real_realpath = os.path.realpath

        def swap(path: str, *, strict: bool = False) -> str:
            result = real_realpath(path, strict=strict)
            if result == canonical and os.path.isdir(canonical):
                os.remove(os.path.join(canonical, "x"))
                os.rmdir(canonical)
                write(Path(canonical), "now a file")
            return result

        patch.setattr(os.path, "realpath", swap)
        assert await loader.list_directory("d") == ()


@given(
    st.lists(
        st.sampled_from(["a.md", "b", "c.txt", "con", "x.", ".h", "a:b", "a\\b", "..", "."]),
        unique=True,
    )
)
def test_valid_names_match_the_grammar(names: list[str]) -> None:
    for name in names:
        assert resource_paths.valid_name(name) == (_normalized_or_none(name) == name)


def test_names_that_are_not_utf8_are_invalid() -> None:
    undecodable = os.fsdecode(b"\xff.md")  # what os.scandir gives: a lone surrogate
    assert undecodable == "\udcff.md"
    assert not resource_paths.valid_name(undecodable)
    assert not resource_paths.valid_name("a\ud800")
    assert resource_paths.valid_name("caf\u00e9.md")


def write_raw(path: bytes, data: bytes) -> None:
    """Write a file whose name is raw bytes (maybe not valid UTF-8)."""
    with open(path, "wb") as handle:
        handle.write(data)


async def test_list_directory_skips_names_that_are_not_utf8(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    write(prompts / "good.md", "good")
    raw = os.fsencode(prompts)
    write_raw(raw + b"/\xff.md", b"bad name")
    os.mkdir(raw + b"/sk\xff")
    write_raw(raw + b"/caf\xc3\xa9.md", b"ok")  # valid UTF-8: listed
    loader = await loader_for(tmp_path)
    listed = await loader.list_directory("prompts")
    assert listed == (
        ResourceEntry(root_id="r0", path="prompts/caf\u00e9.md", kind="file"),
        ResourceEntry(root_id="r0", path="prompts/good.md", kind="file"),
    )
    for entry in listed:
        entry.path.encode("utf-8")


async def test_cancelled_load_stops_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "x.md", "x")
    loader = await loader_for(tmp_path)
    entered = threading.Event()
    release = threading.Event()
    finished = threading.Event()

    def block(_path: str) -> None:
        entered.set()
        release.wait(20)
        finished.set()

    _hook(monkeypatch, block)
    task = asyncio.create_task(loader.load_text("x.md"))
    assert await asyncio.to_thread(entered.wait, 20)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not finished.is_set()  # the caller stopped waiting while the thread still runs
    release.set()
    assert await asyncio.to_thread(finished.wait, 20)


async def test_directory_changed_during_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "d"
    write(directory / "kept.md", "x")
    write(directory / "vanishes.md", "x")
    write(directory / "sub" / "x", "x")
    (directory / "vanishing-link").symlink_to(directory / "kept.md")
    loader = await loader_for(tmp_path)

    def remove_some(path: str) -> None:
        os.remove(os.path.join(path, "vanishes.md"))
        os.remove(os.path.join(path, "vanishing-link"))

    calls = _hook(monkeypatch, remove_some)
    assert await loader.list_directory("d") == (
        ResourceEntry(root_id="r0", path="d/kept.md", kind="file"),
        ResourceEntry(root_id="r0", path="d/sub", kind="directory"),
    )
    assert calls == [os.path.realpath(directory)]

    def swap(path: str) -> None:
        os.rename(path, tmp_path / "old")
        os.mkdir(path)

    _hook(monkeypatch, swap)
    with pytest.raises(ResourceError) as caught:
        await loader.list_directory("d")
    assert (caught.value.code, str(caught.value)) == (
        "RESOURCE_ROOT_CHANGED",
        'Resource directory "d" changed while it was listed',
    )

    def remove(path: str) -> None:
        os.rename(path, tmp_path / "older")

    _hook(monkeypatch, remove)
    with pytest.raises(ResourceError) as caught:
        await loader.list_directory("d")
    assert caught.value.code == "RESOURCE_ROOT_CHANGED"


async def test_symlinked_target_retargeted_during_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "one.md", "same")
    write(tmp_path / "two.md", "same")
    (tmp_path / "alias.md").symlink_to("one.md")
    loader = await loader_for(tmp_path)

    def retarget(_path: str) -> None:
        os.remove(tmp_path / "alias.md")
        (tmp_path / "alias.md").symlink_to("two.md")

    _hook(monkeypatch, retarget)
    assert (await load_error(loader, "alias.md")).code == "RESOURCE_ROOT_CHANGED"
