"""Approvals over HTTP: ``POST /v1/runs/{runId}/interrupts/{member}`` decides a tool call.

A real ``wop serve`` subprocess runs ``councils/ops-desk.toml`` (MCP server over stdio, Python
tool with ``approval = "oncall"``) against the scripted model server on loopback.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")

from tests.openwop_schemas import load_schemas
from tests.server.conftest import ALICE, BOB
from tests.tools.conftest import EFFECTS_ENV, KEY_ENV, effects_in
from tests.tools.test_crash import write_council
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

pytestmark = pytest.mark.slow
COUNCIL = Path(__file__).resolve().parents[2] / "councils" / "ops-desk.toml"


def test_a_tool_call_is_approved_and_rejected_over_http(serve: Any, tmp_path: Path) -> None:
    with ScriptedModelServer() as model:
        model.add(ToolCalls(("restart_service", {"service": "db", "reason": "stuck"})),
                  Answer({"summary": "asked"}),
                  ToolCalls(("restart_service", {"service": "api", "reason": "slow"})),
                  Answer({"summary": "done"}))
        served = serve(COUNCIL, env={"OPENAI_BASE_URL": model.url})
        status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "ops-desk"})
        assert status == 201, created
        run_id = created["runId"]
        snap = served.wait_status(run_id, "waiting-input")
        # Only the member node holding the approval takes a decision, with a valid value.
        status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/oncall",
                                         {"resumeValue": {"action": "accept"}})
        assert status == 404 and body["error"] == "interrupt_not_found", body
        assert "sre" in body["details"]["interrupts"]
        status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/sre",
                                         {"resumeValue": {"action": "maybe"}})
        assert status == 400 and body["error"] == "validation_error", body
        status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/sre",
                                         {"resumeValue": {"action": "accept"}})
        assert status == 200, body
        assert body["callId"] == "call/sre/1/0"
        snap = served.wait_status(run_id, "completed", "waiting-input")
        assert snap["status"] in ("completed", "waiting-input")
        assert (tmp_path / ".wop" / "restarts.log").read_text().count("restarted db") == 1
        # A second run: rejected over HTTP, the model reads the rejection.
        status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "ops-desk"})
        second = created["runId"]
        served.wait_status(second, "waiting-input")
        status, body, _ = served.request("POST", f"/v1/runs/{second}/interrupts/sre", {
            "resumeValue": {"action": "reject", "comment": "not now"}})
        assert status == 200, body
        served.wait_status(second, "completed")
        tool = [m for m in model.requests[-1].body["messages"] if m["role"] == "tool"]
        assert tool[0]["content"] == ("error (REJECTED): not called: oncall rejected this "
                                      "call: not now")
        assert "restarted api" not in (tmp_path / ".wop" / "restarts.log").read_text()
        status, page, _ = served.request("GET", f"/v1/runs/{second}/events")
    kinds = [e["type"] for e in page["events"]]
    assert "approval.rejected" in kinds and "tool.session.opened" not in kinds
    load_schemas().check_events(page["events"])


def test_with_tokens_only_the_approvers_principal_decides(serve: Any, tmp_path: Path) -> None:
    folder = tmp_path / "guarded"
    folder.mkdir()
    council = write_council(folder, approval="oncall")  # oncall approves restart_service
    council.write_text(council.read_text().replace('engine = "human"\n',
                                                   'engine = "human"\nprincipal = "bob"\n'))
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[tokens]\nalice = "{ALICE}"\nbob = "{BOB}"\n')
    effects = folder / "effects.jsonl"
    with ScriptedModelServer() as model:
        model.add(ToolCalls(("restart_service", {"name": "api"})), Answer({"summary": "done"}))
        served = serve(council, args=("--tokens", str(tokens)), token=ALICE, env={
            "OPENAI_BASE_URL": model.url, KEY_ENV: "sk-test", EFFECTS_ENV: str(effects)})
        status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "ops"})
        assert status == 201, created
        run_id = created["runId"]
        served.wait_status(run_id, "waiting-input")
        accept = {"resumeValue": {"action": "accept"}}
        # alice started the run, but oncall's principal is bob: she may not decide.
        status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/sre", accept)
        assert (status, body["error"]) == (403, "forbidden"), body
        assert "only oncall's principal may decide call call/sre/1/0" in body["message"]
        assert effects_in(effects) == []
        status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/sre", accept,
                                         token=BOB)
        assert status == 200 and body["callId"] == "call/sre/1/0", body
        served.wait_status(run_id, "completed", "waiting-input")
    assert [e["name"] for e in effects_in(effects)] == ["api"]
    status, page, _ = served.request("GET", f"/v1/runs/{run_id}/events")
    granted = [e["payload"] for e in page["events"] if e["type"] == "approval.granted"]
    assert granted == [{"gateId": "approval/call/sre/1/0", "principal": "oncall"}]
    assert ALICE not in served.logs() and BOB not in served.logs()


def _children(pid: int, marker: str) -> list[int]:
    """Processes whose parent is ``pid`` and whose command line names ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid and marker in cmdline:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False


def test_stdio_servers_stop_with_the_host(serve: Any) -> None:
    with ScriptedModelServer() as model:
        model.add(ToolCalls(("read_log", {"service": "api"})), Answer({"summary": "asked"}))
        served = serve(COUNCIL, env={"OPENAI_BASE_URL": model.url})
        status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "ops-desk"})
        assert status == 201, created
        served.wait_status(created["runId"], "completed", "waiting-input")
        children = _children(served.proc.pid, "mcp_ops_server.py")
        assert children, "the host runs the council's MCP server over stdio"
        assert served.stop() == 0
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in children)
