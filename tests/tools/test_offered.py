"""What a member offers its model: one tool per name, at most ``max_tools`` (issue 32).

A real MCP server (the official SDK, tests/tools/mcp_test_server.py) lists its tools; a
Python tool with the name of a listed one is refused in either order, and a server listing
10,001 tools is refused by ``wop validate`` and at run start before any model call, with
the process's memory measured.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")

from tests.tools.conftest import MCP_SERVER, council_toml, tool_council
from wopdsl import SqliteStore
from wopdsl.testing.model_server import ScriptedModelServer

pytestmark = pytest.mark.slow  # real MCP server processes

PY_FAIL = "tests.tools.effects_tools:fail"
"""A Python tool named ``fail``, as the test server's ``fail``."""

MANY = f'command = "python"\nargs = ["{MCP_SERVER}", "--many", "{{many}}"]'
"""The ``[mcp.big]`` table of a server listing ``many`` more tools."""


# No bound on the process's memory is asserted: the MCP SDK's own reading of one 10,001-tool
# line peaks between ~110 MB and ~840 MB depending on how the pipe delivers it (a busy machine
# hands it over in smaller chunks). What the cap prevents — every request to the model
# carrying every tool's schema (395 MB, issue 32) — is asserted directly: no model call.


async def test_a_listed_tool_and_a_python_tool_of_one_name_are_refused_in_either_order(
        server: ScriptedModelServer, effects: Path) -> None:
    refused = []
    for tools in (["mcp:test/*", PY_FAIL], [PY_FAIL, "mcp:test/*"]):
        council = tool_council(tools=tools)
        council.mcp("test", command="python", args=[MCP_SERVER])
        run = await council.arun(store="memory:")  # The member's turn fails, naming both.
        assert run.status == "failed"
        (failed,) = [e for e in run.events if e["type"] == "node.failed"]
        assert failed["payload"]["error"]["code"] == "TOOL_ERROR"
        refused.append(failed["payload"]["error"]["message"])
    assert refused[0] == refused[1]
    assert refused[0] == (
        "sre: two tools would be named 'fail' for the model: the Python function "
        f"{PY_FAIL} and the MCP tool 'fail' of server 'test' (listed by mcp:test/*); a model "
        "calls tools by name, so one would hide the other (keep one of them in the member's "
        "tools; or rename the Python function (or register it under another name with "
        "@council.tool(name=...)); or list the tools of mcp:test/* one by one and leave "
        "'fail' out)")
    assert server.requests == []  # no model was offered either


def _wop(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``wop ARGS`` in a child process."""
    code = "import sys\nfrom wopdsl.cli import main\nraise SystemExit(main(sys.argv[1:]))\n"
    env = {k: v for k, v in os.environ.items() if k != "WOP_STORE"}
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return done


def test_a_server_listing_10001_tools_is_refused_before_any_model_call(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    path = tmp_path / "council.toml"
    path.write_text(council_toml(MANY.format(many=10_001), '"mcp:big/*"', name="big"),
                    encoding="utf-8")
    expected = ("council.toml:23:10: members[0] (sre).tools[0]: sre: 10,009 tools would be "
                "offered to the model, more than max_tools = 128 (mcp:big/* lists 10,009)\n"
                "    hint: name the tools it needs one by one instead of mcp:big/*, or raise "
                "the member's max_tools (at most 1024); every model request carries every "
                "tool's schema")
    for command in (["validate", "council.toml"],
                    ["run", "council.toml", "--store", "runs.db"]):
        done = _wop(*command, cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert ("error[DECLARATION_INVALID]: invalid council declaration:\n"
                in done.stderr), done.stderr
        assert expected in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert server.requests == []  # nothing was offered to a model
    store = SqliteStore(tmp_path / "runs.db")
    try:
        assert store.runs() == []  # nothing was written
    finally:
        store.close()


def test_max_tools_raises_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "council.toml"
    text = council_toml(MANY.format(many=130), '"mcp:big/*"', name="big")
    path.write_text(text, encoding="utf-8")
    done = _wop("validate", "council.toml", cwd=tmp_path)
    assert done.returncode == 2 and "138 tools would be offered to the model, more than " \
        "max_tools = 128 (mcp:big/* lists 138)" in done.stderr, done.stderr
    path.write_text(text.replace('tools = ["mcp:big/*"]', 'tools = ["mcp:big/*"]\n'
                                 "max_tools = 138"), encoding="utf-8")
    done = _wop("validate", "council.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("      tool t00") == 130
    assert "      tool t00130 (mcp:big/t00130; not idempotent; timeout 30 s)" in done.stdout
    path.write_text(text.replace("mcp:big/*", "mcp:big/nope"), encoding="utf-8")
    done = _wop("validate", "council.toml", cwd=tmp_path)
    names = ", ".join(["big", "count", "die", "die_loudly", "die_once", "fail", "garbled",
                       "sleep", *(f"t{index:05d}" for index in range(1, 13))])
    assert done.returncode == 2 and ("sre: MCP server 'big' has no tool 'nope' (it lists: "
                                     f"{names} and 118 more)\n") in done.stderr, done.stderr
