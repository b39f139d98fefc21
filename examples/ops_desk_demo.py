"""Run ``councils/ops-desk.toml`` against a scripted model: tools, an MCP server, an approval.

No model needed: the scripted OpenAI-compatible server on loopback plays the SRE, which
reads a log and a status through the MCP server (``examples/mcp_ops_server.py``, started
over stdio), asks to restart the database with the Python tool (``councils/ops_tools.py``),
waits for ``oncall`` to approve, and reports. Run it with ``python examples/ops_desk_demo.py``
(after ``make install``); the log lands in ``.wop/ops-desk-demo.db``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from wopdsl import load
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

COUNCIL = Path(__file__).resolve().parents[1] / "councils" / "ops-desk.toml"
ANSWERS = [
    ToolCalls(("read_log", {"service": "api", "lines": 3}), ("service_status", {"service": "db"})),
    ToolCalls(("restart_service", {"service": "db",
                                   "reason": "too many connections; the api times out on it"})),
    Answer({"summary": "Restarted db (connection limit); api recovers.", "posts": [
        {"roomId": "ops", "text": "Cause: db hit max connections, so api requests timed out "
                                  "(503). Restarted db with oncall's approval.",
         "mentions": []}]}),
]


async def main(store: str) -> str:
    """Run the council to its approval, approve as oncall, and return the transcript."""
    with ScriptedModelServer(ANSWERS) as model:
        os.environ["OPENAI_BASE_URL"] = model.url
        council = load(COUNCIL)
        run = await council.arun(store=store)
        print(f"{run.status}: {', '.join(a.title for a in run.state.tools.approvals.values())}")
        await run.approve(as_="oncall")  # what `wop approve RUN` does from a shell
        await run.wait()
        print(f"{run.status}: {len(model.requests)} model calls")
        return run.transcript


if __name__ == "__main__":
    Path(".wop").mkdir(exist_ok=True)
    print(asyncio.run(main(".wop/ops-desk-demo.db")))
