"""Members with tools on a real PostgreSQL store: every effect exactly once there too.

`wop run --store postgresql://…` children run a council whose member has a Python tool and an
MCP server's tool (built with the official SDK); the tools count their own effects. Children
are killed with SIGKILL between a call and its result and between a result and the next model
call; `wop resume` then continues from the log in PostgreSQL. An approval is decided by a
second process (`wop approve`) against the same database. The tool journal's store calls run
off the event loop: while the store hangs (a TCP proxy passing no byte), the loop goes on.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")
pytest.importorskip("psycopg", reason="the postgres extra (wopdsl[postgres]) is not installed")

from tests.openwop_schemas import load_schemas
from tests.server.conftest import Served, start_server
from tests.tcp_proxy import TcpProxy
from tests.tools.conftest import (
    EFFECTS_ENV,
    KEY_ENV,
    MCP_SERVER,
    effects_in,
    record_effect,
    tool_council,
)
from tests.tools.test_crash import DONE, environment, kill_when, kinds, start, wop, write_council
from wopdsl import Council
from wopdsl.store.postgres import PostgresStore
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

pytestmark = pytest.mark.slow

MCP = f'''\
[mcp.test]
command = "python"
args = [{json.dumps(MCP_SERVER)}]
env = ["WOPDSL_TEST_EFFECTS"]

'''


def pg_council(folder: Path, **options: Any) -> Path:
    """test_crash's council (tool ``ops:restart_service``) plus the MCP tool ``count``."""
    path = write_council(folder, **options)
    text = path.read_text(encoding="utf-8")
    text = text.replace("[models.m]", MCP + "[models.m]", 1).replace(
        'tools = ["ops:restart_service"]', 'tools = ["ops:restart_service", "mcp:test/count"]')
    path.write_text(text, encoding="utf-8")
    return path


def pg_events(url: str, run_id: str) -> list[dict[str, Any]]:
    store = PostgresStore(url)
    try:
        return list(store.read(run_id))  # type: ignore[arg-type]
    finally:
        store.close()


def pg_private(url: str, run_id: str) -> dict[str, str]:
    store = PostgresStore(url)
    try:
        return store.read_private(run_id)
    finally:
        store.close()


def no_secret(url: str, *outputs: str) -> None:
    password = urlsplit(url).password or ""
    assert password, "the test server's URL has a password"
    for output in outputs:
        assert password not in output


