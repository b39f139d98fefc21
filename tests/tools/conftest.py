"""Fixtures for members with tools: the scripted model server, an effects file, councils."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from tests.llm.conftest import KEY_ENV, server
from wopdsl import Council

__all__ = ["KEY_ENV", "server"]  # the scripted model server fixture, as the llm tests use it

MCP_SERVER = str(Path(__file__).with_name("mcp_test_server.py"))
"""The test MCP server (official SDK): stdio by default, ``--http PORT`` for HTTP."""
MCP_TOKEN = "sentinel-7f3a9c-secret"
"""The bearer token the HTTP test MCP server requires (a secret: never in any output)."""

APPROVED_BY_ONCALL = """\
[members.tool_policy.restart_service]
approval = "oncall"

[[members]]
id = "oncall"
role = "user"
engine = "human"
initial_turn = false
"""
"""The end of a council file: the person ``oncall`` approves each ``restart_service`` call."""

COUNCIL_TOML = """\
[council]
id = "ops"
task = "Fix it."
max_turns_per_member = 1

[models.m]
model = "test-model"
api_key_env = "{key}"

[mcp.{name}]
{server}

[[rooms]]
id = "ops"
members = ["sre"]

[[members]]
id = "sre"
role = "sre"
engine = "llm"
model = "m"
tools = [{tools}]
"""
"""A council file: member ``sre`` (profile ``m``) with ``tools`` and one ``[mcp.NAME]`` table
(its ``server`` lines); the tools are on line 23."""


def council_toml(server: str, tools: str, *, name: str = "test") -> str:
    """:data:`COUNCIL_TOML` with the server's table lines and the ``tools`` array's items."""
    return COUNCIL_TOML.format(key=KEY_ENV, name=name, server=server, tools=tools)


EFFECTS_ENV = "WOPDSL_TEST_EFFECTS"
"""The file the test tools append one line to per effect (they count their own effects)."""


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The effects file (empty); the test tools append to it."""
    path = tmp_path / "effects.jsonl"
    path.write_text("")
    monkeypatch.setenv(EFFECTS_ENV, str(path))
    return path


def effects_in(path: Path) -> list[dict[str, Any]]:
    """The effects the tools recorded, in order."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def record_effect(**fields: Any) -> None:
    """What a test tool does: one line in the effects file, flushed at once."""
    with open(os.environ[EFFECTS_ENV], "a", encoding="utf-8") as out:
        out.write(json.dumps(fields) + "\n")
        out.flush()
        os.fsync(out.fileno())


def tool_council(*, tools: list[str], policy: dict[str, dict[str, Any]] | None = None,
                 profile: dict[str, Any] | None = None, humans: tuple[str, ...] = (),
                 member: dict[str, Any] | None = None, **settings: Any) -> Council:
    """One llm member ``sre`` with ``tools`` in room ``ops`` (and any human members)."""
    council = Council("ops-team", task="Fix the outage.", **settings)
    council.model("m", model="test-model", api_key_env=KEY_ENV,
                  **{"retry_backoff_ms": 1, **(profile or {})})
    council.room("ops", members=["sre", *humans])
    council.add_member("sre", role="sre", engine="llm", model="m", tools=tools,
                       tool_policy=policy, **(member or {}))
    for human in humans:
        council.human(human)
    return council


def wop_check(store: Path, run_id: str) -> None:
    """``wop check`` and ``wop check --v2`` pass on the stored run."""
    for extra in ([], ["--v2"]):
        done = subprocess.run([sys.executable, "-m", "wopdsl", "--store", str(store), "check",
                               *extra, run_id], capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, (extra, done.stdout, done.stderr)


def free_port() -> int:
    """A loopback port nothing listens on (yet)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def mcp_http_server(port: int, effects: Path | None = None, **env: str) -> Iterator[str]:
    """The test MCP server over streamable HTTP on ``port`` (``env`` added to its own);
    requires ``Bearer MCP_TOKEN``. Yields its url."""
    environ = {**os.environ, "MCP_TEST_TOKEN": MCP_TOKEN, **env}
    if effects is not None:
        environ[EFFECTS_ENV] = str(effects)
    proc = subprocess.Popen([sys.executable, MCP_SERVER, "--http", str(port)], env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


@pytest.fixture
def http_server(effects: Path) -> Iterator[str]:
    """The test MCP server over streamable HTTP on loopback; requires ``Bearer MCP_TOKEN``."""
    with mcp_http_server(free_port()) as url:
        yield url


def serving_http(**env: str) -> contextlib.AbstractContextManager[str]:
    """The test MCP server over streamable HTTP on a free loopback port (``env`` added)."""
    return mcp_http_server(free_port(), **env)


SECRET_ENV = "OPS_MCP_SECRET"
"""A variable a council passes to its stdio MCP server (``env``): its value is a secret."""
SECRET = "ops-secret-Kq7Zp2Wm9Xc4"
"""Its value in the tests: never in an event, a log line, an answer or a file."""
SECRET_FORMS = [SECRET, SECRET.upper(), SECRET[::-1], base64.b64encode(SECRET.encode()).decode()]
"""The forms a server may print it in (each one redacted)."""
LEAKS = ("import base64, os, sys; s = os.environ['OPS_MCP_SECRET']; "
         "open(os.environ['WOPDSL_TEST_EFFECTS'], 'a').write('{\"started\": 1}\\n'); "
         "print('cannot start with', s, s.upper(), s[::-1], "
         "base64.b64encode(s.encode()).decode(), file=sys.stderr); sys.exit(5)")
"""A stdio MCP server that counts its start (an effect), prints the secret it was passed (in
four forms) and exits."""

DOWN_COUNCIL = """\
[council]
id = "down"
task = "Fix the outage."

[models.m]
model = "test-model"
api_key_env = "{key}"

[mcp.ops]
{server}

[[rooms]]
id = "ops"
members = ["sre"]

[[members]]
id = "sre"
role = "sre"
engine = "llm"
model = "m"
tools = ["mcp:ops/count"]
"""


def down_council(folder: Path, kind: str, port: int) -> Path:
    """``down.toml``: member ``sre`` uses ``mcp:ops/count``; the server is down.

    ``stdio``: its command prints the secret it is passed and exits (:data:`LEAKS`);
    ``hang``: its command never answers (``startup_timeout_ms = 500``);
    ``http``: nothing listens on ``port`` (yet), and the secret is its bearer token.
    """
    if kind == "stdio":
        server = (f'command = "python"\nargs = ["-c", {json.dumps(LEAKS)}]\n'
                  f'env = ["{SECRET_ENV}", "{EFFECTS_ENV}"]')
    elif kind == "hang":
        server = ('command = "python"\nargs = ["-c", "import time; time.sleep(60)"]\n'
                  "startup_timeout_ms = 500")
    else:
        server = (f'url = "http://127.0.0.1:{port}/mcp"\n'
                  'headers = { Authorization = "OPS_MCP_AUTH" }')
    path = folder / "down.toml"
    path.write_text(DOWN_COUNCIL.format(key=KEY_ENV, server=server), encoding="utf-8")
    return path


def down_environment(model_url: str, effects: Path) -> dict[str, str]:
    """What a `wop` child running :func:`down_council` needs (both secrets set)."""
    return {"OPENAI_BASE_URL": model_url, KEY_ENV: "sk-test", EFFECTS_ENV: str(effects),
            SECRET_ENV: SECRET, "OPS_MCP_AUTH": f"Bearer {MCP_TOKEN}",
            "PYTHONIOENCODING": "utf-8"}
