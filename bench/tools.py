"""Benchmark of tool calls: the engine's own cost per call against a bare SDK loop.

Usage::

    python3 bench/tools.py [--quick] [--calls N] [--json out.json]

An ``llm`` member makes N tool calls, one per round, to ``read_log`` of the MCP server in
``examples/mcp_ops_server.py`` (started over stdio by the run), driven by wopdsl's scripted
OpenAI-compatible server in a child process; the log is a durable SQLite file.

* **engine per call** = the time the engine spends on a call (``CallRunner.settle``: checks,
  the private records, ``agent.toolCalled`` and ``agent.toolReturned`` committed, the
  session event) minus the tool's own time (``McpTool.call``: the SDK's ``call_tool`` round
  trip to the server), measured around each call in the run. Target: ≤ 1 ms.
* **floor** = the same N calls made one after another by a bare loop with the same SDK
  (``mcp.Client`` over stdio to the same server): what a call costs without the engine.
* **tool in the run** = the tool's own time per call inside the run (≈ the floor: the engine
  does not slow the SDK down).
* **round** = wall of the turn / N: one model call and one tool call per round, for context.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from wopdsl import Council  # noqa: E402
from wopdsl.agents.tools.mcp import McpTool  # noqa: E402
from wopdsl.agents.tools.runner import CallRunner  # noqa: E402
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls  # noqa: E402

SERVER = ROOT / "examples" / "mcp_ops_server.py"
TARGET_MS = 1.0


def _serve(conn: Any, calls: int) -> None:
    """The scripted model in a process of its own: ``calls`` rounds of one call, then done."""
    with ScriptedModelServer() as server:
        conn.send(server.url)
        while True:
            command = conn.recv()
            if command != "turn":
                return
            server.add(*[ToolCalls(("read_log", {"service": "api", "lines": 2}), chunks=1,
                                   usage=(50, 10)) for _ in range(calls)],
                       Answer({"summary": "done"}, usage=(50, 5), chunks=1))
            conn.send("ok")


async def _floor(calls: int) -> float:
    """Seconds per call of a bare SDK loop (after one warm-up call)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with Client(params) as client:
        await client.call_tool("read_log", {"service": "api", "lines": 2})
        started = time.perf_counter()
        for _ in range(calls):
            await client.call_tool("read_log", {"service": "api", "lines": 2})
        return (time.perf_counter() - started) / calls


def _council() -> Council:
    council = Council("bench-tools", task="Benchmark.", max_turns_per_member=1)
    council.model("m", model="bench-model", retries=0, stream=False)
    council.mcp("ops", command="python", args=[str(SERVER)])
    council.room("desk", members=["sre"])
    council.add_member("sre", role="sre", engine="llm", model="m", tools=["mcp:ops/read_log"],
                       max_tool_calls=10_000)
    return council


async def _engine(url: str, conn: Any, store: str) -> dict[str, Any]:
    """One run of N rounds; the engine's and the tool's time per call, measured in place."""
    import os

    os.environ["OPENAI_BASE_URL"] = url
    settles: list[float] = []
    tools: list[float] = []
    settle, call = CallRunner.settle, McpTool.call

    async def timed_settle(self: CallRunner, recorded: Any) -> Any:
        started = time.perf_counter()
        try:
            return await settle(self, recorded)
        finally:
            settles.append(time.perf_counter() - started)

    async def timed_call(self: McpTool, arguments: dict[str, Any]) -> Any:
        started = time.perf_counter()
        try:
            return await call(self, arguments)
        finally:
            tools.append(time.perf_counter() - started)

    CallRunner.settle = timed_settle  # type: ignore[method-assign]
    McpTool.call = timed_call  # type: ignore[method-assign]
    try:
        conn.send("turn")
        conn.recv()
        started = time.perf_counter()
        run = await _council().arun(store=store)
        wall = time.perf_counter() - started
    finally:
        CallRunner.settle, McpTool.call = settle, call  # type: ignore[method-assign]
    assert run.status == "completed", run.error
    own = [s - t for s, t in zip(settles, tools, strict=True)]
    events = run.events.to_list()
    first = next(e for e in events if e["type"] == "node.started" and e.get("nodeId") == "sre")
    last = next(e for e in reversed(events) if e["type"] == "node.completed"
                and e.get("nodeId") == "sre")
    turn_ms = _ms(last["timestamp"]) - _ms(first["timestamp"])
    return {"calls": len(own), "engine_ms": statistics.median(own) * 1000,
            "engine_mean_ms": statistics.fmean(own) * 1000,
            "tool_ms": statistics.median(tools) * 1000, "round_ms": turn_ms / max(1, len(own)),
            "run_wall_s": wall}


def _ms(stamp: str) -> int:
    from wopdsl._ids import parse_iso_ms

    return parse_iso_ms(stamp)


async def main(calls: int) -> dict[str, Any]:
    """The figures (see the module docstring)."""
    ctx = multiprocessing.get_context("spawn")
    conn, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(child, calls), daemon=True)
    proc.start()
    url = conn.recv()
    try:
        with tempfile.TemporaryDirectory() as folder:
            store = str(Path(folder) / "runs.db")
            await _engine(url, conn, store)  # warm-up: imports, the store file, the SDK
            engine = await _engine(url, conn, store)
        floor = await _floor(calls)
    finally:
        conn.send("stop")
        proc.join(10)
    return {**engine, "floor_ms": floor * 1000, "target_ms": TARGET_MS,
            "verdict": "PASS" if engine["engine_ms"] <= TARGET_MS else "OVER"}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="20 calls (a smoke run)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    figures = asyncio.run(main(20 if args.quick else args.calls))
    print(f"tool calls: {figures['calls']} (one per round, MCP over stdio, SQLite log)")
    print(f"  engine per call  {figures['engine_ms']:7.3f} ms median "
          f"({figures['engine_mean_ms']:.3f} mean)   target ≤ {TARGET_MS} ms: "
          f"{figures['verdict']}")
    print(f"  tool in the run  {figures['tool_ms']:7.3f} ms median")
    print(f"  floor (bare SDK) {figures['floor_ms']:7.3f} ms per call")
    print(f"  round            {figures['round_ms']:7.3f} ms (a model call and a tool call)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
