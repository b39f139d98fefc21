"""``wop run`` with an MCP server that is down: the run fails naming it, as under ``wop serve``.

(tests/server/test_mcp_down.py is the same on a host.) A real ``wop run`` child; the stdio
server prints the secret it was passed before it exits, and the secret must appear nowhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")

from tests.tools.conftest import (
    KEY_ENV,
    MCP_TOKEN,
    SECRET_FORMS,
    down_council,
    down_environment,
    effects_in,
    free_port,
    wop_check,
)
from wopdsl import SqliteStore
from wopdsl.testing.model_server import ScriptedModelServer

pytestmark = pytest.mark.slow
RUN = "mcp-down-0000000001"
"""A run id long enough for v2 (`wop check --v2`)."""


def wop(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "WOP_STORE"}
    return subprocess.run([sys.executable, "-m", "wopdsl", "--store", "runs.db", *args],
                          cwd=folder, env={**full, **env}, capture_output=True, text=True,
                          timeout=180, check=False)


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_wop_run_fails_the_run_naming_the_server_and_no_secret(
        server: ScriptedModelServer, tmp_path: Path, kind: str) -> None:
    down_council(tmp_path, kind, free_port())
    env = down_environment(server.url, tmp_path / "effects.jsonl")
    done = wop(tmp_path, env, "run", "down.toml", "--run-id", RUN)
    assert done.returncode == 1, done.stdout + done.stderr  # failed (2 would be bad input)
    printed = done.stdout + done.stderr
    assert "MCP server 'ops' could not be reached" in printed, printed
    assert "Traceback" not in printed
    events = wop(tmp_path, env, "events", RUN).stdout
    last = json.loads(events.splitlines()[-1])
    assert last["type"] == "run.failed"
    assert last["payload"]["error"]["details"] == {"nodeError": "TOOL_ERROR"}
    if kind == "stdio":
        assert "[REDACTED]" in last["payload"]["error"]["message"]
        # Started once: the check before the run counts as the run's first start.
        assert effects_in(tmp_path / "effects.jsonl") == [{"started": 1}]
    assert server.requests == []
    wop_check(tmp_path / "runs.db", RUN)
    stored = (tmp_path / "runs.db").read_bytes().decode("utf-8", "replace")
    for text in (printed, events, stored):
        for form in [*SECRET_FORMS, MCP_TOKEN]:
            assert form not in text


def test_a_stdio_server_that_never_answers_times_out_quietly(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    down_council(tmp_path, "hang", 0)
    env = {"OPENAI_BASE_URL": server.url, KEY_ENV: "sk-test"}
    done = wop(tmp_path, env, "run", "down.toml", "--run-id", RUN)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "MCP server 'ops' did not answer within 0.5 s of starting" in done.stdout + \
        done.stderr
    assert "Future exception was never retrieved" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    store = SqliteStore(tmp_path / "runs.db")
    try:
        assert store.read(RUN)[-1]["type"] == "run.failed"
    finally:
        store.close()
