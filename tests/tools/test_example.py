"""The shipped example: councils/ops-desk.toml with its MCP server and Python tool.

``examples/ops_desk_demo.py`` runs as a user runs it (a subprocess in a fresh folder);
``wop validate`` lists the member's tools from the live MCP server; ``wop run`` refuses a
tool the server does not have before writing anything, at the file's line and column.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")

from tests.openwop_schemas import load_schemas
from wopdsl import SqliteStore

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _wop(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "WOP_STORE"}
    return subprocess.run([sys.executable, "-m", "wopdsl", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def test_the_demo_runs_the_council_with_tools_and_an_approval(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "ops_desk_demo.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=180,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "waiting-input: sre asks to call restart_service" in done.stdout
    assert "completed: 3 model calls" in done.stdout
    assert "Restarted db with oncall's approval." in done.stdout
    assert "restarted db: too many connections" in (tmp_path / ".wop" / "restarts.log"
                                                    ).read_text()
    store = SqliteStore(tmp_path / ".wop" / "ops-desk-demo.db")
    try:
        events = store.read(store.runs()[0].run_id)
    finally:
        store.close()
    kinds = [e["type"] for e in events]
    assert kinds.count("agent.toolCalled") == 3 and kinds.count("tool.session.opened") == 1
    assert "approval.granted" in kinds
    load_schemas().check_events(events)


def test_validate_lists_the_tools_and_the_worst_case() -> None:
    done = _wop("validate", "councils/ops-desk.toml", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "      tool read_log (mcp:ops/read_log; not idempotent; timeout 30 s)" in out
    assert ("      tool restart_service (ops_tools:restart_service; approval oncall; "
            "not idempotent; timeout 10 s)") in out
    assert "  worst case tool calls: 12, at most 12 in the run (max_tool_calls)" in out
    assert "    sre: 2 turns × 6 tool calls (max_tool_calls) = 12" in out
    assert "    sre: 16 calls × 600 output tokens" in out  # 2 × (1 + 1 repair + 6 rounds)
    listed = json.loads(_wop("validate", "councils/ops-desk.toml", "--json", cwd=ROOT).stdout)
    assert listed["tools"]["sre"][0].startswith("read_log (mcp:ops/read_log")


def test_a_tool_the_server_lacks_is_refused_at_load(tmp_path: Path) -> None:
    (tmp_path / "councils").mkdir()
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "mcp_ops_server.py", tmp_path / "examples")
    shutil.copy(ROOT / "councils" / "ops_tools.py", tmp_path / "councils")
    text = (ROOT / "councils" / "ops-desk.toml").read_text(encoding="utf-8")
    (tmp_path / "councils" / "ops-desk.toml").write_text(
        text.replace("mcp:ops/service_status", "mcp:ops/service_statuz"), encoding="utf-8")
    for command in ("validate", "run"):
        done = _wop(command, "councils/ops-desk.toml", "--store", "runs.db", cwd=tmp_path) \
            if command == "run" else _wop(command, "councils/ops-desk.toml", cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "error[DECLARATION_INVALID]" in done.stderr
        assert "councils/ops-desk.toml:40:30: members[0] (sre).tools[1]: sre: MCP server " \
            "'ops' has no tool 'service_statuz' (it lists: read_log, service_status)" in \
            done.stderr
    store = SqliteStore(tmp_path / "runs.db")
    try:
        assert store.runs() == []  # nothing was written
    finally:
        store.close()
