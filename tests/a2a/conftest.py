"""Fixtures for ``a2a`` members: a real A2A agent (official SDK) on loopback, councils."""

from __future__ import annotations

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

pytest.importorskip("a2a.client", reason="the a2a extra (wopdsl[a2a]) is not installed")

from tests.jupyter.conftest import kernel_prefix, run_notebook

__all__ = ["kernel_prefix", "run_notebook"]
"""Fixtures of tests/jupyter used here too: a notebook run on a real kernel."""

AGENT = str(Path(__file__).with_name("a2a_test_agent.py"))
"""The test agent (``python a2a_test_agent.py PORT``)."""
TOKEN = "a2a-sentinel-Qx8Lm3Rv7Tz2"
"""The bearer token the test agent requires (a secret: never in any output)."""
TOKEN_ENV = "ANALYST_TOKEN"

ASK = ('{ summary = "asked", posts = [{ room = "market", text = "Size it, please.", '
       'mentions = ["analyst"] }] }')
"""The writer's first turn: it asks the analyst in room ``market``."""

COUNCIL = """\
[council]
id = "market"
task = "Size the EU heat-pump market."
max_turns_per_member = 2
{council}

[[rooms]]
id = "market"
members = ["writer", "analyst"]

[[rooms]]
id = "side"
members = ["writer", "outsider"]

[[members]]
id = "writer"
role = "writer"
engine = "script"
script = [
  {ask},
  {{ summary = "done: {{{{ triggers[0].text }}}}" }},
]

[[members]]
id = "outsider"
role = "bystander"
engine = "script"
initial_turn = false
script = [{{ summary = "here" }}]

[[members]]
id = "analyst"
role = "market analyst"
brief = "Size the market. [mode={mode}]"
engine = "a2a"
url = "{url}"
headers = {{ Authorization = "env:{token_env}" }}
initial_turn = false
{member}
"""


def council_toml(url: str, mode: str = "plain", *, council: str = "", member: str = "") -> str:
    """The test council: ``writer`` asks ``analyst`` (the remote agent, in ``mode``)."""
    return COUNCIL.format(url=url, mode=mode, council=council, member=member,
                          token_env=TOKEN_ENV, ask=ASK)


def free_port() -> int:
    """A loopback port nothing listens on (yet)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def received(log: Path) -> list[dict[str, Any]]:
    """The messages the agent counted, in order."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


@contextlib.contextmanager
def serving(log: Path, port: int | None = None, **env: str) -> Iterator[str]:
    """The test agent on a loopback port; yields its base URL."""
    port = port or free_port()
    environ = {**os.environ, "A2A_TEST_LOG": str(log), "A2A_TEST_TOKEN": TOKEN, **env}
    proc = subprocess.Popen([sys.executable, AGENT, str(port)], env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                raise RuntimeError(proc.communicate()[1].decode())
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """The file the agent counts the messages it receives in."""
    return tmp_path / "received.jsonl"


@pytest.fixture
def agent(log: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The test agent on loopback (its token in ``$ANALYST_TOKEN``); yields its URL."""
    monkeypatch.setenv(TOKEN_ENV, f"Bearer {TOKEN}")
    with serving(log) as url:
        yield url
