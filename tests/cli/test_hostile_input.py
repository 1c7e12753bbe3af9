"""The command line under hostile input (issue 25, items 9-11): a coded message and exit
status 2, never a traceback, a hang or a secret.

In process (``tether.cli.main.main`` with the environment patched): ``--session`` paths that
cannot be used, a config file nested 5,000 levels deep, a ``cwd-index.json`` that is a FIFO or
nested too deeply, base URLs with a bad port or host (refused while the options are parsed),
``tether eval`` targets and inputs that are not regular files, and the places a secret could
be shown: a URL's user, password and query values, a key pasted as a TOML key. Waits that a
regression could turn into hangs run on a thread joined with a deadline.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.cli.config import DEFAULT_EXTENSION_TIMEOUT, CliConfigError, load_config
from tether.cli.eval import add_parser
from tether.cli.eval import main as eval_main
from tether.cli.main import main
from tether.cli.models import choose_model, display_url, run_problem
from tether.cli.session_index import (
    INDEX_NAME,
    last_session,
    remember_session,
    session_directories,
)
from tether.cli.urls import http_url_problem
from tether.protocol import FailedRunResult, RunError, UserMessage

FAKE_KEY = "sk-tether-FAKE-HOSTILE-KEY-0123456789abcdefXYZ"
GUARD = 10.0
ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "fixtures" / "eval-tasks.json"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /proc are POSIX")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config path in ``tmp_path`` (absent until a test writes it) and a fake key."""
    config = tmp_path / "config.toml"
    monkeypatch.setenv("TETHER_CONFIG", str(config))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    return config