def check(url: str, run_id: str, folder: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """The run's events validate, and `wop check` agrees."""
    events = pg_events(url, run_id)
    load_schemas().check_events(events)  # type: ignore[arg-type]
    checked = wop("check", run_id, "--store", url, cwd=folder, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    no_secret(url, checked.stdout, checked.stderr)
    return events


def test_python_and_mcp_tools_complete_on_postgresql(server: ScriptedModelServer, pg_url: str,
                                                     tmp_path: Path) -> None:
    pg_council(tmp_path)
    env = environment(server, tmp_path, hang=False)
    server.add(ToolCalls(("restart_service", {"name": "api"}), ("count", {"label": "a"})),
               DONE)
    done = wop("run", "ops.toml", "--store", pg_url, "--run-id", "r1", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    no_secret(pg_url, done.stdout, done.stderr)
    effects = effects_in(tmp_path / "effects.jsonl")
    assert sorted(e.get("name") or e.get("label") for e in effects) == ["a", "api"]
    tools = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tools == ["restarted api", "counted a"]
    events = check(pg_url, "r1", tmp_path, env)
    called = [e["payload"] for e in events if e["type"] == "agent.toolCalled"]
    assert sorted(c["transport"] for c in called) == ["mcp", "native"]
    assert kinds(events, "tool.session.opened", "tool.session.closed") == [  # type: ignore[arg-type]
        "tool.session.opened", "tool.session.closed"]
    assert events[-1]["type"] == "run.completed"
    # What a resumed turn needs is kept in PostgreSQL beside the log (hashed events).
    private = pg_private(pg_url, "r1")
    assert sorted(private) == ["call/sre/1/0#call", "call/sre/1/0#result",
                               "call/sre/1/1#call", "call/sre/1/1#result"]
    assert json.loads(private["call/sre/1/1#result"])["text"] == "counted a"


def test_kill_between_a_result_and_the_next_model_call(server: ScriptedModelServer,
                                                       pg_url: str, tmp_path: Path) -> None:
    pg_council(tmp_path)
    env = environment(server, tmp_path, hang=False)
    server.add(ToolCalls(("count", {"label": "once"})), Answer({"summary": "late"}, delay_s=60))
    proc = start("run", "ops.toml", "--store", pg_url, "--run-id", "r1", cwd=tmp_path, env=env)
    kill_when(proc, lambda: len(server.requests) == 2 and "agent.toolReturned" in kinds(
        pg_events(pg_url, "r1"), "agent.toolReturned"),  # type: ignore[arg-type]
        "the MCP tool's result was recorded")
    assert [e["label"] for e in effects_in(tmp_path / "effects.jsonl")] == ["once"]
    server.add(DONE)
    resumed = wop("resume", "r1", "ops.toml", "--store", pg_url, cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert [e["label"] for e in effects_in(tmp_path / "effects.jsonl")] == ["once"]
    last = server.requests[-1].body["messages"]
    assert [m["content"] for m in last if m["role"] == "tool"] == ["counted once"]
    events = check(pg_url, "r1", tmp_path, env)
    assert kinds(events, "agent.toolCalled", "agent.toolReturned") == [  # type: ignore[arg-type]
        "agent.toolCalled", "agent.toolReturned"]
    assert events[-1]["type"] == "run.completed"


def _killed_mid_call(server: ScriptedModelServer, url: str, folder: Path) -> dict[str, str]:
    env = environment(server, folder, hang=True)
    server.add(ToolCalls(("restart_service", {"name": "api"})))
    proc = start("run", "ops.toml", "--store", url, "--run-id", "r1", cwd=folder, env=env)
    kill_when(proc, lambda: len(effects_in(folder / "effects.jsonl")) == 1,
              "the tool made its effect")
    return env


def test_kill_mid_call_of_a_tool_that_is_not_idempotent_is_never_repeated(
        server: ScriptedModelServer, pg_url: str, tmp_path: Path) -> None:
    pg_council(tmp_path)
    env = _killed_mid_call(server, pg_url, tmp_path)
    called = kinds(pg_events(pg_url, "r1"), "agent.toolCalled",  # type: ignore[arg-type]
                   "agent.toolReturned")
    assert called == ["agent.toolCalled"]  # committed before the call, no result yet
    resumed = wop("resume", "r1", "ops.toml", "--store", pg_url, "--json", cwd=tmp_path,
                  env=env)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "failed"
    events = check(pg_url, "r1", tmp_path, env)
    failed = next(e for e in events if e["type"] == "node.failed")["payload"]
    assert failed["error"]["code"] == "TOOL_IN_DOUBT"
    assert len(effects_in(tmp_path / "effects.jsonl")) == 1
    assert len(server.requests) == 1


def test_kill_mid_call_of_an_idempotent_tool_makes_it_again_once(
        server: ScriptedModelServer, pg_url: str, tmp_path: Path) -> None:
    pg_council(tmp_path, idempotent=True)
    env = _killed_mid_call(server, pg_url, tmp_path)
    server.add(DONE)
    resumed = wop("resume", "r1", "ops.toml", "--store", pg_url, cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert len(effects_in(tmp_path / "effects.jsonl")) == 2
    events = check(pg_url, "r1", tmp_path, env)
    called = [e["payload"] for e in events if e["type"] == "agent.toolCalled"]
    assert [c.get("repeated", False) for c in called] == [False, True]
    assert len(server.requests) == 2


def test_an_approval_decided_by_a_second_process_is_picked_up(
        server: ScriptedModelServer, pg_url: str, tmp_path: Path) -> None:
    pg_council(tmp_path, approval="oncall")
    env = environment(server, tmp_path, hang=False)
    server.add(ToolCalls(("restart_service", {"name": "api"}), ("count", {"label": "a"})),
               DONE)
    first = wop("run", "ops.toml", "--store", pg_url, "--run-id", "r1", cwd=tmp_path, env=env)
    assert first.returncode == 3, first.stdout + first.stderr  # waits, durably, in PG
    assert "[approval] oncall to decide: sre asks to call restart_service" in first.stdout
    no_secret(pg_url, first.stdout, first.stderr)
    assert [e["tool"] for e in effects_in(tmp_path / "effects.jsonl")] == ["count"]
    # No process stays up. Another one, on the same database, decides and goes on.
    approved = wop("approve", "r1", "--as", "oncall", "--store", pg_url, cwd=tmp_path,
                   env=env)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert "approved call/sre/1/0 restart_service" in approved.stdout
    no_secret(pg_url, approved.stdout, approved.stderr)
    effects = effects_in(tmp_path / "effects.jsonl")
    assert sorted(e.get("name") or e.get("label") for e in effects) == ["a", "api"]
    assert len(server.requests) == 2  # the model was not asked for the round again
    tools = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tools == ["restarted api", "counted a"]
    events = check(pg_url, "r1", tmp_path, env)
    assert [e["type"] for e in events if e["type"].startswith("approval.")] == [
        "approval.requested", "approval.granted"]
    assert events[-1]["type"] == "run.completed"


async def hold_the_store(proxy: TcpProxy, ready: Callable[[], bool],
                         look: Callable[[], Any]) -> dict[str, Any]:
    """Once ``ready()``, pass no byte to the store; let the event loop turn 20 times, then
    ``look()`` (in a thread) and let bytes flow again. Only the loop lets them flow: were it
    held while the store hangs, a watchdog would, after 30 s, and ``ticks`` would say so."""
    seen: dict[str, Any] = {"ticks": 0}
    flowed = threading.Event()

    def watchdog() -> None:
        if not flowed.wait(30):
            seen["watchdog"] = True
            proxy.flow()

    while not ready():
        await asyncio.sleep(0.01)
    proxy.stall()
    threading.Thread(target=watchdog, daemon=True).start()
    for _ in range(20):
        await asyncio.sleep(0.05)
        seen["ticks"] += 1
    seen["looked"] = await asyncio.to_thread(look)
    seen["watchdog"] = seen.get("watchdog", False)
    flowed.set()
    proxy.flow()
    return seen


async def run_holding(council: Council, pg_url: str, proxy: TcpProxy,
                      ready: Callable[[], bool], look: Callable[[], Any]) -> dict[str, Any]:
    """Run ``council`` as r1 on the store through ``proxy``, held as :func:`hold_the_store`
    says; the run completes. What the holder saw."""
    holding = asyncio.create_task(hold_the_store(proxy, ready, look))
    store = PostgresStore(proxy.via(pg_url))
    try:
        run = await council.arun(store=store, run_id="r1")
        seen = await holding
        assert run.status == "completed", run.error
    finally:
        store.close()
    return seen


def _tool_events(url: str) -> list[str]:
    return kinds(pg_events(url, "r1"), "agent.toolCalled",  # type: ignore[arg-type]
                 "agent.toolReturned")


async def test_the_tool_journal_does_not_hold_the_loop_while_the_store_hangs(
        server: ScriptedModelServer, pg_url: str, effects: Path) -> None:
    """The tool cuts the line to PostgreSQL as it returns: the journal's save of its result
    and the commit of ``agent.toolReturned`` then wait on the store, in worker threads, while
    the event loop goes on; the model is not called again until they are done."""
    stalled = threading.Event()
    with TcpProxy.before(pg_url) as proxy:
        council = tool_council(tools=["restart_service"])

        @council.tool
        def restart_service(name: str) -> str:
            """Restart a service (and cut the store's line as it does)."""
            record_effect(tool="restart_service", name=name)
            proxy.stall()
            stalled.set()
            return f"restarted {name}"

        server.add(ToolCalls(("restart_service", {"name": "api"})), DONE)
        seen = await run_holding(council, pg_url, proxy, stalled.is_set,
                                 lambda: (_tool_events(pg_url), len(server.requests)))
    assert seen["ticks"] == 20 and not seen["watchdog"]
    assert seen["looked"] == (["agent.toolCalled"], 1)  # the result waited; so did the model
    assert [e["tool"] for e in effects_in(effects)] == ["restart_service"]
    assert _tool_events(pg_url) == ["agent.toolCalled", "agent.toolReturned"]
    assert "call/sre/1/0#result" in pg_private(pg_url, "r1")
    load_schemas().check_events(pg_events(pg_url, "r1"))  # type: ignore[arg-type]


async def test_no_effect_while_its_call_waits_on_the_store(
        server: ScriptedModelServer, pg_url: str, effects: Path) -> None:
    """The store hangs as the model's answer asks for a call: the call is not made until its
    request is kept and ``agent.toolCalled`` committed; then it is made, once."""
    with TcpProxy.before(pg_url) as proxy:
        council = tool_council(tools=["tests.tools.effects_tools:restart_service"])
        server.add(ToolCalls(("restart_service", {"name": "api"}), delay_s=0.5), DONE)
        seen = await run_holding(
            council, pg_url, proxy, lambda: len(server.requests) == 1,
            lambda: (_tool_events(pg_url), effects_in(effects), pg_private(pg_url, "r1")))
    assert seen["ticks"] == 20 and not seen["watchdog"]
    assert seen["looked"] == ([], [], {})  # nothing kept, nothing logged, nothing done
    assert [e["name"] for e in effects_in(effects)] == ["api"]
    assert _tool_events(pg_url) == ["agent.toolCalled", "agent.toolReturned"]
    load_schemas().check_events(pg_events(pg_url, "r1"))  # type: ignore[arg-type]


def test_a_hosts_run_is_approved_by_wop_approve_on_the_same_database(
        server: ScriptedModelServer, pg_url: str, tmp_path: Path) -> None:
    """A `wop serve` host on PostgreSQL runs the council until the call waits; `wop approve`,
    another process on the same database, decides; the call is made once, the run ends, and
    the host reports it."""
    pg_council(tmp_path, approval="oncall")
    env = environment(server, tmp_path, hang=False)
    server.add(ToolCalls(("restart_service", {"name": "api"})), DONE)
    served = start_server(tmp_path, tmp_path / "ops.toml", store=pg_url,  # type: ignore[arg-type]
                          env={k: env[k] for k in ("OPENAI_BASE_URL", KEY_ENV, EFFECTS_ENV)})
    try:
        _approved_from_the_cli(served, pg_url, tmp_path, env)
    finally:
        served.stop()


def _approved_from_the_cli(served: Served, pg_url: str, tmp_path: Path,
                           env: dict[str, str]) -> None:
    status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "ops"})
    assert status == 201, created
    run_id = created["runId"]
    served.wait_status(run_id, "waiting-approval")  # only an approval waits
    assert effects_in(tmp_path / "effects.jsonl") == []
    approved = wop("approve", run_id, "--as", "oncall", "--store", pg_url, cwd=tmp_path,
                   env=env)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    snap = served.wait_status(run_id, "completed", timeout=60)
    assert snap["status"] == "completed"
    assert [e["name"] for e in effects_in(tmp_path / "effects.jsonl")] == ["api"]
    events = check(pg_url, run_id, tmp_path, env)
    assert kinds(events, "agent.toolCalled", "approval.granted") == [  # type: ignore[arg-type]
        "approval.granted", "agent.toolCalled"]
    assert "Traceback" not in served.logs()
    no_secret(pg_url, served.logs())