def within(seconds: float, work: Callable[[], object]) -> object:
    """``work()`` on a thread, which must finish within ``seconds`` (else the test fails)."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "did not finish: it blocked"
    return result[0]


def coded(err: str, code: str) -> str:
    assert f"[{code}]" in err, err
    assert "Traceback" not in err, err
    assert FAKE_KEY not in err
    return err


# -- item 9: --session paths -----------------------------------------------------------------


_SESSION_PATHS: dict[str, Callable[[Path], str]] = {
    "missing-directory": lambda tmp: str(tmp / "missing" / "dir" / "s.jsonl"),
    "name-over-255-bytes": lambda tmp: str(tmp / ("a" * 300 + ".jsonl")),
    "proc-self-mem": lambda tmp: "/proc/self/mem",
}


@pytest.mark.parametrize("case", list(_SESSION_PATHS))
def test_a_session_path_that_cannot_be_used_is_a_coded_usage_error(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    path = _SESSION_PATHS[case](tmp_path)
    status = main(["run", "--model", "openai/gpt-test", "-p", "hi", "--session", path])
    assert status == 2
    err = coded(capsys.readouterr().err, "CLI_SESSION_UNUSABLE")
    assert err.startswith("tether run: [CLI_SESSION_UNUSABLE] cannot use the session file")


# -- item 9: a config nested 5,000 levels deep -------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["a = " + "[" * 5000 + "]" * 5000 + "\n", "a = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n"],
    ids=["arrays", "inline-tables"],
)
def test_a_deeply_nested_config_is_invalid_in_every_command(
    env: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    env.write_text(text, encoding="utf-8")
    with pytest.raises(CliConfigError) as caught:
        load_config(env)
    assert caught.value.code == "CLI_CONFIG_INVALID"
    assert "nested too deeply" in str(caught.value)
    for argv in (["models"], ["rpc"], ["run", "--model", "openai/x", "-p", "hi"]):
        assert main(argv) == 2, argv
        coded(capsys.readouterr().err, "CLI_CONFIG_INVALID")


# -- item 9: the -c index ----------------------------------------------------------------------


def test_a_fifo_index_is_ignored_at_once(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    fifo = sessions / INDEX_NAME
    os.mkfifo(fifo)
    try:
        assert within(GUARD, lambda: last_session(sessions, tmp_path)) is None
        within(GUARD, lambda: remember_session(sessions, tmp_path, "abc"))
    finally:
        if stat.S_ISFIFO(os.lstat(fifo).st_mode):  # release a reader still blocked on it
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    (sessions / "abc.jsonl").write_text("", encoding="utf-8")
    assert last_session(sessions, tmp_path) == "abc"  # the FIFO was replaced by the index


def test_a_deep_or_huge_index_is_ignored(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / "abc.jsonl").write_text("", encoding="utf-8")
    index = sessions / INDEX_NAME
    index.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert last_session(sessions, tmp_path) is None
    with index.open("wb") as handle:  # sparse: larger than any index, no disk used
        handle.truncate(64 << 20)
    assert last_session(sessions, tmp_path) is None
    remember_session(sessions, tmp_path, "abc")
    assert last_session(sessions, tmp_path) == "abc"
    assert json.loads(index.read_text(encoding="utf-8"))["version"] == 1


_NAMES = ("abc", "gone", "@CWD@")
"""A session with a file, one without, and the directory of the test (filled in)."""
_INDEX_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.sampled_from(_NAMES),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=8) | st.sampled_from(_NAMES), inner, max_size=3)
    ),
    max_leaves=8,
)
_INDEXES = (
    st.binary(max_size=80)
    | _INDEX_JSON.map(lambda value: json.dumps(value).encode())
    | st.fixed_dictionaries(
        {},
        optional={"version": _INDEX_JSON, "sessions": _INDEX_JSON, "directories": _INDEX_JSON},
    ).map(lambda value: json.dumps(value).encode())
)


@given(_INDEXES)
def test_any_index_file_is_read_or_ignored_and_then_rewritten(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        sessions = Path(directory)
        (sessions / "abc.jsonl").write_text("", encoding="utf-8")
        cwd = json.dumps(str(sessions))[1:-1].encode()
        (sessions / INDEX_NAME).write_bytes(content.replace(b"@CWD@", cwd))
        found = last_session(sessions, sessions)
        assert found is None or (sessions / f"{found}.jsonl").is_file()
        assert all(
            type(key) is str and type(value) is str
            for key, value in session_directories(sessions).items()
        )
        remember_session(sessions, sessions, "abc")
        assert last_session(sessions, sessions) == "abc"
        assert session_directories(sessions)["abc"] == os.path.abspath(sessions)


# -- item 9: base URLs are checked while the options are parsed --------------------------------


@pytest.mark.parametrize(
    "bad",
    ["http://127.0.0.1:99999/v1", "http://[::1/v1", "http://:80/v1", "http://host:x/v1"],
)
@pytest.mark.parametrize("command", ["run", "rpc", "chat", "eval"])
def test_a_base_url_with_a_bad_host_or_port_is_a_usage_error_naming_the_option(
    env: Path, capsys: pytest.CaptureFixture[str], bad: str, command: str
) -> None:
    argv = [command, "--model", "openai/x", "--base-url", bad]
    if command == "eval":
        argv.insert(1, str(TASKS))
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "argument --base-url:" in err
    assert "Traceback" not in err


def test_a_config_base_url_with_a_bad_port_is_invalid(env: Path) -> None:
    env.write_text('[providers.box]\nbase_url = "http://box:99999/v1"\n', encoding="utf-8")
    with pytest.raises(CliConfigError) as caught:
        load_config(env)
    assert "'providers.box.base_url'" in str(caught.value)
    assert "99999" not in str(caught.value)  # the URL itself is never shown


@given(st.text(max_size=60))
def test_an_accepted_url_is_one_the_http_client_can_use(text: str) -> None:
    from urllib.parse import urlsplit

    for candidate in (text, "http://" + text, "https://h" + text):
        problem = http_url_problem(candidate)
        if problem is None:
            parts = urlsplit(candidate)
            assert parts.scheme in ("http", "https")
            assert parts.hostname
            port = parts.port
            assert port is None or 1 <= port <= 65535
        else:
            assert problem.startswith("must "), problem  # a phrase, never the URL itself


# -- item 10: tether eval's files --------------------------------------------------------------


def eval_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tether")
    add_parser(parser.add_subparsers())
    return parser.parse_args(["eval", *argv])


@pytest.mark.parametrize("option", ["--out", "--html"])
def test_an_eval_target_that_is_not_a_regular_file_is_never_replaced(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    fifo = tmp_path / "target"
    os.mkfifo(fifo)
    status = within(GUARD, lambda: eval_main(eval_args(str(TASKS), option, str(fifo))))
    assert status == 2
    err = coded(capsys.readouterr().err, "CLI_EVAL_WRITE_FAILED")
    assert "not a regular file" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO
    regular = tmp_path / "report.out"
    regular.write_text("old", encoding="utf-8")
    assert eval_main(eval_args(str(TASKS), option, str(regular))) == 0
    assert regular.read_text(encoding="utf-8") != "old"  # a regular file is replaced


def _capped() -> None:
    """In the child: at most 2 GiB of address space, so a regression that reads without
    bound fails with MemoryError instead of taking the machine's memory."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.slow
@pytest.mark.parametrize("where", ["tasks", "compare"])
def test_eval_inputs_are_bounded_like_the_fixture_loader(
    env: Path, tmp_path: Path, where: str
) -> None:
    import subprocess

    code = "CLI_EVAL_TASKS_UNREADABLE" if where == "tasks" else "CLI_EVAL_BASELINE_UNREADABLE"
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:  # sparse: no disk used
        handle.truncate(1 << 40)
    tether = Path(sys.executable).parent / "tether"
    for path, reason in (("/dev/zero", "not a regular file"), (str(huge), "larger than")):
        argv = [path] if where == "tasks" else [str(TASKS), "--compare", path]
        completed = subprocess.run(
            [str(tether), "eval", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_capped,
            env={**os.environ, "PYTHONDEVMODE": "", "PYTHONASYNCIODEBUG": ""},
            check=False,
        )
        assert completed.returncode == 2, completed.stderr
        assert reason in coded(completed.stderr, code)


# -- item 11: secrets in display ---------------------------------------------------------------

_SECRET = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=12, max_size=24)
_HOST = st.sampled_from(["host", "[::1", "[::1]:8", "h:99999", "", "h%zz", "[v1.x]"])


@given(_SECRET, _HOST, st.sampled_from(["", "/v1", "/v1/", "/a?b"]))
def test_display_url_never_shows_userinfo_or_query_values(
    secret: str, host: str, path: str
) -> None:
    for url in (
        f"http://user:{secret}@{host}{path}",
        f"https://{secret}@{host}{path}",
        f"http://{host}{path}?api_key={secret}&x=1",
        f"http://{host}/v1?{secret}",
        f"http://{host}/v1#{secret}",
    ):
        shown = display_url(url)
        assert secret not in shown, (url, shown)


def test_display_url_keeps_what_is_not_secret() -> None:
    assert display_url("http://user:pw@host:1/v1") == "http://***@host:1/v1"
    assert display_url("https://api.openai.com/v1") == "https://api.openai.com/v1"
    assert display_url("http://[::1") == "http://[::1"
    assert display_url("http://u:p@[::1/v1") == "http://***@[::1/v1"
    assert display_url("http://h/v1?key=abc&debug") == "http://h/v1?key=***&***"


def test_the_unreachable_server_message_hides_a_query_key(env: Path) -> None:
    from tether.cli.config import load_config as read

    choice = choose_model(
        "openai/gpt-test", base_url=f"http://127.0.0.1:9/v1?key={FAKE_KEY}", config=read()
    )
    result = FailedRunResult(
        messages=(UserMessage(id="u1", content="hi"),),
        error=RunError(code="MODEL_STREAM_FAILED", message="PROVIDER_CONNECTION_FAILED: refused"),
    )
    problem = run_problem(result, None, choice)
    assert problem is not None
    assert problem.code == "CLI_SERVER_UNREACHABLE"
    assert FAKE_KEY not in str(problem)
    assert "http://127.0.0.1:9/v1?key=***" in str(problem)


@pytest.mark.parametrize(
    "text",
    [
        f'{FAKE_KEY} = "x"\n',
        f'"{FAKE_KEY}" = 1\n',
        f'[providers.box]\nbase_url = "http://b"\n{FAKE_KEY} = 1\n',
        f'[providers."{FAKE_KEY}"]\nbase_url = "http://b"\napi = "grpc"\n',
        f'[models."{FAKE_KEY}"]\n',
        f"[tools]\n{FAKE_KEY} = true\n",
        "x" + "y" * 200 + " = 1\n",
    ],
)
def test_a_key_pasted_as_a_toml_key_is_never_echoed(env: Path, text: str) -> None:
    env.write_text(text, encoding="utf-8")
    with pytest.raises(CliConfigError) as caught:
        load_config(env)
    message = str(caught.value)
    assert FAKE_KEY not in message
    assert FAKE_KEY[8:20] not in message  # not even a part of it
    assert "y" * 20 not in message
    assert len(message) < 400


_KEY_EDGE = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", max_size=12)
_KEY_RUN = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    min_size=16,
    max_size=40,
)


@given(_KEY_EDGE, _KEY_RUN, _KEY_EDGE, st.sampled_from(["{k} = 1", "[tools]\n{k} = 1"]))
def test_no_key_holding_a_secret_like_run_is_ever_echoed(
    prefix: str, run: str, suffix: str, form: str
) -> None:
    import tempfile

    key = f"{prefix}{run}{suffix}"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.toml"
        path.write_text(form.format(k=f'"{key}"') + "\n", encoding="utf-8")
        with pytest.raises(CliConfigError) as caught:
            load_config(path)
    assert run not in str(caught.value)
    assert f"<a {len(key)}-character key, not shown>" in str(caught.value)


def test_a_short_unknown_key_is_still_named(env: Path) -> None:
    env.write_text('[providers.box]\nbase-url = "http://b"\n', encoding="utf-8")
    with pytest.raises(CliConfigError, match=r"unknown key 'providers\.box\.base-url'"):
        load_config(env)


# -- the config's extension_timeout ------------------------------------------------------------


def test_extension_timeout_is_read_and_checked(env: Path) -> None:
    from tether.agent.extensions import EXTENSION_TIMEOUT

    assert DEFAULT_EXTENSION_TIMEOUT == EXTENSION_TIMEOUT
    assert load_config(env).extension_timeout == EXTENSION_TIMEOUT
    env.write_text("extension_timeout = 2.5\n", encoding="utf-8")
    assert load_config(env).extension_timeout == 2.5
    bad: list[Any] = ["0", "-1", "true", "'5'", "nan", "inf", "100000"]
    for value in bad:
        env.write_text(f"extension_timeout = {value}\n", encoding="utf-8")
        with pytest.raises(CliConfigError, match="'extension_timeout' must be"):
            load_config(env)
